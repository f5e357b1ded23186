//! OOM kills named by the kernel log: `/dev/kmsg`, followed from its end (or searched from its
//! start for one pid), non-blocking.
//!
//! The OOM killer writes, per victim, a summary line before it kills
//! (`oom-kill:constraint=CONSTRAINT_MEMCG,…,oom_memcg=/a,task_memcg=/a/b,task=cmd,pid=N,uid=0`,
//! Linux 4.19+) and a line once the SIGKILL is sent (`Memory cgroup out of memory: Killed
//! process N (cmd) total-vm:…`, or `Out of memory: Killed process N (cmd) …` for the host).
//! A victim is complete once its `Killed process` line is read; the summary's cgroups are
//! added where it came first. Reading `/dev/kmsg` needs root or `kernel.dmesg_restrict = 0`:
//! where it cannot be opened, OOM kills are known from the cgroup counters alone.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom};
use std::os::fd::AsFd;
use std::os::unix::fs::OpenOptionsExt;
use std::time::{Duration, Instant};

/// One OOM-killed process, as the kernel log names it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Victim {
    pub pid: u32,
    /// Its command (the kernel's `comm`, at most 15 bytes).
    pub command: String,
    /// The cgroup that ran out of memory, when the summary line named it.
    pub oom_memcg: Option<String>,
    /// The victim's own cgroup, when the summary line named it.
    pub task_memcg: Option<String>,
    /// Whether a memory cgroup's limit (not the host's memory) ran out.
    pub memcg_oom: bool,
    /// The log's timestamp, µs since boot (the monotonic clock, as printk keeps it).
    pub t_us: u64,
    /// The `Killed process` line, as the kernel wrote it.
    pub text: String,
}

impl Victim {
    /// Whether its cgroup is `path` or below it.
    pub fn in_cgroup(&self, path: &str) -> bool {
        let under = |p: &str| {
            p == path || (path == "/") || p.strip_prefix(path).is_some_and(|r| r.starts_with('/'))
        };
        self.task_memcg.as_deref().is_some_and(under)
    }

    /// "OOM kill of pid 4242 (python3) in /a/b" (the cgroup that ran out, where known).
    pub fn describe(&self) -> String {
        let mut s = format!("OOM kill of pid {} ({})", self.pid, self.command);
        match (&self.oom_memcg, self.memcg_oom) {
            (Some(c), true) => s.push_str(&format!(" by cgroup {c}'s limit")),
            (_, false) => s.push_str(" (host out of memory)"),
            _ => {}
        }
        s
    }
}

/// What one kernel log record says about an OOM kill.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OomLine {
    /// `oom-kill:…` (before the kill).
    Summary {
        pid: u32,
        task: String,
        oom_memcg: Option<String>,
        task_memcg: Option<String>,
    },
    /// `… Killed process N (cmd) …`.
    Killed {
        pid: u32,
        command: String,
        memcg: bool,
        text: String,
    },
}

/// A `/dev/kmsg` record (`prio,seq,t_us,flags;message`, continuation lines after) as
/// (timestamp µs, what it says about an OOM kill), `None` for any other record.
pub fn parse_record(rec: &str) -> Option<(u64, OomLine)> {
    let (head, msg) = rec.split_once(';')?;
    let t_us = head.split(',').nth(2)?.parse().ok()?;
    let msg = msg.lines().next()?.trim_end();
    parse_message(msg).map(|l| (t_us, l))
}

