//! provetop's own CPU, for the note a session ends with: what watching cost, per thread.
//!
//! The process's total is its CPU clock (`CLOCK_PROCESS_CPUTIME_ID`, nanoseconds, keeping
//! what ended threads used) over its lifetime; the parts are each live thread's run time
//! from `/proc/self/task/TID/schedstat`, the same nanoseconds, summed by thread name. Both
//! count the scheduler's run time, and the total is read after the parts, so it is never
//! below their sum (`utime + stime` of `/proc/self/stat`, in 10 ms clock ticks truncated,
//! could read below on a short session; it is the fallback only). Where schedstat is
//! missing (a kernel without `CONFIG_SCHED_INFO`) the parts come from each thread's `stat`,
//! in clock ticks. Nothing is read before the session ends, so it costs the session nothing.

use std::fmt;
use std::fs;
use std::time::Duration;

use provetop_collect::procfile::{clk_tck, StatFields};

/// provetop's CPU since it started.
#[derive(Debug, Clone, PartialEq)]
pub struct OwnCpu {
    /// Since the process started.
    pub wall: Duration,
    /// CPU time of the whole process, ended threads included.
    pub total: Duration,
    /// Per thread name (the tokio workers summed), largest first.
    pub threads: Vec<(String, Duration)>,
}

/// Fields 14 and 15 (utime, stime) summed, and 22 (starttime), of a `stat` text, in clock
/// ticks.
fn stat_ticks(text: &str) -> Option<(u64, u64)> {
    let f = StatFields::parse(text.as_bytes())?;
    Some((f.num::<u64>(14)? + f.num::<u64>(15)?, f.num(22)?))
}

impl OwnCpu {
    /// Read it now; `None` where `/proc/self` cannot be read.
    pub fn read() -> Option<OwnCpu> {
        let tck = clk_tck();
        let (cpu, start) = stat_ticks(&fs::read_to_string("/proc/self/stat").ok()?)?;
        let boot = nix::time::clock_gettime(nix::time::ClockId::CLOCK_BOOTTIME).ok()?;
        let now = Duration::new(boot.tv_sec() as u64, boot.tv_nsec() as u32);
        let wall = now.saturating_sub(Duration::from_secs_f64(start as f64 / tck));
        let mut threads: Vec<(String, Duration)> = Vec::new();
        for e in fs::read_dir("/proc/self/task").ok()?.flatten() {
            let dir = e.path();
            let Ok(name) = fs::read_to_string(dir.join("comm")) else {
                continue;
            };
            let used = match fs::read_to_string(dir.join("schedstat")) {
                Ok(s) => s
                    .split_whitespace()
                    .next()
                    .and_then(|n| n.parse::<u64>().ok())
                    .map(Duration::from_nanos),
                Err(_) => fs::read_to_string(dir.join("stat"))
                    .ok()
                    .and_then(|s| stat_ticks(&s))
                    .map(|(t, _)| Duration::from_secs_f64(t as f64 / tck)),
            };
            let Some(used) = used else { continue };
            let name = name.trim().to_string();
            match threads.iter_mut().find(|(n, _)| *n == name) {
                Some((_, d)) => *d += used,
                None => threads.push((name, used)),
            }
        }
        threads.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        // Read after the parts: it has counted at least what they had.
        let total = nix::time::clock_gettime(nix::time::ClockId::CLOCK_PROCESS_CPUTIME_ID)
            .map(Duration::from)
            .unwrap_or_else(|_| Duration::from_secs_f64(cpu as f64 / tck));
        Some(OwnCpu {
            wall,
            total,
            threads,
        })
    }

    /// A duration's share of one core over the lifetime, in percent.
    fn pct(&self, d: Duration) -> f64 {
        if self.wall.is_zero() {
            return 0.0;
        }
        100.0 * d.as_secs_f64() / self.wall.as_secs_f64()
    }
}

impl fmt::Display for OwnCpu {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "provetop's own CPU: {:.2} % of one core over {:.1} s",
            self.pct(self.total),
            self.wall.as_secs_f64()
        )?;
        // Threads that used nothing worth a hundredth of a percent are left out.
        let shown: Vec<String> = self
            .threads
            .iter()
            .filter(|(_, d)| self.pct(*d) >= 0.005)
            .map(|(n, d)| format!("{n} {:.2} %", self.pct(*d)))
            .collect();
        if !shown.is_empty() {
            write!(f, " ({})", shown.join(", "))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fields_are_found_after_a_command_with_spaces_and_parentheses() {
        let text = "42 (a (b) c) S 1 42 42 0 -1 4194304 100 0 0 0 250 50 0 0 20 0 3 0 9999 0 0";
        assert_eq!(stat_ticks(text), Some((300, 9999)));
        assert_eq!(stat_ticks("42 (x) S 1"), None);
    }

    #[test]
    fn this_process_reads_its_own_cpu_per_thread_a_busy_thread_shows_what_it_used_and_the_total_is_not_below_the_parts(
    ) {
        // The thread spins until it has itself used 300 ms of CPU (its own clock, however
        // busy the machine), then stays alive until it has been read.
        let (done, spun) = std::sync::mpsc::channel();
        let (read, wait) = std::sync::mpsc::channel::<()>();
        let busy = std::thread::Builder::new()
            .name("own-cpu-busy".into())
            .spawn(move || {
                let cpu = || {
                    nix::time::clock_gettime(nix::time::ClockId::CLOCK_THREAD_CPUTIME_ID)
                        .map(Duration::from)
                        .unwrap()
                };
                while cpu() < Duration::from_millis(300) {
                    std::hint::black_box(0u64);
                }
                done.send(()).unwrap();
                let _ = wait.recv();
            })
            .unwrap();
        spun.recv().unwrap();
        let own = OwnCpu::read().expect("/proc/self is readable");
        drop(read);
        busy.join().unwrap();
        let used = own
            .threads
            .iter()
            .find(|(n, _)| n == "own-cpu-busy")
            .map(|(_, d)| *d)
            .expect("the busy thread is listed");
        assert!(used >= Duration::from_millis(290), "{used:?}");
        assert!(
            own.threads.windows(2).all(|w| w[0].1 >= w[1].1),
            "largest first: {own:?}"
        );
        // The total and the parts are the same nanoseconds, the total read last: never
        // below their sum.
        let parts: Duration = own.threads.iter().map(|(_, d)| *d).sum();
        assert!(own.total >= parts, "{own:?}");
        assert!(own.wall >= Duration::from_millis(300), "{own:?}");
        let line = own.to_string();
        assert!(line.starts_with("provetop's own CPU: "), "{line}");
        assert!(line.contains("own-cpu-busy "), "{line}");
    }
}
