//! The prover-phase table's utilisation columns (see the parent module's doc): the phases'
//! time as disjoint segments ([`Plan`], from the store's spans), the readings folded into
//! per-phase means one record at a time ([`Fold`]: no reading is kept, and the segments are
//! in spills, so a session of any length costs the same), and the table with the columns
//! appended ([`Fold::render`]).

use std::fmt::Write as _;
use std::io;

use provetop_shared::{Record, RecordBody};

use crate::store::cover::Cover;
use crate::store::Store;
use provetop_shared::spill::{u64_at, Fixed, Spill};

/// The phases of the table's rows, in its order, and their time as disjoint segments.
pub struct Plan {
    order: Vec<(u64, provetop_shared::Phase)>,
    /// (t0, t1, rows open), sorted and disjoint.
    segs: Segs,
    gpus: Vec<u32>,
}

/// A segment of time: `(t0, t1)` and where its rows start in [`Segs::open`], how many.
#[derive(Debug, Clone, Copy)]
struct Seg {
    t0: u64,
    t1: u64,
    at: u64,
    n: u32,
}

impl Fixed for Seg {
    const SIZE: usize = 28;
    fn put(&self, out: &mut Vec<u8>) {
        for v in [self.t0, self.t1, self.at] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        out.extend_from_slice(&self.n.to_le_bytes());
    }
    fn take(b: &[u8]) -> Self {
        Seg {
            t0: u64_at(b, 0),
            t1: u64_at(b, 1),
            at: u64_at(b, 2),
            n: u32::from_le_bytes(b[24..28].try_into().expect("4 bytes")),
        }
    }
}

/// Disjoint segments of time, sorted, each with the rows open over it, the rows of all in
/// one sequence (a session of months has hundreds of thousands of segments), both in spills:
/// a session of any length holds the same.
#[derive(Default)]
struct Segs {
    spans: Spill<Seg>,
    open: Spill<u32>,
}

/// Σ value × overlap and Σ overlap per row (instants weigh one each).
type Acc = Vec<(f64, u64)>;

/// The block of segments (and their rows) a reading last fell in: readings come in time
/// order, so a reading's segments are nearly always there.
#[derive(Default)]
struct Near {
    at: usize,
    segs: Vec<Seg>,
    rows_at: u64,
    rows: Vec<u32>,
}

/// The readings folded so far.
pub struct Fold {
    plan: Plan,
    cores: Acc,
    host: Acc,
    gpu: Vec<Acc>,
    near: Near,
    /// Why the segments could not be read back from their file.
    failed: Option<String>,
}

/// A cover's interval ends in order: each interval's start, then its end.
struct Ends<'a> {
    it: Box<dyn Iterator<Item = io::Result<(u64, u64)>> + 'a>,
    end: Option<u64>,
}

impl Ends<'_> {
    fn next(&mut self) -> io::Result<Option<u64>> {
        if let Some(b) = self.end.take() {
            return Ok(Some(b));
        }
        Ok(match self.it.next().transpose()? {
            Some((a, b)) => {
                self.end = Some(b);
                Some(a)
            }
            None => None,
        })
    }
}

impl Plan {
    /// The rows of `store`'s prover-phase table: each phase by its first start, then the time
    /// outside every span; `gpus` are the session's GPU indices, ascending. The segments are
    /// cut at every end of every phase's covered time (and at the session's start and end
    /// where the time outside every span begins or ends there), in one sweep over the phases'
    /// covered time, each read in order: nothing grows with the session but the spills.
    pub fn new(store: &Store, gpus: Vec<u32>) -> io::Result<Plan> {
        let (start, end) = (store.start(), store.end());
        let digest = store.span_digest();
        let mut rows: Vec<(u64, provetop_shared::Phase, usize)> = digest
            .rows
            .iter()
            .enumerate()
            .map(|(i, r)| (r.first_start, r.phase.clone(), i))
            .collect();
        rows.sort();
        let covers: Vec<&Cover> = rows.iter().map(|r| &digest.rows[r.2].intervals).collect();
        let order: Vec<(u64, provetop_shared::Phase)> =
            rows.into_iter().map(|(t, p, _)| (t, p)).collect();
        let segs = segments(&covers, start, end)?;
        Ok(Plan { order, segs, gpus })
    }

