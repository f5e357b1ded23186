//! Pinned host memory of a CUDA process, from `/proc/PID/smaps`.
//!
//! CUDA's `cudaHostAlloc` memory is neither VmLck nor VmPin. Small allocations show as the
//! Rss of mappings of the NVIDIA device files; large ones (driver 580 / CUDA 13 on the H200:
//! SupraSeal's whole pinned SRS) are shared anonymous mappings (`rw-s … /dev/zero`) that the
//! driver pins, inside RssShmem. Both are counted, the second only in a process that has
//! NVIDIA mappings at all (elsewhere shared anonymous memory is not CUDA's). smaps walks the target's page tables (about 15 ms per
//! GiB of RSS, seconds on a 200 GiB prover), so this runs on its own thread and sleeps long
//! enough after each pass that it uses at most `duty` of one core.

use std::fs::File;
use std::io::{self, Read};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::{park_until, Shared, SMAPS_MIN_INTERVAL};
use crate::procfile::leading_u64;

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Other,
    Nvidia,
    SharedAnon,
}

/// Pinned bytes: the Rss of `/dev/nvidia*` mappings, plus that of shared anonymous
/// (`/dev/zero`) mappings when the process has any NVIDIA mapping.
pub fn pinned_rss(smaps: &[u8]) -> u64 {
    let (mut nvidia_kb, mut shared_kb) = (0u64, 0u64);
    let mut has_nvidia = false;
    let mut kind = Kind::Other;
    for line in smaps.split(|&b| b == b'\n') {
        if is_mapping_header(line) {
            let path = mapping_path(line);
            kind = if path.is_some_and(|p| p.starts_with(b"/dev/nvidia")) {
                Kind::Nvidia
            } else if path.is_some_and(|p| p == b"/dev/zero" || p == b"/dev/zero (deleted)")
                && is_shared(line)
            {
                Kind::SharedAnon
            } else {
                Kind::Other
            };
            has_nvidia |= kind == Kind::Nvidia;
        } else if kind != Kind::Other {
            if let Some(v) = line.strip_prefix(b"Rss:") {
                match kind {
                    Kind::Nvidia => nvidia_kb += leading_u64(v),
                    _ => shared_kb += leading_u64(v),
                }
            }
        }
    }
    (nvidia_kb + if has_nvidia { shared_kb } else { 0 }) * 1024
}

/// The permissions field (2nd) ends in `s` for a shared mapping.
fn is_shared(header: &[u8]) -> bool {
    header
        .split(|&b| b == b' ')
        .nth(1)
        .is_some_and(|perms| perms.len() == 4 && perms[3] == b's')
}

/// Mapping lines look like `7f12a000-7f12b000 rw-s 00000000 00:05 123  /dev/nvidiactl`;
/// field lines like `Rss:   4 kB` (whose names may also start with hex letters).
fn is_mapping_header(line: &[u8]) -> bool {
    let first = line.split(|&b| b == b' ').next().unwrap_or(&[]);
    !first.is_empty()
        && !first.ends_with(b":")
        && first.contains(&b'-')
        && first.iter().all(|b| b.is_ascii_hexdigit() || *b == b'-')
}

/// The path of a mapping header (6th field), if any.
fn mapping_path(line: &[u8]) -> Option<&[u8]> {
    let mut rest = line;
    for _ in 0..5 {
        let sp = rest.iter().position(|&b| b == b' ')?;
        rest = &rest[sp..];
        let start = rest.iter().position(|&b| b != b' ')?;
        rest = &rest[start..];
    }
    (!rest.is_empty()).then_some(rest)
}

/// Read `/proc/PID/smaps` into `buf` and sum its pinned Rss (`pinned_rss`).
pub fn read_pinned(pid: u32, buf: &mut Vec<u8>) -> io::Result<u64> {
    buf.clear();
    File::open(format!("/proc/{pid}/smaps"))?.read_to_end(buf)?;
    Ok(pinned_rss(buf))
}

/// How long to rest after a pass that took `cost`, so passes use at most `duty` of a core,
/// and never more often than once per `min_interval`.
pub fn rest_after(cost: Duration, duty: f64, min_interval: Duration) -> Duration {
    let busy = cost.as_secs_f64();
    let period = (busy / duty.max(1e-6)).max(min_interval.as_secs_f64());
    Duration::from_secs_f64((period - busy).max(0.0))
}

