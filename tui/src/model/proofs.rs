//! Proof jobs and batch modes ([`Proofs`]): proofs in flight and finished, mode changes, and
//! the per-mode comparison (`m` overlay, `classify`'s mode table).

use provetop_shared::{BatchMode, Event};

use super::effects::{Effect, Effects};
use super::log::{Log, Logged};
use super::span::{busy_ns, ProofSpan, Stats};

/// Most finished proofs kept.
pub const MAX_PROOFS: usize = 10_000;
/// Most mode changes kept.
pub const MAX_MODE_CHANGES: usize = 1_000;
/// Finished proofs [`Proofs::throughput`] looks back over.
const THROUGHPUT_WINDOW: usize = 8;

/// What one batch mode did in a session: `classify`'s per-mode table and the `m` overlay.
#[derive(Debug, Clone, PartialEq)]
pub struct ModeRow {
    pub mode: BatchMode,
    /// Proofs that finished ok.
    pub proofs: usize,
    /// Sectors they held.
    pub sectors: u64,
    /// Seconds at least one of them was running.
    pub busy_s: f64,
    /// Median over proofs of the highest RSS sampled while each ran.
    pub peak_median: u64,
    /// The highest of those.
    pub peak_max: u64,
}

impl ModeRow {
    /// Busy seconds per sector.
    pub fn s_per_sector(&self) -> f64 {
        self.busy_s / self.sectors.max(1) as f64
    }

    /// Sectors per busy hour.
    pub fn sectors_per_hour(&self) -> f64 {
        if self.busy_s > 0.0 {
            self.sectors as f64 * 3600.0 / self.busy_s
        } else {
            0.0
        }
    }
}

/// One finished proof for [`mode_rows`]: mode, start and end (ns), sectors, peak RSS.
pub type FinishedProof = (BatchMode, u64, u64, u32, u64);

impl ProofSpan {
    /// The proof as [`mode_rows`] counts it, when it finished well.
    pub fn finished_ok(&self) -> Option<FinishedProof> {
        (self.ok == Some(true)).then_some(())?;
        Some((self.mode, self.start, self.end?, self.sectors, self.rss.max))
    }
}

/// Finished proofs summed per mode, in the order the modes first ran.
pub fn mode_rows(proofs: &[FinishedProof]) -> Vec<ModeRow> {
    let mut order: Vec<BatchMode> = Vec::new();
    for p in proofs {
        if !order.contains(&p.0) {
            order.push(p.0);
        }
    }
    order
        .into_iter()
        .map(|mode| {
            let these: Vec<&FinishedProof> = proofs.iter().filter(|p| p.0 == mode).collect();
            let intervals: Vec<(u64, u64)> = these.iter().map(|p| (p.1, p.2)).collect();
            let mut peaks: Vec<u64> = these.iter().map(|p| p.4).collect();
            peaks.sort_unstable();
            ModeRow {
                mode,
                proofs: these.len(),
                sectors: these.iter().map(|p| p.3 as u64).sum(),
                busy_s: busy_ns(&intervals) as f64 / 1e9,
                peak_median: peaks[peaks.len() / 2],
                peak_max: *peaks.last().expect("a mode in the list has a proof"),
            }
        })
        .collect()
}

/// A log entry of a proof read from the child's log lines.
fn from_lines(level: &str, message: String) -> Logged {
    Logged::Event(Event::Log {
        level: level.into(),
        target: "log lines".into(),
        message,
    })
}

/// How a `proof_finished` ended, for the prover's counts ([`super::ProverView::count`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ProofEnd {
    /// It proved: its sectors (at least 1) and the seconds the prover measured.
    Done {
        sectors: u32,
        duration_s: f64,
    },
    Failed,
    /// It failed while the session was being stopped: the stop ended it.
    Stopped,
    /// Cancelled before it started, and not requeued.
    Cancelled,
}

/// The proofs of a stream.
#[derive(Debug, Clone, Default)]
pub struct Proofs {
    /// Finished proofs, oldest first.
    pub finished: super::bounded::History<ProofSpan>,
    /// Proofs in flight.
    pub running: Vec<ProofSpan>,
    /// Mode changes: (t, from, to).
    pub mode_changes: super::bounded::History<(u64, BatchMode, BatchMode)>,
}

impl Proofs {
    /// An event at `t`: proofs start and finish, the mode changes. Returns how a finished
    /// proof ended, when the prover counts it. `derived`: read from the child's log lines,
    /// which say nothing of a proof's mode or verification (the log says neither).
    pub fn apply(
        &mut self,
        t: u64,
        e: &Event,
        derived: bool,
        log: &mut Log,
        fx: &mut Effects,
    ) -> Option<ProofEnd> {
        match e {
            Event::ProofStarted { proof_id, .. } if derived => {
                self.started(t, e, &mut Log::default());
                log.push(t, from_lines("debug", format!("proof {proof_id} started")));
            }
            Event::ProofFinished {
                proof_id,
                ok: true,
                duration_s,
                ..
            } if derived => {
                let end = self.finished(t, e, &mut Log::default(), fx);
                let secs = provetop_shared::units::fmt_secs(*duration_s);
                log.push(
                    t,
                    from_lines("info", format!("proof {proof_id} done in {secs}")),
                );
                return end;
            }
            Event::ProofStarted { .. } => self.started(t, e, log),
            Event::ProofFinished { .. } => return self.finished(t, e, log, fx),
            Event::ModeChanged { from, to } => {
                self.mode_changes
                    .push_bounded((t, *from, *to), MAX_MODE_CHANGES);
                fx.push(Effect::ModeChanged {
                    from: *from,
                    to: *to,
                });
                log.push(t, Logged::Event(e.clone()));
            }
            _ => {}
        }
        None
    }

