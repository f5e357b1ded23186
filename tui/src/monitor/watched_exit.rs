//! How a watched process (one provetop did not start) ended, as far as can be known: its
//! exit status belongs to its parent, but an OOM kill is in the kernel log (`/dev/kmsg`:
//! "Memory cgroup out of memory: Killed process N (cmd) …", or "Out of memory: …" for the
//! host), and a kill names its victim. The kernel prints that line when it sends SIGKILL,
//! before the victim's memory is freed, so it is there once the process is gone.
//!
//! The kernel log is read by the collect crate's reader ([`provetop_collect::kmsg`]), the one
//! that names the victims of the OOM kills the sampler sees.

use std::time::Duration;

/// How long the kernel log is waited for once the process is gone (its line follows the
/// SIGKILL by microseconds to milliseconds).
const NAME_WAIT: Duration = Duration::from_millis(100);

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

/// The exit mark of watched `pid`, gone: OOM-killed where the kernel log says so, else of
/// unknown status.
pub fn exit_mark(pid: u32, started_us: Option<u64>) -> provetop_shared::Mark {
    // The kernel log's clock and the monotonic one agree; the start bounds a recycled pid.
    let victim =
        started_us.and_then(|s| provetop_collect::kmsg::oom_kill_of(pid, s * 1000, NAME_WAIT));
    match victim {
        Some(v) => provetop_shared::Mark::ChildExited {
            pid,
            code: None,
            signal: Some(nix::libc::SIGKILL),
            oom_kill: true,
            reason: format!("OOM-killed ({})", v.describe()),
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
