//! Running one proof: its sectors, cut into units by the batch mode, proved, every partition
//! proof verified, and the `proof_started` … `proof_finished` events. Units run one after
//! another; `pipelined` overlaps whole proofs instead (see [`crate::daemon`]), told when this
//! one's synthesis is over through a [`Latch`].

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Instant;

use blstrs::Scalar as Fr;
use provetop_shared::protocol::{BatchMode, Event, Phase, PhaseTime};

use crate::backend::Backend;
use crate::circuit::{is_abort, Layout, PartitionCircuit, PartitionWitness};
use crate::events::Emitter;
use crate::heap;
use crate::modes::{self, Unit};
use crate::phases::{Call, CallTracker, Latch};
use crate::sector::Sector;

/// The circuit workload every proof uses.
#[derive(Debug, Clone, Copy)]
pub struct Workload {
    /// Partition circuit layout (N constraints).
    pub layout: Layout,
    /// Partitions per sector.
    pub partitions: u32,
    /// Seed of sector data and challenges.
    pub seed: u64,
}

/// One queued proof.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProofSpec {
    pub proof_id: u64,
    /// Run-wide index of its first sector (sector data derive from it).
    pub first_sector: u64,
    pub sectors: u32,
}

impl ProofSpec {
    /// Constraints of the whole proof.
    pub fn constraints(&self, w: &Workload) -> u64 {
        self.sectors as u64 * w.partitions as u64 * w.layout.constraints
    }
}

/// What a finished proof reports.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// Proving succeeded for every unit.
    pub ok: bool,
    /// Every partition proof verified.
    pub verified: bool,
    /// Stopped by the abort flag.
    pub aborted: bool,
    /// Wall seconds from `proof_started` until its units are all done.
    pub duration_s: f64,
    /// Seconds per phase (summed over partitions/units).
    pub phases: Vec<PhaseTime>,
    /// First error, if any.
    pub error: Option<String>,
    /// Peak heap above the level at the start of the proof (when the heap is counted).
    pub working_set: Option<u64>,
    /// Constraints alive at the peak in this mode (see [`modes::live_constraints`]).
    pub live_constraints: u64,
    /// Partition proofs produced.
    pub proofs: usize,
}

/// The `proof_finished` event of a proof that ended with `out` (the caller emits it once it
/// has accounted for the proof).
pub fn finished_event(spec: &ProofSpec, mode: BatchMode, out: &Outcome) -> Event {
    Event::ProofFinished {
        proof_id: spec.proof_id,
        ok: out.ok,
        verified: out.verified,
        duration_s: out.duration_s,
        mode,
        phases: out.phases.clone(),
        error: out.error.clone(),
        cancelled: false,
        requeued_as: vec![],
    }
}

impl Outcome {
    /// A proof that produced nothing because of `why`.
    pub fn failed(why: &str) -> Outcome {
        Outcome {
            ok: false,
            verified: false,
            aborted: false,
            duration_s: 0.0,
            phases: Vec::new(),
            error: Some(why.to_string()),
            working_set: None,
            live_constraints: 0,
            proofs: 0,
        }
    }
}

#[derive(Default)]
struct UnitResult {
    error: Option<String>,
    aborted: bool,
    verified: bool,
    totals: BTreeMap<Phase, f64>,
    proofs: usize,
}

struct Ctx<'a> {
    backend: &'a Backend,
    w: &'a Workload,
    proof_id: u64,
    sectors: &'a [Arc<Sector>],
    emitter: &'a Emitter,
    abort: &'a Arc<AtomicBool>,
}

fn tracker_for(ctx: &Ctx<'_>, unit: &Unit) -> Arc<CallTracker> {
    CallTracker::new(Call {
        emitter: ctx.emitter.clone(),
        proof_id: ctx.proof_id,
        partition: (unit.parts.len() == 1).then(|| unit.parts[0].label(ctx.w.partitions)),
        circuits: unit.parts.len() as u32,
        steps: ctx.backend.substeps(),
        abort: ctx.abort.clone(),
    })
}

