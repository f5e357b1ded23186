//! The alert marks on replay's position bar: the alert times thinned so that a session of
//! any length keeps at most `2 × BUCKETS` of them, while every column of a bar up to
//! `BUCKETS / 2` columns wide that holds an alert still holds a mark (`a`/`A` read the
//! times themselves, from the indexer's spill).
//!
//! How: the times (ascending) fall in buckets of one width from the first; each bucket keeps
//! its first and last time. When more than `2 × BUCKETS` are kept, the width doubles and the
//! kept times are thinned again. A bar column is at least as wide as a bucket (see
//! [`Marks::push`]), so a bucket spans at most two columns, and its first and last times
//! mark each column it holds an alert in.

/// Buckets the kept times fill before their width doubles.
const BUCKETS: usize = 4096;

/// Alert times, thinned for the position bar.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Marks {
    /// The first time pushed: buckets count from it.
    origin: u64,
    /// Bucket width, ns (1: every time kept).
    width: u64,
    /// The times kept, ascending: at most the first and the last of each bucket.
    kept: Vec<u64>,
}

/// Add time `t` (at or after the last) to `kept`, the first and last of each bucket of
/// `width` from `origin`: where the last two are in its bucket, it replaces the last.
fn keep(kept: &mut Vec<u64>, t: u64, origin: u64, width: u64) {
    let bucket = |x: u64| (x - origin) / width;
    match kept[..] {
        [.., a, b] if bucket(a) == bucket(t) && bucket(b) == bucket(t) => {
            *kept.last_mut().expect("two kept") = t
        }
        _ => kept.push(t),
    }
}

impl Marks {
    /// Marks of these ascending times.
    pub fn of(times: &[u64]) -> Marks {
        let mut m = Marks::default();
        times.iter().for_each(|&t| m.push(t));
        m
    }

    /// The next alert time (none before the last one pushed). The width doubles only once
    /// more than `BUCKETS` buckets hold times, so it stays under twice the times' span over
    /// `BUCKETS - 1`: under the width of a column of any bar up to `BUCKETS / 2` columns
    /// over the session (whose length is at least that span).
    pub fn push(&mut self, t: u64) {
        if self.kept.is_empty() {
            (self.origin, self.width) = (t, 1);
        }
        let t = t.max(self.kept.last().copied().unwrap_or(t));
        keep(&mut self.kept, t, self.origin, self.width);
        while self.kept.len() > 2 * BUCKETS {
            self.width = self.width.saturating_mul(2);
            let mut out: Vec<u64> = Vec::with_capacity(BUCKETS * 2);
            for &x in &self.kept {
                keep(&mut out, x, self.origin, self.width);
            }
            self.kept = out;
        }
    }

    /// The times kept, ascending.
    pub fn times(&self) -> &[u64] {
        &self.kept
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    /// The columns a bar of `w` columns over `start..start + len` marks (the position bar's
    /// arithmetic).
    fn columns(times: &[u64], start: u64, len: u64, w: usize) -> BTreeSet<usize> {
        times
            .iter()
            .map(|&x| {
                let c = (x.saturating_sub(start) as u128 * (w as u128 - 1) / len as u128) as usize;
                c.min(w - 1)
            })
            .collect()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(32))]
        /// Tens of thousands of alerts, bunched or spread, on bars of any width up to
        /// `BUCKETS / 2` columns: the thinned marks fill exactly the columns every alert
        /// fills, and never more than `2 × BUCKETS` are kept.
        #[test]
        fn thinned_marks_fill_the_columns_every_alert_fills(
            seed in any::<u64>(),
            n in prop_oneof![1usize..50, 50usize..40_000],
            widths in prop::collection::vec(4usize..=BUCKETS / 2, 1..6),
            before in 0u64..1_000_000,
            after in 0u64..1_000_000_000,
        ) {
            let mut rnd = provetop_testkit::xorshift::xorshift(seed);
            let start = 1_000_000_000u64;
            let mut t = start + before;
            let times: Vec<u64> = (0..n)
                .map(|_| {
                    // Bursts of alerts, and quiet hours between them.
                    t += if rnd() % 50 == 0 { rnd() % 10_000_000_000 } else { rnd() % 2_000_000 };
                    t
                })
                .collect();
            let m = Marks::of(&times);
            prop_assert!(m.times().len() <= 2 * BUCKETS);
            prop_assert!(m.times().iter().all(|t| times.binary_search(t).is_ok()));
            let len = times[times.len() - 1] - start + after;
            for w in widths {
                prop_assert_eq!(
                    columns(m.times(), start, len.max(1), w),
                    columns(&times, start, len.max(1), w),
                    "{} columns", w
                );
            }
        }
    }

    #[test]
    fn a_few_alerts_are_kept_as_they_are() {
        let m = Marks::of(&[5, 9, 9, 30]);
        assert_eq!(m.times(), &[5, 9, 9, 30]);
    }
}