    /// Nothing folded yet.
    pub fn fold(self) -> Fold {
        let rows = self.order.len() + 1;
        Fold {
            cores: vec![(0.0, 0); rows],
            host: vec![(0.0, 0); rows],
            gpu: vec![vec![(0.0, 0); rows]; self.gpus.len()],
            plan: self,
            near: Near::default(),
            failed: None,
        }
    }
}

/// The segments of `covers`' time (each phase's, in row order; the last row, `covers.len()`,
/// is the time from `start` outside every one): cut at every end of every interval, and at
/// `start` and `end` where the time outside every phase begins or ends there.
fn segments(covers: &[&Cover], start: u64, end: u64) -> io::Result<Segs> {
    let n = covers.len();
    // The bounds: every phase's interval ends, merged in order without repeats.
    let mut ends: Vec<Ends> = covers
        .iter()
        .map(|c| Ends {
            it: Box::new(c.iter()),
            end: None,
        })
        .collect();
    let mut heads: Vec<Option<u64>> = ends.iter_mut().map(Ends::next).collect::<io::Result<_>>()?;
    // Each phase's interval now, for the rows open over a segment.
    let mut its: Vec<_> = covers.iter().map(|c| c.iter()).collect();
    let mut cur: Vec<Option<(u64, u64)>> = its
        .iter_mut()
        .map(|i| i.next().transpose())
        .collect::<io::Result<_>>()?;
    let mut segs = Segs::default();
    let mut open: Vec<u32> = Vec::new();
    let mut cut = |x: u64, y: u64, cur: &mut Vec<Option<(u64, u64)>>| -> io::Result<()> {
        open.clear();
        for (p, it) in its.iter_mut().enumerate() {
            while cur[p].is_some_and(|iv| iv.1 <= x) {
                cur[p] = it.next().transpose()?;
            }
            if cur[p].is_some_and(|(s, e)| s <= x && e >= y) {
                open.push(p as u32);
            }
        }
        // The time outside every span, from the session's start.
        if open.is_empty() && x >= start {
            open.push(n as u32);
        }
        if open.is_empty() {
            return Ok(());
        }
        segs.spans.push(Seg {
            t0: x,
            t1: y,
            at: segs.open.len() as u64,
            n: open.len() as u32,
        });
        open.iter().for_each(|&r| segs.open.push(r));
        Ok(())
    };
    let first = heads.iter().flatten().min().copied();
    let mut last: Option<u64> = None;
    if first.map_or(end > start, |f| f > start) {
        last = Some(start);
    }
    let lowest = |heads: &[Option<u64>]| {
        heads
            .iter()
            .enumerate()
            .filter_map(|(p, h)| h.map(|x| (p, x)))
            .min_by_key(|&(p, x)| (x, p))
    };
    while let Some((p, x)) = lowest(&heads) {
        heads[p] = ends[p].next()?;
        if let Some(prev) = last.filter(|&l| l < x) {
            cut(prev, x, &mut cur)?;
        }
        last = Some(last.map_or(x, |l| l.max(x)));
    }
    if let Some(prev) = last.filter(|&l| end > l.max(start)) {
        cut(prev, end, &mut cur)?;
    }
    Ok(segs)
}

impl Near {
    /// Segment `i` (`i <` their number), its block read in where it is not here.
    fn seg(&mut self, segs: &Segs, i: usize) -> io::Result<Seg> {
        if !(self.at..self.at + self.segs.len()).contains(&i) {
            let b = Spill::<Seg>::block();
            self.at = i / b * b;
            self.segs.clear();
            let mut v = std::mem::take(&mut self.segs);
            segs.spans
                .each_in(self.at, self.at + b, &mut |_, s| v.push(s))?;
            self.segs = v;
            let (first, last) = (self.segs[0], self.segs[self.segs.len() - 1]);
            self.rows_at = first.at;
            self.rows.clear();
            let mut rows = std::mem::take(&mut self.rows);
            segs.open.each_in(
                first.at as usize,
                (last.at + u64::from(last.n)) as usize,
                &mut |_, r| rows.push(r),
            )?;
            self.rows = rows;
        }
        Ok(self.segs[i - self.at])
    }

    /// The rows open over segment `s` (one [`Near::seg`] just gave).
    fn rows(&self, s: &Seg) -> &[u32] {
        let from = (s.at - self.rows_at) as usize;
        &self.rows[from..from + s.n as usize]
    }

