//! How a watched process (one provetop did not start) ended, as far as can be known: its
//! exit status belongs to its parent, but an OOM kill is in the kernel log (`/dev/kmsg`:
//! "Memory cgroup out of memory: Killed process N (cmd) …", or "Out of memory: …" for the
//! host), and a kill names its victim. The kernel prints that line when it sends SIGKILL,
//! before the victim's memory is freed, so it is there once the process is gone.
//!
//! [`oom_victim`] is the one place the kernel log is asked: it is to give way to the
//! collect crate's reader of the kernel log.

use std::io::Read;

/// An OOM kill the kernel logged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OomVictim {
    pub pid: u32,
    /// The victim's command, as the kernel names it.
    pub comm: String,
    /// The kernel's words up to the victim ("Memory cgroup out of memory: Killed process 12
    /// (prover)").
    pub line: String,
}

/// When `pid` started, in µs since boot (the kernel log's clock); `None` when it is gone.
pub fn started_us(pid: u32) -> Option<u64> {
    let stat = std::fs::read(format!("/proc/{pid}/stat")).ok()?;
    started_in(&stat)
}

fn started_in(stat: &[u8]) -> Option<u64> {
    let ticks: u64 = provetop_collect::procfile::StatFields::parse(stat)?.num(22)?;
    let hz = provetop_collect::procfile::clk_tck();
    (hz > 0.0).then(|| (ticks as f64 * 1e6 / hz) as u64)
}

/// Whether watched `pid` (started at `started_us`, where known) has ended: no such process,
/// a zombie its parent has not reaped yet (it holds no memory and runs no more), or another
/// process that took its pid.
pub fn ended(pid: u32, started_us: Option<u64>) -> bool {
    let Ok(stat) = std::fs::read(format!("/proc/{pid}/stat")) else {
        return true;
    };
    let fields = provetop_collect::procfile::StatFields::parse(&stat);
    if fields.and_then(|f| f.state()) == Some('Z') {
        return true;
    }
    matches!((started_us, started_in(&stat)), (Some(a), Some(b)) if a != b)
}

/// The OOM kill of `pid` the kernel logged at or after `since_us` (µs since boot: the
/// process's start, so an older kill of a recycled pid is not taken for it); `None` when
/// there was none, or the kernel log cannot be read (not root, `dmesg_restrict`).
pub fn oom_victim(pid: u32, since_us: u64) -> Option<OomVictim> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_NONBLOCK)
        .open("/dev/kmsg")
        .ok()?;
    let mut buf = vec![0u8; 8192];
    let mut found = None;
    loop {
        // One record per read; EAGAIN at the end, EPIPE where the ring overwrote the next.
        match f.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                if let Some(v) = parse_kill(&String::from_utf8_lossy(&buf[..n]), pid, since_us) {
                    found = Some(v);
                }
            }
            Err(e) if e.raw_os_error() == Some(nix::libc::EPIPE) => continue,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        }
    }
    found
}

/// A `/dev/kmsg` record ("PRIO,SEQ,TS_US,FLAGS;MESSAGE") that logs the OOM kill of `pid` at
/// or after `since_us`.
fn parse_kill(record: &str, pid: u32, since_us: u64) -> Option<OomVictim> {
    let (head, msg) = record.split_once(';')?;
    let ts: u64 = head.split(',').nth(2)?.parse().ok()?;
    if ts < since_us {
        return None;
    }
    let msg = msg.lines().next()?;
    let key = format!("Killed process {pid} (");
    let at = msg.find(&key)?;
    let rest = &msg[at + key.len()..];
    // The command ends at the ")" before the sizes the kernel adds.
    let end = rest
        .find(") total-vm")
        .or_else(|| rest.rfind(')'))
        .unwrap_or(rest.len());
    let comm = rest[..end].to_string();
    let line = format!("{}{comm})", &msg[..at + key.len()]);
    Some(OomVictim { pid, comm, line })
}

/// The exit mark of watched `pid`, gone: OOM-killed where the kernel log says so, else of
/// unknown status.
pub fn exit_mark(pid: u32, started_us: Option<u64>) -> provetop_shared::Mark {
    let victim = started_us.and_then(|s| oom_victim(pid, s));
    match victim {
        Some(v) => provetop_shared::Mark::ChildExited {
            pid,
            code: None,
            signal: Some(nix::libc::SIGKILL),
            oom_kill: true,
            reason: format!("OOM-killed ({})", v.line),
        },
        None => provetop_shared::Mark::ChildExited {
            pid,
            code: None,
            signal: None,
            oom_kill: false,
            reason: "exited (watched: status unknown)".into(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kernel_kill_line_names_the_victim_only_after_the_process_started() {
        let rec = "3,1234,5000000,-;Memory cgroup out of memory: Killed process 42 (provetop-memhog) total-vm:270000kB, anon-rss:65000kB, file-rss:0kB, shmem-rss:0kB, UID:0 pgtables:200kB oom_score_adj:0\n";
        let v = parse_kill(rec, 42, 4_000_000).unwrap();
        assert_eq!(v.comm, "provetop-memhog");
        assert_eq!(
            v.line,
            "Memory cgroup out of memory: Killed process 42 (provetop-memhog)"
        );
        assert_eq!(parse_kill(rec, 42, 6_000_000), None, "before it started");
        assert_eq!(parse_kill(rec, 4, 0), None, "another pid");
        let host = "3,9,7,-;Out of memory: Killed process 7 (a (b) c) total-vm:1kB\n";
        assert_eq!(parse_kill(host, 7, 0).unwrap().comm, "a (b) c");
    }

    #[test]
    fn a_live_process_started_after_boot_and_a_zombie_has_ended() {
        let me = std::process::id();
        assert!(started_us(me).is_some_and(|s| s > 0));
        assert_eq!(started_us(u32::MAX - 1), None);
        assert!(!ended(me, started_us(me)));
        assert!(ended(u32::MAX - 1, None));
        let mut kid = std::process::Command::new("true").spawn().unwrap();
        let pid = kid.id();
        let zombie = (0..500).any(|_| {
            std::thread::sleep(std::time::Duration::from_millis(10));
            ended(pid, None)
        });
        assert!(zombie, "an exited, unreaped child has ended");
        kid.wait().unwrap();
    }
}
