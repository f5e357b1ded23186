//! Pressure stall information: host-wide (`/proc/pressure/{memory,cpu,io}`) and a v2
//! cgroup's (`{memory,cpu,io}.pressure`), as `avg10` and the share of the interval since the
//! reading before spent stalled (from `total`, µs), and triggers that tell of a stall between
//! readings at no polling cost.
//!
//! A kernel without PSI (`CONFIG_PSI` off, or `psi=0`) has no such files: unavailable, said
//! once by the caller. A trigger is a threshold written to an open pressure file ("some
//! 150000 1000000": 150 ms stalled within 1 s); the kernel then wakes a poll for `POLLPRI`.
//! Before Linux 6.5 only root (CAP_SYS_RESOURCE) may make one; since, others may with a
//! window that is a multiple of 2 s, which [`Trigger::open`] falls back to.

use std::fs::{File, OpenOptions};
use std::io;
use std::io::Write;
use std::path::{Path, PathBuf};

use provetop_shared::record::{Psi, PsiLine, PsiResource};

use crate::procfile::KeptOpen;

/// The three resources, as the files are named.
pub const RESOURCES: [&str; 3] = ["memory", "cpu", "io"];

/// One line of a pressure file: avg10 (percent) and total (µs).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Line {
    pub avg10: f64,
    pub total_us: u64,
}

/// A pressure file's `some` and `full` lines (`full` is missing from host-wide `cpu` before
/// Linux 5.13, and all zero there after).
pub fn parse(text: &str) -> Option<(Line, Option<Line>)> {
    let mut some = None;
    let mut full = None;
    for l in text.lines() {
        let mut words = l.split_ascii_whitespace();
        let slot = match words.next() {
            Some("some") => &mut some,
            Some("full") => &mut full,
            _ => continue,
        };
        let (mut avg10, mut total) = (None, None);
        for w in words {
            if let Some(v) = w.strip_prefix("avg10=") {
                avg10 = v.parse().ok();
            } else if let Some(v) = w.strip_prefix("total=") {
                total = v.parse().ok();
            }
        }
        if let (Some(avg10), Some(total_us)) = (avg10, total) {
            *slot = Some(Line { avg10, total_us });
        }
    }
    Some((some?, full))
}

/// The pressure files of one scope, kept open, and their last readings.
#[derive(Debug)]
pub struct PsiFiles {
    files: [Option<KeptOpen>; 3],
    /// When (ns) and the totals of `some` and `full` at the last reading.
    last: [Option<(u64, u64, Option<u64>)>; 3],
}

impl PsiFiles {
    /// The host's (`/proc/pressure`).
    pub fn host() -> Result<PsiFiles, String> {
        Self::open(|r| PathBuf::from(format!("/proc/pressure/{r}")))
    }

    /// A v2 cgroup's (`DIR/memory.pressure`, …).
    pub fn cgroup(dir: &Path) -> Result<PsiFiles, String> {
        Self::open(|r| dir.join(format!("{r}.pressure")))
    }

    /// `Err` (why) when no resource's file can be opened and read.
    fn open(path: impl Fn(&str) -> PathBuf) -> Result<PsiFiles, String> {
        let mut why = None;
        let files = RESOURCES.map(|r| {
            let p = path(r);
            // A file that opens but cannot be read (psi=0 makes reads fail) counts as missing.
            match KeptOpen::open(&p, 256).and_then(|mut f| f.read().map(drop).map(|_| f)) {
                Ok(f) => Some(f),
                Err(e) => {
                    why.get_or_insert_with(|| format!("{}: {e}", p.display()));
                    None
                }
            }
        });
        if files.iter().all(Option::is_none) {
            return Err(why.unwrap_or_default());
        }
        Ok(PsiFiles {
            files,
            last: [None; 3],
        })
    }

    /// A reading at `t_ns` (the monotonic clock).
    pub fn read(&mut self, t_ns: u64) -> Psi {
        let mut out: [Option<PsiResource>; 3] = [None, None, None];
        for (i, f) in self.files.iter_mut().enumerate() {
            let Some(parsed) = f
                .as_mut()
                .and_then(|f| f.read().ok())
                .and_then(|t| parse(&String::from_utf8_lossy(t)))
            else {
                self.last[i] = None;
                continue;
            };
            let (some, full) = parsed;
            let before = self.last[i];
            let rate = |now: u64, then: Option<u64>| {
                let (t0, _, _) = before?;
                let dt_us = t_ns.checked_sub(t0)? as f64 / 1000.0;
                let then = then?;
                (dt_us > 0.0).then(|| (now.saturating_sub(then) as f64 / dt_us * 100.0).min(100.0))
            };
            out[i] = Some(PsiResource {
                some: PsiLine {
                    avg10: some.avg10,
                    rate: rate(some.total_us, before.map(|b| b.1)),
                },
                full: full.map(|f| PsiLine {
                    avg10: f.avg10,
                    rate: rate(f.total_us, before.and_then(|b| b.2)),
                }),
            });
            self.last[i] = Some((t_ns, some.total_us, full.map(|f| f.total_us)));
        }
        let [memory, cpu, io] = out;
        Psi { memory, cpu, io }
    }
}

