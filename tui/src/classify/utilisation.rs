//! The prover-phase table's utilisation columns (see the parent module's doc): the phases'
//! time as disjoint segments ([`Plan`], from the store's spans), the readings folded into
//! per-phase means one record at a time ([`Fold`]: no reading is kept, so a session of any
//! length costs the same), and the table with the columns appended ([`Fold::render`]).

use std::fmt::Write as _;

use provetop_shared::{Record, RecordBody};

use crate::compare::summary::merged;
use crate::store::Store;

/// The phases of the table's rows, in its order, and their time as disjoint segments.
pub struct Plan {
    order: Vec<(u64, provetop_shared::Phase)>,
    /// (t0, t1, rows open), sorted and disjoint.
    segs: Segs,
    gpus: Vec<u32>,
}

/// Disjoint segments of time, sorted, each with the rows open over it: (t0, t1, where its
/// rows start in `open`, how many), the rows of all in one vector (a session of months has
/// hundreds of thousands of segments: one allocation each would cost more than they hold).
#[derive(Default)]
struct Segs {
    spans: Vec<(u64, u64, u32, u32)>,
    open: Vec<u32>,
}

impl Segs {
    fn rows(&self, i: usize) -> &[u32] {
        let (_, _, at, n) = self.spans[i];
        &self.open[at as usize..(at + n) as usize]
    }
}

/// Σ value × overlap and Σ overlap per row (instants weigh one each).
type Acc = Vec<(f64, u64)>;

/// The readings folded so far.
pub struct Fold {
    plan: Plan,
    cores: Acc,
    host: Acc,
    gpu: Vec<Acc>,
}

impl Plan {
    /// The rows of `store`'s prover-phase table: each phase by its first start, then the time
    /// outside every span; `gpus` are the session's GPU indices, ascending.
    pub fn new(store: &Store, gpus: Vec<u32>) -> Plan {
        let end = store.end();
        let digest = store.span_digest();
        let mut rows: Vec<(u64, provetop_shared::Phase, usize)> = digest
            .rows
            .iter()
            .enumerate()
            .map(|(i, r)| (r.first_start, r.phase.clone(), i))
            .collect();
        rows.sort();
        let n = rows.len();
        let mut intervals: Vec<Vec<(u64, u64)>> = rows
            .iter()
            .map(|&(_, _, i)| digest.rows[i].intervals.clone())
            .collect();
        intervals.push(Vec::new());
        let order: Vec<(u64, provetop_shared::Phase)> =
            rows.into_iter().map(|(t, p, _)| (t, p)).collect();
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
        let mut segs = Segs::default();
        for w in bounds.windows(2) {
            let (a, b) = (w[0], w[1]);
            let at = segs.open.len();
            for (p, iv) in all.iter().enumerate() {
                while cursor[p] < iv.len() && iv[cursor[p]].1 <= a {
                    cursor[p] += 1;
                }
                if iv.get(cursor[p]).is_some_and(|&(s, e)| s <= a && e >= b) {
                    segs.open.push(p as u32);
                }
            }
            if segs.open.len() > at {
                let n = segs.open.len() - at;
                segs.spans.push((a, b, at as u32, n as u32));
            }
        }
        Plan { order, segs, gpus }
    }

    /// Nothing folded yet.
    pub fn fold(self) -> Fold {
        let rows = self.order.len() + 1;
        Fold {
            cores: vec![(0.0, 0); rows],
            host: vec![(0.0, 0); rows],
            gpu: vec![vec![(0.0, 0); rows]; self.gpus.len()],
            plan: self,
        }
    }
}

/// Add a reading over `(t0, t1]` (`t0 == t1`: at one instant, counted once where it falls)
/// to the rows open over it.
fn add(acc: &mut Acc, segs: &Segs, t0: u64, t1: u64, v: f64) {
    if !v.is_finite() || t1 < t0 {
        return;
    }
    let sp = &segs.spans;
    if t1 == t0 {
        let i = sp.partition_point(|s| s.1 < t0);
        if sp.get(i).is_some_and(|s| s.0 <= t0) {
            for &p in segs.rows(i) {
                acc[p as usize].0 += v;
                acc[p as usize].1 += 1;
            }
        }
        return;
    }
    let from = sp.partition_point(|s| s.1 <= t0);
    for (i, &(a, b, _, _)) in sp.iter().enumerate().skip(from).take_while(|s| s.1 .0 < t1) {
        let w = t1.min(b).saturating_sub(t0.max(a));
        for &p in segs.rows(i) {
            acc[p as usize].0 += v * w as f64;
            acc[p as usize].1 += w;
        }
    }
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
        let segs = &self.plan.segs;
        match &r.body {
            RecordBody::Usage(u) if u.interval_ns > 0 => {
                let t0 = r.t.saturating_sub(u.interval_ns);
                if let Some(c) = u.cores {
                    add(&mut self.cores, segs, t0, r.t, c);
                }
                if let Some(c) = u.host_cores {
                    add(&mut self.host, segs, t0, r.t, c);
                }
            }
            RecordBody::Sample(s) => {
                for g in &s.gpus {
                    if let (Ok(i), Some(u)) =
                        (self.plan.gpus.binary_search(&g.index), g.utilization())
                    {
                        add(&mut self.gpu[i], segs, r.t, r.t, f64::from(u));
                    }
                }
            }
            _ => {}
        }
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
