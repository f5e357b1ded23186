//! System memory: `MemTotal` and `MemAvailable` from `/proc/meminfo`, kept open.

use std::io;

use crate::procfile::{leading_u64, KeptOpen};

/// An open `/proc/meminfo`.
#[derive(Debug)]
pub struct MemInfo(KeptOpen);

impl MemInfo {
    /// Open `/proc/meminfo`.
    pub fn open() -> io::Result<Self> {
        KeptOpen::open("/proc/meminfo", 8192).map(MemInfo)
    }

    /// (MemTotal, MemAvailable) in bytes.
    pub fn read(&mut self) -> io::Result<(u64, u64)> {
        self.0.read().map(parse)
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
    fn reads_meminfo() {
        let (t, a) = super::MemInfo::open().unwrap().read().unwrap();
        assert!(t > 0 && a > 0 && a <= t);
    }
}
