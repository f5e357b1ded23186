//! Where log-derived records go: [`place_derived`] moves each derived record that lies
//! before records recorded ahead of it back to its time, on a whole file or record by record
//! ([`Placer`], given the records that move, which one pass finds: [`LateFinder`]).

use provetop_shared::session::{self, LoadError, Warning};
use provetop_shared::{Record, RecordBody};

/// Move each derived record that lies before records recorded ahead of it back to its time.
/// A phase known by its end and duration (`synthesis time: 79.4s`, a tracing close) starts
/// in the past: its start is recorded with the line, after the samples of its time, which
/// the reducer would otherwise count outside every phase. Nothing else moves, and records
/// keep their order among equal times.
pub fn place_derived(records: &mut Vec<Record>) {
    let mut reach = 0u64;
    let mut late = false;
    let keys: Vec<u64> = records
        .iter()
        .map(|r| {
            let (key, moves) = place_key(&mut reach, r);
            late |= moves;
            key
        })
        .collect();
    if !late {
        return;
    }
    let mut keyed: Vec<(u64, Record)> = keys.into_iter().zip(records.drain(..)).collect();
    keyed.sort_by_key(|(k, _)| *k);
    records.extend(keyed.into_iter().map(|(_, r)| r));
}

/// A record that [`place_derived`] moves back: its sort key (the time it moves to), its
/// index in the file, and itself.
pub type Late = (u64, usize, Record);

/// A streaming pass met a record that moves back, and was given no [`Late`] list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NeedsPlacement;

/// The key [`place_derived`] sorts a record by, given the reach before it (which it
/// updates), and whether the record moves back.
fn place_key(reach: &mut u64, r: &Record) -> (u64, bool) {
    let before = *reach;
    *reach = (*reach).max(r.t);
    match r.body {
        RecordBody::Derived(_) if r.t < before => (r.t, true),
        RecordBody::Derived(_) => (before, false),
        _ => (*reach, false),
    }
}

/// Collects, record by record in file order, the records [`place_derived`] moves back,
/// sorted as it places them.
#[derive(Debug, Default)]
pub struct LateFinder {
    reach: u64,
    i: usize,
    late: Vec<Late>,
}

impl LateFinder {
    /// The next record.
    pub fn feed(&mut self, r: &Record) {
        let (key, late) = place_key(&mut self.reach, r);
        if late {
            self.late.push((key, self.i, r.clone()));
        }
        self.i += 1;
    }

    /// `n` records in file order, none of them derived, the largest time among them
    /// `t_max`: what feeding them would do, without them.
    pub fn skip(&mut self, n: usize, t_max: u64) {
        self.reach = self.reach.max(t_max);
        self.i += n;
    }

    /// The late records, in the order they are placed.
    pub fn finish(mut self) -> Vec<Late> {
        self.late.sort_by_key(|l| (l.0, l.1));
        self.late
    }
}

/// [`place_derived`] record by record: records in file order in, in placed order out. The
/// keys of records that stay are non-decreasing, so a late record goes out just before the
/// first that stays whose key is greater than its own.
pub struct Placer<'a> {
    late: Option<&'a [Late]>,
    next: usize,
    reach: u64,
}

impl<'a> Placer<'a> {
    /// A placer from the start of the file.
    pub fn new(late: Option<&'a [Late]>) -> Self {
        Placer {
            late,
            next: 0,
            reach: 0,
        }
    }

    /// A placer where another left off ([`Placer::state`]): feeding it the rest of the file
    /// gives what that one would have given.
    pub fn resume(late: &'a [Late], state: (usize, u64)) -> Self {
        Placer {
            late: Some(late),
            next: state.0,
            reach: state.1,
        }
    }

    /// Where it is: late records given so far, and the reach of the records fed.
    pub fn state(&self) -> (usize, u64) {
        (self.next, self.reach)
    }

    /// The next record of the file; `Err` when it moves back and no late list was given.
    pub fn feed(&mut self, r: Record, out: &mut dyn FnMut(Record)) -> Result<(), NeedsPlacement> {
        let (before, goes) = self.place(&r)?;
        for l in before {
            out(l.2.clone());
        }
        if goes {
            out(r);
        }
        Ok(())
    }

