//! Memory-bounded time series of samples: full resolution for a recent window, min/max
//! buckets for older history.
//!
//! A long live run (24 h at 20 Hz is 1.7 M samples) must not grow provetop's own memory
//! without bound, yet a zoomed-out chart must still show every peak. So points older than the
//! recent window fold into fixed-width buckets that keep each metric's minimum and maximum;
//! when there are too many buckets, neighbours merge and the width doubles. Min/max survive
//! every merge, so no peak ever disappears.

use std::collections::VecDeque;

use provetop_shared::Sample;

pub use provetop_shared::metric::Metric;

/// Number of metrics a point holds (the series metrics of [`Metric::SERIES`]).
pub const METRICS: usize = provetop_shared::metric::SERIES;

/// Absent value marker inside points and buckets (no real reading is `u64::MAX` bytes).
const NONE: u64 = u64::MAX;

/// One sample, compactly: its time and every metric (`N` lanes: the memory metrics by
/// default; the utilisation series of [`crate::model::usage`] use lanes of their own, so
/// they are bounded and decimated by the same code on the same time axis).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Point<const N: usize = METRICS> {
    /// Monotonic ns.
    pub t: u64,
    v: [u64; N],
}

impl<const N: usize> Point<N> {
    /// A point at `t` with every lane absent.
    pub fn empty(t: u64) -> Self {
        Point { t, v: [NONE; N] }
    }

    /// Lane `i`'s value, if set.
    pub fn lane(&self, i: usize) -> Option<u64> {
        let x = self.v[i];
        (x != NONE).then_some(x)
    }

    /// Set lane `i` (`None`: absent).
    pub fn set_lane(&mut self, i: usize, x: Option<u64>) {
        self.v[i] = x.map(|x| x.min(NONE - 1)).unwrap_or(NONE);
    }
}

impl Point {
    /// From a sample at time `t`.
    pub fn from_sample(t: u64, s: &Sample) -> Self {
        let mut v = [NONE; METRICS];
        for m in Metric::SERIES {
            if let Some(x) = m.of(s) {
                v[m.idx()] = x.min(NONE - 1);
            }
        }
        Point { t, v }
    }

    /// A metric's value, if the sample had it.
    pub fn get(&self, m: Metric) -> Option<u64> {
        self.lane(m.idx())
    }

    /// Override one metric (used to carry a value forward, e.g. reported pinned bytes).
    pub fn set(&mut self, m: Metric, x: Option<u64>) {
        self.set_lane(m.idx(), x)
    }
}

/// Min/max of every metric over a stretch of time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bucket<const N: usize = METRICS> {
    /// Time of the first point folded in.
    pub t0: u64,
    /// Time of the last point folded in.
    pub t1: u64,
    /// Points folded in.
    pub n: u32,
    min: [u64; N],
    max: [u64; N],
}

impl<const N: usize> Bucket<N> {
    fn empty() -> Self {
        Bucket {
            t0: u64::MAX,
            t1: 0,
            n: 0,
            min: [NONE; N],
            max: [0; N],
        }
    }

    /// A bucket over `[t0, t1]` of `n` points whose lane `i` spans `lanes[i]` (`None`: no
    /// reading): an envelope known without its points (a compact chunk's summary).
    pub fn of_envelope(t0: u64, t1: u64, n: u32, lanes: [Option<(u64, u64)>; N]) -> Self {
        let mut b = Bucket::empty();
        (b.t0, b.t1, b.n) = (t0.min(t1), t1.max(t0), n);
        for (i, l) in lanes.iter().enumerate() {
            if let Some((lo, hi)) = *l {
                b.min[i] = lo.min(hi).min(NONE - 1);
                b.max[i] = hi.max(lo).min(NONE - 1);
            }
        }
        b
    }

    fn of_point(p: &Point<N>) -> Self {
        let mut b = Bucket::empty();
        b.add_point(p);
        b
    }

    fn add_point(&mut self, p: &Point<N>) {
        self.t0 = self.t0.min(p.t);
        self.t1 = self.t1.max(p.t);
        self.n = self.n.saturating_add(1);
        for i in 0..N {
            let x = p.v[i];
            if x != NONE {
                self.min[i] = self.min[i].min(x);
                self.max[i] = self.max[i].max(x);
            }
        }
    }

