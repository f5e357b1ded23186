//! The k-th smallest of a sequence too long to hold, from passes over it: the exact median
//! of a session's sampling gaps or idle readings in bounded memory.
//!
//! Contract: feed every value of the sequence ([`Nth::feed`]), then [`Nth::end_pass`]; when
//! it gives `None`, feed the same sequence again. The answer is the element that sorting the
//! sequence would put at `rank(len)` (len: the values of a pass). A pass keeps at most
//! [`KEEP`] values and a histogram of [`BUCKETS`] counts: the first pass keeps the values if
//! they fit, else learns their range; each further pass narrows the range to the bucket
//! holding the answer (by 2^16 at least) until the values left fit, so a sequence of u64 takes
//! at most five passes, and one when it holds at most [`KEEP`] values.

/// Most values a pass keeps.
pub const KEEP: usize = 1 << 18;
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
    kept: Vec<u64>,
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
            kept: Vec::new(),
            overflow: false,
            min: u64::MAX,
            max: 0,
            hist: Vec::new(),
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
            if self.kept.len() < KEEP {
                self.kept.push(v);
            } else {
                self.overflow = true;
                self.kept = Vec::new();
            }
        }
        if !self.hist.is_empty() {
            let b = ((v - self.lo) / self.width()) as usize;
            self.hist[b] += 1;
        }
    }

    /// The end of a pass: the answer when it is known, else `None` (feed another pass).
    pub fn end_pass(&mut self) -> Option<Option<u64>> {
        if let Some(d) = self.done {
            return Some(d);
        }
        let len = *self.len.get_or_insert(self.seen);
        if len == 0 {
            self.done = Some(None);
            return self.done;
        }
        let k = ((self.rank)(len).min(len - 1)).saturating_sub(self.below);
        if !self.overflow {
            let mut kept = std::mem::take(&mut self.kept);
            if kept.is_empty() {
                self.done = Some(None);
                return self.done;
            }
            let i = (k as usize).min(kept.len() - 1);
            let v = *kept.select_nth_unstable(i).1;
            self.done = Some(Some(v));
            return self.done;
        }
        if self.min == self.max {
            self.done = Some(Some(self.min));
            return self.done;
        }
        if self.hist.is_empty() {
            // The first pass learned the range; the next one counts by bucket.
            self.lo = self.min;
            self.hi = self.max;
            self.hist = vec![0; BUCKETS];
        } else {
            let w = self.width();
            let mut acc = 0u64;
            let mut b = 0usize;
            // (A sequence that changed between passes ends in the last bucket.)
            while b + 1 < BUCKETS && acc + self.hist[b] <= k {
                acc += self.hist[b];
                b += 1;
            }
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
        self.kept = Vec::new();
        self.min = u64::MAX;
        self.max = 0;
        None
    }
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
    fn a_short_sequence_is_answered_in_one_pass() {
        assert_eq!(select(&[]), (None, 1));
        assert_eq!(select(&[5, 1, 9]), (Some(5), 1));
    }

    #[test]
    fn a_long_sequence_is_answered_exactly_in_a_few_passes() {
        // Spread wide, and then clustered where the median falls (the narrowing's hard case).
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut wide = Vec::new();
        for i in 0..(KEEP as u64 * 2 + 7) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            wide.push(if i % 3 == 0 { 50_000_000 + x % 1000 } else { x });
        }
        let (got, passes) = select(&wide);
        assert_eq!(got, sorted_median(&wide));
        assert!(passes <= 5, "{passes} passes");
        let same = vec![42u64; KEEP + 1];
        assert_eq!(select(&same), (Some(42), 1));
    }
}
