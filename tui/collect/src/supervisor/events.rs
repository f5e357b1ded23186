//! The child's events pipe: read without ever blocking the child for long (it sheds load when
//! the pipe stays full), parse each line, forward events and bad lines as records, and count
//! and report what was dropped.
//!
//! The child's clock is not trusted either: every event is stamped on the monitor's clock when
//! it arrives, and the child's own `ts` is kept only when it is plausible (see [`stamp`]). A
//! `hello` of a newer major protocol version is refused, and nothing the child writes after
//! it is read as protocol.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use provetop_shared::clock::mono_ns;
use provetop_shared::protocol::{parse_event, ProtocolError};
use provetop_shared::{Mark, Record, RecordBody};
use tokio::io::AsyncReadExt;

use super::{lines, Inner};

/// Records the supervisor may lose before it notes so, at most this often.
const DROP_REPORT: Duration = Duration::from_secs(1);
/// Reads in a row that (nearly) filled the buffer before the reader sheds load: the pipe stayed
/// full, so the child was blocked writing, waiting on us. A legitimate burst (a few hundred KiB)
/// is still read in full.
const SHED_AFTER_FULL_READS: u32 = 8;
/// Channel slots lines never take, so the marks that report drops (and lifecycle marks)
/// still get through while the child floods.
const CHANNEL_RESERVE: usize = 8;
/// Lines parsed per buffer while shedding load; the rest are counted as dropped, unparsed.
const SHED_PARSE: usize = 64;
/// How far before its arrival a child's `ts` may lie and still be taken as the time of the
/// event (the reader is normally behind by microseconds; a loaded machine, by a little).
pub(super) const MAX_SKEW_NS: u64 = 5_000_000_000;

/// The time an event is recorded at: the child's claim `ts` when it is plausible, i.e. on this
/// clock (the child stamps with the same `CLOCK_MONOTONIC`, more precisely than the reader
/// can), not before the run started, not after the event arrived and not more than
/// [`MAX_SKEW_NS`] before; otherwise its arrival time; the flag says whether the claim was kept.
pub(super) fn stamp(claim: u64, arrival: u64, run_start: u64) -> (u64, bool) {
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
                inner.forward(mark(Mark::Warning {
                    text: format!(
                        "child {}'s event times are not on this clock (ts {ts} is {how}): \
                         its events are stamped when they arrive",
                        self.pgid
                    ),
                }));
            }
        }
        t
    }

    /// End of the stream: the counts of what was refused, once.
    fn finish(&self, inner: &Inner) {
        if self.implausible > 1 {
            inner.forward(mark(Mark::Warning {
                text: format!(
                    "child {}: {} events in all had implausible times (stamped when they arrived)",
                    self.pgid, self.implausible
                ),
            }));
        }
        if let (Some(peer), true) = (&self.foreign, self.ignored > 0) {
            inner.forward(mark(Mark::Warning {
                text: format!(
                    "child {}: {} lines after its protocol {peer} hello were not read as events",
                    self.pgid, self.ignored
                ),
            }));
        }
    }
}

fn secs(ns: u64) -> String {
    format!("{:.1} s", ns as f64 / 1e9)
}

/// Read the events pipe to its end, forwarding events and bad lines without ever waiting.
pub(super) async fn read_events(
    inner: Arc<Inner>,
    fd: std::os::fd::OwnedFd,
    pgid: i32,
    run_start: u64,
) {
    let mut pipe = match tokio::net::unix::pipe::Receiver::from_owned_fd(fd) {
        Ok(p) => p,
        Err(e) => {
            inner.forward(mark(Mark::Warning {
                text: format!("cannot read the child's events pipe: {e}"),
            }));
            return;
        }
    };
    let mut splitter = lines::Splitter::new(lines::MAX_LINE);
    let mut buf = vec![0u8; 64 << 10];
    let mut last_dropped = inner.counters.dropped.load(Ordering::Relaxed);
    let mut last_report = Instant::now();
    let mut full_reads = 0u32;
    let reserve = CHANNEL_RESERVE.min(inner.tx.max_capacity() / 4);
    let mut stream = Stream::new(pgid, run_start);
    loop {
        let n = match pipe.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        stream.arrival = mono_ns();
        // A flooding child must not be slowed to the speed at which we parse: when the pipe
        // stays full, or the app is behind (its channel is full), lines are only counted.
        // (A full pipe reads as a little less than its 64 KiB: writers fill it in chunks.)
        full_reads = if n >= buf.len() / 4 * 3 {
            full_reads + 1
        } else {
            0
        };
        let shedding = full_reads >= SHED_AFTER_FULL_READS;
        let mut parsed = 0usize;
        splitter.feed(&buf[..n], |p| {
            if (shedding && parsed >= SHED_PARSE) || inner.tx.capacity() <= reserve {
                if !matches!(p, lines::Piece::Line(l) if l.iter().all(|b| b.is_ascii_whitespace()))
                {
                    inner.counters.dropped.fetch_add(1, Ordering::Relaxed);
                }
                return;
            }
            parsed += 1;
            handle_piece(&inner, &mut stream, p)
        });
        if last_report.elapsed() >= DROP_REPORT {
            report_drops(&inner, &mut last_dropped);
            last_report = Instant::now();
        }
    }
    stream.arrival = mono_ns();
    splitter.finish(|p| handle_piece(&inner, &mut stream, p));
    stream.finish(&inner);
    report_drops(&inner, &mut last_dropped);
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

fn handle_piece(inner: &Inner, stream: &mut Stream, p: lines::Piece<'_>) {
    if stream.foreign.is_some() {
        if !matches!(p, lines::Piece::Line(l) if l.iter().all(|b| b.is_ascii_whitespace())) {
            stream.ignored += 1;
        }
        return;
    }
    let bad = |error: String, bytes: &[u8]| {
        inner.counters.bad_lines.fetch_add(1, Ordering::Relaxed);
        inner.forward(mark(Mark::BadLine {
            error,
            excerpt: excerpt(bytes),
        }));
    };
    match p {
        lines::Piece::Line(l) => {
            if l.iter().all(|b| b.is_ascii_whitespace()) {
                return;
            }
            match std::str::from_utf8(l) {
                Err(e) => bad(format!("invalid UTF-8 at byte {}", e.valid_up_to()), l),
                Ok(s) => match parse_event(s) {
                    Ok(msg) => {
                        inner.counters.events.fetch_add(1, Ordering::Relaxed);
                        let t = stream.time_of(inner, msg.ts);
                        inner.forward(Record::new(t, RecordBody::Event(msg.event)));
                    }
                    Err(ProtocolError::NewerMajor { peer, ours }) => {
                        bad(
                            ProtocolError::NewerMajor {
                                peer: peer.clone(),
                                ours,
                            }
                            .to_string(),
                            l,
                        );
                        inner.forward(mark(Mark::Warning {
                            text: format!(
                                "child {} speaks protocol {peer}, this build speaks {ours}: \
                                 what it writes next is not read as events",
                                stream.pgid
                            ),
                        }));
                        stream.foreign = Some(peer);
                    }
                    Err(e) => bad(e.to_string(), l),
                },
            }
        }
        lines::Piece::TooLong { len, head } => bad(
            format!(
                "line of {len}+ bytes exceeds the {} MiB limit (cut)",
                lines::MAX_LINE >> 20
            ),
            &head,
        ),
        lines::Piece::Partial(b) => bad(
            format!("partial line of {} bytes at end of stream", b.len()),
            b,
        ),
    }
}
