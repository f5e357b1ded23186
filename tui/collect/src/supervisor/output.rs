//! The child's stdout and stderr, through provetop into the session: every line a record.
//!
//! Each stream has a pipe of its own and a thread of ours reading it (a plain thread, not the
//! runtime's blocking pool: a descendant that keeps a pipe open can keep it alive without
//! holding up provetop's exit). A line becomes an [`OutputLine`] record with its source
//! (`out`, `err`), bounded:
//!
//! * a line longer than [`MAX_OUTPUT_LINE`] bytes keeps its head, and the record says how
//!   long it was (the rest is read and skipped, at memory speed: [`crate::lines`]);
//! * lines are recorded at most at [`OUTPUT_RATE`] a second (bursts of [`OUTPUT_BURST`])
//!   and [`OUTPUT_BYTE_RATE`] bytes a second (bursts of [`OUTPUT_BYTE_BURST`]);
//!   what is over it is counted and said in a [`Mark::Dropped`] (`what: "output lines"`) as
//!   soon as lines are recorded again, and when the output ends.
//!
//! Every line, recorded or not, goes through the line grammars ([`crate::loglines`]), one
//! engine for both streams, unless the child speaks the protocol: its events are the precise
//! path, and phases are never counted twice. Derived events are never rate-limited (they are
//! few: a handful per proof).
//!
//! When the session has a recording, the raw bytes also go to `<session>.child.log` (0600),
//! up to [`LOG_CAP`] bytes, then one line saying the rest is dropped: the child's output
//! byte for byte, for tools that read logs.

use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::OwnedFd;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use provetop_shared::clock::mono_ns;
use provetop_shared::{Mark, OutputLine, OutputSource, Record, RecordBody};

use super::{Inner, Offered};
use crate::lines::{Piece, Splitter};
use crate::loglines::{Engine, Rule};

/// Most bytes of the child's output the side log holds (restarts append to it; the cap is
/// on the whole file).
pub const LOG_CAP: u64 = 64 << 20;
/// Longest line recorded whole; a longer one keeps this many bytes and its length.
pub const MAX_OUTPUT_LINE: usize = 16 << 10;
/// Output lines recorded per second, sustained.
pub const OUTPUT_RATE: f64 = 2_000.0;
/// Output lines recorded in a burst above the rate.
pub const OUTPUT_BURST: f64 = 20_000.0;
/// Bytes of output lines recorded per second, sustained (long lines count by their size:
/// 2,000 cut lines a second would otherwise be 32 MB/s of session file).
pub const OUTPUT_BYTE_RATE: f64 = 1024.0 * 1024.0;
/// Bytes of output lines recorded in a burst above the byte rate.
pub const OUTPUT_BYTE_BURST: f64 = 8.0 * 1024.0 * 1024.0;

/// What both streams of one run share.
struct Shared {
    log: Option<SideLog>,
    sink: LineSink,
}

/// Lines of output into records: each through the grammars, and recorded within the rate.
/// One per stream of lines that belong together (a child's two outputs; a followed log).
pub struct LineSink {
    bucket: f64,
    byte_bucket: f64,
    refilled: Instant,
    /// Lines over the rate since the last [`Mark::Dropped`].
    over: u64,
    engine: Engine,
    derived: Vec<Record>,
}

impl Default for LineSink {
    fn default() -> Self {
        LineSink::new()
    }
}

impl LineSink {
    /// A sink that reads lines with the built-in grammars only.
    pub fn new() -> LineSink {
        LineSink::with_rules(Vec::new())
    }

    /// A sink that reads lines with the user's `rules` (the config file's), then the built-in
    /// grammars.
    pub fn with_rules(rules: Vec<Rule>) -> LineSink {
        LineSink {
            bucket: OUTPUT_BURST,
            byte_bucket: OUTPUT_BYTE_BURST,
            refilled: Instant::now(),
            over: 0,
            engine: Engine::new(rules),
            derived: Vec::new(),
        }
    }

    /// A sink for one run of a child started at `start` (monotonic ns): no phase read from
    /// its lines begins before it.
    pub fn for_run(rules: Vec<Rule>, start: u64) -> LineSink {
        let mut sink = LineSink::with_rules(rules);
        sink.engine.set_floor(start);
        sink
    }