    /// The first segment for which `at` holds (`at` false then true along them).
    fn first(&mut self, segs: &Segs, at: impl Fn(&Seg) -> bool) -> io::Result<usize> {
        // Where the block here holds the answer, no other block is read.
        if let (Some(a), Some(z)) = (self.segs.first(), self.segs.last()) {
            if (self.at == 0 || !at(a)) && at(z) {
                return Ok(self.at + self.segs.partition_point(|s| !at(s)));
            }
        }
        segs.spans.first_where(at)
    }
}

/// Add a reading over `(t0, t1]` (`t0 == t1`: at one instant, counted once where it falls)
/// to the rows open over it.
fn add(acc: &mut Acc, near: &mut Near, segs: &Segs, t0: u64, t1: u64, v: f64) -> io::Result<()> {
    if !v.is_finite() || t1 < t0 {
        return Ok(());
    }
    let n = segs.spans.len();
    if t1 == t0 {
        let i = near.first(segs, |s| s.t1 >= t0)?;
        if i < n {
            let s = near.seg(segs, i)?;
            if s.t0 <= t0 {
                for &p in near.rows(&s) {
                    acc[p as usize].0 += v;
                    acc[p as usize].1 += 1;
                }
            }
        }
        return Ok(());
    }
    let mut i = near.first(segs, |s| s.t1 > t0)?;
    while i < n {
        let s = near.seg(segs, i)?;
        if s.t0 >= t1 {
            break;
        }
        let w = t1.min(s.t1).saturating_sub(t0.max(s.t0));
        for &p in near.rows(&s) {
            acc[p as usize].0 += v * w as f64;
            acc[p as usize].1 += w;
        }
        i += 1;
    }
    Ok(())
}

fn means(acc: &Acc) -> Vec<Option<f64>> {
    acc.iter()
        .map(|&(sum, w)| (w > 0).then(|| sum / w as f64))
        .collect()
}

impl Fold {
    /// The next record: a usage reading over its interval, a sample's GPU readings at its
    /// instant.
    pub fn feed(&mut self, r: &Record) {
        if self.failed.is_some() {
            return;
        }
        let (segs, near) = (&self.plan.segs, &mut self.near);
        let done = match &r.body {
            RecordBody::Usage(u) if u.interval_ns > 0 => {
                let t0 = r.t.saturating_sub(u.interval_ns);
                u.cores
                    .map_or(Ok(()), |c| add(&mut self.cores, near, segs, t0, r.t, c))
                    .and_then(|()| {
                        u.host_cores
                            .map_or(Ok(()), |c| add(&mut self.host, near, segs, t0, r.t, c))
                    })
            }
            RecordBody::Sample(s) => s.gpus.iter().try_for_each(|g| {
                match (self.plan.gpus.binary_search(&g.index), g.utilization()) {
                    (Ok(i), Some(u)) => add(&mut self.gpu[i], near, segs, r.t, r.t, f64::from(u)),
                    _ => Ok(()),
                }
            }),
            _ => Ok(()),
        };
        if let Err(e) = done {
            self.failed = Some(format!("reading the phases' segments back: {e}"));
        }
    }

    /// Why the fold stopped short (a segment could not be read back).
    pub fn failed(&self) -> Option<&str> {
        self.failed.as_deref()
    }

