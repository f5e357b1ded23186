//! The k-th smallest of a sequence too long to hold, from passes over it: the exact median
//! of a session's sampling gaps or idle readings in bounded memory.
//!
//! Contract: feed every value of the sequence ([`Nth::feed`]), then [`Nth::end_pass`]; when
//! it gives `None`, feed the same sequence again. The answer is the element that sorting the
//! sequence would put at `rank(len)` (len: the values of a pass). A pass keeps at most
//! [`KEEP`] distinct values (each with its count) and a histogram of [`BUCKETS`] counts: the
//! first pass keeps the values if they fit, else finds the bucket of the answer by magnitude
//! (a thousandth of it wide); each further pass keeps the values in that range if they fit,
//! else narrows it by 2^16, so a sequence of u64 takes at most five passes, one when it holds
//! at most [`KEEP`] distinct values (readings in pages, a steady sampling interval), and two
//! when the distinct values near the answer fit.

/// Most distinct values a pass keeps.
pub const KEEP: usize = 1 << 17;
/// Buckets of a narrowing pass.
pub const BUCKETS: usize = 1 << 16;

/// Which element of the sorted sequence is wanted, from its length.
pub type Rank = fn(u64) -> u64;

/// The median as the seed's summaries take it: the element at `len / 2`.
pub fn upper_median(len: u64) -> u64 {
    len / 2
}

/// A selection in progress.
#[derive(Debug, Clone)]
pub struct Nth {
    rank: Rank,
    /// Values in the sequence (known after the first pass).
    len: Option<u64>,
    /// Values of the range below it (its rank within the range is `k - below`).
    below: u64,
    /// The range the answer lies in, inclusive.
    lo: u64,
    hi: u64,
    /// This pass: values in the range.
    seen: u64,
    /// This pass's values in the range and how often each came (until there are too many).
    kept: std::collections::BTreeMap<u64, u64>,
    overflow: bool,
    min: u64,
    max: u64,
    hist: Vec<u64>,
    done: Option<Option<u64>>,
}

impl Nth {
    /// A selection of the element at `rank(len)`.
    pub fn new(rank: Rank) -> Nth {
        Nth {
            rank,
            len: None,
            below: 0,
            lo: 0,
            hi: u64::MAX,
            seen: 0,
            kept: Default::default(),
            overflow: false,
            min: u64::MAX,
            max: 0,
            // The first pass counts by magnitude (log buckets).
            hist: vec![0; BUCKETS],
            done: None,
        }
    }

    /// The answer, once a pass found it (`Some(None)`: an empty sequence).
    pub fn answer(&self) -> Option<Option<u64>> {
        self.done
    }

    fn width(&self) -> u64 {
        ((self.hi - self.lo) / BUCKETS as u64).saturating_add(1)
    }

    /// One value of this pass.
    pub fn feed(&mut self, v: u64) {
        if self.done.is_some() || v < self.lo || v > self.hi {
            return;
        }
        self.seen += 1;
        self.min = self.min.min(v);
        self.max = self.max.max(v);
        if !self.overflow {
            if self.kept.len() < KEEP || self.kept.contains_key(&v) {
                *self.kept.entry(v).or_insert(0) += 1;
            } else {
                self.overflow = true;
                self.kept = Default::default();
            }
        }
        let b = if self.len.is_none() {
            log_bucket(v)
        } else {
            ((v - self.lo) / self.width()) as usize
        };
        self.hist[b] += 1;
    }

    /// The end of a pass: the answer when it is known, else `None` (feed another pass).
    pub fn end_pass(&mut self) -> Option<Option<u64>> {
        if let Some(d) = self.done {
            return Some(d);
        }
        let first = self.len.is_none();
        let len = *self.len.get_or_insert(self.seen);
        if len == 0 {
            self.done = Some(None);
            return self.done;
        }
        let k = ((self.rank)(len).min(len - 1)).saturating_sub(self.below);
        if !self.overflow {
            let kept = std::mem::take(&mut self.kept);
            if kept.is_empty() {
                self.done = Some(None);
                return self.done;
            }
            // The value where the counts in order reach rank k (the last for a sequence that
            // changed between passes).
            let mut acc = 0u64;
            let mut v = 0;
            for (&x, &c) in &kept {
                v = x;
                acc += c;
                if acc > k {
                    break;
                }
            }
            self.done = Some(Some(v));
            return self.done;
        }
        if self.min == self.max {
            self.done = Some(Some(self.min));
            return self.done;
        }
        if first {
            // The log bucket holding the answer (a thousandth of its magnitude wide).
            let (b, acc) = holding(&self.hist, k);
            self.below += acc;
            let (lo, hi) = log_range(b);
            self.lo = lo.max(self.min);
            self.hi = hi.min(self.max);
            self.hist.iter_mut().for_each(|c| *c = 0);
        } else {
            let w = self.width();
            let (b, acc) = holding(&self.hist, k);
            self.below += acc;
            let lo = self.lo + b as u64 * w;
            self.hi = lo.saturating_add(w - 1).min(self.hi);
            self.lo = lo;
            if w == 1 {
                self.done = Some(Some(lo));
                return self.done;
            }
            self.hist.iter_mut().for_each(|c| *c = 0);
        }
        self.seen = 0;
        self.overflow = false;
        self.kept = Default::default();
        self.min = u64::MAX;
        self.max = 0;
        None
    }
}