/// A pressure trigger: an open pressure file the kernel wakes (POLLPRI) when tasks stalled
/// `stall_us` within `window_us`.
#[derive(Debug)]
pub struct Trigger {
    pub file: File,
    /// "host" or "cgroup".
    pub scope: &'static str,
    pub resource: &'static str,
    /// "some" or "full".
    pub line: &'static str,
    pub stall_us: u64,
    pub window_us: u64,
    /// The file, read again to confirm a wake-up.
    path: PathBuf,
    /// The line's `total` (µs) when last confirmed (or armed).
    total_us: Option<u64>,
}

impl Trigger {
    /// Whether the line's stall time really grew by the threshold since the trigger was armed
    /// or last confirmed. Some kernels wake a new trigger at once (its window starting from
    /// zero, not from the total then): the wake-up alone is not a stall.
    pub fn confirmed(&mut self) -> bool {
        let Some(now) = line_total(&self.path, self.line) else {
            return false;
        };
        let grew = self
            .total_us
            .is_some_and(|t| now.saturating_sub(t) >= self.stall_us);
        self.total_us = Some(now);
        grew
    }

    /// Arm a trigger on `path`: `share` of each `window_us` stalled. Where the kernel refuses
    /// the window (unprivileged, before the 2 s rule was relaxed), a 2 s window is tried.
    pub fn open(
        path: &Path,
        scope: &'static str,
        resource: &'static str,
        line: &'static str,
        share: f64,
        window_us: u64,
    ) -> io::Result<Trigger> {
        let arm = |window_us: u64| -> io::Result<Trigger> {
            let file = OpenOptions::new().read(true).write(true).open(path)?;
            let stall_us = (window_us as f64 * share) as u64;
            // The kernel takes the text with its NUL.
            let text = format!("{line} {stall_us} {window_us}\0");
            // A pressure file cannot seek: a plain write.
            (&file).write_all(text.as_bytes())?;
            Ok(Trigger {
                file,
                scope,
                resource,
                line,
                stall_us,
                window_us,
                path: path.to_path_buf(),
                total_us: line_total(path, line),
            })
        };
        arm(window_us).or_else(|e| {
            if window_us % 2_000_000 != 0 {
                arm(2_000_000)
            } else {
                Err(e)
            }
        })
    }
}

/// The `total` (µs) of the `some` or `full` line of the pressure file at `path`, read now.
fn line_total(path: &Path, line: &str) -> Option<u64> {
    let (some, full) = parse(&std::fs::read_to_string(path).ok()?)?;
    match line {
        "full" => full.map(|l| l.total_us),
        _ => Some(some.total_us),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pressure_lines_of_this_vm() {
        let (some, full) = parse(
            "some avg10=0.02 avg60=1.65 avg300=0.88 total=5245101\nfull avg10=0.01 avg60=0.75 avg300=0.40 total=2569607\n",
        )
        .unwrap();
        assert_eq!(
            some,
            Line {
                avg10: 0.02,
                total_us: 5245101
            }
        );
        assert_eq!(
            full,
            Some(Line {
                avg10: 0.01,
                total_us: 2569607
            })
        );
        // Host-wide cpu before Linux 5.13: no full line.
        let (_, full) =
            parse("some avg10=57.93 avg60=34.44 avg300=18.50 total=3609828887\n").unwrap();
        assert_eq!(full, None);
        assert_eq!(parse("garbage\n"), None);
    }

    #[test]
    fn the_rate_is_the_share_of_the_interval_stalled() {
        let dir = tempfile::tempdir().unwrap();
        let w = |r: &str, some: u64| {
            std::fs::write(
                dir.path().join(format!("{r}.pressure")),
                format!("some avg10=1.00 avg60=0 avg300=0 total={some}\nfull avg10=0.50 avg60=0 avg300=0 total=0\n"),
            )
            .unwrap()
        };
        for r in RESOURCES {
            w(r, 1000);
        }
        let mut p = PsiFiles::cgroup(dir.path()).unwrap();
        let first = p.read(1_000_000_000);
        assert_eq!(
            first.memory.as_ref().unwrap().some.rate,
            None,
            "no rate at the first reading"
        );
        w("memory", 1000 + 250_000);
        let second = p.read(1_500_000_000);
        let m = second.memory.unwrap();
        assert_eq!(m.some.avg10, 1.0);
        assert_eq!(m.some.rate, Some(50.0), "250 ms stalled in 500 ms");
        assert_eq!(m.full.unwrap().rate, Some(0.0));
    }

    #[test]
    fn host_pressure_reads_here_or_says_why_not() {
        match PsiFiles::host() {
            Ok(mut p) => assert!(p.read(provetop_shared::clock::mono_ns()).memory.is_some()),
            Err(why) => eprintln!("no PSI on this kernel: {why}"),
        }
    }
}
