//! One session's figures for `compare`: what the table puts side by side, read from a
//! [`Store`] (the one reducer pass: its finished proofs, phase spans and SRS floor) and the
//! samples, over the proofs a [`Selection`] picks.
//!
//! Every figure has a key (`rss`, `s_per_sector[sps]`, `phase_p90[synthesis]`): the row's
//! name in every output format and the metric a `--fail-if` rule names. A figure a session
//! cannot give (no proofs, no samples, no such phase) is a reason, never a zero.

use std::collections::HashSet;

use provetop_shared::classify::{classify_series, summarize, ThresholdPhase};
use provetop_shared::metric::Metric;
use provetop_shared::session::SourceKind;
use provetop_shared::{BatchMode, Phase, RecordBody};

use crate::model::{busy_ns, mode_rows, FinishedProof, ProofSpan};
use crate::store::Store;

/// What a figure counts in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    Bytes,
    Seconds,
    /// A plain number (proofs).
    Count,
    /// Sectors per hour.
    PerHour,
}

impl Unit {
    /// The unit as the JSON and CSV outputs name it.
    pub fn name(self) -> &'static str {
        match self {
            Unit::Bytes => "bytes",
            Unit::Seconds => "seconds",
            Unit::Count => "count",
            Unit::PerHour => "per_hour",
        }
    }
}

/// The section a figure is listed under.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Section {
    Memory,
    Proofs,
    Mode,
    Phase,
}

impl Section {
    /// Its title in the table.
    pub fn title(self) -> &'static str {
        match self {
            Section::Memory => "memory",
            Section::Proofs => "proofs",
            Section::Mode => "per batch mode",
            Section::Phase => "per phase",
        }
    }
}

/// One figure of one session.
#[derive(Debug, Clone, PartialEq)]
pub struct Figure {
    /// Row name (and `--fail-if` metric).
    pub key: String,
    /// What it is, in words.
    pub label: String,
    pub section: Section,
    pub unit: Unit,
    /// The value, or why there is none in this session.
    pub value: Result<f64, String>,
    /// What a session without this row lacks ("no sps proofs").
    pub absent: String,
    /// A threshold-phase row (shown only when some session has no prover events).
    pub threshold_row: bool,
}

/// Which proofs of a session are compared.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Selection {
    /// Only proofs of this mode.
    pub mode: Option<BatchMode>,
    /// Only the proofs numbered `from..=to` (1-based, in start order, counted after the
    /// mode filter); `None`: every one.
    pub range: Option<(usize, Option<usize>)>,
}

impl Selection {
    /// Whether every proof (and so the whole recording) is compared.
    pub fn is_all(&self) -> bool {
        self.mode.is_none() && self.range.is_none()
    }

    /// In words: "the whole recording", "mode sps", "proofs 2..5", "mode sps, proofs 3".
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if let Some(m) = self.mode {
            parts.push(format!("mode {m}"));
        }
        if let Some((a, b)) = self.range {
            parts.push(match b {
                Some(b) if b == a => format!("proof {a}"),
                Some(b) => format!("proofs {a}..{b}"),
                None => format!("proofs {a}.."),
            });
        }
        if parts.is_empty() {
            "the whole recording".into()
        } else {
            parts.join(", ")
        }
    }
}

/// Parse `--proofs`: `3`, `2..5`, `4..`, `..6` (1-based, inclusive).
pub fn parse_range(s: &str) -> Result<(usize, Option<usize>), String> {
    let num = |x: &str| -> Result<usize, String> {
        match x.trim().parse::<usize>() {
            Ok(n) if n >= 1 => Ok(n),
            _ => Err(format!(
                "bad proof range {s:?}: proofs are numbered from 1 (want N, A..B, A.. or ..B)"
            )),
        }
    };
    match s.split_once("..") {
        None => num(s).map(|n| (n, Some(n))),
        Some((a, b)) => {
            let from = if a.trim().is_empty() { 1 } else { num(a)? };
            let to = if b.trim().is_empty() {
                None
            } else {
                Some(num(b)?)
            };
            if to.is_some_and(|t| t < from) {
                return Err(format!("bad proof range {s:?}: it ends before it starts"));
            }
            Ok((from, to))
        }
    }
}

