//! Which Gantt rows the timeline draws.
//!
//! [`rows`] is what the data in the window would like, most detailed first: with prover
//! phases one row per phase and partition (or per phase when there are more than asked for),
//! else one per threshold phase; then one per phase of the baseline. [`fit`] cuts that to the
//! lines there are, choosing the most detailed form that fits: every phase and partition; one
//! row per partition with the other phases lettered by group; one row per phase; one lettered
//! row per group (threshold phases: one shaded row); the baseline's rows in the room left.

use provetop_shared::classify::ThresholdPhase;
use provetop_shared::Phase;

use crate::app::App;

/// What a Gantt row shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RowKey {
    /// One phase of one partition (or of no partition).
    Part(Phase, Option<u32>),
    /// One phase, every partition.
    Phase(Phase),
    /// A threshold phase.
    Threshold(ThresholdPhase),
    /// A group of phases on one row, each cell lettered by its phase (short screens).
    Group(Group),
    /// The spans of a group that belong to no partition, lettered like [`RowKey::Group`]:
    /// beside one row per partition of the partitioned phases, when those fit and the rest
    /// does not.
    Rest(Group),
    /// One phase of the baseline, every partition (dim, under the shown session's rows).
    Base(Phase),
    /// Every phase of the baseline on one row, lettered (when a row per phase does not fit).
    BaseAll,
}

/// Phase groups of the compact timeline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Group {
    /// SRS generation or load.
    Srs,
    /// Synthesis (all partitions).
    Synth,
    /// The prove call and its steps (FFT, multiexps).
    Prove,
    /// Verification.
    Verify,
    /// Anything else.
    Other,
}

impl Group {
    /// The group of a phase.
    pub fn of(p: &Phase) -> Group {
        match p {
            Phase::SrsGenerate | Phase::SrsLoad => Group::Srs,
            Phase::Synthesis => Group::Synth,
            Phase::Prove
            | Phase::GpuSetup
            | Phase::FftH
            | Phase::MsmH
            | Phase::MsmL
            | Phase::MsmAB1
            | Phase::MsmB2 => Group::Prove,
            Phase::Verify => Group::Verify,
            Phase::Other(_) => Group::Other,
        }
    }

    pub(super) fn name(self) -> &'static str {
        match self {
            Group::Srs => "srs",
            Group::Synth => "synth",
            Group::Prove => "prove",
            Group::Verify => "verify",
            Group::Other => "other",
        }
    }
}

impl RowKey {
    /// Row label (fits the gutter).
    pub fn label(&self) -> String {
        match self {
            RowKey::Part(p, Some(i)) => format!("{} p{i}", short_phase(p)),
            RowKey::Part(p, None) | RowKey::Phase(p) => short_phase(p).to_string(),
            RowKey::Group(g) => g.name().to_string(),
            RowKey::Rest(g) => g.name().to_string(),
            RowKey::Base(p) => format!("b {}", short_phase(p)),
            RowKey::BaseAll => "baseline".into(),
            RowKey::Threshold(t) => match t {
                ThresholdPhase::GpuOrTransition => "gpu/trans".into(),
                other => other.name().into(),
            },
        }
    }
}

/// Phase names short enough for the gutter.
pub fn short_phase(p: &Phase) -> &str {
    match p {
        Phase::SrsGenerate => "srs gen",
        Phase::SrsLoad => "srs load",
        Phase::Synthesis => "synth",
        Phase::GpuSetup => "gpu setup",
        // rust-fil-proofs' sealing steps (read from its log lines) as the field names them.
        Phase::Other(name) => match name.as_str() {
            "seal_pre_commit_phase1" => "PC1",
            "seal_pre_commit_phase2" => "PC2",
            "seal_commit_phase1" => "C1",
            "seal_commit_phase2" => "C2",
            "seal_commit_phase2_circuit_proofs" => "C2 proofs",
            "validate_cache_for_precommit_phase2" => "PC2 check",
            "validate_cache_for_commit" => "C check",
            "params_load" => "params",
            "clear_cache" => "clear",
            other => other,
        },
        other => other.as_str(),
    }
}

/// The rows the data in `[t0, t1]` would like, most detailed first (at most `max`), then
/// the baseline's ([`RowKey::Base`]) when one is drawn in.
pub fn rows(app: &App, t0: u64, t1: u64, max: usize) -> Vec<RowKey> {
    let mut out = own_rows(app, t0, t1, max);
    if let Some(b) = &app.baseline {
        let mut phases: Vec<Phase> = Vec::new();
        for s in b.spans_in(&app.model, t0, t1) {
            if !phases.contains(&s.phase) {
                phases.push(s.phase);
            }
        }
        phases.sort();
        out.extend(phases.into_iter().map(RowKey::Base));
    }
    out
}

/// Whether the timeline draws the prover's phases (sent, or read from its log lines) rather
/// than the RSS threshold bands.
pub(super) fn prover_phases(m: &crate::model::Model) -> bool {
    m.has_phases()
}

