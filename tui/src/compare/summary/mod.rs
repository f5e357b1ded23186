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

use provetop_shared::classify::{Classifier, Medians, Summarizer, Thresholds};
use provetop_shared::session::SourceKind;
use provetop_shared::Record;

pub use figure::{Figure, Section, Unit};
pub use memory::OOM_SHARE;
pub use select::{parse_range, Selection};

use crate::store::Store;
use figure::Figures;
use kernel::{kernel_figures, KernelFold};
use memory::{memory, MemoryInput, OomWindow};
use phases::{phases, RunFold};
use proofs::proof_figures;
use readings::reading;
use select::Chosen;

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

/// Replays a session's records (every one but those placed back in time, in file order)
/// to a fold: a store's, or a stream's pass.
pub type Replay<'a> = dyn FnMut(&mut dyn FnMut(&Record)) -> anyhow::Result<()> + 'a;

/// What the summary reads of every sample and kernel record before it knows the selection.
#[derive(Clone)]
pub struct FirstPass {
    medians: Medians,
    cycles: Summarizer,
    kernel: KernelFold,
    samples: u64,
    /// The highest reading of RSS and interval peak.
    high: Option<u64>,
}

impl FirstPass {
    /// Nothing read yet.
    pub fn new(thresholds: Thresholds) -> Self {
        FirstPass {
            medians: Medians::new(thresholds),
            cycles: Summarizer::new(thresholds),
            kernel: KernelFold::new(),
            samples: 0,
            high: None,
        }
    }

    /// The next record.
    pub fn feed(&mut self, r: &Record) {
        self.kernel.feed(r);
        if let Some(x) = reading(r) {
            self.samples += 1;
            self.medians.push(x.t, x.rss);
            self.cycles.push(x.t, x.rss);
            self.high = Some(self.high.map_or(x.high, |h| h.max(x.high)));
        }
    }
}

/// Summarize `store` (loaded whole) over the proofs `sel` picks (an error only where what
/// it keeps in temporary files cannot be read back).
pub fn summarize_store(store: &Store, sel: &Selection) -> anyhow::Result<Summary> {
    let mut replay = |f: &mut dyn FnMut(&Record)| -> anyhow::Result<()> {
        store.records().iter().for_each(f);
        Ok(())
    };
    let mut first = FirstPass::new(store.thresholds());
    store.records().iter().for_each(|r| first.feed(r));
    summarize_with(store, sel, first, &mut replay)
}

/// Summarize a session read in passes ([`crate::scan`]): the store's pass with the first
/// fold, then the passes [`summarize_with`] makes.
pub fn summarize_stream(
    path: &std::path::Path,
    src: &provetop_shared::session::stream::Stream,
    sel: &Selection,
    thresholds: Thresholds,
) -> anyhow::Result<Summary> {
    let err = |e: provetop_shared::session::LoadError| anyhow::anyhow!("{e}");
    let ((store, first), _) = crate::scan::reduce(
        path,
        src,
        thresholds,
        None,
        crate::store::Figures::Spans,
        || FirstPass::new(thresholds),
        |f, r, _| f.feed(r),
    )
    .map_err(err)?;
    let mut replay = |f: &mut dyn FnMut(&Record)| -> anyhow::Result<()> {
        src.each(&mut |r| f(&r)).map(|_| ()).map_err(err)
    };
    summarize_with(&store, sel, first, &mut replay)
}

/// Summarize `store` over the proofs `sel` picks, `first` having read every record, and
/// `replay` giving the samples again for the passes that need the selection, the medians or
/// the peak.
pub fn summarize_with(
    store: &Store,
    sel: &Selection,
    mut first: FirstPass,
    replay: &mut Replay<'_>,
) -> anyhow::Result<Summary> {
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
    let has_events = store.has_events();

    // The proofs selected, folded in one pass over the session's, in start order.
    let proofs = store.finished_proofs();
    let lost =
        |what: &str, e: &dyn std::fmt::Display| anyhow::anyhow!("{name}: reading {what} back: {e}");
    if let Some(e) = proofs.failed() {
        return Err(lost("its finished proofs", &e));
    }
    let chosen = Chosen::of(proofs, sel).map_err(|e| lost("its finished proofs", &e))?;
    selection_notes(&mut notes, &name, store, sel, &chosen);
    if first.samples == 0 {
        notes.push(format!(
            "{name}: no memory samples ({} other records): its memory rows are empty",
            store.record_count()
        ));
    }

    // The samples in the time the selection covers: the whole recording, or the selected
    // proofs' intervals.
    let inside = |t: u64| chosen.inside(t);
    let (mem, runs, interval_ns) = sample_passes(store, &mut first, replay, &inside, sel.is_all())?;
    if let Some(e) = chosen.lost() {
        return Err(lost("its selected proofs' time", &e));
    }
    let cycles = first.cycles.finish(0, None).map(|s| s.cycles);
    let mut f = Figures::default();
    let median_peak = chosen
        .median_peak()
        .map_err(|e| lost("its selected proofs' peaks", &e))?;
    memory(&mut f, &mem, chosen.count, median_peak, sel);
    proof_figures(&mut f, has_events, &chosen, cycles)
        .map_err(|e| lost("its selected proofs' busy time", &e))?;
    phases(&mut f, store, &chosen).map_err(|e| lost("its closed phase spans", &e))?;
    runs.figures(&mut f, interval_ns)
        .map_err(|e| lost("its threshold phases", &e))?;
    kernel_figures(&mut f, &first.kernel);

    Ok(Summary {
        name,
        path,
        selection: sel.clone(),
        figures: f.0,
        notes,
        has_events,
        interval_s: interval_ns.map(|g| g as f64 / 1e9),
        host: store.header().host.clone(),
        kind: store.kind(),
    })
}

