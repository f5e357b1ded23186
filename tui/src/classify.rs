//! `provetop classify`: the seed's threshold table, then a summary, then (for sessions with
//! prover events) memory and utilisation by the prover's actual phases and, per batch mode,
//! throughput and peak memory.
//!
//! The prover-phase table ends in utilisation columns: `cores` (the tree's cores busy) and
//! `host` (the host's), from the usage records, and `gpuN util` for each GPU the session saw,
//! from the samples' GPU readings. Each is the mean over the phase's time (its spans' union;
//! for `(no phase open)`, the session's time outside every span): a usage reading counts for
//! the part of its interval (`interval_ns` before it) that lies in the phase, a sample's GPU
//! reading once when the sample falls in the phase (samples are evenly spaced, like the
//! table's memory columns). `-` where no reading covers the phase: a session recorded before
//! usage records existed, a phase shorter than any usage interval, no GPU reading then.
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
use crate::compare::summary::merged;
use crate::store::Store;

/// Run `provetop classify`; returns the process exit code.
pub fn main(args: &ClassifyArgs) -> anyhow::Result<i32> {
    if let Some(log) = &args.log {
        let rules = crate::logsession::rules(args.config.as_deref())?;
        let loaded = crate::logsession::load(log, rules)?;
        let store = Store::scan_loaded(log, loaded, args.thresholds);
        crate::export::write_stdout(render_log(&store).as_bytes())?;
        return Ok(0);
    }
    let Some(file) = &args.file else {
        anyhow::bail!("classify: give a session file, or --log FILE");
    };
    let store = Store::scan(file, args.thresholds)
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
        out.push_str(&with_utilisation(store, &table));
    }
    if let Some(table) = crate::store::mode_table(store) {
        out.push('\n');
        out.push_str(&table);
    }
    Ok(out)
}

/// The report of a session built from a log (`classify --log`): its notes (how its times
/// were read), every phase span on the log's own timestamps to the millisecond, then the
/// prover-phase and batch-mode tables (no memory: the log has none).
pub fn render_log(store: &Store) -> String {
    let mut out = String::new();
    let header = store.header();
    for r in store.records() {
        if let RecordBody::Mark(provetop_shared::Mark::Note { text }) = &r.body {
            let _ = writeln!(out, "{}", crate::text::inert(text));
        }
    }
    let _ = writeln!(
        out,
        "from {} to {} ({})",
        fmt_wall_ms(header, store.start()),
        fmt_wall_ms(header, store.end()),
        fmt_secs((store.end() - store.start()) as f64 / 1e9)
    );
    if store.spans().is_empty() {
        out.push_str("no phase read from its lines (docs/logs.md lists the grammars; [[log_rule]]s add others)\n");
        return out;
    }
    out.push('\n');
    let w = crate::store::phase_width(store);
    let _ = writeln!(out, "phase spans (on the log's own timestamps):");
    let _ = writeln!(
        out,
        "  {:>5}  {:<w$}  {:>9}  {:<23}  {:>12}",
        "proof", "phase", "partition", "start (UTC)", "seconds"
    );
    let mut spans: Vec<_> = store.spans().iter().collect();
    spans.sort_by_key(|s| (s.start, s.proof_id));
    for s in spans {
        let secs = match s.end {
            Some(e) => format!("{:.6}", e.saturating_sub(s.start) as f64 / 1e9),
            None => "open".to_string(),
        };
        let _ = writeln!(
            out,
            "  {:>5}  {:<w$}  {:>9}  {:<23}  {:>12}{}",
            s.proof_id,
            crate::text::inert(s.phase.as_str()),
            s.partition.map_or("-".into(), |p| p.to_string()),
            fmt_wall_ms(header, s.start).trim_end_matches(" UTC"),
            secs,
            if s.failed { "  failed" } else { "" }
        );
    }
    if let Some(table) = crate::store::phase_table(store) {
        out.push('\n');
        out.push_str(&table);
    }
    if let Some(table) = crate::store::mode_table(store) {
        out.push('\n');
        out.push_str(&table);
    }
    out
}

