//! The child's events pipe: read it (on a thread of its own, resting [`PACE`] after each
//! read that emptied it), parse each line, forward events and bad lines as records, and
//! count and report what was dropped. What is recorded is bounded by a rate with
//! a burst allowance ([`EVENT_RATE`], [`EVENT_BURST`], and the same in bytes): a proof's burst
//! of events is read in full, a flood beyond it is only counted, at memory speed, so the child
//! is never slowed to the speed at which we parse. Records the app has no room for yet wait
//! in a bounded queue; the reader waits for an app that is behind but makes progress, and
//! drops (counted) only for one that is stalled.
//!
//! The child's clock is not trusted either: every event is stamped on the monitor's clock when
//! it arrives, and the child's own `ts` is kept only when it is plausible (see [`stamp`]). A
//! `hello` of a newer major protocol version is refused, and nothing the child writes after
//! it is read as protocol.

use std::collections::VecDeque;
use std::fs::File;
use std::io::Read;
use std::os::fd::AsRawFd;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use provetop_shared::clock::mono_ns;
use provetop_shared::protocol::{parse_event, ProtocolError};
use provetop_shared::{Mark, Record, RecordBody};
use tokio::sync::mpsc::error::TrySendError;

use super::Inner;
use crate::lines;

/// Records the supervisor's channel to the monitor holds: the monitor drains it at least
/// four times a second and whenever it holds a backlog (`channel`), so a burst of 10^5
/// partitions read at the reader's full rate finds room without the reader, and so the
/// child, waiting on it (65,536 records of ~272 bytes: at most ~17 MiB in flight;
/// docs/measurements.md#the-events-pipe-a-burst-of-105-partitions).
pub const RECORD_CHANNEL: usize = 65_536;

/// Longest line of the events pipe read as an event (without its newline); a longer one is a
/// bad line, reported by its head and skipped.
const MAX_LINE: usize = 1 << 20;

/// Records the supervisor may lose before it notes so, at most this often.
const DROP_REPORT: Duration = Duration::from_secs(1);
/// Channel slots lines never take, so the marks that report drops (and lifecycle marks)
/// still get through while the child floods.
const CHANNEL_RESERVE: usize = 8;
/// Events (and bad lines) recorded per second, sustained: far above what a prover says.
pub const EVENT_RATE: u64 = 10_000;
/// Events recorded in one burst above [`EVENT_RATE`]: a proof of 10^5 partitions (two events
/// each) is read in full; a flood is cut after this many and then runs at the rate.
pub const EVENT_BURST: u64 = 1 << 18;
/// Bytes of event lines recorded per second, sustained, and in one burst (a child writing
/// 1 MiB log lines is bounded by bytes long before it is by count).
pub const BYTE_RATE: u64 = 8 << 20;
pub const BYTE_BURST: u64 = 64 << 20;
/// While the app is behind (its channel is full), parsed records wait here, up to this many
/// (a record is ~272 bytes) and this many bytes of their lines; then the reader waits for the
/// app as long as it makes progress (see [`STALLED`]), and drops what a stalled app cannot
/// take, counted.
const PENDING_MAX: usize = 1 << 14;
const PENDING_MAX_BYTES: usize = 16 << 20;
/// An app that takes no record for this long is stalled: the reader stops waiting for it.
const STALLED: Duration = Duration::from_millis(500);
/// How often waiting records are offered to the app again while the pipe is quiet.
const PENDING_RETRY: Duration = Duration::from_millis(2);

/// A token bucket: `rate` per second, at most `burst` saved up.
#[derive(Debug)]
pub(super) struct Bucket {
    rate: u64,
    burst: u64,
    tokens: u64,
    /// Time of the last refill, ns, and the ns of it not yet turned into tokens.
    at: u64,
}

impl Bucket {
    pub(super) fn new(rate: u64, burst: u64, now: u64) -> Self {
        Bucket {
            rate,
            burst,
            tokens: burst,
            at: now,
        }
    }

    /// Take `n` tokens at time `now` (ns): false (and nothing taken) when there are too few.
    pub(super) fn take(&mut self, n: u64, now: u64) -> bool {
        if now > self.at {
            let earned = (now - self.at) as u128 * self.rate as u128 / 1_000_000_000;
            if earned > 0 {
                self.tokens = (self.tokens as u128 + earned).min(self.burst as u128) as u64;
                // Keep the remainder: a high rate checked often still earns its tokens.
                let used = (earned * 1_000_000_000 / self.rate.max(1) as u128) as u64;
                self.at = if self.tokens == self.burst {
                    now
                } else {
                    self.at + used
                };
            }
        }
        if self.tokens >= n {
            self.tokens -= n;
            true
        } else {
            false
        }
    }
}

