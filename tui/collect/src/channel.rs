//! The records channel from the supervisor (or a followed log) to the pipeline: a bounded
//! tokio mpsc whose sender says when the receiver should wake.
//!
//! A headless pipeline is already woken by the sampler about four times a second, and pumps
//! the channel then. Waking it for each event besides would cost a thread wake-up per event
//! (a prover at scale says tens a second), so the sender nudges the receiver only for what
//! should not wait for the next pump:
//! * a record that is not routine traffic (a lifecycle mark, a warning, a drop count);
//! * a backlog of [`NUDGE_AT`] records or more, so a flood is pumped as fast as it comes and
//!   what waits in memory stays bounded;
//! * the sender's end (its last clone dropped).
//!
//! Routine records (events, output lines, what was derived from them) wait for the next pump
//! otherwise: the receiver's [`RecordRx::ready`] bounds that wait by itself while no sampler
//! wakes it.

use std::sync::Arc;
use std::time::Duration;

use provetop_shared::{Record, RecordBody};
use tokio::sync::mpsc::error::{SendError, TryRecvError, TrySendError};
use tokio::sync::{mpsc, Notify};

/// Records waiting in the channel from which each send nudges the receiver.
pub const NUDGE_AT: usize = 512;

/// A channel of `cap` records.
pub fn channel(cap: usize) -> (RecordTx, RecordRx) {
    let (tx, rx) = mpsc::channel(cap);
    let nudge = Arc::new(Notify::new());
    (
        RecordTx {
            tx,
            nudge: nudge.clone(),
        },
        RecordRx { rx, nudge },
    )
}

/// The sending end; clones share the channel.
#[derive(Debug, Clone)]
pub struct RecordTx {
    tx: mpsc::Sender<Record>,
    nudge: Arc<Notify>,
}

/// A plain tokio sender, for a receiver that takes every record as it comes (its nudges go
/// nowhere).
impl From<mpsc::Sender<Record>> for RecordTx {
    fn from(tx: mpsc::Sender<Record>) -> Self {
        RecordTx {
            tx,
            nudge: Arc::new(Notify::new()),
        }
    }
}

fn routine(r: &Record) -> bool {
    matches!(
        r.body,
        RecordBody::Event(_) | RecordBody::Output(_) | RecordBody::Derived(_)
    )
}

impl RecordTx {
    // The record comes back to the caller in the error, as tokio's own sender gives it.
    #[allow(clippy::result_large_err)]
    pub fn try_send(&self, r: Record) -> Result<(), TrySendError<Record>> {
        let routine = routine(&r);
        self.tx.try_send(r)?;
        self.sent(routine);
        Ok(())
    }

    pub async fn send(&self, r: Record) -> Result<(), SendError<Record>> {
        let routine = routine(&r);
        self.tx.send(r).await?;
        self.sent(routine);
        Ok(())
    }

    /// [`send`](Self::send) from a thread outside the runtime.
    #[allow(clippy::result_large_err)]
    pub fn blocking_send(&self, r: Record) -> Result<(), SendError<Record>> {
        let routine = routine(&r);
        self.tx.blocking_send(r)?;
        self.sent(routine);
        Ok(())
    }

    /// Free slots now.
    pub fn capacity(&self) -> usize {
        self.tx.capacity()
    }

    pub fn max_capacity(&self) -> usize {
        self.tx.max_capacity()
    }

    pub fn is_closed(&self) -> bool {
        self.tx.is_closed()
    }

    fn sent(&self, routine: bool) {
        if !routine || self.tx.max_capacity() - self.tx.capacity() >= NUDGE_AT {
            self.nudge.notify_one();
        }
    }
}

impl Drop for RecordTx {
    fn drop(&mut self) {
        // The last sender going closes the channel: the receiver should see it soon.
        self.nudge.notify_one();
    }
}

/// The receiving end.
#[derive(Debug)]
pub struct RecordRx {
    rx: mpsc::Receiver<Record>,
    nudge: Arc<Notify>,
}

impl RecordRx {
    pub fn try_recv(&mut self) -> Result<Record, TryRecvError> {
        self.rx.try_recv()
    }

    pub async fn recv(&mut self) -> Option<Record> {
        self.rx.recv().await
    }

    /// Resolves when the records waiting should be taken: the sender nudged (see the module
    /// doc), or, with `within`, at the first multiple of it at which any record waits (the
    /// bound on a routine record's wait while nothing else wakes the receiver; a timer wakes
    /// the runtime, so it is asked for only then). Never takes a record itself.
    pub async fn ready(&self, within: Option<Duration>) {
        let Some(within) = within else {
            return self.nudge.notified().await;
        };
        tokio::select! {
            _ = self.nudge.notified() => {}
            _ = async {
                loop {
                    tokio::time::sleep(within).await;
                    if !self.rx.is_empty() || self.rx.is_closed() {
                        break;
                    }
                }
            } => {}
        }
    }
}