/// One session summarized for the table.
#[derive(Debug, Clone)]
pub struct Summary {
    /// The file name shown.
    pub name: String,
    /// The path as given.
    pub path: String,
    pub selection: Selection,
    pub figures: Vec<Figure>,
    /// Things the reader should know (damage, no proofs, …), each one line.
    pub notes: Vec<String>,
    /// Whether the file holds prover events.
    pub has_events: bool,
    /// Median sampling interval, seconds (None without two samples).
    pub interval_s: Option<f64>,
    /// The host that recorded it (empty for a CSV).
    pub host: String,
    pub kind: SourceKind,
}

impl Summary {
    /// The figure with this key.
    pub fn get(&self, key: &str) -> Option<&Figure> {
        self.figures.iter().find(|f| f.key == key)
    }
}

/// A sample's readings that compare uses.
#[derive(Debug, Clone, Copy)]
struct Reading {
    t: u64,
    rss: u64,
    /// The highest of RSS and the interval peak (VmHWM between samples).
    high: u64,
    pinned: Option<u64>,
    gpu: Option<u64>,
}

/// Share of the peak above which a session is "exposed to OOM" (`oom_window`).
pub const OOM_SHARE: f64 = 0.9;

/// Summarize `store` over the proofs `sel` picks.
pub fn summarize_store(store: &Store, sel: &Selection) -> Summary {
    let path = store.path().display().to_string();
    let name = store
        .path()
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.clone());
    let mut notes: Vec<String> = store
        .warnings()
        .iter()
        .map(|w| format!("{name}: {w}; compared as far as it goes"))
        .collect();
    let readings: Vec<Reading> = store
        .records()
        .iter()
        .filter_map(|r| match &r.body {
            RecordBody::Sample(s) => Some(Reading {
                t: r.t,
                rss: s.rss,
                high: s.peak.unwrap_or(s.rss).max(s.rss),
                pinned: s.pinned.or(s.pinned_reported),
                gpu: s.gpu_used,
            }),
            _ => None,
        })
        .collect();
    let interval_ns = median_gap(&readings);
    // `(t, rss)` of every sample: what the seed's threshold classifier reads.
    let series: Vec<(u64, u64)> = readings.iter().map(|r| (r.t, r.rss)).collect();
    let has_events = store.has_events();

    // The proofs, in start order, and those selected.
    let mut proofs: Vec<&ProofSpan> = store.finished_proofs().iter().collect();
    proofs.sort_by_key(|p| (p.start, p.proof_id));
    let of_mode: Vec<&ProofSpan> = proofs
        .iter()
        .copied()
        .filter(|p| sel.mode.is_none_or(|m| p.mode == m))
        .collect();
    let chosen: Vec<&ProofSpan> = match sel.range {
        None => of_mode.clone(),
        Some((a, b)) => of_mode
            .iter()
            .copied()
            .enumerate()
            .filter(|(i, _)| *i + 1 >= a && b.is_none_or(|b| *i < b))
            .map(|(_, p)| p)
            .collect(),
    };
    if !has_events {
        notes.push(format!(
            "{name}: no prover events ({}): proofs are not known, phases are by RSS thresholds",
            if store.kind() == SourceKind::Csv {
                "a CSV"
            } else {
                "the child did not speak the protocol"
            }
        ));
    } else if proofs.is_empty() {
        notes.push(format!("{name}: no proof finished in this recording"));
    } else if chosen.is_empty() {
        let mut modes: Vec<String> = Vec::new();
        for p in &proofs {
            let m = p.mode.to_string();
            if !modes.contains(&m) {
                modes.push(m);
            }
        }
        notes.push(format!(
            "{name}: no proof matches {} ({} proofs here: {})",
            sel.describe(),
            proofs.len(),
            modes.join(", ")
        ));
    }
    if readings.is_empty() {
        notes.push(format!(
            "{name}: no memory samples ({} other records): its memory rows are empty",
            store.records().len()
        ));
    }

    // Time the selection covers: the whole recording, or the selected proofs' intervals.
    let intervals: Option<Vec<(u64, u64)>> = (!sel.is_all()).then(|| {
        let mut v: Vec<(u64, u64)> = chosen
            .iter()
            .map(|p| (p.start, p.end.unwrap_or(p.start)))
            .collect();
        v.sort_unstable();
        merge(v)
    });
    let inside = |t: u64| match &intervals {
        None => true,
        Some(v) => {
            let i = v.partition_point(|iv| iv.0 <= t);
            i > 0 && t <= v[i - 1].1
        }
    };
    // Without a selection every sample counts: no copy of a million of them.
    let sel_readings: std::borrow::Cow<[Reading]> = if intervals.is_none() {
        std::borrow::Cow::Borrowed(&readings)
    } else {
        readings.iter().copied().filter(|r| inside(r.t)).collect()
    };

    let mut f = Figures::default();
    memory(
        &mut f,
        store,
        &series,
        &sel_readings,
        &chosen,
        interval_ns,
        sel,
    );
    proof_figures(&mut f, has_events, &chosen, &proofs, store, &series);
    phases(&mut f, store, sel, &chosen);
    threshold_phases(&mut f, store, &sel_readings, interval_ns);

    Summary {
        name,
        path,
        selection: sel.clone(),
        figures: f.0,
        notes,
        has_events,
        interval_s: interval_ns.map(|g| g as f64 / 1e9),
        host: store.header().host.clone(),
        kind: store.kind(),
    }
}