    fn merge(&mut self, o: &Bucket<N>) {
        if o.n == 0 {
            return;
        }
        self.t0 = self.t0.min(o.t0);
        self.t1 = self.t1.max(o.t1);
        self.n = self.n.saturating_add(o.n);
        for i in 0..N {
            if o.min[i] != NONE {
                self.min[i] = self.min[i].min(o.min[i]);
                self.max[i] = self.max[i].max(o.max[i]);
            }
        }
    }

    /// Points folded in (0 for an empty column).
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// `(min, max)` of lane `i` over the bucket, if any point had it.
    pub fn lane_range(&self, i: usize) -> Option<(u64, u64)> {
        (self.min[i] != NONE).then_some((self.min[i], self.max[i]))
    }
}

impl Bucket {
    /// `(min, max)` of a metric over the bucket, if any point had it.
    pub fn range(&self, m: Metric) -> Option<(u64, u64)> {
        self.lane_range(m.idx())
    }

    /// Maximum of a metric over the bucket.
    pub fn max(&self, m: Metric) -> Option<u64> {
        self.range(m).map(|r| r.1)
    }

    /// Minimum of a metric over the bucket.
    pub fn min(&self, m: Metric) -> Option<u64> {
        self.range(m).map(|r| r.0)
    }
}

/// How much a [`Series`] keeps.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Limits {
    /// Full-resolution window, ns (points older than the newest minus this are folded).
    pub recent_ns: u64,
    /// Most full-resolution points, whatever their span.
    pub max_recent: usize,
    /// Initial width of a history bucket, ns.
    pub bucket_ns: u64,
    /// Most history buckets; beyond it neighbours merge and the width doubles.
    pub max_buckets: usize,
}

impl Default for Limits {
    /// One hour at full resolution (≤ 80 000 points, ~7 MiB), then ≤ 16 384 buckets
    /// (~2.8 MiB) of history however long the run.
    fn default() -> Self {
        Limits {
            recent_ns: 3600 * 1_000_000_000,
            max_recent: 80_000,
            bucket_ns: 1_000_000_000,
            max_buckets: 16_384,
        }
    }
}

impl Limits {
    /// A minute at full resolution and a few hundred buckets: a model that one pass reduces
    /// and nobody draws (the streaming readers').
    pub fn streaming() -> Self {
        Limits {
            recent_ns: 60 * 1_000_000_000,
            max_recent: 1_200,
            bucket_ns: 1_000_000_000,
            max_buckets: 256,
        }
    }

    /// Keep everything at full resolution (offline analysis of a file already in memory).
    pub fn unbounded() -> Self {
        Limits {
            recent_ns: u64::MAX,
            max_recent: usize::MAX,
            bucket_ns: 1_000_000_000,
            max_buckets: usize::MAX,
        }
    }
}

/// The sample series (`N` lanes per point; the memory metrics by default).
#[derive(Debug, Clone)]
pub struct Series<const N: usize = METRICS> {
    limits: Limits,
    bucket_ns: u64,
    history: VecDeque<Bucket<N>>,
    recent: VecDeque<Point<N>>,
    total: u64,
}

impl<const N: usize> Series<N> {
    /// Empty series.
    pub fn new(limits: Limits) -> Self {
        Series {
            bucket_ns: limits.bucket_ns.max(1),
            limits,
            history: VecDeque::new(),
            recent: VecDeque::new(),
            total: 0,
        }
    }

    /// Append a point. A point earlier than the newest one is stored at the newest time so
    /// the series stays sorted (CSV rows that go back in time are kept in file order).
    pub fn push(&mut self, mut p: Point<N>) {
        if let Some(last) = self.recent.back() {
            p.t = p.t.max(last.t);
        } else if let Some(b) = self.history.back() {
            p.t = p.t.max(b.t1);
        }
        self.recent.push_back(p);
        self.total += 1;
        while let Some(front) = self.recent.front() {
            let too_many = self.recent.len() > self.limits.max_recent;
            let too_old = p.t.saturating_sub(front.t) > self.limits.recent_ns;
            if !(too_many || too_old) {
                break;
            }
            let old = self.recent.pop_front().expect("front exists");
            self.fold(&old);
        }
    }

