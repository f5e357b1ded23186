//! What provetop's NVML calls cost, and backing off when they slow down.
//!
//! NVML serialises its callers on a driver lock the watched program's own NVML and CUDA
//! calls also take: a call that slows down is the sign the lock is contended, and every call
//! provetop makes then costs the prover time. So every call is timed ([`CallClock`]: a
//! histogram per call kind, published in the usage records, exported on `/metrics` and in the
//! session's closing note), and the GPU thread reads less often while calls are slow
//! ([`Backoff`]): a round whose calls took over [`SLOW_ROUND_SHARE`] of its period, or one
//! call over [`SLOW_CALL`], doubles the interval (up to [`MAX_BACKOFF`] times), and
//! [`CALM_ROUNDS`] fast rounds in a row halve it again; each change is said once.

use std::time::{Duration, Instant};

use provetop_shared::NvmlCalls;

/// One call this slow is a sign of contention.
pub const SLOW_CALL: Duration = Duration::from_millis(20);
/// A round whose calls took this share of its period is too costly.
pub const SLOW_ROUND_SHARE: f64 = 0.05;
/// The most the interval is stretched.
pub const MAX_BACKOFF: u32 = 8;
/// Fast rounds in a row before the interval is halved again.
pub const CALM_ROUNDS: u32 = 10;

/// Every NVML call kind's times, and the current round's.
#[derive(Debug, Default)]
pub struct CallClock {
    calls: Vec<NvmlCalls>,
    round_ns: u64,
    round_max_ns: u64,
}

impl CallClock {
    /// Time `f`, an NVML call named `call`.
    pub fn time<T>(&mut self, call: &'static str, f: impl FnOnce() -> T) -> T {
        let t0 = Instant::now();
        let v = f();
        self.record(call, t0.elapsed());
        v
    }

    /// Count one call of `call` that took `took`.
    pub fn record(&mut self, call: &'static str, took: Duration) {
        let ns = u64::try_from(took.as_nanos()).unwrap_or(u64::MAX);
        let i = match self.calls.iter().position(|c| c.call == call) {
            Some(i) => i,
            None => {
                self.calls.push(NvmlCalls::new(call));
                self.calls.len() - 1
            }
        };
        self.calls[i].observe(ns);
        self.round_ns = self.round_ns.saturating_add(ns);
        self.round_max_ns = self.round_max_ns.max(ns);
    }

    /// The calls of the round since the last take: (all their time, the slowest one).
    pub fn take_round(&mut self) -> (Duration, Duration) {
        let r = (
            Duration::from_nanos(self.round_ns),
            Duration::from_nanos(self.round_max_ns),
        );
        self.round_ns = 0;
        self.round_max_ns = 0;
        r
    }

    /// Every kind so far.
    pub fn snapshot(&self) -> Vec<NvmlCalls> {
        self.calls.clone()
    }
}

/// How much the GPU thread stretches its interval now.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Backoff {
    factor: u32,
    calm: u32,
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff { factor: 1, calm: 0 }
    }
}

impl Backoff {
    /// The interval is `factor` times the asked one.
    pub fn factor(&self) -> u32 {
        self.factor
    }

    /// A round (of the asked `period` times the factor now) whose calls took `spent`, the
    /// slowest `slowest`: what to say when the factor changes.
    pub fn after_round(
        &mut self,
        period: Duration,
        spent: Duration,
        slowest: Duration,
    ) -> Option<String> {
        let round = (period * self.factor).as_secs_f64();
        let slow = slowest > SLOW_CALL || spent.as_secs_f64() > SLOW_ROUND_SHARE * round;
        let every = |f: u32| format!("{:.3} s", (period * f).as_secs_f64());
        if slow {
            self.calm = 0;
            if self.factor >= MAX_BACKOFF {
                return None;
            }
            self.factor *= 2;
            return Some(format!(
                "NVML calls are slow (a round's took {:.1} ms, the slowest {:.1} ms: the driver's lock is contended): GPU readings every {} instead of {}",
                spent.as_secs_f64() * 1e3,
                slowest.as_secs_f64() * 1e3,
                every(self.factor),
                every(1)
            ));
        }
        if self.factor == 1 {
            return None;
        }
        self.calm += 1;
        if self.calm < CALM_ROUNDS {
            return None;
        }
        self.calm = 0;
        self.factor /= 2;
        Some(if self.factor == 1 {
            format!("NVML calls are fast again: GPU readings every {}", every(1))
        } else {
            format!(
                "NVML calls are faster: GPU readings every {} (asked: {})",
                every(self.factor),
                every(1)
            )
        })
    }
}

