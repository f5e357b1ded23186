//! Which moves of a cgroup's event counters become timeline marks.
//!
//! A kill counter's move (`oom`, `oom_kill`, `oom_group_kill`) is marked at once, each time.
//! The counters that move at every charge that meets a limit (`high`, `max`, v1's `failcnt`)
//! move by the thousand a second while a cgroup reclaims: one such counter is marked at its
//! first move, then at most once per [`BURST_MARK_EVERY`] with what it moved meanwhile, so a
//! squeeze of hours neither floods the timeline nor pushes the kills out of the bounded mark
//! list. Nothing is lost: each mark's delta counts every move since the counter's last mark.

use std::time::{Duration, Instant};

/// The least time between two marks of one charge counter.
pub const BURST_MARK_EVERY: Duration = Duration::from_secs(10);

/// The counters paced by [`BURST_MARK_EVERY`].
const CHARGE_COUNTERS: [&str; 3] = ["high", "max", "failcnt"];

/// A counter move to mark: (counter, delta since its last mark, total).
pub type Move = (&'static str, u64, u64);

/// The charge counters' moves not marked yet, and when each was last marked.
#[derive(Debug, Default)]
pub struct CounterMarks {
    paced: Vec<Paced>,
}

#[derive(Debug)]
struct Paced {
    counter: &'static str,
    marked: Instant,
    /// Moved since `marked` and not marked yet: (delta, the latest total).
    pending: Option<(u64, u64)>,
}

impl CounterMarks {
    /// The marks due at `now`, given the moves of one reading (`moves`, in the order read):
    /// kill counters and a charge counter's first move in a while at once; a charge counter's
    /// moves kept back within its pace and marked, summed, once its pace has passed (at this
    /// reading or a later one, moving or not).
    pub fn marks(&mut self, moves: Vec<Move>, now: Instant) -> Vec<Move> {
        let mut out = Vec::new();
        for (counter, delta, total) in moves {
            if !CHARGE_COUNTERS.contains(&counter) {
                out.push((counter, delta, total));
                continue;
            }
            match self.paced.iter_mut().find(|p| p.counter == counter) {
                Some(p) => {
                    let (d, _) = p.pending.unwrap_or((0, total));
                    p.pending = Some((d + delta, total));
                }
                None => {
                    self.paced.push(Paced {
                        counter,
                        marked: now,
                        pending: None,
                    });
                    out.push((counter, delta, total));
                }
            }
        }
        for p in &mut self.paced {
            if now.duration_since(p.marked) < BURST_MARK_EVERY {
                continue;
            }
            if let Some((delta, total)) = p.pending.take() {
                out.push((p.counter, delta, total));
                p.marked = now;
            }
        }
        // A counter quiet for a whole pace is marked at once when it moves again.
        self.paced
            .retain(|p| p.pending.is_some() || now.duration_since(p.marked) < BURST_MARK_EVERY);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kills_are_marked_at_every_move_and_charge_counters_at_most_once_per_pace_with_their_sum() {
        let t0 = Instant::now();
        let s = |n: u64| t0 + Duration::from_millis(500 * n);
        let mut c = CounterMarks::default();
        assert_eq!(c.marks(vec![("high", 5, 5)], s(0)), [("high", 5, 5)]);
        // Within the pace: kept back, summed; a kill goes through at once.
        assert_eq!(c.marks(vec![("high", 100, 105)], s(1)), []);
        assert_eq!(
            c.marks(vec![("high", 200, 305), ("oom_kill", 1, 1)], s(2)),
            [("oom_kill", 1, 1)]
        );
        assert_eq!(
            c.marks(vec![("oom_kill", 1, 2)], s(3)),
            [("oom_kill", 1, 2)]
        );
        // The pace passed with no new move: what was kept back is marked.
        assert_eq!(c.marks(vec![], s(20)), [("high", 300, 305)]);
        // Quiet for a whole pace after that: the next move is marked at once.
        assert_eq!(c.marks(vec![], s(41)), []);
        assert_eq!(c.marks(vec![("high", 1, 306)], s(42)), [("high", 1, 306)]);
        // Each charge counter has its own pace.
        assert_eq!(c.marks(vec![("max", 2, 2)], s(43)), [("max", 2, 2)]);
    }

    #[test]
    fn a_squeeze_of_an_hour_at_two_readings_a_second_makes_a_mark_every_pace_and_loses_no_count() {
        let t0 = Instant::now();
        let mut c = CounterMarks::default();
        let (mut marks, mut sum) = (0, 0);
        for n in 0..7200u64 {
            let at = t0 + Duration::from_millis(500 * n);
            for (_, d, total) in c.marks(vec![("high", 3, 3 * (n + 1))], at) {
                marks += 1;
                sum += d;
                assert_eq!(total, 3 * (n + 1));
            }
        }
        // The first move, then one each pace over the hour's remaining 3,599.5 s.
        assert_eq!(marks, 1 + 3599 / BURST_MARK_EVERY.as_secs());
        // All but what moved after the last mark.
        assert!(3 * 7200 - sum < 3 * 20, "{sum}");
    }
}