/// The `provetop-smaps` thread: sum the pinned memory of the tree, then rest so that it uses
/// at most `duty` of a core.
pub(super) fn smaps_loop(s: &Shared, duty: f64) {
    let mut buf = Vec::with_capacity(1 << 20);
    while !s.stop.load(Ordering::Acquire) {
        let (gen, pids) = s.tree_snapshot();
        let t0 = Instant::now();
        let mut total = 0u64;
        let mut any = false;
        for pid in pids {
            if let Ok(b) = read_pinned(pid, &mut buf) {
                total += b;
                any = true;
            }
        }
        let cost = t0.elapsed();
        if any {
            let mut p = s.pinned.lock().unwrap_or_else(|e| e.into_inner());
            if p.0 == gen {
                p.1 = total;
            }
        }
        // A big read buffer is only needed while the target is big.
        if buf.capacity() > 64 << 20 {
            buf = Vec::with_capacity(1 << 20);
        }
        let deadline = Instant::now() + rest_after(cost, duty, SMAPS_MIN_INTERVAL);
        while Instant::now() < deadline && !s.stop.load(Ordering::Acquire) {
            park_until(deadline);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SMAPS: &[u8] = b"\
55d0c0000000-55d0c0021000 r--p 00000000 08:01 123   /usr/bin/x
Rss:                 100 kB
AnonHugePages:         0 kB
7f0000000000-7f0000400000 rw-s 00000000 00:05 999   /dev/nvidiactl
Size:               4096 kB
Rss:                4096 kB
Pss:                4096 kB
VmFlags: rd wr sh mr mw me ms
7f1000000000-7f1000100000 rw-s 00000000 00:05 998   /dev/nvidia0
Rss:                1024 kB
7f2000000000-7f2000100000 rw-p 00000000 00:00 0 
Rss:                 512 kB
7f3000000000-7f3000100000 rw-s 00000000 00:05 1   /dev/shm/x (deleted)
Rss:                 256 kB
";

    #[test]
    fn sums_only_nvidia_mappings() {
        assert_eq!(pinned_rss(SMAPS), (4096 + 1024) * 1024);
    }

    // Lines from a SupraSeal prover on the H200 (driver 580.159.04): its 35,012,608-byte pinned
    // SRS is the first /dev/zero mapping; the prover reported exactly that many bytes.
    const SUPRASEAL: &[u8] = b"\
200800000-204000000 rw-s 00000000 00:06 5   /dev/nvidiactl
Rss:               57344 kB
VmFlags: rd wr sh mr mw me ms de dd mm
7f70e4000000-7f70e6164000 rw-s 00000000 00:01 1040   /dev/zero
Rss:               34192 kB
VmFlags: rd wr sh mr mw me ms
7f70e6800000-7f70e7041000 rw-s 00000000 00:01 1041   /dev/zero (deleted)
Rss:                8452 kB
7f70a0000000-7f70a1507000 rw-p 00000000 00:00 0 
Rss:               20088 kB
7f70f0000000-7f70f0100000 rw-p 00000000 00:01 1042   /dev/zero
Rss:                1024 kB
";

    #[test]
    fn shared_anonymous_mappings_of_a_cuda_process_are_pinned() {
        assert_eq!(pinned_rss(SUPRASEAL), (57344 + 34192 + 8452) * 1024);
        // Without NVIDIA mappings shared anonymous memory is somebody else's.
        let no_cuda: Vec<u8> = SUPRASEAL
            .split(|&b| b == b'\n')
            .skip(3)
            .flat_map(|l| l.iter().copied().chain([b'\n']))
            .collect();
        assert_eq!(pinned_rss(&no_cuda), 0);
    }

    #[test]
    fn field_names_with_hex_letters_are_not_headers() {
        assert!(!is_mapping_header(b"AnonHugePages:         0 kB"));
        assert!(!is_mapping_header(b"FilePmdMapped:         0 kB"));
        assert!(is_mapping_header(
            b"7f2000000000-7f2000100000 rw-p 00000000 00:00 0 "
        ));
    }

    #[test]
    fn own_smaps_reads() {
        let mut buf = Vec::new();
        assert_eq!(read_pinned(std::process::id(), &mut buf).unwrap(), 0);
        assert!(!buf.is_empty());
    }

    #[test]
    fn rest_respects_duty() {
        let r = rest_after(Duration::from_millis(30), 0.01, Duration::from_secs(1));
        assert_eq!(r, Duration::from_millis(2970));
        let r = rest_after(Duration::from_micros(100), 0.01, Duration::from_secs(1));
        assert_eq!(r, Duration::from_micros(999_900));
    }
}