    /// [`Placer::feed`] of a borrowed record, giving borrowed records: what it gives is
    /// copied only where `out` keeps it.
    pub fn feed_ref(
        &mut self,
        r: &Record,
        out: &mut dyn FnMut(&Record),
    ) -> Result<(), NeedsPlacement> {
        let (before, goes) = self.place(r)?;
        for l in before {
            out(&l.2);
        }
        if goes {
            out(r);
        }
        Ok(())
    }

    /// Where `r` goes: the late records of the list to give before it, and whether it goes
    /// now (a late record is given from the list, in its place).
    fn place(&mut self, r: &Record) -> Result<(&'a [Late], bool), NeedsPlacement> {
        let (key, late) = place_key(&mut self.reach, r);
        let Some(list) = self.late else {
            return if late {
                Err(NeedsPlacement)
            } else {
                Ok((&[], true))
            };
        };
        if late {
            return Ok((&[], false));
        }
        let from = self.next;
        while list.get(self.next).is_some_and(|l| l.0 < key) {
            self.next += 1;
        }
        Ok((&list[from..self.next], true))
    }

    /// The late records not given yet (at the end of the file).
    pub fn finish(&mut self, out: &mut dyn FnMut(Record)) {
        for l in self.late.unwrap_or(&[]).get(self.next..).unwrap_or(&[]) {
            out(l.2.clone());
        }
    }
}

/// Every record of `src` in placed order (see [`place_derived`]), `late` being what a pass
/// before found ([`LateFinder`]), until `f` says no more (false); returns the warnings.
pub fn placed_each(
    src: &session::stream::Stream,
    late: &[Late],
    f: &mut dyn FnMut(Record) -> bool,
) -> Result<Vec<Warning>, LoadError> {
    let mut placer = Placer::new(Some(late));
    let go = std::cell::Cell::new(true);
    let mut g = |r: Record| {
        if go.get() && !f(r) {
            go.set(false);
        }
    };
    let warnings = src.each_while(&mut |r| {
        // With the list, every record that moves is placed: feed never fails.
        let _ = placer.feed(r, &mut g);
        go.get()
    })?;
    if go.get() {
        placer.finish(&mut g);
    }
    Ok(warnings)
}

#[cfg(test)]
mod tests {
    use super::*;
    use provetop_shared::protocol::{Event, Phase};
    use provetop_shared::record::{Derived, Sample};

    /// Samples every 10 ns, with phases known by their end every 7 samples: each starts
    /// 25 ns back, among samples recorded before it.
    fn file() -> Vec<Record> {
        let mut recs = Vec::new();
        for i in 0..60u64 {
            recs.push(Record::new(i * 10, RecordBody::Sample(Sample::default())));
            if i % 7 == 6 {
                let derived = Derived {
                    grammar: "bellperson".into(),
                    event: Event::PhaseStarted {
                        proof_id: i,
                        phase: Phase::Synthesis,
                        partition: None,
                    },
                    nvtx: None,
                };
                recs.push(Record::new(i * 10 - 25, RecordBody::Derived(derived)));
            }
        }
        recs
    }

    #[test]
    fn placing_record_by_record_owned_or_borrowed_gives_the_whole_files_order() {
        let recs = file();
        let mut whole = recs.clone();
        place_derived(&mut whole);
        assert_ne!(whole, recs, "some records move");
        let mut finder = LateFinder::default();
        recs.iter().for_each(|r| finder.feed(r));
        let late = finder.finish();
        let (mut owned, mut borrowed) = (Vec::new(), Vec::new());
        let mut p = Placer::new(Some(&late));
        for r in &recs {
            p.feed(r.clone(), &mut |r| owned.push(r)).unwrap();
        }
        p.finish(&mut |r| owned.push(r));
        let mut p = Placer::new(Some(&late));
        for r in &recs {
            p.feed_ref(r, &mut |r| borrowed.push(r.clone())).unwrap();
        }
        p.finish(&mut |r| borrowed.push(r));
        assert_eq!(owned, whole);
        assert_eq!(borrowed, whole);
        // Without the list, the first record that moves is refused.
        let mut p = Placer::new(None);
        let refused = recs
            .iter()
            .map(|r| p.feed_ref(r, &mut |_| {}))
            .find(Result::is_err);
        assert_eq!(refused, Some(Err(NeedsPlacement)));
    }
}
