//! The proofs section: proofs finished (or, without prover events, proof cycles by RSS
//! thresholds), seconds per proof and per sector over busy time, sectors per hour, and the
//! same per batch mode.

use super::figure::{Figures, Section, Unit};
use crate::model::{busy_ns, mode_rows, FinishedProof, ProofSpan};

/// The proof rows of `chosen` (the selected proofs) out of `all`; `cycles`: the proof
/// cycles by thresholds over every sample (None without one).
pub(super) fn proof_figures(
    f: &mut Figures,
    has_events: bool,
    chosen: &[&ProofSpan],
    all: &[&ProofSpan],
    cycles: Option<u64>,
) {
    let finished: Vec<FinishedProof> = chosen.iter().filter_map(|p| p.finished_ok()).collect();
    let why = || -> String {
        if !has_events {
            "no prover events".into()
        } else if all.is_empty() {
            "no proofs".into()
        } else {
            "no proof selected".into()
        }
    };
    f.push(
        "proofs",
        "proofs finished",
        Section::Proofs,
        Unit::Count,
        if has_events {
            Ok(chosen.len() as f64)
        } else {
            Err(why())
        },
        "no prover events",
        false,
    );
    if !has_events {
        // Proof cycles as classify counts them by thresholds: what a CSV has for proofs.
        f.push(
            "cycles",
            "proof cycles (by RSS thresholds)",
            Section::Proofs,
            Unit::Count,
            cycles
                .map(|c| c as f64)
                .ok_or_else(|| "no samples".to_string()),
            "counted only without prover events (see proofs)",
            true,
        );
    }
    let intervals: Vec<(u64, u64)> = finished.iter().map(|p| (p.1, p.2)).collect();
    let busy = busy_ns(&intervals) as f64 / 1e9;
    let sectors: u64 = finished.iter().map(|p| p.3 as u64).sum();
    let some = !finished.is_empty();
    let or = |v: f64| if some { Ok(v) } else { Err(why()) };
    f.push(
        "s_per_proof",
        "seconds per proof (busy time)",
        Section::Proofs,
        Unit::Seconds,
        or(busy / finished.len().max(1) as f64),
        "no proofs",
        false,
    );
    f.push(
        "s_per_sector",
        "seconds per sector (busy time)",
        Section::Proofs,
        Unit::Seconds,
        or(busy / sectors.max(1) as f64),
        "no proofs",
        false,
    );
    f.push(
        "sectors_per_hour",
        "sectors per busy hour",
        Section::Proofs,
        Unit::PerHour,
        or(if busy > 0.0 {
            sectors as f64 * 3600.0 / busy
        } else {
            0.0
        }),
        "no proofs",
        false,
    );
    for row in mode_rows(&finished) {
        let m = row.mode;
        let absent = format!("no {m} proofs");
        f.push(
            format!("proofs[{m}]"),
            format!("{m}: proofs"),
            Section::Mode,
            Unit::Count,
            Ok(row.proofs as f64),
            absent.clone(),
            false,
        );
        f.push(
            format!("s_per_proof[{m}]"),
            format!("{m}: seconds per proof"),
            Section::Mode,
            Unit::Seconds,
            Ok(row.busy_s / row.proofs.max(1) as f64),
            absent.clone(),
            false,
        );
        f.push(
            format!("s_per_sector[{m}]"),
            format!("{m}: seconds per sector"),
            Section::Mode,
            Unit::Seconds,
            Ok(row.s_per_sector()),
            absent.clone(),
            false,
        );
        f.push(
            format!("sectors_per_hour[{m}]"),
            format!("{m}: sectors per hour"),
            Section::Mode,
            Unit::PerHour,
            Ok(row.sectors_per_hour()),
            absent,
            false,
        );
    }
}