    /// Append a bucket of history known only by its envelope ([`Bucket::of_envelope`]),
    /// before any point: it merges with the buckets as points folded into them would.
    pub fn push_bucket(&mut self, b: Bucket<N>) {
        if b.n == 0 || !self.recent.is_empty() {
            return;
        }
        let slot = b.t0 / self.bucket_ns;
        match self.history.back_mut() {
            Some(h) if h.t0 / self.bucket_ns == slot => h.merge(&b),
            _ => self.history.push_back(b),
        }
        self.total += u64::from(b.n);
        self.thin();
    }

    fn fold(&mut self, p: &Point<N>) {
        let slot = p.t / self.bucket_ns;
        match self.history.back_mut() {
            Some(b) if b.t0 / self.bucket_ns == slot => b.add_point(p),
            _ => self.history.push_back(Bucket::of_point(p)),
        }
        self.thin();
    }

    /// Too many buckets: neighbours merge and the width doubles.
    fn thin(&mut self) {
        if self.history.len() > self.limits.max_buckets {
            self.bucket_ns = self.bucket_ns.saturating_mul(2);
            let mut merged: VecDeque<Bucket<N>> =
                VecDeque::with_capacity(self.history.len() / 2 + 1);
            for b in self.history.drain(..) {
                match merged.back_mut() {
                    Some(m) if m.t0 / self.bucket_ns == b.t0 / self.bucket_ns => m.merge(&b),
                    _ => merged.push_back(b),
                }
            }
            self.history = merged;
        }
    }

    /// Points ever pushed.
    pub fn total(&self) -> u64 {
        self.total
    }

    /// Points kept at full resolution.
    pub fn recent_len(&self) -> usize {
        self.recent.len()
    }

    /// History buckets kept.
    pub fn history_len(&self) -> usize {
        self.history.len()
    }

    /// Current width of a history bucket, ns.
    pub fn bucket_ns(&self) -> u64 {
        self.bucket_ns
    }

    /// Bytes held by the series (capacity, not length: what the allocator gave us).
    pub fn heap_bytes(&self) -> usize {
        self.recent.capacity() * std::mem::size_of::<Point<N>>()
            + self.history.capacity() * std::mem::size_of::<Bucket<N>>()
    }

    /// Time of the first point.
    pub fn first_t(&self) -> Option<u64> {
        self.history
            .front()
            .map(|b| b.t0)
            .or_else(|| self.recent.front().map(|p| p.t))
    }

    /// Time of the last point.
    pub fn last_t(&self) -> Option<u64> {
        self.recent
            .back()
            .map(|p| p.t)
            .or_else(|| self.history.back().map(|b| b.t1))
    }

    /// The newest point.
    pub fn last(&self) -> Option<&Point<N>> {
        self.recent.back()
    }

    /// Full-resolution points with `t0 <= t <= t1` (history buckets are not included).
    pub fn points_in(&self, t0: u64, t1: u64) -> impl Iterator<Item = &Point<N>> + '_ {
        let start = self.recent.partition_point(|p| p.t < t0);
        self.recent.range(start..).take_while(move |p| p.t <= t1)
    }

    /// History buckets overlapping `[t0, t1]`.
    pub fn buckets_in(&self, t0: u64, t1: u64) -> impl Iterator<Item = &Bucket<N>> + '_ {
        let start = self.history.partition_point(|b| b.t1 < t0);
        self.history.range(start..).take_while(move |b| b.t0 <= t1)
    }

    /// The reading at time `t`: the last full-resolution point at or before `t`, or the
    /// history bucket that covers `t` (a range, not an exact value).
    pub fn at(&self, t: u64) -> Option<Reading<N>> {
        let i = self.recent.partition_point(|p| p.t <= t);
        if i > 0 {
            return Some(Reading::Exact(self.recent[i - 1]));
        }
        if self.recent.front().is_some_and(|p| p.t > t) && self.history.is_empty() {
            return None;
        }
        let j = self.history.partition_point(|b| b.t0 <= t);
        if j == 0 {
            return None;
        }
        Some(Reading::Range(self.history[j - 1]))
    }

    /// Decimate `[t0, t1)` into `cols` columns: each column holds the min/max of every metric
    /// over the points (and history buckets) that fall in it. A bucket wider than a column
    /// fills every column it spans.
    pub fn columns(&self, t0: u64, t1: u64, cols: usize) -> Vec<Bucket<N>> {
        let mut out = vec![Bucket::empty(); cols];
        if cols == 0 || t1 <= t0 {
            return out;
        }
        let span = (t1 - t0) as u128;
        let col_of = |t: u64| -> usize {
            let c = ((t.saturating_sub(t0)) as u128 * cols as u128 / span) as usize;
            c.min(cols - 1)
        };
        for b in self.buckets_in(t0, t1) {
            let (c0, c1) = (col_of(b.t0.max(t0)), col_of(b.t1.min(t1)));
            for col in &mut out[c0..=c1] {
                col.merge(b);
            }
        }
        for p in self.points_in(t0, t1) {
            if p.t >= t1 {
                break;
            }
            out[col_of(p.t)].add_point(p);
        }
        out
    }
}

