//! The writer thread: every [`TICK`] it drains every thread's ring, formats the events as
//! lines (the wire format: `docs/nvtx.md`), writes them to provetop's pipe, and tops up each
//! thread's budget so that the process records at most [`RATE`] ranges and markers a second
//! (after a [`BURST`] per thread). Counts of what was not recorded go out whenever they move.
//!
//! The program never waits for it: the pipe is non-blocking and a full pipe only delays the
//! writer (the rings then fill and refuse, counted). Writes are cut at line boundaries into
//! pieces of at most `PIPE_BUF` bytes, so a forked-and-exec'd child writing to the same pipe
//! never splits a line. At exit ([`flush_at_exit`], an `atexit` handler) what is left is
//! written, waiting at most [`EXIT_WAIT`] for a full pipe.

use std::fmt::Write as _;
use std::os::fd::RawFd;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::Duration;

use crate::local::{LOST_ENDS, ORPHANED, UNBALANCED};
use crate::names::{self, DROPPED_NAMES, REFUSED_DOMAINS, REFUSED_STRINGS};
use crate::ring::{Kind, Ring, Slot};

/// How often the rings are drained.
pub const TICK: Duration = Duration::from_millis(5);
/// Ranges and markers recorded per second by the whole process, sustained.
pub const RATE: i64 = 20_000;
/// Ranges and markers a thread may record in one burst.
pub const BURST: i64 = 20_000;
/// Longest wait for a full pipe at exit.
pub const EXIT_WAIT: Duration = Duration::from_millis(300);

struct State {
    fd: RawFd,
    rings: Vec<Arc<Ring>>,
    /// Counts sent last: dropped, refused strings, unbalanced pops, lost ends.
    sent: [u64; 4],
    /// Drops of rings already forgotten (their threads ended).
    dropped_before: u64,
    buf: String,
    /// The pipe failed (provetop went away): nothing more is written.
    broken: bool,
}

fn state() -> &'static Mutex<Option<State>> {
    static STATE: OnceLock<Mutex<Option<State>>> = OnceLock::new();
    STATE.get_or_init(|| Mutex::new(None))
}

fn lock() -> MutexGuard<'static, Option<State>> {
    state().lock().unwrap_or_else(|p| p.into_inner())
}

/// Rings of threads new since the writer's last pass (a lock of their own: the writer may
/// hold its state's lock while it waits for a full pipe, and a thread's first NVTX call must
/// not wait for that).
fn new_rings() -> MutexGuard<'static, Vec<Arc<Ring>>> {
    static NEW: Mutex<Vec<Arc<Ring>>> = Mutex::new(Vec::new());
    NEW.lock().unwrap_or_else(|p| p.into_inner())
}

/// A new thread's ring, registered with the writer.
pub fn register(tid: u32) -> Arc<Ring> {
    let ring = Arc::new(Ring::new(tid, BURST));
    new_rings().push(ring.clone());
    ring
}

/// Start writing to `fd`: the hello line, the thread, the exit handler.
pub fn start(fd: RawFd) -> std::io::Result<()> {
    let mut buf = String::new();
    let _ = writeln!(
        buf,
        "hello\t{}\t{}",
        crate::pid(),
        env!("CARGO_PKG_VERSION")
    );
    *lock() = Some(State {
        fd,
        rings: Vec::new(),
        sent: [0; 4],
        dropped_before: 0,
        buf,
        broken: false,
    });
    std::thread::Builder::new()
        .name("provetop-nvtx".into())
        .spawn(run)?;
    // SAFETY: flush_at_exit is an `extern "C" fn()` that lives as long as the process (this
    // library is never unloaded once its initialization succeeded).
    unsafe { libc::atexit(flush_at_exit) };
    Ok(())
}

fn run() {
    block_signals();
    loop {
        std::thread::sleep(TICK);
        let mut guard = lock();
        let Some(s) = guard.as_mut() else { return };
        pass(s, None, false);
        if s.broken {
            return;
        }
    }
}

/// This thread takes no signal meant for the program, and a write to a closed pipe fails
/// with EPIPE instead of killing the program with SIGPIPE.
fn block_signals() {
    // SAFETY: the set is initialised by sigfillset before use; pthread_sigmask only changes
    // this thread's mask.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut set);
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
    }
}

extern "C" fn flush_at_exit() {
    // The writer holds the lock for a pass (microseconds) or while a full pipe keeps it
    // waiting: wait for it a bounded time, never for ever (the process is exiting).
    let deadline = std::time::Instant::now() + EXIT_WAIT;
    let mut guard = loop {
        match state().try_lock() {
            Ok(g) => break g,
            Err(std::sync::TryLockError::Poisoned(p)) => break p.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) => {
                if std::time::Instant::now() >= deadline {
                    return;
                }
                std::thread::sleep(Duration::from_millis(1));
            }
        }
    };
    if let Some(s) = guard.as_mut() {
        pass(s, Some(EXIT_WAIT), true);
        s.broken = true;
    }
}