    /// Phases the grammars have open now (for tests).
    pub fn open_phases(&self) -> usize {
        self.engine.open_phases()
    }

    /// The lines ended at `t` (the child exited): what the grammars had open ended with it
    /// (see [`Engine::finish`]).
    pub fn finish(&mut self, t: u64, mut derived: impl FnMut(Record)) {
        let mut out = std::mem::take(&mut self.derived);
        self.engine.finish(t, &mut out);
        for rec in out.drain(..) {
            derived(rec);
        }
        self.derived = out;
    }

    /// One whole line `head` (its first bytes; `len` in all) from `source`, arrived at `t`:
    /// read by the grammars when `derive` (never a cut line), then recorded if the rate
    /// allows. Records go to `derived` (never dropped) and `recorded` (may be).
    #[allow(clippy::too_many_arguments)]
    pub fn line(
        &mut self,
        head: &[u8],
        len: u64,
        source: OutputSource,
        t: u64,
        derive: bool,
        mut derived: impl FnMut(Record),
        mut recorded: impl FnMut(Record),
    ) {
        let mut head = head;
        let cut = (len > head.len() as u64).then_some(len);
        if cut.is_none() {
            if let Some(h) = head.strip_suffix(b"\r") {
                head = h;
            }
        }
        let text = String::from_utf8_lossy(head);
        if derive && cut.is_none() {
            let mut out = std::mem::take(&mut self.derived);
            self.engine.line(&text, t, &mut out);
            for rec in out.drain(..) {
                derived(rec);
            }
            self.derived = out;
        }
        let now = Instant::now();
        let dt = now.duration_since(self.refilled).as_secs_f64();
        self.refilled = now;
        self.bucket = (self.bucket + dt * OUTPUT_RATE).min(OUTPUT_BURST);
        self.byte_bucket = (self.byte_bucket + dt * OUTPUT_BYTE_RATE).min(OUTPUT_BYTE_BURST);
        let bytes = text.len() as f64;
        if self.bucket < 1.0 || self.byte_bucket < bytes {
            self.over += 1;
            return;
        }
        self.bucket -= 1.0;
        self.byte_bucket -= bytes;
        if let Some(d) = self.take_over() {
            recorded(d);
        }
        recorded(Record::new(
            t,
            RecordBody::Output(OutputLine {
                source,
                text: text.into_owned(),
                cut,
            }),
        ));
    }

    /// The [`Mark::Dropped`] for the lines over the rate since the last one, if any.
    pub fn take_over(&mut self) -> Option<Record> {
        (self.over > 0).then(|| dropped(std::mem::take(&mut self.over)))
    }
}

struct SideLog {
    file: File,
    held: u64,
    cap: u64,
    full: bool,
    dropped: u64,
}

/// The copy of one run's output.
pub(super) struct Copier {
    done: Vec<tokio::sync::oneshot::Receiver<()>>,
    shared: Arc<Mutex<Shared>>,
    inner: Arc<Inner>,
    pid: u32,
}

impl Copier {
    /// Wait (at most `within`) for both streams to end, then say what was dropped.
    pub(super) async fn finish(self, within: Duration) {
        let deadline = tokio::time::Instant::now() + within;
        for d in self.done {
            let _ = tokio::time::timeout_at(deadline, d).await;
        }
        let mut sh = self.shared.lock().unwrap_or_else(|e| e.into_inner());
        if inner_derives(&self.inner) {
            sh.sink
                .finish(mono_ns(), |r| forward_derived(&self.inner, r));
        }
        if let Some(d) = sh.sink.take_over() {
            self.inner.forward(d);
        }
        if let Some(log) = &sh.log {
            if log.dropped > 0 {
                warn(
                    &self.inner,
                    format!(
                        "child {}: {} bytes of its output were not logged (over the cap)",
                        self.pid, log.dropped
                    ),
                );
            }
        }
    }
}

fn dropped(count: u64) -> Record {
    Record::new(
        mono_ns(),
        RecordBody::Mark(Mark::Dropped {
            what: "output lines".into(),
            count,
        }),
    )
}