#[derive(Default)]
struct Figures(Vec<Figure>);

impl Figures {
    #[allow(clippy::too_many_arguments)]
    fn push(
        &mut self,
        key: impl Into<String>,
        label: impl Into<String>,
        section: Section,
        unit: Unit,
        value: Result<f64, String>,
        absent: impl Into<String>,
        threshold_row: bool,
    ) {
        self.0.push(Figure {
            key: key.into(),
            label: label.into(),
            section,
            unit,
            value,
            absent: absent.into(),
            threshold_row,
        });
    }
}

fn median_gap(r: &[Reading]) -> Option<u64> {
    let mut gaps: Vec<u64> = r
        .windows(2)
        .map(|w| w[1].t.saturating_sub(w[0].t))
        .collect();
    if gaps.is_empty() {
        return None;
    }
    // The element a sort would put there, in linear time (a million samples).
    let mid = gaps.len() / 2;
    Some(*gaps.select_nth_unstable(mid).1)
}

/// Sorted intervals merged where they overlap or touch.
fn merge(v: Vec<(u64, u64)>) -> Vec<(u64, u64)> {
    let mut out: Vec<(u64, u64)> = Vec::with_capacity(v.len());
    for (a, b) in v {
        match out.last_mut() {
            Some(last) if a <= last.1 => last.1 = last.1.max(b),
            _ => out.push((a, b)),
        }
    }
    out
}

/// The median (the upper one of an even count, as `classify`'s mode table takes it).
fn median(sorted: &[f64]) -> f64 {
    sorted[sorted.len() / 2]
}

