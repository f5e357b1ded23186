//! System memory: `MemTotal` and `MemAvailable` from `/proc/meminfo`, kept open.
//!
//! While more than an eighth of memory is available, the file is re-read at most every
//! [`RELAXED_EVERY`] and the latest reading stands in between; at an eighth or less, every
//! sample. A cold read after the sampler's sleep is a visible share of its cost
//! (docs/measurements.md#what-a-sample-costs), and MemAvailable matters by the sample only
//! when it runs short.

use std::io;
use std::path::Path;
use std::time::{Duration, Instant};

use crate::procfile::{leading_u64, KeptOpen};

/// How long a reading stands while memory is plentiful.
pub const RELAXED_EVERY: Duration = Duration::from_millis(200);

/// An open `/proc/meminfo` and its latest reading.
#[derive(Debug)]
pub struct MemInfo {
    file: KeptOpen,
    /// When, MemTotal, MemAvailable.
    last: Option<(Instant, u64, u64)>,
}

impl MemInfo {
    /// Open `/proc/meminfo`.
    pub fn open() -> io::Result<Self> {
        Self::open_at("/proc/meminfo")
    }

    /// Open a meminfo-format file.
    pub fn open_at(path: impl AsRef<Path>) -> io::Result<Self> {
        KeptOpen::open(path.as_ref(), 8192).map(|file| MemInfo { file, last: None })
    }

    /// (MemTotal, MemAvailable) in bytes, read now.
    pub fn read(&mut self) -> io::Result<(u64, u64)> {
        self.file.read().map(parse)
    }

    /// (MemTotal, MemAvailable) for a sample at `now`: the latest reading while it is younger
    /// than [`RELAXED_EVERY`] and more than an eighth of memory was available, else read now
    /// (`None` when the read fails: a failed read is never covered by an old one).
    pub fn reading(&mut self, now: Instant) -> Option<(u64, u64)> {
        if let Some((at, total, avail)) = self.last {
            if avail > total / 8 && now.saturating_duration_since(at) < RELAXED_EVERY {
                return Some((total, avail));
            }
        }
        match self.read() {
            Ok((total, avail)) => {
                self.last = Some((now, total, avail));
                Some((total, avail))
            }
            Err(_) => {
                self.last = None;
                None
            }
        }
    }
}

/// (MemTotal, MemAvailable) of a meminfo text, bytes.
fn parse(text: &[u8]) -> (u64, u64) {
    let (mut total, mut avail) = (0, 0);
    for line in text.split(|&b| b == b'\n') {
        if let Some(v) = line.strip_prefix(b"MemTotal:") {
            total = leading_u64(v) * 1024;
        } else if let Some(v) = line.strip_prefix(b"MemAvailable:") {
            avail = leading_u64(v) * 1024;
            break;
        }
    }
    (total, avail)
}

#[cfg(test)]
mod tests {
    #[test]
    fn parses_total_and_available() {
        let text = b"MemTotal:  100 kB\nMemFree:  5 kB\nMemAvailable:  50 kB\nBuffers: 1 kB\n";
        assert_eq!(super::parse(text), (100 << 10, 50 << 10));
    }

    #[test]
    fn a_reading_stands_for_200_ms_while_memory_is_plentiful_and_every_sample_reads_when_it_is_short(
    ) {
        use std::time::{Duration, Instant};
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("meminfo");
        let write = |avail: u64| {
            std::fs::write(&f, format!("MemTotal: 800 kB\nMemAvailable: {avail} kB\n")).unwrap()
        };
        write(400);
        let mut m = super::MemInfo::open_at(&f).unwrap();
        let t0 = Instant::now();
        let ms = |n: u64| t0 + Duration::from_millis(n);
        assert_eq!(m.reading(t0), Some((800 << 10, 400 << 10)));
        write(300);
        assert_eq!(m.reading(ms(150)), Some((800 << 10, 400 << 10)));
        assert_eq!(m.reading(ms(200)), Some((800 << 10, 300 << 10)));
        // An eighth or less available: read every sample.
        write(100);
        assert_eq!(m.reading(ms(400)), Some((800 << 10, 100 << 10)));
        write(90);
        assert_eq!(m.reading(ms(410)), Some((800 << 10, 90 << 10)));
    }

    #[test]
    fn reads_meminfo() {
        let (t, a) = super::MemInfo::open().unwrap().read().unwrap();
        assert!(t > 0 && a > 0 && a <= t);
    }
}