/// Read `stdout` and `stderr` (the read ends of the child's pipes) into the session, and
/// into `log` when there is one (capped at `cap` bytes).
pub(super) fn spawn(
    inner: Arc<Inner>,
    stdout: OwnedFd,
    stderr: OwnedFd,
    log: Option<File>,
    pid: u32,
    cap: u64,
    sink: LineSink,
) -> std::io::Result<Copier> {
    let log = log.map(|file| SideLog {
        held: file.metadata().map(|m| m.len()).unwrap_or(0),
        file,
        cap,
        full: false,
        dropped: 0,
    });
    let shared = Arc::new(Mutex::new(Shared { log, sink }));
    let mut done = Vec::new();
    for (fd, source) in [
        (stdout, OutputSource::Stdout),
        (stderr, OutputSource::Stderr),
    ] {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let (inner, shared) = (inner.clone(), shared.clone());
        std::thread::Builder::new()
            .name(format!("provetop-{}", source.marker()))
            .spawn(move || {
                copy(&inner, &shared, File::from(fd), source, pid);
                let _ = tx.send(());
            })?;
        done.push(rx);
    }
    Ok(Copier {
        done,
        shared,
        inner,
        pid,
    })
}

fn warn(inner: &Inner, text: String) {
    inner.forward(Record::new(
        mono_ns(),
        RecordBody::Mark(Mark::Warning { text }),
    ));
}

/// A derived event must not be lost to a full channel for a moment: retry briefly.
fn forward_derived(inner: &Inner, rec: Record) {
    let mut rec = rec;
    for _ in 0..50 {
        match inner.try_forward(rec) {
            Offered::Sent | Offered::Gone => return,
            Offered::Full(back) => {
                rec = *back;
                std::thread::sleep(Duration::from_millis(2));
            }
        }
    }
    inner.counters.dropped.fetch_add(1, Ordering::Relaxed);
}

fn copy(inner: &Inner, shared: &Mutex<Shared>, mut pipe: File, source: OutputSource, pid: u32) {
    let mut buf = vec![0u8; 64 << 10];
    let mut lines = Splitter::keeping_heads(MAX_OUTPUT_LINE);
    loop {
        let n = match pipe.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        };
        let data = &buf[..n];
        let mut sh = shared.lock().unwrap_or_else(|e| e.into_inner());
        side_log(inner, &mut sh, data, pid);
        lines.feed(data, |line| one_line(inner, &mut sh, line, source));
        drop(sh);
    }
    let mut sh = shared.lock().unwrap_or_else(|e| e.into_inner());
    lines.finish(|line| one_line(inner, &mut sh, line, source));
}

fn side_log(inner: &Inner, sh: &mut Shared, data: &[u8], pid: u32) {
    let Some(log) = sh.log.as_mut() else { return };
    if log.full {
        log.dropped += data.len() as u64;
        return;
    }
    let room = log.cap.saturating_sub(log.held).min(data.len() as u64) as usize;
    if let Err(e) = log.file.write_all(&data[..room]) {
        log.full = true;
        log.dropped += data.len() as u64;
        warn(
            inner,
            format!("child {pid}'s log cannot be written ({e}): its output is dropped"),
        );
        return;
    }
    log.held += room as u64;
    if room < data.len() {
        log.full = true;
        log.dropped += (data.len() - room) as u64;
        let _ = log.file.write_all(
            format!(
                "\n[provetop: this log reached its cap of {} MiB; the rest of the child's output is dropped]\n",
                log.cap >> 20
            )
            .as_bytes(),
        );
        warn(
            inner,
            format!(
                "child {pid}'s output reached the {} MiB cap of its log: the rest is dropped",
                log.cap >> 20
            ),
        );
    }
}

/// Whether the child's lines are read for phases: it does not speak the protocol.
fn inner_derives(inner: &Inner) -> bool {
    inner.counters.events.load(Ordering::Relaxed) == 0
}

/// One whole line: through the grammars (unless the child speaks the protocol: it wins),
/// and recorded if the rate allows.
fn one_line(inner: &Inner, sh: &mut Shared, line: Piece<'_>, source: OutputSource) {
    let derive = inner_derives(inner);
    let (head, len) = line.head_and_len();
    sh.sink.line(
        head,
        len,
        source,
        mono_ns(),
        derive,
        |r| forward_derived(inner, r),
        |r| {
            inner.forward(r);
        },
    );
}
