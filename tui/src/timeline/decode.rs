//! The threads of a replay that decode parts ahead of a reducer ([`Ahead`]) and free them
//! after ([`Dropper`]).
//!
//! Contract: [`Ahead::take`] gives part `i` as [`Source::records`] would, or `None` when it
//! is not one still to come (the caller decodes it itself); the threads end when their
//! receivers are dropped. What [`Dropper::free`] is given is freed on its thread, or where it
//! is given when the thread is gone.

use std::sync::mpsc;
use std::sync::Arc;

use provetop_shared::Record;

use super::{Source, AHEAD_CHUNKS};

/// Part `i`'s records, or why they cannot be read.
pub(super) type Decoded = Result<Arc<Vec<Record>>, String>;

/// Frees decoded parts on a thread of its own: freeing a part's records costs about as much
/// as reducing a fifth of them, and is nobody's wait. Without the thread they are freed where
/// they are let go.
#[derive(Clone)]
pub(crate) struct Dropper(mpsc::Sender<Arc<Vec<Record>>>);

impl Dropper {
    pub(super) fn start() -> Dropper {
        let (tx, rx) = mpsc::channel::<Arc<Vec<Record>>>();
        let _ = std::thread::Builder::new()
            .name("replay-free".into())
            .spawn(move || rx.into_iter().for_each(drop));
        Dropper(tx)
    }

    /// Let `recs` go: freed on the thread, or here when it is gone.
    pub(crate) fn free(&self, recs: Arc<Vec<Record>>) {
        let _ = self.0.send(recs);
    }
}

/// Parts decoded ahead on threads of their own, in order: the next to come and where they
/// end. Decoding a part costs about twice as much as reducing it, so a seek has two decoders
/// (the background pass, which shares the cores with the screen, one), and the decoding
/// overlaps the reducing. The decoded records go back to the decoders' heaps, so the
/// reducer's keeps what the model holds, unfragmented by them.
pub(super) struct Ahead {
    /// One receiver a thread: part `from + k` comes from `rx[k % rx.len()]`.
    rx: Vec<mpsc::Receiver<(usize, Decoded)>>,
    from: usize,
    next: usize,
    end: usize,
    /// Where the parts passed over go.
    dropper: Dropper,
}

impl Ahead {
    /// Decode parts `from..end` of `src` on `threads` threads, about [`AHEAD_CHUNKS`]
    /// together waiting to be taken; they end when the receivers are dropped (another seek).
    pub(super) fn start(
        src: &Arc<Source>,
        from: usize,
        end: usize,
        threads: usize,
        dropper: &Dropper,
    ) -> Option<Ahead> {
        let n = threads.clamp(1, end.saturating_sub(from).max(1));
        let mut rx = Vec::with_capacity(n);
        for k in 0..n {
            let (tx, r) = mpsc::sync_channel(AHEAD_CHUNKS.div_ceil(n));
            let src = src.clone();
            std::thread::Builder::new()
                .name("replay-decode".into())
                .spawn(move || {
                    for i in (from + k..end).step_by(n) {
                        if tx.send((i, src.records(i))).is_err() {
                            return;
                        }
                    }
                })
                .ok()?;
            rx.push(r);
        }
        Some(Ahead {
            rx,
            from,
            next: from,
            end,
            dropper: dropper.clone(),
        })
    }

    /// Part `i` if it is still to come (waiting for it; those before it, found in the
    /// cache meanwhile, are passed over), else `None`.
    pub(super) fn take(&mut self, i: usize) -> Option<Decoded> {
        if i < self.next || i >= self.end {
            return None;
        }
        while self.next < i {
            // A part found in the cache meanwhile: its decoded copy goes.
            let (_, passed) = self.rx[(self.next - self.from) % self.rx.len()]
                .recv()
                .ok()?;
            if let Ok(recs) = passed {
                self.dropper.free(recs);
            }
            self.next += 1;
        }
        let (_, recs) = self.rx[(i - self.from) % self.rx.len()].recv().ok()?;
        self.next = i + 1;
        Some(recs)
    }
}