fn run_unit(ctx: &Ctx<'_>, unit: &Unit, tracker: &Arc<CallTracker>) -> UnitResult {
    let mut circuits = Vec::with_capacity(unit.parts.len());
    let mut checks: Vec<(u32, Vec<Fr>)> = Vec::with_capacity(unit.parts.len());
    for part in &unit.parts {
        let w = PartitionWitness::new(
            &ctx.w.layout,
            ctx.sectors[part.sector].clone(),
            ctx.w.seed,
            part.partition,
        );
        let label = part.label(ctx.w.partitions);
        checks.push((label, w.public_inputs(&ctx.w.layout)));
        circuits
            .push(PartitionCircuit::new(ctx.w.layout, w, Some(tracker.clone())).with_label(label));
    }
    let mut r = UnitResult::default();
    match ctx.backend.prove(circuits, tracker) {
        Err(e) => {
            r.aborted = ctx.abort.load(Relaxed) || is_abort(&e);
            r.error = Some(if r.aborted {
                "aborted".to_string()
            } else {
                format!("proving failed: {e}")
            });
        }
        Ok(proofs) => {
            r.proofs = proofs.len();
            r.verified = proofs.len() == checks.len();
            for (proof, (label, inputs)) in proofs.iter().zip(&checks) {
                ctx.emitter.emit(Event::PhaseStarted {
                    proof_id: ctx.proof_id,
                    phase: Phase::Verify,
                    partition: Some(*label),
                });
                let t = Instant::now();
                let ok = match ctx.backend.verify(proof, inputs) {
                    Ok(ok) => ok,
                    Err(e) => {
                        r.error.get_or_insert(format!("verification error: {e}"));
                        false
                    }
                };
                let secs = t.elapsed().as_secs_f64();
                ctx.emitter.emit(Event::PhaseEnded {
                    proof_id: ctx.proof_id,
                    phase: Phase::Verify,
                    partition: Some(*label),
                    duration_s: secs,
                });
                *r.totals.entry(Phase::Verify).or_default() += secs;
                if !ok {
                    r.verified = false;
                    r.error
                        .get_or_insert(format!("partition {label} proof did not verify"));
                }
            }
        }
    }
    for (ph, s) in tracker.totals() {
        *r.totals.entry(ph).or_default() += s;
    }
    r
}

fn run_sequential(
    ctx: &Ctx<'_>,
    units: &[Unit],
    synthesized: Option<&Arc<Latch>>,
) -> Vec<UnitResult> {
    let mut out = Vec::with_capacity(units.len());
    for (i, unit) in units.iter().enumerate() {
        if ctx.abort.load(Relaxed) {
            out.push(UnitResult {
                aborted: true,
                error: Some("aborted".into()),
                ..Default::default()
            });
            break;
        }
        let t = tracker_for(ctx, unit);
        if let (Some(l), true) = (synthesized, i + 1 == units.len()) {
            t.signal_synthesized(l.clone());
        }
        let r = run_unit(ctx, unit, &t);
        let stop = r.error.is_some();
        out.push(r);
        if stop {
            break;
        }
    }
    out
}

/// Prove `spec` in `mode`: emits `proof_started` and the phases; the caller emits
/// [`finished_event`].
/// `synthesized`, if given, is raised when the proof's last unit has finished synthesis (or
/// the proof ended early).
pub fn run(
    backend: &Backend,
    w: &Workload,
    spec: &ProofSpec,
    mode: BatchMode,
    emitter: &Emitter,
    abort: &Arc<AtomicBool>,
    synthesized: Option<Arc<Latch>>,
) -> Outcome {
    let t0 = Instant::now();
    emitter.emit(Event::ProofStarted {
        proof_id: spec.proof_id,
        mode,
        sectors: spec.sectors,
        partitions: w.partitions,
        constraints: spec.constraints(w),
    });
    heap::reset_peak();
    let base = heap::live();
    let sectors: Vec<Arc<Sector>> = (0..spec.sectors as u64)
        .map(|i| {
            Arc::new(Sector::generate(
                w.seed,
                spec.first_sector + i,
                w.layout.depth,
            ))
        })
        .collect();
    let units = modes::plan(mode, sectors.len(), w.partitions);
    let ctx = Ctx {
        backend,
        w,
        proof_id: spec.proof_id,
        sectors: &sectors,
        emitter,
        abort,
    };
    let results = run_sequential(&ctx, &units, synthesized.as_ref());
    if let Some(l) = &synthesized {
        l.set();
    }
    let working_set = heap::counting().then(|| heap::peak().saturating_sub(base));

    let mut totals: BTreeMap<Phase, f64> = BTreeMap::new();
    let mut error = None;
    let mut aborted = false;
    let mut proofs = 0;
    let mut verified = results.len() == units.len();
    for r in &results {
        for (ph, s) in &r.totals {
            *totals.entry(ph.clone()).or_default() += s;
        }
        if error.is_none() {
            error = r.error.clone();
        }
        aborted |= r.aborted;
        verified &= r.verified;
        proofs += r.proofs;
    }
    let expected = spec.sectors as usize * w.partitions as usize;
    let ok = !aborted
        && proofs == expected
        && error.as_deref().is_none_or(|e| !e.starts_with("proving"));
    let verified = ok && verified && proofs == expected;
    let duration_s = t0.elapsed().as_secs_f64();
    let phases: Vec<PhaseTime> = totals
        .into_iter()
        .map(|(phase, duration_s)| PhaseTime { phase, duration_s })
        .collect();
    Outcome {
        ok,
        verified,
        aborted,
        duration_s,
        phases,
        error,
        working_set,
        live_constraints: modes::live_constraints(
            mode,
            spec.sectors,
            w.partitions,
            w.layout.constraints,
        ),
        proofs,
    }
}
