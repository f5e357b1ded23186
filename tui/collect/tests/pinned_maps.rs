//! Pinned memory from the mapping table: the estimate on the H200's own mapping lines, the
//! smaps cross-check, and what a vanishing mapping or an exiting process reads as (live).

use std::io::{BufRead, BufReader, Write};
use std::num::NonZeroUsize;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::mman::{self, MapFlags, ProtFlags};
use provetop_collect::sampler::maps::{candidates, estimate, Kind, Learned, MapsError, PidMaps};
use provetop_collect::sampler::{self, cross_check, smaps_pinned, Check, SamplerConfig};
use provetop_shared::{Mark, RecordBody};
use provetop_testkit::bins::memhog;

const MIB: u64 = 1 << 20;

/// A SupraSeal prover's table on the H200 (driver 580.159.04, abridged): the control device's
/// host buffers, an MMIO window on /dev/nvidia0, managed memory, the 2 GiB pinned SRS as a
/// shared /dev/zero mapping (its deleted twin too), private memory.
const TABLE: &[u8] = b"\
55d0c0000000-55d0c0021000 r--p 00000000 08:01 123   /usr/bin/provetop-prover
200800000-204000000 rw-s 00000000 00:06 5   /dev/nvidiactl
7f1000000000-7f1000200000 rw-s 00000000 00:06 6   /dev/nvidia0
205000000-305000000 rw-s 00000000 00:06 7   /dev/nvidia-uvm
7f70e4000000-7f7164000000 rw-s 00000000 00:01 1040   /dev/zero
7f71e6800000-7f71e7000000 rw-s 00000000 00:01 1041   /dev/zero (deleted)
7f70a0000000-7f70a1507000 rw-p 00000000 00:00 0 
7f70f0000000-7f70f0100000 rw-p 00000000 00:01 1042   /dev/zero
";

/// The same mappings as smaps shows them, measured.
const SMAPS: &[u8] = b"\
55d0c0000000-55d0c0021000 r--p 00000000 08:01 123   /usr/bin/provetop-prover
Rss:                 100 kB
200800000-204000000 rw-s 00000000 00:06 5   /dev/nvidiactl
Size:              57344 kB
Rss:               57344 kB
Locked:                0 kB
7f1000000000-7f1000200000 rw-s 00000000 00:06 6   /dev/nvidia0
Rss:                   0 kB
205000000-305000000 rw-s 00000000 00:06 7   /dev/nvidia-uvm
Rss:                2048 kB
7f70e4000000-7f7164000000 rw-s 00000000 00:01 1040   /dev/zero
Rss:             2097152 kB
Locked:                0 kB
7f71e6800000-7f71e7000000 rw-s 00000000 00:01 1041   /dev/zero (deleted)
Rss:                8192 kB
7f70a0000000-7f70a1507000 rw-p 00000000 00:00 0 
Rss:               20088 kB
7f70f0000000-7f70f0100000 rw-p 00000000 00:01 1042   /dev/zero
Rss:                1024 kB
";

/// The first page of the /dev/nvidia0 window is MMIO (absent from pagemap), the rest host.
fn probe(m: &provetop_collect::sampler::maps::Mapping) -> Option<bool> {
    Some(m.start != 0x7f1000000000)
}

#[test]
fn the_table_counts_host_mappings_whole_and_leaves_mmio_and_managed_memory_out() {
    let mut cands = Vec::new();
    assert!(candidates(TABLE, &mut cands));
    let kinds: Vec<Kind> = cands.iter().map(|m| m.kind).collect();
    assert_eq!(
        kinds,
        [
            Kind::Device,
            Kind::Device,
            Kind::Uvm,
            Kind::SharedZero,
            Kind::SharedZero
        ]
    );
    let (pinned, overlap) = estimate(&cands, None, probe).unwrap();
    assert_eq!(pinned, (56 + 2048 + 8) * MIB);
    assert_eq!(overlap, 0);
    // smaps measures the same: the cross-check agrees.
    let mut found = Vec::new();
    let truth = smaps_pinned(SMAPS, &mut found);
    assert_eq!(truth, pinned);
    assert_eq!(
        cross_check(&cands, pinned, &found, truth),
        Check::Agree { bytes: truth }
    );
}

#[test]
fn a_mapping_that_cannot_be_probed_is_unknown_until_smaps_has_measured_it() {
    let mut cands = Vec::new();
    candidates(TABLE, &mut cands);
    assert_eq!(
        estimate(&cands, None, |_| None),
        Err(2),
        "two device mappings"
    );
    let mut found = Vec::new();
    smaps_pinned(SMAPS, &mut found);
    let mut learned = Learned::default();
    learned.update(&found);
    let (pinned, _) = estimate(&cands, Some(&learned), |_| None).unwrap();
    assert_eq!(pinned, (56 + 2048 + 8) * MIB);
}

