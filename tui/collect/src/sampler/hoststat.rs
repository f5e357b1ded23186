//! The host's load: cores busy over an interval from `/proc/stat`'s `cpu ` line, and the
//! cores online (its `cpuN` lines), read through a file kept open.
//!
//! Busy is total − idle − iowait, where total is user + nice + system + idle + iowait + irq +
//! softirq + steal (guest time is already inside user and nice). Cores busy over an interval
//! is the busy share of the interval's ticks times the cores online, so it does not depend on
//! when exactly the file was read. Unknown (a line cut short, the first reading, the counters
//! going backwards) is `None`, never 0.

use std::io;

use crate::procfile::KeptOpen;

/// One reading of `/proc/stat`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CpuTimes {
    /// Ticks of all cores, busy or not.
    pub total: u64,
    /// Ticks neither idle nor waiting for I/O.
    pub busy: u64,
    /// `cpuN` lines: the cores online.
    pub online: u32,
}

/// Parse a `/proc/stat` text; `None` when the `cpu ` line is missing or short.
pub fn parse_stat(text: &[u8]) -> Option<CpuTimes> {
    let mut times = None;
    let mut online = 0u32;
    for line in text.split(|&b| b == b'\n') {
        if let Some(rest) = line.strip_prefix(b"cpu ") {
            times = parse_cpu_line(rest);
        } else if line.starts_with(b"cpu") {
            online += 1;
        } else if times.is_some() {
            // The cpu lines come first; the rest (intr, which is long on a large host) is not
            // looked at.
            break;
        }
    }
    let (total, busy) = times?;
    Some(CpuTimes {
        total,
        busy,
        online,
    })
}

/// (total, busy) ticks of a `cpu ` line's numbers.
fn parse_cpu_line(rest: &[u8]) -> Option<(u64, u64)> {
    let text = std::str::from_utf8(rest).ok()?;
    let v: Vec<u64> = text
        .split_ascii_whitespace()
        .take(8)
        .map(|w| w.parse().ok())
        .collect::<Option<_>>()?;
    // user nice system idle iowait irq softirq steal; kernels before 2.6.11 lacked steal.
    if v.len() < 7 {
        return None;
    }
    let total = v.iter().try_fold(0u64, |a, &x| a.checked_add(x))?;
    let busy = total.checked_sub(v[3] + v[4])?;
    Some((total, busy))
}

/// Cores busy between two readings: the busy share of the ticks times the cores online.
pub fn cores_busy(before: CpuTimes, now: CpuTimes) -> Option<f64> {
    let total = now.total.checked_sub(before.total)?;
    let busy = now.busy.checked_sub(before.busy)?;
    if total == 0 || busy > total {
        return None;
    }
    Some(busy as f64 / total as f64 * f64::from(now.online))
}

/// An open `/proc/stat` and its previous reading.
#[derive(Debug)]
pub struct HostStat {
    file: KeptOpen,
    last: Option<CpuTimes>,
}

impl HostStat {
    /// Open `/proc/stat`.
    pub fn open() -> io::Result<Self> {
        Ok(HostStat {
            file: KeptOpen::open("/proc/stat", 16 << 10)?,
            last: None,
        })
    }

    /// (cores busy since the previous call, cores online); `None` busy on the first call and
    /// whenever the file cannot be read or parsed, 0 cores online when unknown.
    pub fn read(&mut self) -> (Option<f64>, u32) {
        let now = self.file.read().ok().and_then(parse_stat);
        let busy = self.last.zip(now).and_then(|(a, b)| cores_busy(a, b));
        if now.is_some() {
            self.last = now;
        }
        (busy, now.map_or(0, |n| n.online))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const STAT: &[u8] = b"cpu  10132153 290696 3084719 46828483 16683 0 25195 0 175628 0\n\
cpu0 1393280 32966 572056 13343292 6130 0 17875 0 23933 0\n\
cpu1 1335453 31986 554024 13414018 3744 0 4290 0 21968 0\n\
intr 199292 9 0 0 0 0 0 0 0 1 0 0 0\nctxt 1990473\nbtime 1062191376\n";

    #[test]
    fn the_cpu_line_counts_busy_ticks_without_idle_iowait_or_guest_twice() {
        let t = parse_stat(STAT).unwrap();
        let total = 10132153 + 290696 + 3084719 + 46828483 + 16683 + 25195;
        assert_eq!(t.total, total);
        assert_eq!(t.busy, total - 46828483 - 16683);
        assert_eq!(t.online, 2);
    }

    #[test]
    fn cores_busy_is_the_busy_share_of_the_ticks_times_the_cores_online() {
        let a = CpuTimes {
            total: 1000,
            busy: 100,
            online: 4,
        };
        let b = CpuTimes {
            total: 1400,
            busy: 400,
            online: 4,
        };
        assert_eq!(cores_busy(a, b), Some(3.0));
        assert_eq!(cores_busy(b, a), None, "counters going backwards");
        assert_eq!(cores_busy(a, a), None, "no ticks passed");
    }

    #[test]
    fn a_stat_file_without_a_whole_cpu_line_is_unknown() {
        assert_eq!(parse_stat(b"cpu  1 2 3\ncpu0 1 2 3\n"), None);
        assert_eq!(parse_stat(b"cpu  1 2 x 4 5 6 7 8\n"), None);
        assert_eq!(parse_stat(b"intr 1 2 3\n"), None);
    }

    #[test]
    fn this_hosts_stat_file_reads_its_cores_and_a_second_reading_is_within_them() {
        let mut h = HostStat::open().unwrap();
        let (first, n) = h.read();
        assert_eq!(first, None, "no interval yet");
        let online = nix::unistd::sysconf(nix::unistd::SysconfVar::_NPROCESSORS_ONLN)
            .unwrap()
            .unwrap();
        assert_eq!(i64::from(n), online as i64);
        std::thread::sleep(std::time::Duration::from_millis(50));
        let (busy, _) = h.read();
        let busy = busy.expect("50 ms of ticks");
        assert!((0.0..=f64::from(n)).contains(&busy), "{busy}");
    }
}
