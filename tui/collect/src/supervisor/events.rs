//! The child's events pipe: read without ever blocking the child for long (it sheds load when
//! the pipe stays full), parse each line, forward events and bad lines as records, and count
//! and report what was dropped.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use provetop_shared::clock::mono_ns;
use provetop_shared::protocol::parse_event;
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

/// Read the events pipe to its end, forwarding events and bad lines without ever waiting.
pub(super) async fn read_events(inner: Arc<Inner>, fd: std::os::fd::OwnedFd, pgid: i32) {
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
    loop {
        let n = match pipe.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
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
            handle_piece(&inner, p)
        });
        if last_report.elapsed() >= DROP_REPORT {
            report_drops(&inner, &mut last_dropped);
            last_report = Instant::now();
        }
    }
    splitter.finish(|p| handle_piece(&inner, p));
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

fn handle_piece(inner: &Inner, p: lines::Piece<'_>) {
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
                        inner.forward(Record::new(msg.ts, RecordBody::Event(msg.event)));
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
