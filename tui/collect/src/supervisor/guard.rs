//! The guard: a small process of provetop's own (the provetop binary re-executed with a
//! hidden subcommand) that kills every supervised tree when provetop dies without cleaning
//! up (`kill -9`), where the child's parent-death signal reaches only the child itself.
//!
//! Provetop writes each process it remembers in a supervised tree (the child, and every
//! descendant the supervisor's walk finds: those that left the group with `setsid` too) to
//! the guard's stdin as `PID STARTTIME` lines. The write end is provetop's alone (close on
//! exec), so end-of-file on the guard's stdin means provetop is gone, however it ended.
//! Then the guard SIGKILLs every remembered process that is still the one remembered (pid
//! and start time), the members of their process groups, and all their descendants, and
//! repeats until none is left. On a normal exit the trees are already gone and the guard
//! finds nothing to kill.
//!
//! The guard is not between provetop and the child: the child's stdin, fd 3, output pipe,
//! exit status and OOM detection are exactly as without it. It runs in a process group of
//! its own (a Ctrl-C for provetop does not end it first). Without it (no [`enable`], as in
//! a program embedding the supervisor, or when it cannot start) the trees are covered as
//! before: parent-death signal of the child, and the kill on stop.

use std::collections::HashMap;
use std::io::{BufRead, Write};
use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use crate::procfile::{read_stat, StatFields};

/// The hidden subcommand the guard runs as: `provetop __guard`.
pub const GUARD_ARG: &str = "__guard";

static EXE: OnceLock<PathBuf> = OnceLock::new();
static PIPE: Mutex<Option<Guard>> = Mutex::new(None);

struct Guard {
    stdin: std::process::ChildStdin,
    // Kept so the handle is not dropped; the guard is never waited for (it outlives us).
    _child: std::process::Child,
}

/// Let the supervisor start `exe GUARD_ARG` as the guard at its first child (the app
/// calls this with its own binary, which must run [`guard_main`] for that argument).
pub fn enable(exe: PathBuf) {
    let _ = EXE.set(exe);
}

fn start(exe: &PathBuf) -> Option<Guard> {
    use std::os::unix::process::CommandExt;
    let mut child = super::registry::spawn_helper(|| {
        std::process::Command::new(exe)
            .arg(GUARD_ARG)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .process_group(0)
            .spawn()
    })
    .ok()?;
    let stdin = child.stdin.take()?;
    // Never block the supervisor on a slow guard: a line that does not fit is dropped.
    let fd = stdin.as_raw_fd();
    let fl = nix::fcntl::fcntl(fd, nix::fcntl::FcntlArg::F_GETFL).ok()?;
    let fl = nix::fcntl::OFlag::from_bits_truncate(fl) | nix::fcntl::OFlag::O_NONBLOCK;
    nix::fcntl::fcntl(fd, nix::fcntl::FcntlArg::F_SETFL(fl)).ok()?;
    Some(Guard {
        stdin,
        _child: child,
    })
}

/// Tell the guard (started now if enabled and not yet running) that `pid`, started at
/// `start` (clock ticks since boot), belongs to a supervised tree.
pub fn remember(pid: u32, start: u64) {
    let Some(exe) = EXE.get() else { return };
    let mut g = PIPE.lock().unwrap_or_else(|e| e.into_inner());
    if g.is_none() {
        *g = start_once(exe);
    }
    if let Some(guard) = g.as_mut() {
        let line = format!("{pid} {start}\n");
        match guard.stdin.write(line.as_bytes()) {
            Ok(n) if n == line.len() => {}
            // A partial line would corrupt the next one: give the guard up rather.
            Ok(_) => *g = None,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(_) => *g = None,
        }
    }
}

/// The guard is started at most once; a failed start is not retried at every child.
fn start_once(exe: &PathBuf) -> Option<Guard> {
    static TRIED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    if TRIED.swap(true, std::sync::atomic::Ordering::AcqRel) {
        return None;
    }
    start(exe)
}

/// One process from `/proc/PID/stat`: parent, process group, start time, state.
#[derive(Clone, Copy)]
struct Proc {
    ppid: u32,
    pgid: i32,
    start: u64,
    state: char,
}

fn stat(pid: u32) -> Option<Proc> {
    let s = read_stat(pid)?;
    let f = StatFields::parse(s.as_bytes())?;
    Some(Proc {
        state: f.state()?,
        ppid: f.num(4)?,
        pgid: f.num(5)?,
        start: f.num(22)?,
    })
}

fn all() -> HashMap<u32, Proc> {
    let Ok(d) = std::fs::read_dir("/proc") else {
        return HashMap::new();
    };
    d.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|p| Some((p, stat(p)?)))
        .collect()
}

/// The live processes to kill now: the remembered ones still alive, the members of groups
/// they lead (or led: a group outlives its leader, and its id is not reused while it has
/// members), and every descendant of those. Adds them all to `known`.
fn targets(known: &mut HashMap<u32, u64>, me: u32) -> Vec<u32> {
    let procs = all();
    let ours = |p: u32, pr: &Proc| known.get(&p) == Some(&pr.start);
    let mut set: std::collections::HashSet<u32> = procs
        .iter()
        .filter(|(&p, pr)| {
            ours(p, pr)
                || (known.contains_key(&(pr.pgid as u32))
                    && procs
                        .get(&(pr.pgid as u32))
                        .is_none_or(|leader| ours(pr.pgid as u32, leader)))
        })
        .map(|(&p, _)| p)
        .collect();
    loop {
        let more: Vec<u32> = procs
            .iter()
            .filter(|(p, pr)| !set.contains(p) && set.contains(&pr.ppid))
            .map(|(&p, _)| p)
            .collect();
        if more.is_empty() {
            break;
        }
        set.extend(more);
    }
    set.remove(&me);
    let mut out = Vec::new();
    for p in set {
        let pr = procs[&p];
        known.insert(p, pr.start);
        if pr.state != 'Z' && pr.state != 'X' {
            out.push(p);
        }
    }
    out
}

/// Kill what `known` names (and everything below it) until nothing is left or `wait` is
/// over. Returns how many processes were signalled.
fn kill_all(known: &mut HashMap<u32, u64>, wait: Duration) -> usize {
    let me = std::process::id();
    let end = Instant::now() + wait;
    let mut n = 0;
    loop {
        let t = targets(known, me);
        if t.is_empty() || Instant::now() >= end {
            return n;
        }
        for p in t {
            if nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(p as i32),
                nix::sys::signal::Signal::SIGKILL,
            )
            .is_ok()
            {
                n += 1;
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The guard's whole life (`provetop __guard`): remember what provetop says until its end
/// of the pipe closes, then kill it all. Returns the exit code.
pub fn guard_main() -> i32 {
    const PRUNE_FIRST: usize = 4096;
    let mut known: HashMap<u32, u64> = HashMap::new();
    let mut prune_at = PRUNE_FIRST;
    let stdin = std::io::stdin();
    for line in stdin.lock().lines() {
        let Ok(line) = line else { break };
        let mut w = line.split_ascii_whitespace();
        if let (Some(Ok(p)), Some(Ok(s))) = (w.next().map(str::parse), w.next().map(str::parse)) {
            known.insert(p, s);
            // Bounded over a long session: forget those that have ended (whenever the
            // table has doubled since the last pruning).
            if known.len() >= prune_at {
                known.retain(|&p, s| stat(p).is_some_and(|pr| pr.start == *s));
                prune_at = (known.len() * 2).max(PRUNE_FIRST);
            }
        }
    }
    kill_all(&mut known, Duration::from_secs(10));
    0
}