/// Wall-clock time of a record time to the millisecond, `2023-11-14 22:14:44.123 UTC`.
pub fn fmt_wall_ms(header: &SessionHeader, t: u64) -> String {
    let ns = header.wall_anchor as i128 + t as i128 - header.mono_anchor as i128;
    let secs = ns.div_euclid(1_000_000_000) as i64;
    let ms = ns.rem_euclid(1_000_000_000) / 1_000_000;
    fmt_utc(secs).replace(" UTC", &format!(".{ms:03} UTC"))
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
    // "12.3 s from start (wall clock)".
    let when = |t: u64| {
        let s = t.saturating_sub(start) as f64 / 1e9;
        format!("{s:.1} s from start ({})", fmt_wall(header, t))
    };
    let _ = writeln!(out, "peak: {} RSS at {}", fmt_bytes(peak_b), when(peak_t));
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
                "interval peak: {} (VmHWM between samples) at {}",
                fmt_bytes(p),
                when(t)
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

/// A reading over `(t0, t1]`; `t0 == t1`: a reading at one instant, counted once where it
/// falls.
type Reading = (u64, u64, f64);

/// The mean of `readings` over the time each phase covers, per phase (Σ value × overlap /
/// Σ overlap; instants weigh one each), from segments (t0, t1, phases open) sorted and
/// disjoint.
fn accumulate(
    segs: &[(u64, u64, Vec<usize>)],
    readings: &[Reading],
    phases: usize,
) -> Vec<Option<f64>> {
    let mut acc = vec![(0.0f64, 0u64); phases];
    for &(t0, t1, v) in readings {
        if !v.is_finite() || t1 < t0 {
            continue;
        }
        if t1 == t0 {
            let i = segs.partition_point(|s| s.1 < t0);
            if let Some((_, _, open)) = segs.get(i).filter(|s| s.0 <= t0) {
                for &p in open {
                    acc[p].0 += v;
                    acc[p].1 += 1;
                }
            }
            continue;
        }
        let from = segs.partition_point(|s| s.1 <= t0);
        for (a, b, open) in segs[from..].iter().take_while(|s| s.0 < t1) {
            let w = t1.min(*b).saturating_sub(t0.max(*a));
            for &p in open {
                acc[p].0 += v * w as f64;
                acc[p].1 += w;
            }
        }
    }
    acc.into_iter()
        .map(|(sum, w)| (w > 0).then(|| sum / w as f64))
        .collect()
}

/// The store's prover-phase table with the utilisation columns appended (see the module
/// doc): the phases in the table's order (first start), `(no phase open)` last.
fn with_utilisation(store: &Store, table: &str) -> String {
    let end = store.end();
    // The table's rows: each phase by its first start, then the time outside every span.
    let mut order: Vec<(u64, provetop_shared::Phase)> = Vec::new();
    for sp in store.spans() {
        match order.iter_mut().find(|o| o.1 == sp.phase) {
            Some(o) => o.0 = o.0.min(sp.start),
            None => order.push((sp.start, sp.phase.clone())),
        }
    }
    order.sort();
    let n = order.len();
    let mut intervals: Vec<Vec<(u64, u64)>> = vec![Vec::new(); n + 1];
    for sp in store.spans() {
        if let Some(i) = order.iter().position(|o| o.1 == sp.phase) {
            intervals[i].push((sp.start, sp.end_or(end)));
        }
    }
    let intervals: Vec<Vec<(u64, u64)>> = intervals.into_iter().map(merged).collect();
    let any = merged(intervals.iter().flatten().copied().collect());
    let mut between = Vec::new();
    let mut reach = store.start();
    for &(a, b) in &any {
        if a > reach {
            between.push((reach, a));
        }
        reach = reach.max(b);
    }
    if end > reach {
        between.push((reach, end));
    }
    let mut bounds: Vec<u64> = intervals
        .iter()
        .flatten()
        .chain(&between)
        .flat_map(|&(a, b)| [a, b])
        .collect();
    bounds.sort_unstable();
    bounds.dedup();
    let all: Vec<&[(u64, u64)]> = intervals[..n]
        .iter()
        .map(Vec::as_slice)
        .chain([between.as_slice()])
        .collect();
    let mut cursor = vec![0usize; all.len()];
    let mut segs: Vec<(u64, u64, Vec<usize>)> = Vec::with_capacity(bounds.len());
    for w in bounds.windows(2) {
        let (a, b) = (w[0], w[1]);
        let mut open = Vec::new();
        for (p, iv) in all.iter().enumerate() {
            while cursor[p] < iv.len() && iv[cursor[p]].1 <= a {
                cursor[p] += 1;
            }
            if iv.get(cursor[p]).is_some_and(|&(s, e)| s <= a && e >= b) {
                open.push(p);
            }
        }
        if !open.is_empty() {
            segs.push((a, b, open));
        }
    }
    // The readings, each over the interval it covers.
    let (mut cores, mut host): (Vec<Reading>, Vec<Reading>) = (Vec::new(), Vec::new());
    let gpus = crate::export::session_gpus(store);
    let mut gpu: Vec<Vec<Reading>> = vec![Vec::new(); gpus.len()];
    for r in store.records() {
        match &r.body {
            RecordBody::Usage(u) if u.interval_ns > 0 => {
                let t0 = r.t.saturating_sub(u.interval_ns);
                if let Some(c) = u.cores {
                    cores.push((t0, r.t, c));
                }
                if let Some(c) = u.host_cores {
                    host.push((t0, r.t, c));
                }
            }
            RecordBody::Sample(s) => {
                for g in &s.gpus {
                    if let (Ok(i), Some(u)) = (gpus.binary_search(&g.index), g.utilization()) {
                        gpu[i].push((r.t, r.t, f64::from(u)));
                    }
                }
            }
            _ => {}
        }
    }
    let rows = n + 1;
    let cores = accumulate(&segs, &cores, rows);
    let host = accumulate(&segs, &host, rows);
    let gpu: Vec<Vec<Option<f64>>> = gpu.iter().map(|g| accumulate(&segs, g, rows)).collect();
    let cells = |p: Option<usize>| {
        let mut c = String::new();
        let num = |v: Option<f64>| v.map_or("-".into(), |v| format!("{v:.1}"));
        let pct = |v: Option<f64>| v.map_or("-".into(), |v| format!("{v:.0}%"));
        let _ = write!(
            c,
            " {:>6} {:>6}",
            num(p.and_then(|p| cores[p])),
            num(p.and_then(|p| host[p]))
        );
        for g in &gpu {
            let _ = write!(c, " {:>9}", pct(p.and_then(|p| g[p])));
        }
        c
    };
    let w = crate::store::phase_width(store);
    let mut out = String::with_capacity(table.len() * 2);
    let mut row = 0;
    for (i, line) in table.lines().enumerate() {
        out.push_str(line);
        if i == 1 {
            let _ = write!(out, " {:>6} {:>6}", "cores", "host");
            for g in &gpus {
                let _ = write!(out, " {:>9}", format!("gpu{g} util"));
            }
        } else if i > 1 {
            // Each row is the phase in this order; a row that is not (never so today) gets
            // "-" rather than another phase's numbers.
            let p = if line.starts_with("  (no phase open)") {
                Some(n)
            } else {
                let p = order.get(row).filter(|(_, ph)| {
                    line.starts_with(&format!("  {:<w$} ", crate::text::inert(ph.as_str())))
                });
                row += 1;
                p.map(|_| row - 1)
            };
            out.push_str(&cells(p));
        }
        out.push('\n');
    }
    out
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
