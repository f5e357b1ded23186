//! v2's `memory.peak` as an interval peak: since Linux 6.12 any non-empty write to an open
//! `memory.peak` resets the watermark *for that open file only* (reads through other files,
//! and the cgroup's own watermark, are untouched), so reading it and writing to it at every
//! sample gives the highest usage between samples without spoiling anybody else's reading.
//!
//! Older kernels make `memory.peak` read-only (opening it for writing fails) or have none
//! (before 5.19), and v1 has no such file: [`PeakReset::open`] says why it is unavailable.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::Path;

/// An open `memory.peak` whose watermark provetop resets for itself.
#[derive(Debug)]
pub struct PeakReset {
    file: File,
    buf: [u8; 32],
}

impl PeakReset {
    /// Open `dir/memory.peak` for reading and writing and reset it once; `Err` says why the
    /// per-file reset is unavailable here.
    pub fn open(dir: &Path) -> Result<PeakReset, String> {
        let path = dir.join("memory.peak");
        if !path.exists() {
            return Err("no memory.peak (cgroup v1, or a kernel before 5.19)".into());
        }
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(&path)
            .map_err(|e| {
                format!("memory.peak cannot be reset per file ({e}: Linux before 6.12)")
            })?;
        let mut p = PeakReset { file, buf: [0; 32] };
        p.reset()
            .map_err(|e| format!("writing to memory.peak failed ({e}): no per-file reset"))?;
        p.read()
            .map_err(|e| format!("memory.peak unreadable ({e})"))?;
        Ok(p)
    }

    /// The highest usage since the last [`take`](Self::take) (or the open), and a reset.
    pub fn take(&mut self) -> io::Result<u64> {
        let v = self.read()?;
        self.reset()?;
        Ok(v)
    }

    fn read(&mut self) -> io::Result<u64> {
        let n = self.file.read_at(&mut self.buf, 0)?;
        std::str::from_utf8(&self.buf[..n])
            .ok()
            .and_then(|t| t.trim().parse().ok())
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "memory.peak: not a number"))
    }

    fn reset(&mut self) -> io::Result<()> {
        self.file.write_at(b"reset\n", 0).map(drop)
    }
}