fn own_rows(app: &App, t0: u64, t1: u64, max: usize) -> Vec<RowKey> {
    let m = &app.model;
    if prover_phases(m) {
        let mut keys = m.phase_rows(t0, t1);
        keys.sort();
        let detailed: Vec<RowKey> = keys
            .iter()
            .map(|(p, i)| RowKey::Part(p.clone(), *i))
            .collect();
        if detailed.len() <= max {
            return detailed;
        }
        return grouped(&detailed);
    }
    let mut phases: Vec<ThresholdPhase> = m
        .runs_in(t0, t1)
        .iter()
        .filter(|r| r.end >= t0)
        .map(|r| r.phase)
        .collect();
    phases.sort();
    phases.dedup();
    phases.into_iter().map(RowKey::Threshold).collect()
}

/// One row per partition of the phases that have partitions, the other phases lettered on
/// a row per group; in proof order (the SRS, then synthesis's partitions, then the prove
/// call, then verification), a group's lettered row before its partitions' rows.
fn per_partition(rows: &[RowKey]) -> Vec<RowKey> {
    let mut out: Vec<RowKey> = rows
        .iter()
        .filter(|r| matches!(r, RowKey::Part(_, Some(_))))
        .cloned()
        .collect();
    let mut rest: Vec<Group> = rows
        .iter()
        .filter_map(|r| match r {
            RowKey::Part(p, None) => Some(Group::of(p)),
            _ => None,
        })
        .collect();
    rest.sort();
    rest.dedup();
    out.extend(rest.into_iter().map(RowKey::Rest));
    // Stable: the partitions keep their order within their group.
    out.sort_by_key(|r| match r {
        RowKey::Rest(g) => (*g, 0),
        RowKey::Part(p, _) => (Group::of(p), 1),
        _ => (Group::Other, 2),
    });
    out
}

fn compact(rows: &[RowKey]) -> Vec<RowKey> {
    let mut groups: Vec<Group> = rows
        .iter()
        .filter_map(|r| match r {
            RowKey::Part(p, _) | RowKey::Phase(p) => Some(Group::of(p)),
            _ => None,
        })
        .collect();
    groups.sort();
    groups.dedup();
    groups.into_iter().map(RowKey::Group).collect()
}

fn grouped(rows: &[RowKey]) -> Vec<RowKey> {
    let mut out: Vec<RowKey> = Vec::new();
    for r in rows {
        let k = match r {
            RowKey::Part(p, _) => RowKey::Phase(p.clone()),
            other => other.clone(),
        };
        if !out.contains(&k) {
            out.push(k);
        }
    }
    out
}

/// The rows that fit the timeline's lines, and what its title says of them.
pub(super) struct Fit {
    /// The shown session's rows.
    pub(super) rows: Vec<RowKey>,
    /// The baseline's rows under them (one per phase, one lettered row, or none).
    pub(super) base_rows: Vec<RowKey>,
    /// Some row is lettered: the title carries the legend.
    pub(super) lettered: bool,
    /// Rows left out for want of lines.
    pub(super) hidden: usize,
    /// The threshold phases do not fit: one shaded row shows them all.
    pub(super) single_threshold_row: bool,
}

/// Cut `wanted` to `h` lines; `prover`: the rows are the prover's phases, not thresholds.
pub(super) fn fit(wanted: &[RowKey], h: usize, prover: bool) -> Fit {
    let is_base = |r: &&RowKey| matches!(r, RowKey::Base(_) | RowKey::BaseAll);
    let base_rows: Vec<RowKey> = wanted.iter().filter(is_base).cloned().collect();
    let mut rows: Vec<RowKey> = wanted.iter().filter(|r| !is_base(r)).cloned().collect();
    // The most detailed form that fits: every phase and partition; one row per partition
    // with the other phases lettered by group; one row per phase; one lettered row per group.
    if rows.len() > h {
        let parts = per_partition(&rows);
        let partitioned = parts.iter().any(|r| matches!(r, RowKey::Part(..)));
        rows = if partitioned && parts.len() <= h {
            parts
        } else {
            let g = grouped(&rows);
            if prover && g.len() > h {
                compact(&rows)
            } else {
                g
            }
        };
    }
    let lettered = rows
        .iter()
        .any(|r| matches!(r, RowKey::Group(_) | RowKey::Rest(_)));
    let hidden = rows.len().saturating_sub(h);
    let single_threshold_row = !prover && rows.len() > h;
    rows.truncate(h);
    // The baseline's rows in the room left: one per phase, else one lettered row.
    let room = h - rows.len();
    let base_rows: Vec<RowKey> = if base_rows.len() <= room {
        base_rows
    } else if room >= 1 && !base_rows.is_empty() {
        vec![RowKey::BaseAll]
    } else {
        Vec::new()
    };
    Fit {
        rows,
        base_rows,
        lettered,
        hidden,
        single_threshold_row,
    }
}
