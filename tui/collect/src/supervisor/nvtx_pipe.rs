//! The child's NVTX pipe (fd 4): read on a thread of its own, each line through the run's
//! [`crate::nvtx::Tracker`], its records forwarded without waiting (the app being behind
//! costs records, counted, never the child's time). At end of file (every process that held
//! the pipe is gone) the tracker's end is written and the waiter told.

use std::fs::File;
use std::io::Read;
use std::os::fd::OwnedFd;
use std::sync::Arc;

use provetop_shared::clock::mono_ns;
use provetop_shared::{Mark, Record, RecordBody};

use super::Inner;
use crate::lines::{Piece, Splitter};
use crate::nvtx::{PhaseMap, Tracker};

/// Longest line read (a range's name is at most 4 KiB in the library).
const MAX_LINE: usize = 64 << 10;

/// Read the run's NVTX pipe, or say in the session why there is none (a warning where the
/// library cannot be used, a note where none is installed or another tool injects).
pub(super) fn start(
    inner: &Arc<Inner>,
    pid: u32,
    fd: Option<std::os::fd::OwnedFd>,
    off: Option<(bool, String)>,
    injection: &crate::nvtx::Injection,
    t_start: u64,
) -> Option<tokio::sync::oneshot::Receiver<()>> {
    let say = |warning: bool, text: String| {
        let mark = if warning {
            Mark::Warning { text }
        } else {
            Mark::Note { text }
        };
        inner.forward(Record::new(mono_ns(), RecordBody::Mark(mark)));
    };
    if let Some((warning, why)) = off {
        say(warning, format!("no NVTX phases for child {pid}: {why}"));
    }
    let map = match injection {
        crate::nvtx::Injection::Library { phases, .. } => phases.clone(),
        crate::nvtx::Injection::Off { .. } => return None,
    };
    match spawn(inner.clone(), fd?, map, t_start) {
        Ok(done) => Some(done),
        Err(e) => {
            say(
                true,
                format!("no NVTX phases for child {pid}: cannot read its NVTX pipe: {e}"),
            );
            None
        }
    }
}

/// Start reading `fd`; the receiver hears when the pipe ended and its records went out.
pub(super) fn spawn(
    inner: Arc<Inner>,
    fd: OwnedFd,
    map: PhaseMap,
    run_start: u64,
) -> std::io::Result<tokio::sync::oneshot::Receiver<()>> {
    let (done_tx, done_rx) = tokio::sync::oneshot::channel();
    std::thread::Builder::new()
        .name("provetop-nvtx-pipe".into())
        .spawn(move || {
            read(&inner, fd, map, run_start);
            let _ = done_tx.send(());
        })?;
    Ok(done_rx)
}

fn read(inner: &Inner, fd: OwnedFd, map: PhaseMap, run_start: u64) {
    let mut file = File::from(fd);
    let mut tracker = Tracker::new(map, run_start);
    let mut split = Splitter::new(MAX_LINE);
    let mut buf = vec![0u8; 64 << 10];
    let mut out: Vec<Record> = Vec::new();
    let on_piece = |tracker: &mut Tracker, p: Piece<'_>, out: &mut Vec<Record>| {
        if let Piece::Line(l) | Piece::Partial(l) = p {
            tracker.line(&String::from_utf8_lossy(l), mono_ns(), out);
        }
    };
    loop {
        let n = match file.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        };
        split.feed(&buf[..n], |p| on_piece(&mut tracker, p, &mut out));
        for r in out.drain(..) {
            inner.forward(r);
        }
    }
    split.finish(|p| on_piece(&mut tracker, p, &mut out));
    tracker.finish(mono_ns(), &mut out);
    for r in out.drain(..) {
        inner.forward(r);
    }
}