/// How far before its arrival a child's `ts` may lie and still be taken as the time of the
/// event (the reader is normally behind by microseconds; a loaded machine, by a little).
pub(super) const MAX_SKEW_NS: u64 = 5_000_000_000;

/// The time an event is recorded at: the child's claim `ts` when it is plausible, i.e. on this
/// clock (the child stamps with the same `CLOCK_MONOTONIC`, more precisely than the reader
/// can), not before the run started, not after the event arrived and not more than
/// [`MAX_SKEW_NS`] before; otherwise its arrival time. A claim of 0 is no claim (a prover
/// with no clock at hand, such as a shell script, sends it): the arrival time, silently. The
/// flag says whether the claim was acceptable (kept, or none made); a refused one is warned of.
pub(super) fn stamp(claim: u64, arrival: u64, run_start: u64) -> (u64, bool) {
    if claim == 0 {
        return (arrival, true);
    }
    let plausible = claim >= run_start && claim <= arrival && arrival - claim <= MAX_SKEW_NS;
    if plausible {
        (claim, true)
    } else {
        (arrival, false)
    }
}

/// What one run's stream has shown so far.
struct Stream {
    pgid: i32,
    /// When the run was started (its `ChildStarted` mark's time).
    run_start: u64,
    /// When the bytes being handled arrived.
    arrival: u64,
    /// Events whose `ts` was refused.
    implausible: u64,
    /// The newer protocol version a refused `hello` named: nothing after it is protocol.
    foreign: Option<String>,
    /// Lines not interpreted because of that.
    ignored: u64,
    events: Bucket,
    bytes: Bucket,
    /// Records waiting for room in the app's channel, and the bytes of their lines.
    pending: VecDeque<Record>,
    pending_bytes: usize,
    reserve: usize,
    /// The app took nothing for [`STALLED`] while the waiting room was full.
    stalled: bool,
}

impl Stream {
    fn new(pgid: i32, run_start: u64) -> Self {
        Stream {
            pgid,
            run_start,
            arrival: run_start,
            implausible: 0,
            foreign: None,
            ignored: 0,
            events: Bucket::new(EVENT_RATE, EVENT_BURST, run_start),
            bytes: Bucket::new(BYTE_RATE, BYTE_BURST, run_start),
            pending: VecDeque::new(),
            pending_bytes: 0,
            reserve: 0,
            stalled: false,
        }
    }

    /// Hand waiting records to the app while its channel has room (beyond the reserve).
    fn flush(&mut self, inner: &Inner) {
        while let Some(r) = self.pending.pop_front() {
            if inner.tx.capacity() <= self.reserve {
                self.pending.push_front(r);
                return;
            }
            match inner.tx.try_send(r) {
                Ok(()) => {}
                Err(TrySendError::Full(r)) => {
                    self.pending.push_front(r);
                    return;
                }
                Err(TrySendError::Closed(_)) => {
                    self.pending.clear();
                }
            }
        }
        self.pending_bytes = 0;
    }

    /// Whether a record of a line of `len` bytes would find no room (channel and waiting
    /// room both full).
    fn full(&mut self, inner: &Inner, len: usize) -> bool {
        if self.pending.is_empty() && inner.tx.capacity() > self.reserve {
            return false;
        }
        self.flush(inner);
        // Lines of the buffer in hand still fit beyond the room (the reader waits for it
        // before the next read): up to twice it, then they are dropped.
        !self.pending.is_empty()
            && (self.pending.len() >= 2 * PENDING_MAX
                || self.pending_bytes + len > 2 * PENDING_MAX_BYTES)
    }

    /// Send a record in stream order: at once when the app has room, else after those
    /// waiting.
    fn send(&mut self, inner: &Inner, mut rec: Record, len: usize) {
        if self.pending.is_empty() && inner.tx.capacity() > self.reserve {
            match inner.tx.try_send(rec) {
                Ok(()) | Err(TrySendError::Closed(_)) => return,
                Err(TrySendError::Full(r)) => rec = r,
            }
        }
        self.pending.push_back(rec);
        self.pending_bytes += len;
    }

    fn crowded(&self) -> bool {
        self.pending.len() >= PENDING_MAX || self.pending_bytes >= PENDING_MAX_BYTES
    }

