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

mod samples;
mod utilisation;

use std::fmt::Write as _;
use std::path::Path;

use provetop_shared::classify::{Classifier, ThresholdPhase, Thresholds};
use provetop_shared::clock::civil_from_days;
use provetop_shared::session::stream::Stream;
use provetop_shared::session::SessionHeader;
use provetop_shared::units::{fmt_bytes, fmt_secs};
use provetop_shared::RecordBody;

use crate::cli::ClassifyArgs;
use crate::store::Store;
use samples::Samples;

/// Run `provetop classify`; returns the process exit code.
pub fn main(args: &ClassifyArgs) -> anyhow::Result<i32> {
    if let Some(log) = &args.log {
        let rules = crate::logsession::rules(args.config.as_deref())?;
        let loaded = crate::logsession::load(log, rules)?;
        let store = Store::scan_loaded(log, loaded, args.thresholds);
        crate::export::write_stdout(render_log(&store)?.as_bytes())?;
        return Ok(0);
    }
    let Some(file) = &args.file else {
        anyhow::bail!("classify: give a session file, or --log FILE");
    };
    // LoadError already names the cause; `{:#}` would repeat its io::Error source.
    let err = |e: provetop_shared::session::LoadError| anyhow::anyhow!("{e}");
    if let Some(src) = Stream::open(file).map_err(err)? {
        let text = if args.table_only {
            stream_table(file, &src, args.thresholds)?
        } else {
            stream_render(file, &src, args.thresholds)?
        };
        crate::export::write_stdout(text.as_bytes())?;
        return Ok(0);
    }
    if args.table_only {
        if let Some(text) = csv_table(file, args.thresholds)? {
            crate::export::write_stdout(text.as_bytes())?;
            return Ok(0);
        }
    }
    let store = Store::scan(file, args.thresholds).map_err(err)?;
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
    let mut f = Samples::new(thresholds);
    store.records().iter().for_each(|r| f.feed(r));
    while !f.end_pass() {
        store.records().iter().for_each(|r| f.feed_medians(r));
    }
    let util = if store.has_events() {
        let mut u = utilisation::Plan::new(store, crate::export::session_gpus(store))
            .map_err(|e| spill_lost(store, &e))?
            .fold();
        store.records().iter().for_each(|r| u.feed(r));
        Some(u)
    } else {
        None
    };
    compose(store, thresholds, &f, util.as_ref())
}

/// [`render`] of a session read in passes (see [`crate::scan`]): the reducer's pass with the
/// samples' fold, then (with prover events) the utilisation's, then any the medians need.
pub fn stream_render(path: &Path, src: &Stream, thresholds: Thresholds) -> anyhow::Result<String> {
    let err = |e: provetop_shared::session::LoadError| anyhow::anyhow!("{e}");
    let ((store, (mut f, gpus)), _) = crate::scan::reduce(
        path,
        src,
        thresholds,
        None,
        crate::store::Figures::Tables,
        || (Samples::new(thresholds), crate::scan::Gpus::default()),
        |(f, g), r, _| {
            f.feed(r);
            g.feed(r);
        },
    )
    .map_err(err)?;
    store.report_warnings();
    let mut done = f.end_pass();
    let util = if store.has_events() {
        let mut u = utilisation::Plan::new(&store, gpus.sorted())
            .map_err(|e| spill_lost(&store, &e))?
            .fold();
        src.each(&mut |r| {
            u.feed(&r);
            if !done {
                f.feed_medians(&r);
            }
        })
        .map_err(err)?;
        done = done || f.end_pass();
        Some(u)
    } else {
        None
    };
    while !done {
        src.each(&mut |r| f.feed_medians(&r)).map_err(err)?;
        done = f.end_pass();
    }
    compose(&store, thresholds, &f, util.as_ref())
}

/// The error of a table's figures (covered time, segments, peaks) that could not be read
/// back from their temporary file (`provetop_shared::spill`).
fn spill_lost(store: &Store, e: &dyn std::fmt::Display) -> anyhow::Error {
    anyhow::anyhow!(
        "{}: figures kept in a temporary file could not be read back: {e}",
        store.path().display()
    )
}