    fn started(&mut self, t: u64, e: &Event, log: &mut Log) {
        let Event::ProofStarted {
            proof_id,
            mode,
            sectors,
            partitions,
            ..
        } = e
        else {
            return;
        };
        self.running.retain(|p| p.proof_id != *proof_id);
        self.running.push(ProofSpan {
            proof_id: *proof_id,
            mode: *mode,
            sectors: *sectors,
            partitions: *partitions,
            start: t,
            end: None,
            duration_s: None,
            ok: None,
            verified: None,
            rss: Stats::default(),
        });
        log.push(t, Logged::Event(e.clone()));
    }

    fn finished(&mut self, t: u64, e: &Event, log: &mut Log, fx: &mut Effects) -> Option<ProofEnd> {
        let Event::ProofFinished {
            proof_id,
            ok,
            verified,
            duration_s,
            mode,
            requeued_as,
            ..
        } = e
        else {
            return None;
        };
        if e.is_cancelled_proof() {
            // It never ran: nothing to close, and not a failure to alarm anyone with.
            self.running.retain(|p| p.proof_id != *proof_id);
            if !requeued_as.is_empty() {
                // Its sectors are still coming (the prover logs the requeue once).
                return None;
            }
            fx.push(Effect::ProofCancelled {
                proof_id: *proof_id,
            });
            log.push(t, Logged::Event(e.clone()));
            return Some(ProofEnd::Cancelled);
        }
        let mut span = match self.running.iter().position(|p| p.proof_id == *proof_id) {
            Some(i) => self.running.remove(i),
            None => ProofSpan {
                proof_id: *proof_id,
                mode: *mode,
                sectors: 1,
                partitions: 0,
                start: t.saturating_sub((duration_s.max(0.0) * 1e9) as u64),
                end: None,
                duration_s: None,
                ok: None,
                verified: None,
                rss: Stats::default(),
            },
        };
        span.end = Some(t);
        span.duration_s = Some(*duration_s);
        span.ok = Some(*ok);
        span.verified = Some(*verified);
        let end = if *ok {
            log.push(
                t,
                Logged::ProofDone {
                    proof_id: *proof_id,
                    duration_s: *duration_s,
                    mode: *mode,
                    verified: *verified,
                    peak: span.rss.max,
                },
            );
            ProofEnd::Done {
                sectors: span.sectors.max(1),
                duration_s: *duration_s,
            }
        } else {
            log.push(t, Logged::Event(e.clone()));
            ProofEnd::Failed
        };
        fx.push(Effect::ProofFinished(span.clone()));
        self.finished.push_bounded(span, MAX_PROOFS);
        Some(end)
    }

    /// Every proof in flight sees the tree's peak.
    pub fn observe(&mut self, peak: u64) {
        for pr in &mut self.running {
            pr.rss.add(peak);
        }
    }

    /// The mode of the proof in flight, else of the last proof if it finished at `since` or
    /// later.
    pub fn mode_since(&self, since: u64) -> Option<BatchMode> {
        self.running.first().map(|p| p.mode).or_else(|| {
            self.finished
                .back()
                .filter(|p| p.end.is_some_and(|e| e >= since))
                .map(|p| p.mode)
        })
    }

    /// The proofs kept (the last [`MAX_PROOFS`]) that finished ok, oldest first.
    fn finished_ok(&self) -> impl DoubleEndedIterator<Item = FinishedProof> + '_ {
        self.finished.iter().filter_map(ProofSpan::finished_ok)
    }

    /// The finished proofs kept summed per mode.
    pub fn mode_rows(&self) -> Vec<ModeRow> {
        mode_rows(&self.finished_ok().collect::<Vec<_>>())
    }

    /// Sectors per hour of busy time over the last proofs finished in `mode` (at least two
    /// among the last `THROUGHPUT_WINDOW`): sectors over the union of their start–end
    /// intervals. Unlike seconds per proof it counts overlapping proofs (`pipelined`) once and
    /// idle gaps not at all, so modes compare.
    pub fn throughput(&self, mode: BatchMode) -> Option<f64> {
        let recent: Vec<FinishedProof> = self.finished_ok().rev().take(THROUGHPUT_WINDOW).collect();
        mode_rows(&recent)
            .into_iter()
            .find(|r| r.mode == mode && r.proofs >= 2 && r.busy_s > 0.0)
            .map(|r| r.sectors_per_hour())
    }
}
