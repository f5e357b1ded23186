//! The state the run loop, the control reader, the signal thread and the proof threads share:
//! one mutex over [`Ctl`], one condition variable that wakes the run loop after any change.
//!
//! Contract: a change and the event that reports it happen under the same lock, so the
//! stream never shows a `state`, `proof_queued` or `mode_changed` out of order with the
//! change itself. `state` is sent only when the announced state actually changes. The first
//! stop reason wins (it becomes `bye`'s reason); a later stop can still raise the abort flag.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Instant;

use provetop_shared::protocol::{BatchMode, Event, ProverState};

use super::budget::MemModel;
use super::{Config, SigtermPolicy};
use crate::events::Emitter;
use crate::job::{ProofSpec, Workload};

pub(super) struct Ctl {
    /// Proofs not yet started, in the order they will start.
    pub(super) queue: VecDeque<ProofSpec>,
    pub(super) paused: bool,
    /// The mode proofs start in now.
    pub(super) mode: BatchMode,
    /// A switch requested while proofs were in flight; it takes over when none is.
    pub(super) pending_mode: Option<BatchMode>,
    /// Proofs between their start and their `proof_finished`.
    pub(super) running: usize,
    /// Why the daemon is stopping, once it is.
    pub(super) stop: Option<String>,
    pub(super) next_proof: u64,
    pub(super) next_sector: u64,
    /// Since when nothing has been proved (`--repeat-every` counts from here).
    pub(super) idle_since: Instant,
    pub(super) mem: MemModel,
    /// RSS with nothing in flight (the resident SRS, code, stacks), measured once it is loaded.
    pub(super) floor: u64,
    /// Signals received so far (the second one always aborts).
    pub(super) signals: u32,
    /// Last state announced (a `state` event is sent on changes only).
    pub(super) state: Option<ProverState>,
}

pub(super) struct Shared {
    pub(super) ctl: Mutex<Ctl>,
    /// Notified after every change the run loop may be waiting for.
    pub(super) cv: Condvar,
    /// Polled by SRS generation and by the proof in flight; raised, they give up early.
    pub(super) abort: Arc<AtomicBool>,
    pub(super) emitter: Emitter,
    pub(super) workload: Workload,
    pub(super) on_sigterm: SigtermPolicy,
    pub(super) mem_budget: Option<u64>,
}

impl Shared {
    pub(super) fn new(cfg: &Config, emitter: Emitter) -> Shared {
        Shared {
            ctl: Mutex::new(Ctl {
                queue: VecDeque::new(),
                paused: false,
                mode: cfg.mode,
                pending_mode: None,
                running: 0,
                stop: None,
                next_proof: 1,
                next_sector: 0,
                idle_since: Instant::now(),
                mem: MemModel::default(),
                floor: 0,
                signals: 0,
                state: None,
            }),
            cv: Condvar::new(),
            abort: Arc::new(AtomicBool::new(false)),
            emitter,
            workload: cfg.workload,
            on_sigterm: cfg.on_sigterm,
            mem_budget: cfg.mem_budget,
        }
    }

    /// Poisoning is ignored: a proof thread that panics is reaped as a failed proof, and the
    /// daemon goes on.
    pub(super) fn lock(&self) -> MutexGuard<'_, Ctl> {
        self.ctl.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(super) fn set_state(&self, c: &mut Ctl, state: ProverState) {
        if c.state != Some(state) {
            c.state = Some(state);
            self.emitter.emit(Event::State { state });
        }
    }

    /// The mode new work is cut for: a pending switch counts as made.
    pub(super) fn effective_mode(c: &Ctl) -> BatchMode {
        c.pending_mode.unwrap_or(c.mode)
    }

    /// Begin stopping for `reason`; with `abort`, cut the work in flight short too.
    pub(super) fn stop(&self, c: &mut Ctl, reason: &str, abort: bool) {
        if abort {
            self.abort.store(true, Relaxed);
        }
        if c.stop.is_none() {
            c.stop = Some(reason.to_string());
            self.set_state(c, ProverState::Stopping);
        }
        self.cv.notify_all();
    }
}
