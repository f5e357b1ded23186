//! `provetop classify`: the seed's threshold table, then a summary, then (for sessions with
//! prover events) memory by the prover's actual phases and, per batch mode, throughput and
//! peak memory.
//!
//! The table is exactly what the operators' awk script printed — one line per contiguous run
//! of a threshold phase, `synth: samples=25, min=101.4 GiB, max=177.0 GiB`, rounded like C's
//! `printf("%.1f")` — except that the first run's minimum is the true minimum (the script
//! started it at 0) and no run's minimum is capped at 999 GiB (the script reset it to 999).

use std::fmt::Write as _;

use provetop_shared::classify::{classify_series, summarize, Run, ThresholdPhase, Thresholds};
use provetop_shared::clock::civil_from_days;
use provetop_shared::session::SessionHeader;
use provetop_shared::units::{fmt_bytes, fmt_secs};
use provetop_shared::RecordBody;

use crate::cli::ClassifyArgs;
use crate::store::Store;

/// Run `provetop classify`; returns the process exit code.
pub fn main(args: &ClassifyArgs) -> anyhow::Result<i32> {
    let store = Store::scan(&args.file, args.thresholds)
        // LoadError already names the cause; `{:#}` would repeat its io::Error source.
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    store.report_warnings();
    let text = if args.table_only {
        render_table(&store, args.thresholds)?
    } else {
        render(&store, args.thresholds)?
    };
    crate::export::write_stdout(text.as_bytes())?;
    Ok(0)
}

/// The whole report: the seed's table, a blank line, the summary, and the prover-phase
/// table when the file has prover events.
///
/// Fails (one line) when the file holds no memory sample at all.
pub fn render(store: &Store, thresholds: Thresholds) -> anyhow::Result<String> {
    let series = rss_series(store)?;
    let runs = classify_series(thresholds, series.iter().copied());
    let mut out = table(&runs);
    out.push('\n');
    summary(&mut out, store, thresholds, &series, &runs);
    if let Some(table) = crate::store::phase_table(store) {
        out.push('\n');
        out.push_str(&table);
    }
    if let Some(table) = crate::store::mode_table(store) {
        out.push('\n');
        out.push_str(&table);
    }
    Ok(out)
}

/// Only the seed's table (`--table-only`).
pub fn render_table(store: &Store, thresholds: Thresholds) -> anyhow::Result<String> {
    let series = rss_series(store)?;
    Ok(table(&classify_series(thresholds, series.iter().copied())))
}

fn table(runs: &[Run]) -> String {
    let mut out = String::new();
    for run in runs {
        let _ = writeln!(out, "{run}");
    }
    out
}

/// `(t, rss)` of every sample, in file order; an error when there is none.
fn rss_series(store: &Store) -> anyhow::Result<Vec<(u64, u64)>> {
    let series: Vec<(u64, u64)> = store
        .records()
        .iter()
        .filter_map(|r| match &r.body {
            RecordBody::Sample(s) => Some((r.t, s.rss)),
            _ => None,
        })
        .collect();
    if series.is_empty() {
        anyhow::bail!(
            "{}: no memory samples to classify ({} other records)",
            store.path().display(),
            store.records().len()
        );
    }
    Ok(series)
}

/// The summary block: span, proof cycles, time per phase, peak, idle floor.
fn summary(
    out: &mut String,
    store: &Store,
    thresholds: Thresholds,
    series: &[(u64, u64)],
    runs: &[Run],
) {
    let Some(sum) = summarize(thresholds, series) else {
        return;
    };
    let header = store.header();
    let start = store.start();
    let _ = writeln!(
        out,
        "summary: {} samples over {} (one every {}), thresholds {}/{}/{}/{} GiB",
        sum.samples,
        fmt_secs(sum.span_s),
        fmt_secs(sum.interval_s),
        thresholds.idle,
        thresholds.gpu,
        thresholds.synth,
        thresholds.peak
    );
    let _ = writeln!(
        out,
        "proof cycles detected: {} (rises above {} GiB after idling at or below {} GiB)",
        sum.cycles, thresholds.synth, thresholds.gpu
    );
    let total: f64 = sum.time_in.iter().map(|(_, s)| s).sum();
    let _ = writeln!(out, "time in phase:");
    for (phase, secs) in &sum.time_in {
        let n_runs = runs.iter().filter(|r| r.phase == *phase).count();
        let share = if total > 0.0 {
            secs / total * 100.0
        } else {
            0.0
        };
        let _ = writeln!(
            out,
            "  {:<18} {:>8}  {:>5.1}%  {} run{}",
            phase.name(),
            fmt_secs(*secs),
            share,
            n_runs,
            if n_runs == 1 { "" } else { "s" }
        );
    }
    let (peak_b, peak_t) = sum.peak;
    let _ = writeln!(
        out,
        "peak: {} RSS at {:.1} s from start ({})",
        fmt_bytes(peak_b),
        peak_t.saturating_sub(start) as f64 / 1e9,
        fmt_wall(header, peak_t)
    );
    // The interval peak (VmHWM reset every sample) catches spikes between two samples.
    let hwm = store
        .records()
        .iter()
        .filter_map(|r| match &r.body {
            RecordBody::Sample(s) => s.peak.map(|p| (p, r.t)),
            _ => None,
        })
        .fold(None, |best: Option<(u64, u64)>, (p, t)| match best {
            Some((bp, _)) if bp >= p => best,
            _ => Some((p, t)),
        });
    if let Some((p, t)) = hwm {
        // Only worth a line when it tells more than the RSS peak at the shown precision.
        if p > peak_b && fmt_bytes(p) != fmt_bytes(peak_b) {
            let _ = writeln!(
                out,
                "interval peak: {} (VmHWM between samples) at {:.1} s from start ({})",
                fmt_bytes(p),
                t.saturating_sub(start) as f64 / 1e9,
                fmt_wall(header, t)
            );
        }
    }
    match sum.idle_floor {
        Some(b) => {
            let _ = writeln!(
                out,
                "idle floor: {} (median of {} samples)",
                fmt_bytes(b),
                ThresholdPhase::IdlePost.name()
            );
        }
        None => {
            let _ = writeln!(
                out,
                "idle floor: none (no {} samples)",
                ThresholdPhase::IdlePost.name()
            );
        }
    }
}

/// Wall-clock time of a record time, `2023-11-14 22:14:44 UTC`.
pub fn fmt_wall(header: &SessionHeader, t: u64) -> String {
    fmt_utc(header.wall_secs(t).floor() as i64)
}

/// Unix seconds as `YYYY-MM-DD HH:MM:SS UTC` (proleptic Gregorian; no time zone database,
/// so the output is the same on every machine).
pub fn fmt_utc(secs: i64) -> String {
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02} UTC",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_dates() {
        assert_eq!(fmt_utc(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(fmt_utc(1_700_000_000), "2023-11-14 22:13:20 UTC");
        assert_eq!(fmt_utc(951_782_400), "2000-02-29 00:00:00 UTC");
        assert_eq!(fmt_utc(-1), "1969-12-31 23:59:59 UTC");
        assert_eq!(fmt_utc(4_102_444_800), "2100-01-01 00:00:00 UTC");
    }
}