#[test]
fn a_partly_resident_mapping_measured_twice_alike_takes_the_measured_rss() {
    let mut cands = Vec::new();
    candidates(TABLE, &mut cands);
    let half = String::from_utf8_lossy(SMAPS).replace("2097152 kB", "1048576 kB");
    let mut found = Vec::new();
    smaps_pinned(half.as_bytes(), &mut found);
    let mut learned = Learned::default();
    learned.update(&found);
    // One pass may have caught the allocation half done: the size still counts…
    let (once, _) = estimate(&cands, Some(&learned), probe).unwrap();
    assert_eq!(once, (56 + 2048 + 8) * MIB);
    let truth = smaps_pinned(half.as_bytes(), &mut found);
    assert_eq!(
        cross_check(&cands, once, &found, truth),
        Check::Disagree {
            table: once,
            smaps: truth
        }
    );
    // …two alike are the truth.
    learned.update(&found);
    let (twice, _) = estimate(&cands, Some(&learned), probe).unwrap();
    assert_eq!(twice, (56 + 1024 + 8) * MIB);
    assert_eq!(
        cross_check(&cands, twice, &found, truth),
        Check::Agree { bytes: truth }
    );
}

#[test]
fn mlocked_memory_inside_a_cuda_mapping_is_reported_as_overlap_to_count_once() {
    let mut cands = Vec::new();
    candidates(TABLE, &mut cands);
    let locked = String::from_utf8_lossy(SMAPS).replacen(
        "Locked:                0 kB",
        "Locked:            57344 kB",
        1,
    );
    let mut found = Vec::new();
    smaps_pinned(locked.as_bytes(), &mut found);
    let mut learned = Learned::default();
    learned.update(&found);
    let (_, overlap) = estimate(&cands, Some(&learned), probe).unwrap();
    assert_eq!(overlap, 56 * MIB);
}

#[test]
fn a_mapping_that_vanished_between_smaps_and_the_table_voids_the_check() {
    let mut found = Vec::new();
    let truth = smaps_pinned(SMAPS, &mut found);
    // The deleted twin was unmapped after the smaps pass.
    let later: Vec<u8> = TABLE
        .split(|&b| b == b'\n')
        .filter(|l| !l.ends_with(b"(deleted)"))
        .flat_map(|l| l.iter().copied().chain([b'\n']))
        .collect();
    let mut cands = Vec::new();
    candidates(&later, &mut cands);
    let (pinned, _) = estimate(&cands, None, probe).unwrap();
    assert_eq!(cross_check(&cands, pinned, &found, truth), Check::Void);
}

#[test]
fn the_whole_table_is_read_however_many_pages_it_takes() {
    // 400 more mappings (read-only and read-write in turn, so none merge): a table of several
    // pages, which the kernel hands out a page per read.
    let mut held = Vec::new();
    for i in 0..400 {
        let prot = if i % 2 == 0 {
            ProtFlags::PROT_READ
        } else {
            ProtFlags::PROT_READ | ProtFlags::PROT_WRITE
        };
        // SAFETY: a fresh private anonymous mapping aliases nothing; it is unmapped below.
        let p = unsafe {
            mman::mmap_anonymous(
                None,
                NonZeroUsize::new(4096).unwrap(),
                prot,
                MapFlags::MAP_PRIVATE,
            )
        }
        .unwrap();
        held.push(p);
    }
    let whole = std::fs::read(format!("/proc/{}/maps", std::process::id())).unwrap();
    assert!(whole.len() > 3 * 4096, "{} bytes", whole.len());
    let lines = whole.iter().filter(|&&b| b == b'\n').count() as u32;
    let mut table = PidMaps::open(std::process::id()).unwrap();
    let r = table.read(None).unwrap();
    assert!(
        r.mappings.abs_diff(lines) <= 4,
        "{} of {lines} lines",
        r.mappings
    );
}

struct Hog {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    pid: u32,
}

impl Hog {
    fn start(args: &[&str]) -> Hog {
        let mut child = Command::new(memhog())
            .args(args)
            .arg("--stdin")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("start provetop-memhog");
        let stdin = child.stdin.take().unwrap();
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        let pid = line.trim().strip_prefix("ready ").unwrap().parse().unwrap();
        Hog {
            child,
            stdin,
            stdout,
            pid,
        }
    }

    fn say(&mut self, cmd: &str) -> String {
        writeln!(self.stdin, "{cmd}").unwrap();
        let mut line = String::new();
        self.stdout.read_line(&mut line).unwrap();
        line.trim().to_string()
    }
}