/// The 90th percentile by nearest rank.
fn p90(sorted: &[f64]) -> f64 {
    let rank = ((sorted.len() as f64) * 0.9).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

fn memory(
    f: &mut Figures,
    store: &Store,
    series: &[(u64, u64)],
    sel: &[Reading],
    chosen: &[&ProofSpan],
    interval_ns: Option<u64>,
    selection: &Selection,
) {
    // Why a row has no value: no samples at all, else `why`.
    let lacking = |why: &str| -> String {
        if series.is_empty() {
            "no samples".to_string()
        } else {
            why.to_string()
        }
    };
    let none = |what: &str| lacking(&format!("no samples {what}"));
    let during = if selection.is_all() {
        String::new()
    } else {
        "while the selected proofs ran".to_string()
    };
    let max_of =
        |get: fn(&Reading) -> Option<u64>| -> Option<u64> { sel.iter().filter_map(get).max() };
    let rss = max_of(|r| Some(r.rss));
    let high = max_of(|r| Some(r.high));
    let value = |v: Option<u64>, what: &str| v.map(|b| b as f64).ok_or_else(|| none(what));
    f.push(
        Metric::Rss.name(),
        "peak RSS",
        Section::Memory,
        Unit::Bytes,
        value(rss, &during),
        "no samples",
        false,
    );
    f.push(
        Metric::Peak.name(),
        "interval peak (VmHWM between samples)",
        Section::Memory,
        Unit::Bytes,
        value(high, &during),
        "no samples",
        false,
    );
    // The floor belongs to the session, not to a selection: the SRS resident between proofs
    // (as classify's mode table has it), else the seed's idle floor by thresholds.
    let floor = store
        .srs_floor()
        .or_else(|| summarize(store.thresholds(), series).and_then(|s| s.idle_floor));
    f.push(
        "floor",
        "floor between proofs (SRS resident)",
        Section::Memory,
        Unit::Bytes,
        floor
            .map(|b| b as f64)
            .ok_or_else(|| lacking("no floor (no SRS ready, no idle_post samples)")),
        "no floor",
        false,
    );
    // Above the floor: the median proof's peak (classify's mode table), else the peak.
    let above = match floor {
        None => Err("no floor".to_string()),
        Some(fl) if !chosen.is_empty() => {
            let mut peaks: Vec<u64> = chosen.iter().map(|p| p.rss.max).collect();
            peaks.sort_unstable();
            Ok(peaks[peaks.len() / 2].saturating_sub(fl) as f64)
        }
        Some(fl) => high
            .map(|h| h.saturating_sub(fl) as f64)
            .ok_or_else(|| none(&during)),
    };
    f.push(
        "above_floor",
        if chosen.is_empty() {
            "peak above the floor"
        } else {
            "median proof's peak above the floor"
        },
        Section::Memory,
        Unit::Bytes,
        above,
        "no floor",
        false,
    );
    // Seconds at or above 90 % of the peak: each sample lasts until the next one (at most
    // ten sampling intervals, so a gap in the recording does not count), the last one interval.
    let window = high.map(|h| {
        let limit = h as f64 * OOM_SHARE;
        let cap = interval_ns.unwrap_or(0).saturating_mul(10);
        let mut ns = 0u64;
        for (i, r) in sel.iter().enumerate() {
            if (r.high as f64) < limit {
                continue;
            }
            let dt = match sel.get(i + 1) {
                Some(n) => n.t.saturating_sub(r.t).min(cap),
                None => interval_ns.unwrap_or(0),
            };
            ns += dt;
        }
        ns as f64 / 1e9
    });
    f.push(
        "oom_window",
        "time above 90 % of the peak",
        Section::Memory,
        Unit::Seconds,
        window.ok_or_else(|| none(&during)),
        "no samples",
        false,
    );
    if !chosen.is_empty() {
        f.push(
            "oom_window_per_proof",
            "time above 90 % of the peak, per proof",
            Section::Memory,
            Unit::Seconds,
            window
                .map(|w| w / chosen.len() as f64)
                .ok_or_else(|| none(&during)),
            "no proofs",
            false,
        );
    }
    // Readings a sampler may not take: without them the row is "not measured".
    let measured = [
        (
            Metric::Pinned,
            "pinned host memory, peak",
            max_of(|r| r.pinned),
        ),
        (Metric::Gpu, "GPU memory, peak", max_of(|r| r.gpu)),
    ];
    for (metric, label, peak) in measured {
        f.push(
            metric.name(),
            label,
            Section::Memory,
            Unit::Bytes,
            peak.map(|b| b as f64)
                .ok_or_else(|| lacking("not measured")),
            "not measured",
            false,
        );
    }
}

fn proof_figures(
    f: &mut Figures,
    has_events: bool,
    chosen: &[&ProofSpan],
    all: &[&ProofSpan],
    store: &Store,
    series: &[(u64, u64)],
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
            summarize(store.thresholds(), series)
                .map(|s| s.cycles as f64)
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

/// Per prover phase, over the spans of the selected proofs: median and p90 of the span
/// durations, and the peak RSS seen while one was open.
fn phases(f: &mut Figures, store: &Store, sel: &Selection, chosen: &[&ProofSpan]) {
    let ids: Option<HashSet<u64>> =
        (!sel.is_all()).then(|| chosen.iter().map(|p| p.proof_id).collect());
    let mut order: Vec<(u64, Phase)> = Vec::new();
    let mut per: std::collections::HashMap<Phase, (Vec<f64>, u64)> = Default::default();
    for s in store.spans() {
        let Some(end) = s.end else { continue };
        if ids.as_ref().is_some_and(|ids| !ids.contains(&s.proof_id)) {
            continue;
        }
        let d = s
            .duration_s
            .filter(|d| d.is_finite() && *d >= 0.0)
            .unwrap_or(end.saturating_sub(s.start) as f64 / 1e9);
        let e = per.entry(s.phase.clone()).or_insert_with(|| {
            order.push((s.start, s.phase.clone()));
            (Vec::new(), 0)
        });
        e.0.push(d);
        e.1 = e.1.max(s.rss.max().unwrap_or(0));
    }
    order.sort_by_key(|o| o.0);
    for (_, phase) in order {
        let (mut d, peak) = per.remove(&phase).unwrap_or_default();
        d.sort_by(f64::total_cmp);
        let name = crate::text::inert(phase.as_str()).into_owned();
        push_phase(f, &name, &d, peak, false);
    }
}

fn push_phase(f: &mut Figures, name: &str, sorted: &[f64], peak: u64, threshold: bool) {
    let absent = format!("no {name} phase");
    f.push(
        format!("phase_median[{name}]"),
        format!("{name}: median duration"),
        Section::Phase,
        Unit::Seconds,
        Ok(median(sorted)),
        absent.clone(),
        threshold,
    );
    f.push(
        format!("phase_p90[{name}]"),
        format!("{name}: p90 duration"),
        Section::Phase,
        Unit::Seconds,
        Ok(p90(sorted)),
        absent.clone(),
        threshold,
    );
    f.push(
        format!("phase_peak[{name}]"),
        format!("{name}: peak RSS"),
        Section::Phase,
        Unit::Bytes,
        Ok(peak as f64),
        absent,
        threshold,
    );
}

/// Per threshold phase (the seed's classifier over the selected samples): each run lasts
/// until the next one starts (the last one its span and one interval).
fn threshold_phases(f: &mut Figures, store: &Store, sel: &[Reading], interval_ns: Option<u64>) {
    let runs = classify_series(store.thresholds(), sel.iter().map(|r| (r.t, r.rss)));
    let gap = interval_ns.unwrap_or(0);
    let mut per: Vec<(ThresholdPhase, Vec<f64>, f64)> = Vec::new();
    for (i, r) in runs.iter().enumerate() {
        let end = runs.get(i + 1).map_or(r.end + gap, |n| n.start);
        let d = end.saturating_sub(r.start) as f64 / 1e9;
        match per.iter_mut().find(|p| p.0 == r.phase) {
            Some(p) => {
                p.1.push(d);
                p.2 = p.2.max(r.max_gib);
            }
            None => per.push((r.phase, vec![d], r.max_gib)),
        }
    }
    per.sort_by_key(|p| ThresholdPhase::ALL.iter().position(|a| *a == p.0));
    for (phase, mut d, max_gib) in per {
        d.sort_by(f64::total_cmp);
        let peak = (max_gib * provetop_shared::units::GIB as f64).round() as u64;
        push_phase(f, phase.name(), &d, peak, true);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proof_ranges_parse_and_refuse_nonsense() {
        assert_eq!(parse_range("3"), Ok((3, Some(3))));
        assert_eq!(parse_range("2..5"), Ok((2, Some(5))));
        assert_eq!(parse_range("4.."), Ok((4, None)));
        assert_eq!(parse_range("..6"), Ok((1, Some(6))));
        assert!(parse_range("0").unwrap_err().contains("numbered from 1"));
        assert!(parse_range("5..2").unwrap_err().contains("ends before"));
        assert!(parse_range("x").is_err());
    }

    #[test]
    fn percentiles_by_nearest_rank() {
        let v: Vec<f64> = (1..=10).map(f64::from).collect();
        assert_eq!(median(&v), 6.0);
        assert_eq!(p90(&v), 9.0);
        assert_eq!(p90(&[4.0]), 4.0);
        assert_eq!(median(&[4.0]), 4.0);
    }

    #[test]
    fn intervals_merge_where_they_overlap() {
        assert_eq!(
            merge(vec![(0, 5), (3, 8), (10, 12)]),
            vec![(0, 8), (10, 12)]
        );
    }
}