    /// While the waiting room is full, wait for the app to take records, as long as it
    /// takes some every [`STALLED`].
    fn wait_for_room(&mut self, inner: &Inner) {
        if self.stalled {
            // Until the app takes records again, do not wait for it again.
            let before = self.pending.len();
            self.flush(inner);
            self.stalled = self.pending.len() >= before && !self.pending.is_empty();
            return;
        }
        let mut progress = Instant::now();
        while self.crowded() && !inner.tx.is_closed() {
            if progress.elapsed() >= STALLED {
                self.stalled = true;
                return;
            }
            let before = self.pending.len();
            std::thread::sleep(PENDING_RETRY);
            self.flush(inner);
            if self.pending.len() < before {
                progress = Instant::now();
            }
        }
    }

    /// End of the stream: hand every waiting record to the app, waiting for room (the app
    /// drains its channel every tick; a stalled one is given a few seconds).
    fn drain(&mut self, inner: &Inner) {
        let end = Instant::now() + Duration::from_secs(5);
        self.flush(inner);
        while !self.pending.is_empty() && !inner.tx.is_closed() {
            if Instant::now() >= end {
                let n = self.pending.len() as u64;
                inner.counters.dropped.fetch_add(n, Ordering::Relaxed);
                self.pending.clear();
                return;
            }
            std::thread::sleep(PENDING_RETRY);
            self.flush(inner);
        }
    }

    /// The record time of an event claiming `ts`; the first implausible claim is said at once.
    fn time_of(&mut self, inner: &Inner, ts: u64) -> u64 {
        let (t, ok) = stamp(ts, self.arrival, self.run_start);
        if !ok {
            self.implausible += 1;
            if self.implausible == 1 {
                let how = if ts > self.arrival {
                    "in the future".to_string()
                } else if ts < self.run_start {
                    format!("{} before the child started", secs(self.run_start - ts))
                } else {
                    format!("{} before it arrived", secs(self.arrival - ts))
                };
                let w = mark(Mark::Warning {
                    text: format!(
                        "child {}'s event times are not on this clock (ts {ts} is {how}): \
                         its events are stamped when they arrive",
                        self.pgid
                    ),
                });
                self.send(inner, w, 0);
            }
        }
        t
    }

    /// End of the stream: the counts of what was refused, once.
    fn finish(&mut self, inner: &Inner) {
        if self.implausible > 1 {
            let w = mark(Mark::Warning {
                text: format!(
                    "child {}: {} events in all had implausible times (stamped when they arrived)",
                    self.pgid, self.implausible
                ),
            });
            self.send(inner, w, 0);
        }
        if let (Some(peer), true) = (&self.foreign, self.ignored > 0) {
            let w = mark(Mark::Warning {
                text: format!(
                    "child {}: {} lines after its protocol {peer} hello were not read as events",
                    self.pgid, self.ignored
                ),
            });
            self.send(inner, w, 0);
        }
    }
}

fn secs(ns: u64) -> String {
    format!("{:.1} s", ns as f64 / 1e9)
}

/// Read the events pipe to its end, forwarding events and bad lines without ever waiting:
/// on a thread of its own (`provetop-events`, a plain thread like the output's readers),
/// then, once it has ended, say whether the child closed the pipe while still running.
pub(super) async fn read_events(
    inner: Arc<Inner>,
    fd: std::os::fd::OwnedFd,
    pgid: i32,
    run_start: u64,
) {
    let (done_tx, done) = tokio::sync::oneshot::channel();
    let reader = inner.clone();
    let spawned = std::thread::Builder::new()
        .name("provetop-events".into())
        .spawn(move || {
            read_pipe(&reader, File::from(fd), pgid, run_start);
            let _ = done_tx.send(());
        });
    if let Err(e) = spawned {
        inner.forward(mark(Mark::Warning {
            text: format!("cannot read the child's events pipe: {e}"),
        }));
        return;
    }
    let _ = done.await;
    // End of the stream is normally the child exiting. If it is still running a second
    // later, it closed its events pipe: say so (monitoring goes on without events).
    let reaped = inner.reaped.notified();
    tokio::pin!(reaped);
    reaped.as_mut().enable();
    if inner.pgid.load(Ordering::Acquire) != pgid {
        return;
    }
    if tokio::time::timeout(Duration::from_secs(1), reaped)
        .await
        .is_err()
        && inner.pgid.load(Ordering::Acquire) == pgid
    {
        inner.forward(mark(Mark::Note {
            text: format!("child {pgid} closed its events pipe; it is still monitored"),
        }));
    }
}