/// Drain, count, refill, write (with `bye`: the process is exiting, said last).
fn pass(s: &mut State, wait: Option<Duration>, bye: bool) {
    names::take_pending(&mut s.buf);
    s.rings.append(&mut new_rings());
    let pid = crate::pid();
    let mut dropped = s.dropped_before;
    let live = s.rings.len().max(1) as i64;
    let add = (RATE * TICK.as_micros() as i64 / 1_000_000 / live).max(1);
    let mut ended = false;
    for r in &s.rings {
        let buf = &mut s.buf;
        r.drain(|slot| format_slot(buf, pid, r.tid, slot));
        r.refill(add, BURST);
        dropped += r.dropped.load(Ordering::Relaxed);
        ended |= r.ended.load(Ordering::Acquire);
    }
    if ended {
        // An ended thread wrote its last slots before it was marked (Release/Acquire): drain
        // once more, then forget it.
        let (buf, before) = (&mut s.buf, &mut s.dropped_before);
        s.rings.retain(|r| {
            if !r.ended.load(Ordering::Acquire) {
                return true;
            }
            r.drain(|slot| format_slot(buf, pid, r.tid, slot));
            *before += r.dropped.load(Ordering::Relaxed);
            false
        });
    }
    let counts = [
        dropped + ORPHANED.load(Ordering::Relaxed) + DROPPED_NAMES.load(Ordering::Relaxed),
        REFUSED_STRINGS.load(Ordering::Relaxed) + REFUSED_DOMAINS.load(Ordering::Relaxed),
        UNBALANCED.load(Ordering::Relaxed),
        LOST_ENDS.load(Ordering::Relaxed),
    ];
    if counts != s.sent {
        let [d, r, u, l] = counts;
        let _ = writeln!(s.buf, "dropped\t{pid}\t{d}\t{r}\t{u}\t{l}");
        s.sent = counts;
    }
    if bye {
        let _ = writeln!(s.buf, "bye\t{pid}");
    }
    if !s.broken && !s.buf.is_empty() {
        s.broken = write_lines(s.fd, s.buf.as_bytes(), wait).is_err();
    }
    s.buf.clear();
}

fn format_slot(buf: &mut String, pid: u32, tid: u32, s: &Slot) {
    let (ts, d) = (s.ts, s.domain);
    let _ = match s.kind {
        Kind::Push => write!(
            buf,
            "push\t{pid}\t{tid}\t{ts}\t{d}\t{}\t{}\t",
            s.arg, s.category
        ),
        Kind::Start => write!(
            buf,
            "start\t{pid}\t{tid}\t{ts}\t{d}\t{}\t{}\t",
            s.arg, s.category
        ),
        Kind::Mark => write!(buf, "mark\t{pid}\t{tid}\t{ts}\t{d}\t{}\t", s.category),
        Kind::Pop => writeln!(buf, "pop\t{pid}\t{tid}\t{ts}\t{d}\t{}", s.arg),
        Kind::End => writeln!(buf, "end\t{pid}\t{tid}\t{ts}\t{d}\t{}", s.arg),
    };
    if matches!(s.kind, Kind::Push | Kind::Start | Kind::Mark) {
        match s.name {
            crate::ring::Name::Registered(text) => buf.push_str(text),
            crate::ring::Name::Inline(_) => buf.push_str(&names::clean(s.name_bytes())),
        }
        buf.push('\n');
    }
}

/// Write `bytes` (whole lines) in pieces of at most PIPE_BUF, each ending at a line end.
/// A full pipe is waited for only up to `wait` (the writer thread: as long as it takes).
fn write_lines(fd: RawFd, mut bytes: &[u8], wait: Option<Duration>) -> Result<(), ()> {
    while !bytes.is_empty() {
        let mut n = bytes.len().min(libc::PIPE_BUF);
        if n < bytes.len() {
            // Back to the last line end inside the piece (a longer line goes whole).
            n = match bytes[..n].iter().rposition(|&b| b == b'\n') {
                Some(i) => i + 1,
                None => n,
            };
        }
        // SAFETY: the pointer and length describe the live slice `bytes[..n]`.
        let w = unsafe { libc::write(fd, bytes.as_ptr().cast(), n) };
        if w >= 0 {
            bytes = &bytes[w as usize..];
            continue;
        }
        match std::io::Error::last_os_error().raw_os_error() {
            Some(libc::EINTR) => {}
            Some(libc::EAGAIN) => {
                let ms = wait.map_or(-1, |d| d.as_millis() as i32);
                let mut p = libc::pollfd {
                    fd,
                    events: libc::POLLOUT,
                    revents: 0,
                };
                // SAFETY: one valid pollfd.
                if unsafe { libc::poll(&mut p, 1, ms) } <= 0 {
                    return Err(());
                }
            }
            _ => return Err(()),
        }
    }
    Ok(())
}
