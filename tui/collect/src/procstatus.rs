//! `/proc/PID/status` memory fields, read through a file kept open (`procfile::KeptOpen`).
//!
//! An open status fd also pins the identity of the process: once the process is gone, reads
//! fail with ESRCH instead of silently reading a recycled pid.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;

use crate::procfile::{leading_u64, KeptOpen};

/// Memory fields of one process, bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MemStatus {
    /// VmRSS.
    pub rss: u64,
    /// VmHWM: peak RSS since start or since the last `clear_refs` ← 5.
    pub hwm: u64,
    /// RssAnon.
    pub anon: u64,
    /// RssFile.
    pub file: u64,
    /// RssShmem.
    pub shmem: u64,
    /// VmSwap.
    pub swap: u64,
    /// VmLck.
    pub locked: u64,
    /// VmPin.
    pub pin: u64,
    /// VmSize: the address space's size (any mmap, munmap or mremap changes it). The sampler
    /// reads the mapping table again when RssFile + RssShmem move, not VmSize.
    pub size: u64,
    pub ppid: u32,
    pub threads: u32,
    /// voluntary_ctxt_switches + nonvoluntary_ctxt_switches: of this one task (the kernel
    /// writes the thread's own counts, the main thread's in `/proc/PID/status`); `None` when
    /// either line is missing.
    pub ctx_switches: Option<u64>,
    /// True for kernel threads and zombies (no `VmRSS` line at all).
    pub no_mm: bool,
}

/// Parse the text of a status file. Unknown lines are ignored; values are in kB.
pub fn parse_status(text: &[u8]) -> MemStatus {
    let mut m = MemStatus {
        no_mm: true,
        ..MemStatus::default()
    };
    let (mut vol, mut nonvol) = (None, None);
    for line in text.split(|&b| b == b'\n') {
        let Some(colon) = line.iter().position(|&b| b == b':') else {
            continue;
        };
        let (key, rest) = (&line[..colon], &line[colon + 1..]);
        let slot: &mut u64 = match key {
            b"VmRSS" => {
                m.no_mm = false;
                &mut m.rss
            }
            b"VmHWM" => &mut m.hwm,
            b"RssAnon" => &mut m.anon,
            b"RssFile" => &mut m.file,
            b"RssShmem" => &mut m.shmem,
            b"VmSwap" => &mut m.swap,
            b"VmLck" => &mut m.locked,
            b"VmPin" => &mut m.pin,
            b"VmSize" => &mut m.size,
            b"PPid" => {
                m.ppid = leading_u64(rest) as u32;
                continue;
            }
            b"Threads" => {
                m.threads = leading_u64(rest) as u32;
                continue;
            }
            b"voluntary_ctxt_switches" => {
                vol = Some(leading_u64(rest));
                continue;
            }
            b"nonvoluntary_ctxt_switches" => {
                nonvol = Some(leading_u64(rest));
                continue;
            }
            _ => continue,
        };
        *slot = leading_u64(rest) * 1024;
    }
    m.ctx_switches = vol.zip(nonvol).map(|(a, b)| a.saturating_add(b));
    m
}

/// An open `/proc/PID/status`.
#[derive(Debug)]
pub struct StatusReader(KeptOpen);

impl StatusReader {
    /// Open the status file of `pid`.
    pub fn open(pid: u32) -> io::Result<Self> {
        KeptOpen::open(format!("/proc/{pid}/status"), 4096).map(StatusReader)
    }

    /// Read and parse the current values. Fails (ESRCH) once the process is gone.
    pub fn read(&mut self) -> io::Result<MemStatus> {
        self.0.read().map(parse_status)
    }
}

/// An open `/proc/PID/clear_refs`: [`reset_peak`](Self::reset_peak) makes VmHWM start again
/// from the current RSS.
#[derive(Debug)]
pub struct PeakResetter {
    file: File,
}

impl PeakResetter {
    /// Open `pid`'s clear_refs for writing (needs the same uid or CAP_SYS_PTRACE-like rights).
    pub fn open(pid: u32) -> io::Result<Self> {
        let file = OpenOptions::new()
            .write(true)
            .open(format!("/proc/{pid}/clear_refs"))?;
        Ok(PeakResetter { file })
    }

    /// Write "5" (reset the peak RSS). Takes the target's mmap lock for writing: may block
    /// while the target maps or unmaps large regions, so never call it on a thread that keeps
    /// a schedule.
    pub fn reset_peak(&mut self) -> io::Result<()> {
        self.file.write_at(b"5", 0).map(|_| ())
    }
}

/// Read the status of `pid` once (open, read, close).
pub fn read_status(pid: u32) -> io::Result<MemStatus> {
    StatusReader::open(pid)?.read()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_memory_fields() {
        let text = b"Name:\tx\nPPid:\t17\nVmSize:\t  9000 kB\nVmHWM:\t  2048 kB\nVmRSS:\t  1024 kB\nRssAnon:\t 600 kB\nRssFile:\t 300 kB\nRssShmem:\t 124 kB\nVmLck:\t 8 kB\nVmPin:\t 0 kB\nVmSwap:\t 4 kB\nThreads:\t3\n";
        let m = parse_status(text);
        assert_eq!(m.rss, 1024 * 1024);
        assert_eq!(m.hwm, 2048 * 1024);
        assert_eq!(m.anon, 600 * 1024);
        assert_eq!(m.file, 300 * 1024);
        assert_eq!(m.shmem, 124 * 1024);
        assert_eq!(m.locked, 8 * 1024);
        assert_eq!(m.swap, 4 * 1024);
        assert_eq!(m.ppid, 17);
        assert_eq!(m.threads, 3);
        assert_eq!(m.size, 9000 * 1024);
        assert!(!m.no_mm);
        assert_eq!(m.ctx_switches, None, "no ctxt lines: unknown, not zero");
    }

    #[test]
    fn context_switches_are_the_sum_of_the_voluntary_and_involuntary_lines() {
        let text = b"Name:\tprover\nVmRSS:\t 4 kB\nThreads:\t9\nvoluntary_ctxt_switches:\t1500\nnonvoluntary_ctxt_switches:\t27\n";
        assert_eq!(parse_status(text).ctx_switches, Some(1527));
        let half = b"Name:\tprover\nVmRSS:\t 4 kB\nvoluntary_ctxt_switches:\t1500\n";
        assert_eq!(parse_status(half).ctx_switches, None);
    }

    #[test]
    fn kernel_thread_has_no_mm() {
        let m = parse_status(b"Name:\tkthreadd\nPPid:\t0\nThreads:\t1\n");
        assert!(m.no_mm);
        assert_eq!(m.rss, 0);
    }

    #[test]
    fn reads_self() {
        let mut r = StatusReader::open(std::process::id()).unwrap();
        let a = r.read().unwrap();
        let b = r.read().unwrap();
        assert!(a.rss > 0 && b.rss > 0);
        assert!(a.hwm >= a.rss / 2);
    }
}