/// The bucket of `hist` holding the element of rank `k`, and how many lie before it. (A
/// sequence that changed between passes ends in the last bucket.)
fn holding(hist: &[u64], k: u64) -> (usize, u64) {
    let mut acc = 0u64;
    let mut b = 0usize;
    while b + 1 < hist.len() && acc + hist[b] <= k {
        acc += hist[b];
        b += 1;
    }
    (b, acc)
}

/// Mantissa bits of a log bucket.
const MANT: u32 = 10;

/// The log bucket of `v`: values below 2^10 each their own, above them 2^10 buckets per power
/// of two (increasing with `v`; fewer than [`BUCKETS`] in all).
fn log_bucket(v: u64) -> usize {
    if v < 1 << MANT {
        return v as usize;
    }
    let e = 63 - v.leading_zeros();
    let m = (v >> (e - MANT)) & ((1 << MANT) - 1);
    ((1 + e - MANT) << MANT) as usize + m as usize
}

/// The values of log bucket `b`, inclusive.
fn log_range(b: usize) -> (u64, u64) {
    if b < 1 << MANT {
        return (b as u64, b as u64);
    }
    let e = (b >> MANT) as u32 - 1 + MANT;
    let m = (b & ((1 << MANT) - 1)) as u64;
    let lo = ((1u64 << MANT) + m) << (e - MANT);
    (lo, lo + ((1u64 << (e - MANT)) - 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn select(values: &[u64]) -> (Option<u64>, usize) {
        let mut n = Nth::new(upper_median);
        for pass in 1.. {
            values.iter().for_each(|&v| n.feed(v));
            if let Some(a) = n.end_pass() {
                return (a, pass);
            }
        }
        unreachable!()
    }

    fn sorted_median(values: &[u64]) -> Option<u64> {
        let mut v = values.to_vec();
        v.sort_unstable();
        v.get(v.len() / 2).copied()
    }

    #[test]
    fn log_buckets_cover_every_value_in_order() {
        for v in [
            0u64,
            1,
            1023,
            1024,
            1025,
            4095,
            4096,
            1 << 40,
            (1 << 40) + 12345,
            u64::MAX,
        ] {
            let b = log_bucket(v);
            assert!(b < BUCKETS, "{v}");
            let (lo, hi) = log_range(b);
            assert!(lo <= v && v <= hi, "{v} in bucket {b} [{lo}, {hi}]");
            if b + 1 < BUCKETS && hi < u64::MAX {
                assert_eq!(log_bucket(hi + 1), b + 1, "{v}");
            }
        }
    }

    #[test]
    fn a_short_sequence_is_answered_in_one_pass() {
        assert_eq!(select(&[]), (None, 1));
        assert_eq!(select(&[5, 1, 9]), (Some(5), 1));
    }

    #[test]
    fn a_long_sequence_is_answered_exactly_in_a_few_passes() {
        // Spread wide, and then clustered where the median falls (the narrowing's hard case).
        let mut rnd = provetop_testkit::xorshift::xorshift(0x9e37_79b9_7f4a_7c15);
        let mut wide = Vec::new();
        for i in 0..(KEEP as u64 * 2 + 7) {
            let x = rnd();
            wide.push(if i % 3 == 0 { 50_000_000 + x % 1000 } else { x });
        }
        let (got, passes) = select(&wide);
        assert_eq!(got, sorted_median(&wide));
        assert!(passes <= 5, "{passes} passes");
        // Readings of one magnitude, as RSS or sampling gaps are: two passes.
        let near: Vec<u64> = wide.iter().map(|x| (45 << 30) + x % (1 << 30)).collect();
        let (got, passes) = select(&near);
        assert_eq!(got, sorted_median(&near));
        assert_eq!(passes, 2);
        let same = vec![42u64; KEEP + 1];
        assert_eq!(select(&same), (Some(42), 1));
    }
}
