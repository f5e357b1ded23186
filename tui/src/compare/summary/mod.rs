//! One session's figures for `compare`: what the table puts side by side, read from a
//! [`Store`] (the one reducer pass: its finished proofs, phase spans and SRS floor) and the
//! samples, over the proofs a [`Selection`] picks.
//!
//! Every figure has a key (`rss`, `s_per_sector[sps]`, `phase_p90[synthesis]`): the row's
//! name in every output format and the metric a `--fail-if` rule names. A figure a session
//! cannot give (no proofs, no samples, no such phase) is a reason, never a zero.
//!
//! The parts: [`figure`] (what a figure is), [`select`] (which proofs and what time a
//! selection covers), [`readings`] (the samples as compare reads them), and the figures by
//! section: [`memory`], [`proofs`], [`phases`].

mod figure;
mod kernel;
mod memory;
mod phases;
mod proofs;
mod readings;
mod select;

use provetop_shared::session::SourceKind;

pub use figure::{Figure, Section, Unit};
pub use memory::OOM_SHARE;
pub(crate) use select::merged;
pub use select::{parse_range, Selection};

use crate::model::ProofSpan;
use crate::store::Store;
use figure::Figures;
use kernel::kernel_figures;
use memory::memory;
use phases::{phases, threshold_phases};
use proofs::proof_figures;
use readings::{median_gap, readings, Reading};

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
    let readings = readings(store);
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
        let v: Vec<(u64, u64)> = chosen
            .iter()
            .map(|p| (p.start, p.end.unwrap_or(p.start)))
            .collect();
        merged(v)
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
    kernel_figures(&mut f, store);

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