/// What a reader should know of the selection: no prover events, no proof, none matching.
fn selection_notes(
    notes: &mut Vec<String>,
    name: &str,
    store: &Store,
    sel: &Selection,
    chosen: &Chosen,
) {
    let has_events = store.has_events();
    if !has_events {
        notes.push(format!(
            "{name}: no prover events ({}): proofs are not known, phases are by RSS thresholds",
            if store.kind() == SourceKind::Csv {
                "a CSV"
            } else {
                "the child did not speak the protocol"
            }
        ));
    } else if chosen.all == 0 {
        notes.push(format!("{name}: no proof finished in this recording"));
    } else if chosen.is_empty() {
        let modes: Vec<String> = chosen.modes.iter().map(|m| m.to_string()).collect();
        notes.push(format!(
            "{name}: no proof matches {} ({} proofs here: {})",
            sel.describe(),
            chosen.all,
            modes.join(", ")
        ));
    }
}

/// Most selected samples kept between the selection's pass and the time near the peak (a
/// pass more beyond).
const KEEP_SELECTED: usize = 1 << 18;

/// The passes over the selected samples (those `inside` holds): their maxima and threshold
/// runs (folded), the medians if the first pass did not settle them, and the time near the peak. With
/// every sample selected and the medians known, the time near the peak comes in the same pass
/// as the rest (the peak is the first pass's); else from the selected samples kept, or, when
/// they were too many to keep, in a pass of its own. Returns the memory
/// figures' input, the runs and the sampling interval.
fn sample_passes(
    store: &Store,
    first: &mut FirstPass,
    replay: &mut Replay<'_>,
    inside: &dyn Fn(u64) -> bool,
    all: bool,
) -> anyhow::Result<(MemoryInput, RunFold, Option<u64>)> {
    let mut medians = first.medians.end_pass();
    let interval = |gap: u64| (first.samples >= 2).then_some(gap);
    let mut early = match (all, first.high, medians) {
        (true, Some(h), Some((gap, _))) => Some(OomWindow::new(h, interval(gap))),
        _ => None,
    };
    let mut mem = MemoryInput {
        no_samples: first.samples == 0,
        ..MemoryInput::default()
    };
    let mut classifier = Classifier::new(store.thresholds());
    let mut runs = RunFold::default();
    // The selected samples' (time, highest reading), while they are few: the time near the
    // peak from them, without a pass more.
    let (mut kept, mut overflow): (Vec<(u64, u64)>, bool) = (Vec::new(), false);
    let fm = &mut first.medians;
    replay(&mut |r| {
        if let Some(x) = reading(r) {
            if medians.is_none() {
                fm.push(x.t, x.rss);
            }
            if inside(x.t) {
                mem.feed(&x);
                classifier
                    .push(x.t, x.rss)
                    .into_iter()
                    .for_each(|r| runs.push(r));
                match early.as_mut() {
                    Some(w) => w.feed(x.t, x.high),
                    None if kept.len() < KEEP_SELECTED => kept.push((x.t, x.high)),
                    None => overflow = true,
                }
            }
        }
    })?;
    classifier.finish().into_iter().for_each(|r| runs.push(r));
    while medians.is_none() {
        medians = first.medians.end_pass();
        if medians.is_none() {
            let fm = &mut first.medians;
            replay(&mut |r| {
                if let Some(x) = reading(r) {
                    fm.push(x.t, x.rss);
                }
            })?;
        }
    }
    let (gap, idle) = medians.unwrap_or((0, None));
    let interval_ns = (first.samples >= 2).then_some(gap);
    // The floor belongs to the session, not to a selection: the SRS resident between proofs
    // (as classify's mode table has it), else the seed's idle floor by thresholds.
    mem.floor = store.srs_floor().or(idle);
    match (mem.high, early) {
        (Some(_), Some(w)) => mem.window_s = Some(w.seconds()),
        (Some(high), None) => {
            let mut w = OomWindow::new(high, interval_ns);
            if overflow {
                replay(&mut |r| {
                    if let Some(x) = reading(r).filter(|x| inside(x.t)) {
                        w.feed(x.t, x.high);
                    }
                })?;
            } else {
                kept.iter().for_each(|&(t, h)| w.feed(t, h));
            }
            mem.window_s = Some(w.seconds());
        }
        (None, _) => {}
    }
    Ok((mem, runs, interval_ns))
}
