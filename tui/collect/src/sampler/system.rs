//! System memory: `MemTotal` and `MemAvailable` from `/proc/meminfo`, kept open.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;

/// An open `/proc/meminfo`.
#[derive(Debug)]
pub struct MemInfo {
    file: File,
    buf: Vec<u8>,
}

impl MemInfo {
    /// Open `/proc/meminfo`.
    pub fn open() -> io::Result<Self> {
        Ok(MemInfo {
            file: File::open("/proc/meminfo")?,
            buf: vec![0; 8192],
        })
    }

    /// (MemTotal, MemAvailable) in bytes.
    pub fn read(&mut self) -> io::Result<(u64, u64)> {
        // One read from offset 0 returns the whole (small) file; a second read at a
        // non-zero offset would make the kernel generate it all again. Only a completely
        // filled buffer means there may be more.
        let mut len;
        loop {
            len = self.file.read_at(&mut self.buf, 0)?;
            if len < self.buf.len() {
                break;
            }
            let grown = self.buf.len() * 2;
            self.buf.resize(grown, 0);
        }
        Ok(parse(&self.buf[..len]))
    }
}

/// (MemTotal, MemAvailable) of a meminfo text, bytes.
pub fn parse(text: &[u8]) -> (u64, u64) {
    let (mut total, mut avail) = (0, 0);
    for line in text.split(|&b| b == b'\n') {
        let slot = if let Some(v) = line.strip_prefix(b"MemTotal:") {
            total = kb(v);
            continue;
        } else if let Some(v) = line.strip_prefix(b"MemAvailable:") {
            v
        } else {
            continue;
        };
        avail = kb(slot);
        break;
    }
    (total, avail)
}

fn kb(v: &[u8]) -> u64 {
    let v = v.trim_ascii_start();
    let end = v
        .iter()
        .position(|b| !b.is_ascii_digit())
        .unwrap_or(v.len());
    std::str::from_utf8(&v[..end])
        .ok()
        .and_then(|d| d.parse::<u64>().ok())
        .unwrap_or(0)
        * 1024
}

#[cfg(test)]
mod tests {
    #[test]
    fn reads_meminfo() {
        let (t, a) = super::MemInfo::open().unwrap().read().unwrap();
        assert!(t > 0 && a > 0 && a <= t);
    }
}