/// The events pipe's own size, asked for (the kernel's default is 64 KiB): room for what a
/// prover says during one [`PACE`].
const PIPE_SIZE: i32 = 1 << 20;

/// After a read that emptied the pipe, the reader rests this long before the next one, so a
/// prover that writes each event on its own costs one wake-up per rest, not one per event
/// (tens a second at scale). A full read is followed by the next at once, so a burst or a
/// flood is read at memory speed; events keep the child's own time (`stamp`), and what the
/// rest delays is pumped on the pipeline's next wake-up anyway.
pub const PACE: Duration = Duration::from_millis(200);

/// The reading itself, blocking: see [`read_events`].
fn read_pipe(inner: &Inner, mut pipe: File, pgid: i32, run_start: u64) {
    blocking(&pipe);
    let _ = nix::fcntl::fcntl(
        pipe.as_raw_fd(),
        nix::fcntl::FcntlArg::F_SETPIPE_SZ(PIPE_SIZE),
    );
    let mut splitter = lines::Splitter::new(MAX_LINE);
    let mut buf = vec![0u8; 64 << 10];
    let mut last_dropped = inner.counters.dropped.load(Ordering::Relaxed);
    let mut last_report = Instant::now();
    let mut stream = Stream::new(pgid, run_start);
    stream.reserve = CHANNEL_RESERVE.min(inner.tx.max_capacity() / 4);
    loop {
        // The waiting room is full: the app is behind by a whole burst. Wait for it (the
        // child waits meanwhile, on its pipe) as long as it makes progress, so events within
        // the allowed rate are not lost to a slow moment; an app that takes none for
        // [`STALLED`] is stalled, and what comes next is dropped, counted.
        stream.wait_for_room(inner);
        // Records wait only while the app is behind: offer them again every few ms, and
        // go on reading the pipe meanwhile (the child never waits for the app).
        if !stream.pending.is_empty() && !readable(&pipe, PENDING_RETRY) {
            stream.flush(inner);
            continue;
        }
        let n = match pipe.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        };
        stream.arrival = mono_ns();
        // A flooding child must not be slowed to the speed at which we parse: beyond the
        // rate (and burst) allowed, or when nothing has room for them, lines are only
        // counted, at memory speed.
        splitter.feed(&buf[..n], |p| {
            if blank(&p) {
                return;
            }
            if stream.foreign.is_some() {
                stream.ignored += 1;
                return;
            }
            let len = p.len();
            let now = stream.arrival;
            if stream.full(inner, len)
                || !stream.events.take(1, now)
                || !stream.bytes.take(len as u64, now)
            {
                inner.counters.dropped.fetch_add(1, Ordering::Relaxed);
                return;
            }
            handle_piece(inner, &mut stream, p)
        });
        stream.flush(inner);
        if last_report.elapsed() >= DROP_REPORT {
            report_drops(inner, &mut last_dropped);
            last_report = Instant::now();
        }
        if n < buf.len() && stream.pending.is_empty() {
            std::thread::sleep(PACE);
        }
    }
    stream.arrival = mono_ns();
    splitter.finish(|p| handle_piece(inner, &mut stream, p));
    stream.finish(inner);
    stream.drain(inner);
    report_drops(inner, &mut last_dropped);
}

/// Make `f`'s reads block (the pipe may have been made for an async reader).
fn blocking(f: &File) {
    use nix::fcntl::{fcntl, FcntlArg, OFlag};
    if let Ok(flags) = fcntl(f.as_raw_fd(), FcntlArg::F_GETFL) {
        let flags = OFlag::from_bits_truncate(flags) - OFlag::O_NONBLOCK;
        let _ = fcntl(f.as_raw_fd(), FcntlArg::F_SETFL(flags));
    }
}

/// Whether `f` has something to read (or its end) within `wait`.
fn readable(f: &File, wait: Duration) -> bool {
    use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
    use std::os::fd::AsFd;
    let mut fds = [PollFd::new(f.as_fd(), PollFlags::POLLIN)];
    let ms = PollTimeout::try_from(wait.as_millis().min(i32::MAX as u128) as i32)
        .unwrap_or(PollTimeout::MAX);
    poll(&mut fds, ms).is_ok_and(|n| n > 0)
}

fn report_drops(inner: &Inner, last: &mut u64) {
    let now = inner.counters.dropped.load(Ordering::Relaxed);
    if now > *last
        && inner.forward(mark(Mark::Dropped {
            what: "events".into(),
            count: now - *last,
        }))
    {
        *last = now;
    }
}

