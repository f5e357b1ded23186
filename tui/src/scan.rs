//! A session read in passes, in bounded memory: the store's reducer pass record by record
//! ([`reduce`]), and what a pass before it must find for some readers ([`Pre`]: the GPUs and
//! kernel records the CSV's header names, whether the file has prover events, the records
//! that [`crate::store::place_derived`] moves back).
//!
//! Contract: a reader built on these holds the store's figures (spans, proofs, a few
//! counters) and its own folds, never the records, so its memory does not grow with the
//! session's length; its output is what the same reader gives from a [`Store`] loaded whole
//! (the readers' tests compare both on the same files).

use std::path::Path;

use provetop_shared::classify::Thresholds;
use provetop_shared::session::stream::Stream;
use provetop_shared::session::LoadError;
use provetop_shared::{Record, RecordBody};

use crate::store::{Figures, Late, LateFinder, Store};

/// Every GPU index a sample or a usage record names ([`crate::export::session_gpus`]).
#[derive(Debug, Default, Clone)]
pub struct Gpus(Vec<u32>);

impl Gpus {
    /// The next record.
    pub fn feed(&mut self, r: &Record) {
        let mut add = |i: u32| {
            if let Err(at) = self.0.binary_search(&i) {
                self.0.insert(at, i);
            }
        };
        match &r.body {
            RecordBody::Sample(s) => s.gpus.iter().for_each(|g| add(g.index)),
            RecordBody::Usage(u) => u.gpus.iter().for_each(|g| add(g.index)),
            _ => {}
        }
    }

    /// The indices, ascending.
    pub fn sorted(self) -> Vec<u32> {
        self.0
    }
}

/// What one pass over a session finds for the passes after it.
#[derive(Debug, Default)]
pub struct Pre {
    /// GPU indices, ascending.
    pub gpus: Vec<u32>,
    /// Whether it has kernel records.
    pub kernel: bool,
    /// Whether it has prover events (sent, or read from log lines).
    pub has_events: bool,
    /// The records placed back in time.
    pub late: Vec<Late>,
}

impl Pre {
    /// One pass over `src`; with the warnings it met.
    pub fn of(src: &Stream) -> Result<(Pre, Vec<provetop_shared::session::Warning>), LoadError> {
        let mut gpus = Gpus::default();
        let mut late = LateFinder::default();
        let (mut kernel, mut has_events) = (false, false);
        let warnings = src.each(&mut |r| {
            gpus.feed(&r);
            late.feed(&r);
            kernel |= matches!(r.body, RecordBody::Kernel(_));
            has_events |= matches!(r.body, RecordBody::Event(_) | RecordBody::Derived(_));
        })?;
        let pre = Pre {
            gpus: gpus.sorted(),
            kernel,
            has_events,
            late: late.finish(),
        };
        Ok((pre, warnings))
    }
}

/// The store's reducer pass over `src` keeping `figures`, each record (in placed order, with the prover's
/// phase text when `has_events` is known true) given to `visit` with a state that `fresh`
/// makes. Without `late`: when a record must move back, the pass is made again from a fresh
/// state after one that finds such records. Returns the store, the state, and the late
/// records it used.
pub fn reduce<S>(
    path: &Path,
    src: &Stream,
    thresholds: Thresholds,
    has_events: Option<bool>,
    figures: Figures,
    mut fresh: impl FnMut() -> S,
    mut visit: impl FnMut(&mut S, &Record, Option<&str>),
) -> Result<((Store, S), Vec<Late>), LoadError> {
    let mut state = fresh();
    let mut go = |late: Option<&[Late]>, state: &mut S| {
        Store::stream(
            path,
            src,
            thresholds,
            has_events,
            late,
            figures,
            &mut |r, p| {
                visit(state, r, p);
                true
            },
        )
    };
    if let Ok(store) = go(None, &mut state)? {
        return Ok(((store, state), Vec::new()));
    }
    let mut finder = LateFinder::default();
    src.each(&mut |r| finder.feed(&r))?;
    let late = finder.finish();
    let mut state = fresh();
    match go(Some(&late), &mut state)? {
        Ok(store) => Ok(((store, state), late)),
        // With the list, every record that moves is placed: the pass never stops.
        Err(_) => unreachable!("a placed pass does not stop"),
    }
}
