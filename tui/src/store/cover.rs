//! The time a set of intervals covers, as they come: merged where they overlap or touch, in
//! order (what `merged`, the tests' reference, makes of them all at once), the older ones
//! in a [`Spill`] so that a session of any length holds the same.
//!
//! Contract: after any sequence of [`Cover::add`], [`Cover::iter`] yields `merged` of every
//! interval added, and [`Cover::total_ns`] is the sum of their lengths. Intervals come nearly
//! in order (a phase's spans as they close), so the work is at the newest end: an interval
//! that reaches back past the ones kept in memory merges into the file's (rare, costs a pass
//! over the file's intervals after it).

use std::io;

use provetop_shared::spill::Spill;

/// Merged intervals kept in memory; past twice this many the older half go to the file.
const LIVE: usize = 256;

/// Intervals merged as they come.
#[derive(Debug, Default)]
pub struct Cover {
    /// The older merged intervals, in order, none touching another or any in `live`.
    done: Spill<(u64, u64)>,
    /// Their lengths, summed.
    done_ns: u64,
    /// The end of the last of them.
    done_end: Option<u64>,
    /// The newer ones, merged, in order.
    live: Vec<(u64, u64)>,
}

/// Add `(a, b)` to `v`, intervals sorted and merged where they overlap or touch, merging it
/// with those it meets. The work is almost always at the end.
fn cover(v: &mut Vec<(u64, u64)>, (a, b): (u64, u64)) {
    let i = v.partition_point(|x| x.0 <= a);
    let (mut lo, mut start, mut end) = (i, a, b);
    if i > 0 && a <= v[i - 1].1 {
        lo = i - 1;
        start = v[lo].0;
        end = end.max(v[lo].1);
    }
    let mut hi = i;
    while hi < v.len() && v[hi].0 <= end {
        end = end.max(v[hi].1);
        hi += 1;
    }
    v.splice(lo..hi, [(start, end)]);
}

impl Cover {
    /// Add an interval (one that ends before it starts, a clock's step, is its start).
    pub fn add(&mut self, (a, b): (u64, u64)) -> io::Result<()> {
        let b = b.max(a);
        if self.done_end.is_some_and(|e| a <= e) {
            return self.late(a, b);
        }
        cover(&mut self.live, (a, b));
        if self.live.len() >= 2 * LIVE {
            for x in self.live.drain(..LIVE) {
                self.done_ns += x.1 - x.0;
                self.done.push(x);
            }
            self.done_end = self.done.last()?.map(|x| x.1);
        }
        Ok(())
    }

    /// `(a, b)` meets or comes before the file's last interval: those it meets (a run, as
    /// they are sorted and apart) become one with it.
    fn late(&mut self, a: u64, b: u64) -> io::Result<()> {
        let n = self.done.len();
        let k = self.done.first_where(|x| x.1 >= a)?;
        let j = self.done.first_where(|x| x.0 > b)?;
        let (mut start, mut end, mut gone) = (a, b, 0u64);
        if k < j {
            start = start.min(self.done.get(k)?.0);
            end = end.max(self.done.get(j - 1)?.1);
            self.done.each_in(k, j, &mut |_, x| gone += x.1 - x.0)?;
        }
        self.done_ns -= gone;
        if j == n {
            // It may meet the newer ones too: it joins them.
            self.done.truncate(k)?;
            self.done_end = self.done.last()?.map(|x| x.1);
            cover(&mut self.live, (start, end));
        } else {
            self.done.replace(k, j, (start, end))?;
            self.done_ns += end - start;
        }
        Ok(())
    }

    /// The covered time, ns.
    pub fn total_ns(&self) -> u64 {
        self.done_ns + self.live.iter().map(|x| x.1 - x.0).sum::<u64>()
    }

    /// The merged intervals, in order.
    pub fn iter(&self) -> impl Iterator<Item = io::Result<(u64, u64)>> + '_ {
        self.done.iter().chain(self.live.iter().map(|&x| Ok(x)))
    }
}

/// Intervals merged where they overlap or touch, sorted, all at once: what a [`Cover`] must
/// give (the tests' reference).
#[cfg(test)]
pub(crate) fn merged(mut v: Vec<(u64, u64)>) -> Vec<(u64, u64)> {
    v.sort_unstable();
    let mut out: Vec<(u64, u64)> = Vec::with_capacity(v.len());
    for (a, b) in v {
        match out.last_mut() {
            Some(last) if a <= last.1 => last.1 = last.1.max(b),
            _ => out.push((a, b)),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn intervals_merge_where_they_overlap() {
        assert_eq!(
            merged(vec![(3, 8), (0, 5), (10, 12)]),
            vec![(0, 8), (10, 12)]
        );
    }

    fn all(c: &Cover) -> Vec<(u64, u64)> {
        c.iter().map(Result::unwrap).collect()
    }

    #[test]
    fn intervals_merge_as_they_come_and_their_covered_time_sums() {
        let mut c = Cover::default();
        for iv in [(10, 20), (30, 40), (15, 30), (50, 50), (0, 5), (5, 6)] {
            c.add(iv).unwrap();
        }
        assert_eq!(all(&c), [(0, 6), (10, 40), (50, 50)]);
        assert_eq!(c.total_ns(), 36);
    }

    proptest! {
        #[test]
        fn a_few_intervals_covered_one_by_one_are_the_merge_of_them_all(
            v in proptest::collection::vec((0u64..1000, 0u64..200), 0..60)
        ) {
            let v: Vec<(u64, u64)> = v.into_iter().map(|(a, d)| (a, a + d)).collect();
            let mut c = Vec::new();
            for &x in &v {
                cover(&mut c, x);
            }
            prop_assert_eq!(c, merged(v));
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]
        /// Thousands of intervals nearly in order, some reaching far back (over the file's),
        /// one now and then over everything.
        #[test]
        fn a_long_cover_is_the_merge_of_its_intervals(
            seed in any::<u64>(),
            n in 2_000usize..6_000,
            back_every in 50usize..400,
        ) {
            let mut rnd = provetop_testkit::xorshift::xorshift(seed);
            let (mut c, mut v, mut spilled) = (Cover::default(), Vec::new(), 0);
            for i in 0..n {
                let t = i as u64 * 100;
                let (a, len) = if i % back_every == 0 {
                    (t.saturating_sub(rnd() % (t + 1)), rnd() % 5_000)
                } else if i == n / 2 {
                    (0, t)
                } else {
                    (t + rnd() % 60, rnd() % 70)
                };
                c.add((a, a + len)).unwrap();
                v.push((a, a + len));
                spilled = spilled.max(c.done.on_disk());
            }
            let want = merged(v);
            prop_assert!(spilled > 0, "some intervals went to the file");
            prop_assert_eq!(c.total_ns(), want.iter().map(|x| x.1 - x.0).sum::<u64>());
            prop_assert_eq!(all(&c), want);
        }
    }
}
