//! Running statistics of one quantity, and the union length of time intervals.

/// Running min/max/mean of one quantity.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Stats {
    /// Readings.
    pub n: u64,
    pub min: u64,
    pub max: u64,
    /// Sum, for the mean.
    pub sum: u128,
}

impl Stats {
    /// Add a reading.
    pub fn add(&mut self, x: u64) {
        if self.n == 0 {
            self.min = x;
            self.max = x;
        } else {
            self.min = self.min.min(x);
            self.max = self.max.max(x);
        }
        self.n += 1;
        self.sum += x as u128;
    }

    /// Fold another set of readings in.
    pub fn merge(&mut self, s: &Stats) {
        if s.n == 0 {
            return;
        }
        if self.n == 0 {
            *self = *s;
            return;
        }
        self.min = self.min.min(s.min);
        self.max = self.max.max(s.max);
        self.n += s.n;
        self.sum += s.sum;
    }

    /// Mean, if any reading.
    pub fn mean(&self) -> Option<u64> {
        (self.n > 0).then(|| (self.sum / self.n as u128) as u64)
    }

    /// Minimum, if any reading.
    pub fn min(&self) -> Option<u64> {
        (self.n > 0).then_some(self.min)
    }

    /// Maximum, if any reading.
    pub fn max(&self) -> Option<u64> {
        (self.n > 0).then_some(self.max)
    }
}

/// Total length of the union of `[a, b]` intervals: overlapping ones count once.
pub fn busy_ns(intervals: &[(u64, u64)]) -> u64 {
    let mut v = intervals.to_vec();
    v.sort_unstable();
    let (mut busy, mut reach) = (0u64, 0u64);
    for (a, b) in v {
        let from = a.max(reach);
        if b > from {
            busy += b - from;
        }
        reach = reach.max(b);
    }
    busy
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlapping_intervals_count_once() {
        assert_eq!(busy_ns(&[]), 0);
        assert_eq!(busy_ns(&[(0, 10), (5, 15), (20, 25)]), 20);
        assert_eq!(busy_ns(&[(20, 25), (0, 10), (2, 3)]), 15);
    }

    #[test]
    fn merged_stats_are_the_stats_of_all_readings() {
        let (mut a, mut b, mut all) = (Stats::default(), Stats::default(), Stats::default());
        for x in [5, 1, 9] {
            a.add(x);
            all.add(x);
        }
        for x in [12, 0] {
            b.add(x);
            all.add(x);
        }
        a.merge(&b);
        assert_eq!(a, all);
        a.merge(&Stats::default());
        assert_eq!(a, all);
        assert_eq!(Stats::default().max(), None);
    }
}