/// What [`Series::at`] found.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Reading<const N: usize = METRICS> {
    /// A full-resolution sample.
    Exact(Point<N>),
    /// An old stretch kept only as min/max.
    Range(Bucket<N>),
}

impl<const N: usize> Reading<N> {
    /// Time of the sample, or the start of the bucket.
    pub fn t(&self) -> u64 {
        match self {
            Reading::Exact(p) => p.t,
            Reading::Range(b) => b.t0,
        }
    }

    /// `(min, max)` of lane `i` (equal for an exact sample).
    pub fn lane_range(&self, i: usize) -> Option<(u64, u64)> {
        match self {
            Reading::Exact(p) => p.lane(i).map(|x| (x, x)),
            Reading::Range(b) => b.lane_range(i),
        }
    }
}

impl Reading {
    /// `(min, max)` of a metric (equal for an exact sample).
    pub fn range(&self, m: Metric) -> Option<(u64, u64)> {
        match self {
            Reading::Exact(p) => p.get(m).map(|x| (x, x)),
            Reading::Range(b) => b.range(m),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pt(t: u64, rss: u64) -> Point {
        Point::from_sample(
            t,
            &Sample {
                rss,
                ..Sample::default()
            },
        )
    }

    #[test]
    fn folds_and_keeps_peaks() {
        let limits = Limits {
            recent_ns: 10,
            max_recent: 1000,
            bucket_ns: 2,
            max_buckets: 8,
        };
        let mut s = Series::new(limits);
        for t in 0..1000u64 {
            let rss = if t == 137 { 1_000_000 } else { t };
            s.push(pt(t, rss));
        }
        assert!(s.recent_len() <= 11);
        assert!(s.history_len() <= 8);
        assert_eq!(s.total(), 1000);
        // The one-sample spike at t=137 survives any zoom level.
        let cols = s.columns(0, 1000, 3);
        assert_eq!(cols[0].max(Metric::Rss), Some(1_000_000));
        assert_eq!(cols[0].min(Metric::Rss), Some(0));
        // Newest points are exact.
        assert_eq!(s.at(999), Some(Reading::Exact(pt(999, 999))));
        assert!(matches!(s.at(137), Some(Reading::Range(_))));
        assert_eq!(s.at(137).unwrap().range(Metric::Rss).unwrap().1, 1_000_000);
        assert_eq!(s.first_t(), Some(0));
        assert_eq!(s.last_t(), Some(999));
    }

    #[test]
    fn columns_min_max_per_column() {
        let mut s = Series::new(Limits::unbounded());
        for t in 0..100u64 {
            s.push(pt(t, 1000 + (t % 10)));
        }
        let cols = s.columns(0, 100, 10);
        for c in &cols {
            assert_eq!(c.range(Metric::Rss), Some((1000, 1009)));
            assert_eq!(c.n, 10);
            assert_eq!(c.range(Metric::Anon), None);
        }
        assert!(s.at(5).is_some());
        assert_eq!(s.points_in(10, 19).count(), 10);
    }

    #[test]
    fn backwards_time_kept_sorted() {
        let mut s = Series::new(Limits::unbounded());
        s.push(pt(10, 1));
        s.push(pt(5, 2));
        assert_eq!(s.last().unwrap().t, 10);
        assert_eq!(s.points_in(0, 100).count(), 2);
    }
}