impl Drop for Hog {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn a_process_that_exits_reads_as_gone_and_never_as_a_number() {
    let mut hog = Hog::start(&["--anon", "16"]);
    let mut table = PidMaps::open(hog.pid).unwrap();
    let r = table.read(None).unwrap();
    assert_eq!(r.pinned, 0, "no CUDA here");
    assert!(r.mappings > 5, "{r:?}");
    hog.child.kill().unwrap();
    // Killed, not reaped yet: a zombie has no address space.
    let end = Instant::now() + Duration::from_secs(10);
    loop {
        match table.read(None) {
            Err(MapsError::Gone) => break,
            Ok(_) if Instant::now() < end => std::thread::sleep(Duration::from_millis(5)),
            other => panic!("an exited process read as {other:?}"),
        }
    }
    hog.child.wait().unwrap();
    assert!(matches!(table.read(None), Err(MapsError::Gone)));
}

/// Samples' pinned readings until `until` holds of one or the deadline passes.
fn wait_pinned(
    h: &mut sampler::SamplerHandle,
    deadline: Duration,
    until: impl Fn(u64) -> bool,
) -> Option<Duration> {
    let t0 = Instant::now();
    let mut recs = Vec::new();
    while t0.elapsed() < deadline {
        std::thread::sleep(Duration::from_millis(10));
        h.drain(&mut recs);
        for r in recs.drain(..) {
            if let RecordBody::Sample(s) = &r.body {
                if s.pinned.is_some_and(&until) {
                    return Some(t0.elapsed());
                }
            }
            if let RecordBody::Mark(Mark::Note { text }) = &r.body {
                assert!(!text.contains("pinned memory"), "{text}");
            }
        }
    }
    None
}

#[test]
fn mlocked_memory_shows_in_the_pinned_series_within_a_second_of_each_step() {
    // Small steps: an unprivileged RLIMIT_MEMLOCK is often 8 MiB.
    let mut hog = Hog::start(&[]);
    let cfg = SamplerConfig {
        gpu_hz: 0.0,
        ..SamplerConfig::default()
    };
    let mut h = sampler::spawn(cfg, hog.pid).unwrap();
    assert!(wait_pinned(&mut h, Duration::from_secs(5), |p| p == 0).is_some());
    let ok = hog.say("lock 4");
    if ok.starts_with("error") {
        eprintln!("skipped: mlock refused here ({ok})");
        return;
    }
    let up = wait_pinned(&mut h, Duration::from_secs(5), |p| p == 4 * MIB);
    assert!(up.is_some_and(|d| d < Duration::from_secs(1)), "{up:?}");
    assert_eq!(hog.say("free"), "ok");
    let down = wait_pinned(&mut h, Duration::from_secs(5), |p| p == 0);
    assert!(down.is_some_and(|d| d < Duration::from_secs(1)), "{down:?}");
    h.stop();
}

/// A file under `/dev` whose name the mapping readers take for an NVIDIA device node (the
/// VM has none), removed on drop.
struct FakeDevice(std::path::PathBuf);

impl FakeDevice {
    fn create() -> Option<FakeDevice> {
        let path =
            std::path::PathBuf::from(format!("/dev/nvidia-ptop-test-{}", std::process::id()));
        match std::fs::File::create(&path).and_then(|f| f.set_len(MIB)) {
            Ok(()) => Some(FakeDevice(path)),
            Err(e) => {
                eprintln!("skipped: cannot create {} ({e})", path.display());
                None
            }
        }
    }
}

impl Drop for FakeDevice {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

#[test]
fn smaps_passes_wait_until_the_tree_has_a_cuda_mapping_to_measure() {
    let Some(dev) = FakeDevice::create() else {
        return;
    };
    let mut hog = Hog::start(&["--anon", "8"]);
    let cfg = SamplerConfig {
        gpu_hz: 0.0,
        // Generous: without the wait a pass would come every second.
        smaps_duty: 0.5,
        ..SamplerConfig::default()
    };
    let mut h = sampler::spawn(cfg, hog.pid).unwrap();
    let mut recs = Vec::new();
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_millis(2500) {
        std::thread::sleep(Duration::from_millis(50));
        h.drain(&mut recs);
    }
    assert_eq!(
        h.smaps_passes(),
        0,
        "a pass over a tree with no CUDA mapping"
    );
    assert_eq!(hog.say(&format!("mapfile {}", dev.0.display())), "ok");
    let t1 = Instant::now();
    while h.smaps_passes() == 0 {
        assert!(
            t1.elapsed() < Duration::from_secs(10),
            "no smaps pass once the tree had a device mapping"
        );
        std::thread::sleep(Duration::from_millis(20));
        h.drain(&mut recs);
    }
    h.stop();
}