    /// `table` (the store's prover-phase table) with the utilisation columns appended.
    pub fn render(&self, store: &Store, table: &str) -> String {
        let n = self.plan.order.len();
        let order = &self.plan.order;
        let cores = means(&self.cores);
        let host = means(&self.host);
        let gpu: Vec<Vec<Option<f64>>> = self.gpu.iter().map(means).collect();
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
                for g in &self.plan.gpus {
                    let _ = write!(out, " {:>9}", format!("gpu{g} util"));
                }
            } else if i > 1 {
                // Each row is the phase in this order; a row that is not (never so today)
                // gets "-" rather than another phase's numbers.
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::cover::merged;
    use proptest::prelude::*;

    /// The segments as the table made them from every interval in memory (before the
    /// spills): (t0, t1, rows open).
    fn reference(intervals: &[Vec<(u64, u64)>], start: u64, end: u64) -> Vec<(u64, u64, Vec<u32>)> {
        let n = intervals.len();
        let any = merged(intervals.iter().flatten().copied().collect());
        let mut between = Vec::new();
        let mut reach = start;
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
        let mut out = Vec::new();
        for w in bounds.windows(2) {
            let (a, b) = (w[0], w[1]);
            let mut open = Vec::new();
            for (p, iv) in all.iter().enumerate() {
                while cursor[p] < iv.len() && iv[cursor[p]].1 <= a {
                    cursor[p] += 1;
                }
                if iv.get(cursor[p]).is_some_and(|&(s, e)| s <= a && e >= b) {
                    open.push(p as u32);
                }
            }
            if !open.is_empty() {
                out.push((a, b, open));
            }
        }
        out
    }

    /// A reading added to the rows as the table added it, over segments in memory.
    fn reference_add(acc: &mut Acc, segs: &[(u64, u64, Vec<u32>)], t0: u64, t1: u64, v: f64) {
        if t1 == t0 {
            let i = segs.partition_point(|s| s.1 < t0);
            if segs.get(i).is_some_and(|s| s.0 <= t0) {
                for &p in &segs[i].2 {
                    acc[p as usize].0 += v;
                    acc[p as usize].1 += 1;
                }
            }
            return;
        }
        let from = segs.partition_point(|s| s.1 <= t0);
        for s in segs[from..].iter().take_while(|s| s.0 < t1) {
            let w = t1.min(s.1).saturating_sub(t0.max(s.0));
            for &p in &s.2 {
                acc[p as usize].0 += v * w as f64;
                acc[p as usize].1 += w;
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]
        /// Phases whose spans come by the thousand (their segments and intervals spill),
        /// readings mostly in time order, some out of it: the same segments and the same sums,
        /// to the bit, as the table made with everything in memory.
        #[test]
        fn segments_and_sums_from_spills_are_the_ones_made_in_memory(
            seed in any::<u64>(),
            phases in 1usize..5,
            spans in 200usize..1500,
            lead in 0u64..500,
        ) {
            let mut rnd = provetop_testkit::xorshift::xorshift(seed);
            let (start, end) = (1_000u64, 1_000 + spans as u64 * 100 + lead);
            let mut covers: Vec<Cover> = (0..phases).map(|_| Cover::default()).collect();
            let mut raw: Vec<Vec<(u64, u64)>> = vec![Vec::new(); phases];
            for i in 0..spans as u64 {
                let p = (rnd() % phases as u64) as usize;
                let a = start + lead + i * 100 + rnd() % 80;
                let b = (a + rnd() % 150).min(end);
                covers[p].add((a, b)).unwrap();
                raw[p].push((a, b));
            }
            let want = reference(&raw.into_iter().map(merged).collect::<Vec<_>>(), start, end);
            let refs: Vec<&Cover> = covers.iter().collect();
            let segs = segments(&refs, start, end).unwrap();
            prop_assert!(segs.spans.on_disk() > 0 || want.len() < Spill::<Seg>::block());
            let got: Vec<(u64, u64, Vec<u32>)> = segs
                .spans
                .iter()
                .map(|s| {
                    let s = s.unwrap();
                    let mut rows = Vec::new();
                    segs.open
                        .each_in(s.at as usize, (s.at + u64::from(s.n)) as usize, &mut |_, r| {
                            rows.push(r)
                        })
                        .unwrap();
                    (s.t0, s.t1, rows)
                })
                .collect();
            prop_assert_eq!(&got, &want);
            let (mut a, mut b) = (vec![(0.0, 0); phases + 1], vec![(0.0, 0); phases + 1]);
            let mut near = Near::default();
            for k in 0..3_000u64 {
                let t1 = if k % 97 == 0 { rnd() % (end + 100) } else { start + k * (end - start) / 3_000 };
                let t0 = if k % 3 == 0 { t1 } else { t1.saturating_sub(rnd() % 400) };
                let v = (rnd() % 1000) as f64 / 7.0;
                add(&mut a, &mut near, &segs, t0, t1, v).unwrap();
                reference_add(&mut b, &want, t0, t1, v);
            }
            let bits = |acc: &Acc| acc.iter().map(|&(s, w)| (s.to_bits(), w)).collect::<Vec<_>>();
            prop_assert_eq!(bits(&a), bits(&b));
        }
    }
}