/// The OOM kill a log message (without the record's header) tells of.
pub fn parse_message(msg: &str) -> Option<OomLine> {
    if let Some(rest) = msg.strip_prefix("oom-kill:") {
        let mut pid = None;
        let (mut task, mut oom_memcg, mut task_memcg) = (None, None, None);
        // task= is last but one; a comm with a comma would split it: it is taken up to ",pid=".
        if let Some((before, after)) = rest.rsplit_once(",pid=") {
            pid = after.split(',').next()?.parse().ok();
            if let Some((_, t)) = before.rsplit_once("task=") {
                task = Some(t.to_string());
            }
            for kv in before.split(',') {
                if let Some(v) = kv.strip_prefix("oom_memcg=") {
                    oom_memcg = Some(v.to_string());
                } else if let Some(v) = kv.strip_prefix("task_memcg=") {
                    task_memcg = Some(v.to_string());
                }
            }
        }
        return Some(OomLine::Summary {
            pid: pid?,
            task: task.unwrap_or_default(),
            oom_memcg,
            task_memcg,
        });
    }
    let at = msg.find("Killed process ")?;
    let rest = &msg[at + "Killed process ".len()..];
    let (pid, rest) = rest.split_once(" (")?;
    let pid = pid.parse().ok()?;
    let end = rest
        .find(") total-vm")
        .or_else(|| rest.rfind(')'))
        .unwrap_or(rest.len());
    Some(OomLine::Killed {
        pid,
        command: rest[..end].to_string(),
        memcg: msg[..at].contains("Memory cgroup out of memory"),
        text: msg.to_string(),
    })
}

/// `/dev/kmsg` open for reading without blocking.
#[derive(Debug)]
pub struct Kmsg {
    file: File,
    buf: Vec<u8>,
    /// Summaries whose `Killed process` line is not read yet.
    pending: Vec<Victim>,
}

impl Kmsg {
    /// Open the kernel log at its end: only what is written from now on.
    pub fn open_at_end() -> io::Result<Kmsg> {
        let mut k = Kmsg::open()?;
        k.file.seek(SeekFrom::End(0))?;
        Ok(k)
    }

    /// Open the kernel log at its oldest record still held.
    pub fn open() -> io::Result<Kmsg> {
        let file = OpenOptions::new()
            .read(true)
            .custom_flags(nix::libc::O_NONBLOCK)
            .open("/dev/kmsg")?;
        Ok(Kmsg {
            file,
            // A record is at most about 8 KiB (a read into a smaller buffer fails).
            buf: vec![0; 16 << 10],
            pending: Vec::new(),
        })
    }

    /// The file, to poll for records (readable: POLLIN).
    pub fn fd(&self) -> std::os::fd::BorrowedFd<'_> {
        self.file.as_fd()
    }

    /// Read every record written since the last call: the victims whose kill it completes.
    pub fn drain(&mut self) -> Vec<Victim> {
        let mut out = Vec::new();
        loop {
            match self.file.read(&mut self.buf) {
                Ok(0) => break,
                Ok(n) => {
                    let rec = String::from_utf8_lossy(&self.buf[..n]).into_owned();
                    if let Some((t_us, line)) = parse_record(&rec) {
                        self.take(t_us, line, &mut out);
                    }
                }
                // Records were overwritten before they were read: go on with the next.
                Err(e) if e.raw_os_error() == Some(nix::libc::EPIPE) => continue,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => break,
            }
        }
        out
    }

    fn take(&mut self, t_us: u64, line: OomLine, out: &mut Vec<Victim>) {
        match line {
            OomLine::Summary {
                pid,
                task,
                oom_memcg,
                task_memcg,
            } => {
                self.pending.retain(|v| v.pid != pid);
                // A summary whose Killed line never came (a kernel that writes none) is
                // dropped once a few are waiting.
                if self.pending.len() >= 16 {
                    self.pending.remove(0);
                }
                self.pending.push(Victim {
                    pid,
                    command: task,
                    oom_memcg,
                    task_memcg,
                    t_us,
                    ..Victim::default()
                });
            }
            OomLine::Killed {
                pid,
                command,
                memcg,
                text,
            } => {
                let mut v = match self.pending.iter().position(|v| v.pid == pid) {
                    Some(i) => self.pending.remove(i),
                    None => Victim {
                        pid,
                        ..Victim::default()
                    },
                };
                v.command = command;
                v.memcg_oom = memcg;
                v.t_us = t_us;
                v.text = text;
                out.push(v);
            }
        }
    }
}