/// The session's closing line on NVML: per call kind, how many, the mean and the longest;
/// `None` without a call.
pub fn report(calls: &[NvmlCalls], backoff: Option<u32>) -> Option<String> {
    if calls.is_empty() {
        return None;
    }
    let ms = |ns: u64| ns as f64 / 1e6;
    let parts: Vec<String> = calls
        .iter()
        .map(|c| {
            format!(
                "{} {} × {:.3} ms (max {:.3} ms)",
                c.call,
                c.count,
                ms(c.mean_ns().unwrap_or(0)),
                ms(c.max_ns)
            )
        })
        .collect();
    let total: u64 = calls.iter().map(|c| c.sum_ns).sum();
    let mut line = format!(
        "NVML calls: {:.1} ms in all; {}",
        ms(total),
        parts.join(", ")
    );
    if let Some(f) = backoff {
        line.push_str(&format!(
            "; reading {f}× slower than asked at the end (calls slowed)"
        ));
    }
    Some(line)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slow_rounds_stretch_the_interval_and_calm_ones_shrink_it_each_change_said_once() {
        let period = Duration::from_millis(500);
        let fast = Duration::from_micros(300);
        let mut b = Backoff::default();
        assert_eq!(b.after_round(period, fast, fast), None);
        let said = b
            .after_round(period, Duration::from_millis(40), Duration::from_millis(30))
            .unwrap();
        assert!(
            said.contains("slow") && said.contains("every 1.000 s instead of 0.500 s"),
            "{said}"
        );
        for _ in 0..5 {
            b.after_round(period, Duration::from_millis(40), Duration::from_millis(30));
        }
        assert_eq!(b.factor(), MAX_BACKOFF, "held at the most");
        let mut notes = Vec::new();
        for _ in 0..(CALM_ROUNDS * 3) {
            notes.extend(b.after_round(period, fast, fast));
        }
        assert_eq!(b.factor(), 1);
        assert_eq!(notes.len(), 3, "{notes:?}");
        assert!(notes[2].contains("fast again"), "{notes:?}");
        // A slow round in a calm streak starts the streak over.
        b.after_round(period, period, fast);
        for _ in 0..CALM_ROUNDS - 1 {
            b.after_round(period, fast, fast);
        }
        b.after_round(period, period / 5, fast);
        assert_eq!(b.factor(), 4);
    }

    #[test]
    fn calls_are_counted_per_kind_into_buckets_and_a_round_is_its_sum_and_max() {
        let mut c = CallClock::default();
        c.record("GetMemoryInfo", Duration::from_micros(30));
        c.record("GetMemoryInfo", Duration::from_millis(3));
        c.record("GetComputeRunningProcesses", Duration::from_millis(4));
        let (spent, slowest) = c.take_round();
        assert_eq!(spent, Duration::from_micros(7030));
        assert_eq!(slowest, Duration::from_millis(4));
        assert_eq!(c.take_round(), (Duration::ZERO, Duration::ZERO));
        let s = c.snapshot();
        assert_eq!(s.len(), 2);
        assert_eq!((s[0].count, s[0].max_ns), (2, 3_000_000));
        assert_eq!(s[0].buckets.iter().sum::<u64>(), 2);
        // 30 µs lands in (10 µs, 50 µs]; 3 ms in (2.5 ms, 5 ms].
        assert_eq!(s[0].buckets[1], 1);
        assert_eq!(s[0].buckets[7], 1);
        let line = report(&c.snapshot(), Some(2)).unwrap();
        assert!(
            line.starts_with(
                "NVML calls: 7.0 ms in all; GetMemoryInfo 2 × 1.515 ms (max 3.000 ms)"
            ),
            "{line}"
        );
        assert!(
            line.ends_with("2× slower than asked at the end (calls slowed)"),
            "{line}"
        );
        assert_eq!(report(&[], None), None);
        let v = c.time("GetName", || 7);
        assert_eq!(v, 7);
        assert_eq!(c.snapshot()[2].count, 1);
    }
}
