//! The proofs section: proofs finished (or, without prover events, proof cycles by RSS
//! thresholds), seconds per proof and per sector over busy time, sectors per hour, and the
//! same per batch mode.

use super::figure::{Figures, Section, Unit};
use super::select::Chosen;

/// The proof rows of `chosen` (the selected proofs, folded); `cycles`: the proof cycles by
/// thresholds over every sample (None without one).
pub(super) fn proof_figures(
    f: &mut Figures,
    has_events: bool,
    chosen: &Chosen,
    cycles: Option<u64>,
) -> std::io::Result<()> {
    let why = || -> String {
        if !has_events {
            "no prover events".into()
        } else if chosen.all == 0 {
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
            Ok(chosen.count as f64)
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
    let busy = chosen.busy_ns as f64 / 1e9;
    let sectors = chosen.sectors;
    let some = !chosen.is_empty();
    let or = |v: f64| if some { Ok(v) } else { Err(why()) };
    f.push(
        "s_per_proof",
        "seconds per proof (busy time)",
        Section::Proofs,
        Unit::Seconds,
        or(busy / chosen.count.max(1) as f64),
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
    for row in chosen.per_mode.rows()? {
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
    Ok(())
}
