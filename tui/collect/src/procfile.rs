//! Kernel-generated text files (`/proc`, cgroup) read whole through a file kept open, and the
//! numbers in them.
//!
//! Re-reading an open file from offset 0 skips the open and the close, about half the cost of
//! a read (docs/measurements.md#the-sampler), and the sampler reads a status file at every
//! tick for every process of the tree.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::Path;

/// The fields of a `/proc/PID/stat` text after the command name, numbered as proc(5) numbers
/// them (3 = state, 4 = ppid, 5 = pgrp, …, 22 = starttime). The command is skipped by its
/// *last* `)`: a comm may hold spaces and parentheses, and the kernel does not escape them.
#[derive(Debug, Clone, Copy)]
pub struct StatFields<'a>(&'a str);

impl<'a> StatFields<'a> {
    /// `None` when the text has no `)` or is not UTF-8 after it.
    pub fn parse(text: &'a [u8]) -> Option<Self> {
        let close = text.iter().rposition(|&b| b == b')')?;
        std::str::from_utf8(&text[close + 1..]).ok().map(StatFields)
    }

    /// Field `n` as a number; `None` when it is missing or not one.
    pub fn num<T: std::str::FromStr>(&self, n: usize) -> Option<T> {
        self.0
            .split_ascii_whitespace()
            .nth(n.checked_sub(3)?)?
            .parse()
            .ok()
    }

    /// Field 3, the state letter (`R`, `S`, `Z`, …).
    pub fn state(&self) -> Option<char> {
        self.0.split_ascii_whitespace().next()?.chars().next()
    }
}

/// The kernel's clock tick (`SC_CLK_TCK`), the unit of `stat`'s CPU times.
pub fn clk_tck() -> f64 {
    nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK)
        .ok()
        .flatten()
        .filter(|&t| t > 0)
        // Linux has reported 100 to user space on every architecture since 2.6.
        .unwrap_or(100) as f64
}

/// `/proc/PID/stat` read once (for the callers that look at a process once, not every tick).
pub fn read_stat(pid: u32) -> Option<String> {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()
}

/// An open file, re-read whole from offset 0 on every [`read`](Self::read).
#[derive(Debug)]
pub struct KeptOpen {
    file: File,
    buf: Vec<u8>,
}

impl KeptOpen {
    /// Open `path`, with room for `size` bytes before the buffer has to grow.
    pub fn open(path: impl AsRef<Path>, size: usize) -> io::Result<Self> {
        Ok(KeptOpen {
            file: File::open(path)?,
            buf: vec![0; size.max(1)],
        })
    }

    /// The file's current text, for a file of at most one page (`/proc/PID/status`,
    /// `/proc/meminfo`, cgroup files): one read returns it whole.
    pub fn read(&mut self) -> io::Result<&[u8]> {
        // One read from offset 0 returns the whole (small) file; a second read at a
        // non-zero offset would make the kernel generate it all again. Only a completely
        // filled buffer means there may be more.
        loop {
            let len = self.file.read_at(&mut self.buf, 0)?;
            if len < self.buf.len() {
                return Ok(&self.buf[..len]);
            }
            let grown = self.buf.len() * 2;
            self.buf.resize(grown, 0);
        }
    }
}

/// An open file of any length (`/proc/PID/maps`), re-read from its start to its end on every
/// [`read`](Self::read). A seq_file returns at most one page per read whatever the buffer
/// (the kernel fills its own page-sized buffer), so a short read is no end of file here.
#[derive(Debug)]
pub struct KeptOpenLong {
    file: File,
    buf: Vec<u8>,
}

impl KeptOpenLong {
    /// Open `path`.
    pub fn open(path: impl AsRef<Path>) -> io::Result<Self> {
        Ok(KeptOpenLong {
            file: File::open(path)?,
            buf: Vec::with_capacity(64 << 10),
        })
    }

    /// The file's current text, whole.
    pub fn read(&mut self) -> io::Result<&[u8]> {
        use std::io::{Read, Seek, SeekFrom};
        self.file.seek(SeekFrom::Start(0))?;
        self.buf.clear();
        self.file.read_to_end(&mut self.buf)?;
        Ok(&self.buf)
    }
}

/// The unsigned integer at the start of `s` after any whitespace (`"  1024 kB"` → 1024), 0
/// when there is none.
pub fn leading_u64(s: &[u8]) -> u64 {
    s.trim_ascii_start()
        .iter()
        .take_while(|b| b.is_ascii_digit())
        .fold(0u64, |n, &b| {
            n.saturating_mul(10).saturating_add(u64::from(b - b'0'))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_are_numbered_as_proc5_numbers_them_after_the_last_parenthesis() {
        let text =
            b"4242 (a (b) c) S 17 4242 4242 0 -1 4194560 9 0 3 0 11 22 0 0 20 0 5 0 987654 1 2\n";
        let f = StatFields::parse(text).unwrap();
        assert_eq!(f.state(), Some('S'));
        assert_eq!(f.num::<u32>(4), Some(17));
        assert_eq!(f.num::<i32>(5), Some(4242));
        assert_eq!(f.num::<u64>(14), Some(11));
        assert_eq!(f.num::<u32>(20), Some(5));
        assert_eq!(f.num::<u64>(22), Some(987654));
        assert_eq!(f.num::<u64>(99), None);
        assert_eq!(
            f.num::<u64>(2),
            None,
            "fields 1 and 2 are before the command's end"
        );
        assert!(StatFields::parse(b"4242 no parenthesis").is_none());
    }

    #[test]
    fn leading_numbers() {
        assert_eq!(leading_u64(b"\t  2048 kB"), 2048);
        assert_eq!(leading_u64(b"3"), 3);
        assert_eq!(leading_u64(b" kB"), 0);
        assert_eq!(leading_u64(b""), 0);
        assert_eq!(leading_u64(b"99999999999999999999999"), u64::MAX);
    }

    #[test]
    fn a_long_seq_file_is_read_to_its_end() {
        // smaps is longer than the kernel's one-page chunks.
        let mut f = KeptOpenLong::open("/proc/self/smaps").unwrap();
        let whole = std::fs::read("/proc/self/smaps").unwrap();
        assert!(whole.len() > 4096, "{}", whole.len());
        let lines = |t: &[u8]| t.iter().filter(|&&b| b == b'\n').count();
        // Other test threads map and unmap memory meanwhile (a mapping is ~25 lines): a few
        // mappings apart, never a page's worth (a read cut at a page is a tenth of the file).
        let near = |a: usize, b: usize| a.abs_diff(b) <= 100;
        let a = lines(f.read().unwrap());
        let w = lines(&whole);
        assert!(near(a, w), "{a} lines against {w}");
        let again = lines(f.read().unwrap());
        assert!(near(again, a), "{again} lines, then {a}");
    }

    #[test]
    fn rereads_grow_past_a_small_buffer() {
        let mut f = KeptOpen::open("/proc/self/status", 16).unwrap();
        let a = f.read().unwrap().to_vec();
        assert!(a.starts_with(b"Name:"), "{}", String::from_utf8_lossy(&a));
        assert!(a.len() > 16);
        assert!(f.read().unwrap().starts_with(b"Name:"));
    }
}