/// Whether the kernel log names `pid` as an OOM victim at or after `since_ns` (the monotonic
/// clock, [`provetop_shared::clock::mono_ns`]), waiting up to `wait` for the line (it follows
/// the SIGKILL by microseconds to milliseconds, so a caller that saw the process die may be
/// early). `None` when it does not, or the log is unreadable.
///
/// For `watch`: call it when the watched root disappears.
pub fn oom_kill_of(pid: u32, since_ns: u64, wait: Duration) -> Option<Victim> {
    let mut k = Kmsg::open().ok()?;
    let end = Instant::now() + wait;
    // printk's clock and CLOCK_MONOTONIC agree to well within this; a pid is not reused
    // within it.
    let since_us = (since_ns / 1000).saturating_sub(SLACK_US);
    loop {
        if let Some(v) = k
            .drain()
            .into_iter()
            .find(|v| v.pid == pid && v.t_us >= since_us)
        {
            return Some(v);
        }
        let left = end.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return None;
        }
        let ms = left.as_millis().clamp(1, u16::MAX as u128) as u16;
        let mut fds = [nix::poll::PollFd::new(k.fd(), nix::poll::PollFlags::POLLIN)];
        let _ = nix::poll::poll(&mut fds, nix::poll::PollTimeout::from(ms));
    }
}

/// How far before `since` a log line may be stamped and still count.
const SLACK_US: u64 = 1_000_000;

#[cfg(test)]
mod tests {
    use super::*;

    // Real records of a v1 memory cgroup's OOM kill on this VM (Linux 6.18).
    const SUMMARY: &str = "6,1965,10778994742,-;oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,mems_allowed=0,oom_memcg=/process_api/c576f51bb4bbcea547156b20ca532c08/kprobe13156,task_memcg=/process_api/c576f51bb4bbcea547156b20ca532c08/kprobe13156,task=provetop-memhog,pid=17738,uid=0\n";
    const KILLED: &str = "3,1966,10778994763,-;Memory cgroup out of memory: Killed process 17738 (provetop-memhog) total-vm:134932kB, anon-rss:32384kB, file-rss:1560kB, shmem-rss:0kB, UID:0 pgtables:112kB oom_score_adj:0\n SUBSYSTEM=memory\n";

    #[test]
    fn the_summary_names_both_cgroups_and_the_victim() {
        let (t, l) = parse_record(SUMMARY).unwrap();
        assert_eq!(t, 10778994742);
        let cg = "/process_api/c576f51bb4bbcea547156b20ca532c08/kprobe13156";
        assert_eq!(
            l,
            OomLine::Summary {
                pid: 17738,
                task: "provetop-memhog".into(),
                oom_memcg: Some(cg.into()),
                task_memcg: Some(cg.into()),
            }
        );
    }

    #[test]
    fn killed_lines_of_a_cgroup_and_of_the_host() {
        let (_, l) = parse_record(KILLED).unwrap();
        assert!(
            matches!(l, OomLine::Killed { pid: 17738, ref command, memcg: true, .. } if command == "provetop-memhog")
        );
        let host = "Out of memory: Killed process 4242 (python3 (x)) total-vm:9kB, anon-rss:1kB";
        assert!(
            matches!(parse_message(host), Some(OomLine::Killed { pid: 4242, ref command, memcg: false, .. }) if command == "python3 (x)")
        );
        assert_eq!(
            parse_message("oom_reaper: reaped process 17738 (provetop-memhog)"),
            None
        );
        assert_eq!(parse_record("6,1,2,-;workingset_refault_anon 0\n"), None);
    }

    #[test]
    fn a_victim_is_within_its_cgroup_and_below_it_only() {
        let v = Victim {
            task_memcg: Some("/a/b".into()),
            ..Victim::default()
        };
        assert!(v.in_cgroup("/a/b") && v.in_cgroup("/a") && v.in_cgroup("/"));
        assert!(!v.in_cgroup("/a/bc") && !v.in_cgroup("/c"));
    }
}
