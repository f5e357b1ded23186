//! The child's stdout and stderr, through provetop into its log, with a cap.
//!
//! The child writes into one pipe (both of its outputs, so their order is kept); a thread of
//! ours copies it into the log until the log holds [`LOG_CAP`] bytes, writes one line saying
//! the rest is dropped, and from then on only reads and counts, at memory speed, so the child
//! is never blocked on its output for long. The count is said in the session when the child's
//! output ends. A plain thread, not the runtime's blocking pool: a descendant that keeps the
//! pipe open can keep it alive without holding up provetop's exit.

use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::OwnedFd;
use std::sync::Arc;
use std::time::Duration;

use provetop_shared::clock::mono_ns;
use provetop_shared::{Mark, Record, RecordBody};

use super::Inner;

/// Most bytes of the child's output the log holds (restarts append to it; the cap is on the
/// whole file).
pub const LOG_CAP: u64 = 64 << 20;

/// The copy of one run's output.
pub(super) struct Copier {
    done: tokio::sync::oneshot::Receiver<()>,
}

impl Copier {
    /// Wait (at most `within`) for the copy to see the end of the child's output.
    pub(super) async fn finish(self, within: Duration) {
        let _ = tokio::time::timeout(within, self.done).await;
    }
}

/// Copy `pipe` (the read end of the child's output) into `log`, capped at `cap` bytes.
pub(super) fn spawn(
    inner: Arc<Inner>,
    pipe: OwnedFd,
    log: File,
    pid: u32,
    cap: u64,
) -> std::io::Result<Copier> {
    let (tx, done) = tokio::sync::oneshot::channel();
    std::thread::Builder::new()
        .name("provetop-output".into())
        .spawn(move || {
            copy(&inner, File::from(pipe), log, pid, cap);
            let _ = tx.send(());
        })?;
    Ok(Copier { done })
}

fn warn(inner: &Inner, text: String) {
    inner.forward(Record::new(
        mono_ns(),
        RecordBody::Mark(Mark::Warning { text }),
    ));
}

fn copy(inner: &Inner, mut pipe: File, mut log: File, pid: u32, cap: u64) {
    let mut held = log.metadata().map(|m| m.len()).unwrap_or(0);
    let mut buf = vec![0u8; 64 << 10];
    let mut dropped = 0u64;
    let mut writing = true;
    loop {
        let n = match pipe.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        };
        if !writing {
            dropped += n as u64;
            continue;
        }
        let room = cap.saturating_sub(held).min(n as u64) as usize;
        if let Err(e) = log.write_all(&buf[..room]) {
            writing = false;
            dropped += n as u64;
            warn(
                inner,
                format!("child {pid}'s log cannot be written ({e}): its output is dropped"),
            );
            continue;
        }
        held += room as u64;
        if room < n {
            writing = false;
            dropped += (n - room) as u64;
            let _ = log.write_all(
                format!(
                    "\n[provetop: this log reached its cap of {} MiB; the rest of the child's output is dropped]\n",
                    cap >> 20
                )
                .as_bytes(),
            );
            warn(
                inner,
                format!(
                    "child {pid}'s output reached the {} MiB cap of its log: the rest is dropped",
                    cap >> 20
                ),
            );
        }
    }
    if dropped > 0 {
        warn(
            inner,
            format!("child {pid}: {dropped} bytes of its output were not logged (over the cap)"),
        );
    }
}
