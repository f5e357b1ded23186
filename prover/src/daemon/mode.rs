//! Batch-mode requests (`set_mode` controls).
//!
//! Contract: a request for the effective mode is only logged. One over `--mem-budget` (or over
//! what the process can reach before the limit that binds it, where that is less) gets
//! `mode_refused` and changes nothing. Otherwise, with proofs in flight, it becomes the
//! pending switch (a later request replaces it) and takes effect at the next proof boundary:
//! the proof in flight keeps the mode it started with. With nothing in flight, it takes
//! effect at once. Taking effect means `mode_changed`, then the waiting queue cut anew.

use provetop_shared::protocol::{BatchMode, Event};

use super::state::{Ctl, Shared};
use super::LOG_TARGET;

impl Shared {
    pub(super) fn request_mode(&self, c: &mut Ctl, mode: BatchMode) {
        if Self::effective_mode(c) == mode {
            self.emitter.emit(Event::Log {
                level: "info".into(),
                target: LOG_TARGET.into(),
                message: format!("already in mode {mode}"),
            });
            return;
        }
        // What the kernel allows is read only where a budget is checked.
        let reach = self.mem_budget.and_then(|_| super::reach::now());
        if let Some(reason) =
            c.mem
                .over_budget(self.mem_budget, reach, c.floor, &self.workload, mode)
        {
            self.emitter.emit(Event::ModeRefused {
                requested: mode,
                reason,
            });
            return;
        }
        if c.running > 0 {
            c.pending_mode = Some(mode);
            self.emitter.emit(Event::Log {
                level: "info".into(),
                target: LOG_TARGET.into(),
                message: format!("mode {mode} takes effect when the proof in flight ends"),
            });
        } else {
            c.pending_mode = None;
            self.switch(c, mode);
        }
    }

    /// The mode changes now (nothing in flight): announce it, cut the waiting queue anew.
    pub(super) fn switch(&self, c: &mut Ctl, mode: BatchMode) {
        let from = c.mode;
        c.mode = mode;
        self.emitter.emit(Event::ModeChanged { from, to: mode });
        self.requeue_for(c, mode);
    }
}