fn mark(m: Mark) -> Record {
    Record::new(mono_ns(), RecordBody::Mark(m))
}

fn excerpt(b: &[u8]) -> String {
    String::from_utf8_lossy(&b[..b.len().min(lines::EXCERPT)]).into_owned()
}

/// A line of nothing but white space: not an event, not a bad line, not counted.
fn blank(p: &lines::Piece<'_>) -> bool {
    matches!(p, lines::Piece::Line(l) if l.iter().all(|b| b.is_ascii_whitespace()))
}

fn handle_piece(inner: &Inner, stream: &mut Stream, p: lines::Piece<'_>) {
    if blank(&p) {
        return;
    }
    if stream.foreign.is_some() {
        stream.ignored += 1;
        return;
    }
    let bad = |stream: &mut Stream, error: String, bytes: &[u8]| {
        inner.counters.bad_lines.fetch_add(1, Ordering::Relaxed);
        let r = mark(Mark::BadLine {
            error,
            excerpt: excerpt(bytes),
        });
        stream.send(inner, r, bytes.len().min(lines::EXCERPT));
    };
    match p {
        lines::Piece::Line(l) => match std::str::from_utf8(l) {
            Err(e) => bad(
                stream,
                format!("invalid UTF-8 at byte {}", e.valid_up_to()),
                l,
            ),
            Ok(s) => match parse_event(s) {
                Ok(msg) => {
                    inner.counters.events.fetch_add(1, Ordering::Relaxed);
                    let t = stream.time_of(inner, msg.ts);
                    stream.send(inner, Record::new(t, RecordBody::Event(msg.event)), l.len());
                }
                Err(e @ ProtocolError::NewerMajor { .. }) => {
                    let ProtocolError::NewerMajor { peer, ours } = &e else {
                        unreachable!()
                    };
                    let w = mark(Mark::Warning {
                        text: format!(
                            "child {} speaks protocol {peer}, this build speaks {ours}: \
                             what it writes next is not read as events",
                            stream.pgid
                        ),
                    });
                    stream.foreign = Some(peer.clone());
                    bad(stream, e.to_string(), l);
                    stream.send(inner, w, 0);
                }
                Err(e) => bad(stream, e.to_string(), l),
            },
        },
        // A `Cut` is another splitter's (`Overlong::KeepHead`): read as the same bad line.
        p @ (lines::Piece::TooLong { .. } | lines::Piece::Cut { .. }) => {
            let (head, len) = p.head_and_len();
            bad(
                stream,
                format!(
                    "line of {len}+ bytes exceeds the {} MiB limit (cut)",
                    MAX_LINE >> 20
                ),
                head,
            )
        }
        lines::Piece::Partial(b) => bad(
            stream,
            format!("partial line of {} bytes at end of stream", b.len()),
            b,
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_claim_is_kept_only_on_this_clock_between_the_start_and_the_arrival() {
        let start = 100 * 1_000_000_000;
        let arrival = start + 10 * 1_000_000_000;
        assert_eq!(
            stamp(arrival - 1_000, arrival, start),
            (arrival - 1_000, true)
        );
        assert_eq!(stamp(arrival, arrival, start), (arrival, true));
        // 0 asks for the arrival time: no claim, nothing to warn of.
        assert_eq!(stamp(0, arrival, start), (arrival, true));
        for bad in [
            1,
            start - 1,
            arrival - MAX_SKEW_NS - 1,
            arrival + 1,
            u64::MAX,
        ] {
            assert_eq!(stamp(bad, arrival, start), (arrival, false), "{bad}");
        }
    }

    #[test]
    fn the_bucket_allows_a_burst_then_the_rate() {
        let mut b = Bucket::new(1_000, 10, 0);
        assert!((0..10).all(|_| b.take(1, 0)));
        assert!(!b.take(1, 0));
        // 1 ms earns one token; 0.5 ms twice earns one too (the remainder is kept).
        assert!(b.take(1, 1_000_000));
        assert!(!b.take(1, 1_500_000));
        assert!(b.take(1, 2_000_000));
        // Never more than the burst saved up, however long it was quiet.
        assert!((0..10).all(|_| b.take(1, 1_000_000_000_000)));
        assert!(!b.take(1, 1_000_000_000_000));
        // A take bigger than what is there takes nothing.
        let mut b = Bucket::new(1_000, 100, 0);
        assert!(!b.take(101, 0));
        assert!(b.take(100, 0));
    }
}