/// The report from the store's reducer figures and the samples' fold.
fn compose(
    store: &Store,
    thresholds: Thresholds,
    f: &Samples,
    util: Option<&utilisation::Fold>,
) -> anyhow::Result<String> {
    no_samples(store, f.count)?;
    if let Some(e) = store
        .span_digest()
        .failed
        .as_deref()
        .or(util.and_then(utilisation::Fold::failed))
    {
        return Err(spill_lost(store, &e));
    }
    let mut out = f.table.clone();
    out.push('\n');
    summary(&mut out, store, thresholds, f);
    if let (Some(table), Some(u)) = (crate::store::phase_table(store), util) {
        out.push('\n');
        out.push_str(&u.render(store, &table));
    }
    if let Some(table) = crate::store::mode_table(store).map_err(|e| spill_lost(store, &e))? {
        out.push('\n');
        out.push_str(&table);
    }
    Ok(out)
}

/// The error of a file without a memory sample.
fn no_samples(store: &Store, samples: u64) -> anyhow::Result<()> {
    if samples == 0 {
        anyhow::bail!(
            "{}: no memory samples to classify ({} other records)",
            store.path().display(),
            store.record_count()
        );
    }
    Ok(())
}

/// The report of a session built from a log (`classify --log`): its notes (how its times
/// were read), every phase span on the log's own timestamps to the millisecond, then the
/// prover-phase and batch-mode tables (no memory: the log has none).
pub fn render_log(store: &Store) -> anyhow::Result<String> {
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
        return Ok(out);
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
    if let Some(table) = crate::store::mode_table(store).map_err(|e| spill_lost(store, &e))? {
        out.push('\n');
        out.push_str(&table);
    }
    Ok(out)
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
    let mut c = Classifier::new(thresholds);
    let mut out = String::new();
    let mut n = 0u64;
    for r in store.records() {
        if let RecordBody::Sample(s) = &r.body {
            n += 1;
            if let Some(run) = c.push(r.t, s.rss) {
                let _ = writeln!(out, "{run}");
            }
        }
    }
    no_samples(store, n)?;
    if let Some(run) = c.finish() {
        let _ = writeln!(out, "{run}");
    }
    Ok(out)
}

/// [`render_table`] of a session read once, record by record.
pub fn stream_table(path: &Path, src: &Stream, thresholds: Thresholds) -> anyhow::Result<String> {
    let mut c = Classifier::new(thresholds);
    let mut out = String::new();
    let (mut n, mut others) = (0u64, 0usize);
    let warnings = src
        .each(&mut |r| match &r.body {
            RecordBody::Sample(s) => {
                n += 1;
                if let Some(run) = c.push(r.t, s.rss) {
                    let _ = writeln!(out, "{run}");
                }
            }
            _ => others += 1,
        })
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    for w in &warnings {
        crate::say!("provetop: warning: {}: {w}", path.display());
    }
    if n == 0 {
        anyhow::bail!(
            "{}: no memory samples to classify ({others} other records)",
            path.display()
        );
    }
    if let Some(run) = c.finish() {
        let _ = writeln!(out, "{run}");
    }
    Ok(out)
}

/// [`render_table`] of a plain seed CSV read row by row (None: not one, load it whole).
fn csv_table(path: &Path, thresholds: Thresholds) -> anyhow::Result<Option<String>> {
    let mut c = Classifier::new(thresholds);
    let mut out = String::new();
    let mut n = 0u64;
    let rows = provetop_shared::session::csv::stream_rss(path, &mut |kb| {
        n += 1;
        // The table has no times: only the readings' order matters.
        if let Some(run) = c.push(0, kb * 1024) {
            let _ = writeln!(out, "{run}");
        }
    })
    .map_err(|e| anyhow::anyhow!("{e}"))?;
    let Some(warnings) = rows else {
        return Ok(None);
    };
    for w in &warnings {
        crate::say!("provetop: warning: {}: {w}", path.display());
    }
    if n == 0 {
        anyhow::bail!(
            "{}: no memory samples to classify (0 other records)",
            path.display()
        );
    }
    if let Some(run) = c.finish() {
        let _ = writeln!(out, "{run}");
    }
    Ok(Some(out))
}

/// The summary block: span, proof cycles, time per phase, peak, idle floor.
fn summary(out: &mut String, store: &Store, thresholds: Thresholds, f: &Samples) {
    let Some(sum) = f.summary() else {
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
    for (i, (phase, secs)) in sum.time_in.iter().enumerate() {
        let n_runs = f.runs[i];
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
    if let Some((p, t)) = f.hwm {
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
