//! The reducer's tables of a store: memory by the prover's actual phases
//! ([`phase_table`]) and by batch mode ([`mode_table`]), what `classify` prints.

use std::fmt::Write as _;

use provetop_shared::units::{fmt_bytes, fmt_secs};
use provetop_shared::Phase;

use super::Store;
use crate::model::Stats;

/// Memory by the prover's actual phases, from the reducer's phase spans: per phase, how many
/// spans, the wall time it was open (overlapping partitions counted once), RSS min/max/mean,
/// and the largest pinned and GPU readings. None for a file without prover events.
pub fn phase_table(store: &Store) -> Option<String> {
    if !store.has_events() {
        return None;
    }
    let digest = store.span_digest();
    let mut out = String::new();
    // Every span read from the child's log lines (it never spoke the protocol): said so.
    let whence = if digest.count > 0 && digest.all_derived {
        "from its log lines"
    } else {
        "from events"
    };
    let _ = writeln!(out, "prover phases ({whence}):");
    // The name column as wide as its longest name (a rust-fil-proofs call's can be 30).
    let w = phase_width(store);
    let _ = writeln!(
        out,
        "  {:<w$} {:>6} {:>9} {:>11} {:>11} {:>11} {:>11} {:>11}",
        "phase", "spans", "time", "rss min", "rss max", "rss mean", "pinned max", "gpu max"
    );
    let b = |st: &Stats, f: fn(&Stats) -> Option<u64>| f(st).map(fmt_bytes).unwrap_or("-".into());
    // Rows in the order the phases first started.
    let mut order: Vec<(u64, &Phase, usize)> = digest
        .rows
        .iter()
        .enumerate()
        .map(|(i, r)| (r.first_start, &r.phase, i))
        .collect();
    order.sort();
    for &(_, phase, i) in &order {
        let row = &digest.rows[i];
        let _ = writeln!(
            out,
            "  {:<w$} {:>6} {:>9} {:>11} {:>11} {:>11} {:>11} {:>11}",
            crate::text::inert(phase.as_str()),
            row.spans,
            fmt_secs(row.intervals.total_ns() as f64 / 1e9),
            b(&row.rss, Stats::min),
            b(&row.rss, Stats::max),
            b(&row.rss, Stats::mean),
            b(&row.pinned, Stats::max),
            b(&row.gpu, Stats::max),
        );
    }
    if store.between.n > 0 {
        let s = &store.between;
        let _ = writeln!(
            out,
            "  {:<w$} {:>6} {:>9} {:>11} {:>11} {:>11} {:>11} {:>11}",
            "(no phase open)",
            "-",
            fmt_secs(store.between_ns as f64 / 1e9),
            b(s, Stats::min),
            b(s, Stats::max),
            b(s, Stats::mean),
            "-",
            "-",
        );
    }
    Some(out)
}

/// The width of [`phase_table`]'s name column: its longest phase name (as shown), at least
/// 18.
pub fn phase_width(store: &Store) -> usize {
    store.span_digest().widest.max(18)
}

/// `batch modes (from events)`: per mode, in the order the modes first ran, the proofs that
/// finished ok, their sectors, the busy time (overlapping proofs count once), seconds per
/// sector and sectors per hour over it, and the peak RSS per proof (median and highest; above
/// the SRS floor: the lowest RSS sampled once the SRS was ready). The comparison an engineer
/// makes after switching modes in one session. `None` without a finished proof.
/// Fails only where a mode's figures cannot be read back from their temporary file.
pub fn mode_table(store: &Store) -> std::io::Result<Option<String>> {
    if store.modes.is_empty() {
        return Ok(None);
    }
    let floor = store.srs_floor;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "batch modes (from events){}:",
        floor.map_or(String::new(), |f| format!(", SRS floor {}", fmt_bytes(f)))
    );
    let _ = writeln!(
        out,
        "  {:<14} {:>6} {:>7} {:>9} {:>9} {:>9} {:>11} {:>11} {:>11}",
        "mode",
        "proofs",
        "sectors",
        "busy",
        "s/sector",
        "sectors/h",
        "peak median",
        "peak max",
        "above floor"
    );
    for row in store.modes.rows()? {
        let _ = writeln!(
            out,
            "  {:<14} {:>6} {:>7} {:>9} {:>9.2} {:>9.0} {:>11} {:>11} {:>11}",
            row.mode.to_string(),
            row.proofs,
            row.sectors,
            fmt_secs(row.busy_s),
            row.s_per_sector(),
            row.sectors_per_hour(),
            fmt_bytes(row.peak_median),
            fmt_bytes(row.peak_max),
            floor.map_or("-".into(), |f| fmt_bytes(row.peak_median.saturating_sub(f))),
        );
    }
    Ok(Some(out))
}
