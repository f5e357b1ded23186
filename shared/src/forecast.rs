//! The memory forecasts: `predicted_free` (will the proof now running fit?) and
//! `time_to_oom` (at this rate, when does memory run out?).
//!
//! A proof's peak is predicted from the proofs before it of the same shape (batch mode,
//! sectors, partitions, constraints): the highest peak RSS of the tree over the last
//! [`KEPT`] that finished well. What it still needs is that peak minus the RSS now; what it can
//! get is the room before the limit that binds ([`crate::limit`]). `predicted_free` is the
//! difference: below zero, the proof is expected to run out of memory before it gets there.
//! The first proof of a shape has no forecast.
//!
//! The trend forecast works from the first proof and for any process (watched, foreign or the
//! bundled prover, protocol or not): the tree's RSS growth rate over the last seconds against
//! the same room. The rate is the smallest of three least-squares slopes, over the last
//! [`TREND_WINDOW_S`], [`TREND_SHORT_S`] and [`TREND_NOW_S`] seconds: growth must be
//! sustained to raise an alarm, and still going on: a rise that levels off (a synthesis that
//! fits) clears it within half a second. (With the two longer slopes alone, a prover whose
//! last allocation comes in under a second reads a steep rate for seconds after its RSS has
//! stopped: docs/measurements.md#time_to_oom-on-recorded-waves.) Growth under
//! [`TREND_MIN_RATE`] is no trend; `time_to_oom` is then not measured
//! (an alert on it clears).

use std::collections::{BTreeMap, HashMap, VecDeque};

use crate::limit::{self, Room};
use crate::protocol::{BatchMode, Event};
use crate::units::fmt_bytes;
use crate::{Binding, Mark, Record, RecordBody, Sample};

/// Finished proofs kept per shape.
pub const KEPT: usize = 3;
/// Seconds of RSS history the trend's long slope reads.
pub const TREND_WINDOW_S: f64 = 10.0;
/// Seconds of RSS history the trend's short slope reads.
pub const TREND_SHORT_S: f64 = 3.0;
/// Seconds of RSS history the trend's newest slope reads (at 2 Hz or slower: the last two
/// samples).
pub const TREND_NOW_S: f64 = 0.5;
/// Growth slower than this (bytes per second) is no trend.
pub const TREND_MIN_RATE: f64 = 1024.0 * 1024.0;
/// The header shows `time_to_oom` in red under this many seconds: short enough not to flag
/// the climbs of a wave that fits (a minute would), long enough to warn seconds before a
/// wave that does not fit runs out (the recorded waves:
/// docs/measurements.md#time_to_oom-on-recorded-waves).
pub const DEFAULT_OOM_HORIZON_S: f64 = 20.0;
/// The trend keeps at most one point per this many ns (20 Hz).
const TREND_STEP_NS: u64 = 50_000_000;

/// What makes two proofs comparable in memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Shape {
    mode: BatchMode,
    sectors: u32,
    partitions: u32,
    constraints: u64,
}

/// A proof in flight: its shape and the tree's peak RSS since it started.
#[derive(Debug, Clone)]
struct InFlight {
    shape: Shape,
    peak: u64,
}

/// Peaks of finished proofs per shape, the proofs in flight, and the RSS trend.
#[derive(Debug, Clone, Default)]
pub struct Forecast {
    inflight: BTreeMap<u64, InFlight>,
    history: HashMap<Shape, VecDeque<u64>>,
    trend: Trend,
    /// The binding limit the latest kernel record names, for the texts.
    binding: Option<Binding>,
}

/// The tree's RSS over the last [`TREND_WINDOW_S`] seconds, for `time_to_oom`.
#[derive(Debug, Clone, Default)]
pub struct Trend {
    /// (t ns, rss bytes), oldest first, at most one per [`TREND_STEP_NS`].
    points: VecDeque<(u64, u64)>,
}

impl Trend {
    /// Add the sample taken at `t`.
    pub fn push(&mut self, t: u64, rss: u64) {
        if let Some(&(last, _)) = self.points.back() {
            if t < last {
                // Time went back (another stream): start again.
                self.points.clear();
            } else if t - last < TREND_STEP_NS {
                return;
            }
        }
        self.points.push_back((t, rss));
        let keep = (TREND_WINDOW_S * 1e9) as u64;
        while self
            .points
            .front()
            .is_some_and(|&(f, _)| t.saturating_sub(f) > keep)
        {
            self.points.pop_front();
        }
    }

    /// Forget the history (a new child).
    pub fn clear(&mut self) {
        self.points.clear();
    }

    /// The growth rate now, bytes per second ([`growth_rate`]).
    pub fn rate(&self) -> Option<f64> {
        let (a, b) = self.points.as_slices();
        growth_rate(a.iter().chain(b).copied())
    }

    /// `time_to_oom` at sample `s` (seconds, with what it rests on): see [`time_to_oom`].
    pub fn time_to_oom(&self, s: &Sample, named: Option<&Binding>) -> Option<(f64, String)> {
        time_to_oom(self.rate()?, s, named)
    }
}

/// The RSS growth rate of `points` ((t ns, rss bytes), oldest first), bytes per second: the
/// smallest of the least-squares slopes over the last [`TREND_WINDOW_S`], [`TREND_SHORT_S`]
/// and [`TREND_NOW_S`] seconds. `None` with less than the short window's span of history.
pub fn growth_rate(points: impl Iterator<Item = (u64, u64)> + Clone) -> Option<f64> {
    // The newest point and the one before it (the newest slope's span at low rates).
    let (before, last) = points
        .clone()
        .fold((None, None), |(_, newest), (t, _)| (newest, Some(t)));
    let last = last?;
    let first = points.clone().next()?.0;
    let short_ns = (TREND_SHORT_S * 1e9) as u64;
    // Sampled at 1 Hz a 3 s window holds 3 or 4 points: allow one step of slack.
    if last.saturating_sub(first) + TREND_STEP_NS < short_ns {
        return None;
    }
    let long = slope(points.clone(), last, (TREND_WINDOW_S * 1e9) as u64)?;
    let short = slope(points.clone(), last, short_ns)?;
    // At 2 Hz or slower, the newest slope is that of the last two samples.
    let now_ns = ((TREND_NOW_S * 1e9) as u64).max(last - before.unwrap_or(last)) + TREND_STEP_NS;
    let now = slope(points, last, now_ns)?;
    Some(long.min(short).min(now))
}

/// Least-squares slope (bytes/s) of the points within `span` ns of `last`.
fn slope(points: impl Iterator<Item = (u64, u64)>, last: u64, span: u64) -> Option<f64> {
    let (mut n, mut sx, mut sy, mut sxx, mut sxy) = (0f64, 0f64, 0f64, 0f64, 0f64);
    for (t, y) in points.filter(|&(t, _)| last.saturating_sub(t) <= span) {
        // Seconds before the last point: small numbers, no loss of precision.
        let x = -((last - t) as f64 / 1e9);
        let y = y as f64;
        n += 1.0;
        sx += x;
        sy += y;
        sxx += x * x;
        sxy += x * y;
    }
    let den = n * sxx - sx * sx;
    (n >= 2.0 && den > 0.0).then(|| (n * sxy - sx * sy) / den)
}

/// Seconds until memory runs out at `rate` bytes/s from sample `s`: the room before the limit
/// that binds ([`limit::room`]; `named`: the latest kernel record's name for it) over the
/// rate; with what it rests on. `None` when the tree is not growing ([`TREND_MIN_RATE`]) or
/// the sample has no memory readings.
pub fn time_to_oom(rate: f64, s: &Sample, named: Option<&Binding>) -> Option<(f64, String)> {
    // NaN is no trend either.
    if rate.is_nan() || rate < TREND_MIN_RATE {
        return None;
    }
    let Room { bytes, bound } = limit::room(s)?;
    let secs = bytes as f64 / rate;
    let what = format!(
        "RSS growing {}/s, {} left before {}",
        fmt_bytes(rate as u64),
        fmt_bytes(bytes),
        limit::name(bound, named)
    );
    Some((secs, what))
}

impl Forecast {
    /// Follow one record of the stream (the alert engine and the screen's model both do).
    pub fn observe(&mut self, rec: &Record) {
        match &rec.body {
            RecordBody::Sample(s) => self.sample_at(rec.t, s),
            RecordBody::Event(e) => self.event(e),
            RecordBody::Mark(Mark::ChildExited { .. } | Mark::ChildStarted { .. }) => self.reset(),
            RecordBody::Kernel(k) => self.binding = k.binding.clone(),
            _ => {}
        }
    }

    /// Follow the prover's events.
    pub fn event(&mut self, e: &Event) {
        match e {
            Event::ProofStarted {
                proof_id,
                mode,
                sectors,
                partitions,
                constraints,
            } => {
                let shape = Shape {
                    mode: *mode,
                    sectors: *sectors,
                    partitions: *partitions,
                    constraints: *constraints,
                };
                self.inflight.insert(*proof_id, InFlight { shape, peak: 0 });
            }
            Event::ProofFinished { proof_id, ok, .. } => {
                if let Some(p) = self.inflight.remove(proof_id) {
                    if *ok && p.peak > 0 {
                        let h = self.history.entry(p.shape).or_default();
                        h.push_back(p.peak);
                        if h.len() > KEPT {
                            h.pop_front();
                        }
                    }
                }
            }
            Event::Bye { .. } => self.inflight.clear(),
            _ => {}
        }
    }

    /// The child ended or a new one started: nothing is in flight (what was learnt stays),
    /// and the trend starts again.
    pub fn reset(&mut self) {
        self.inflight.clear();
        self.trend.clear();
    }

    /// Follow the tree's memory at time `t` (the trend needs the sample's time).
    pub fn sample_at(&mut self, t: u64, s: &Sample) {
        self.trend.push(t, s.rss);
        self.sample(s);
    }

    /// `time_to_oom` at this sample, seconds (with what it rests on); `None` while the tree's
    /// RSS is not growing, before [`TREND_SHORT_S`] seconds of samples, or without
    /// MemAvailable.
    pub fn time_to_oom(&self, s: &Sample) -> Option<(f64, String)> {
        self.trend.time_to_oom(s, self.binding.as_ref())
    }

    /// The binding limit the latest kernel record named.
    pub fn binding(&self) -> Option<&Binding> {
        self.binding.as_ref()
    }

    /// Follow the tree's memory: every proof in flight sees the tree's peak (overlapping
    /// proofs share it, as the screen's per-proof peaks do).
    pub fn sample(&mut self, s: &Sample) {
        let now = s.peak.unwrap_or(0).max(s.rss);
        for p in self.inflight.values_mut() {
            p.peak = p.peak.max(now);
        }
    }

    /// `predicted_free` at this sample, bytes (negative: short by that much), with what it
    /// rests on; `None` without a proof in flight whose shape has finished before, or without
    /// MemAvailable.
    pub fn predicted_free(&self, s: &Sample) -> Option<(f64, String)> {
        let (id, mode, peak) = self
            .inflight
            .iter()
            .filter_map(|(id, p)| {
                let h = self.history.get(&p.shape)?;
                Some((*id, p.shape.mode, *h.iter().max()?))
            })
            .max_by_key(|(_, _, peak)| *peak)?;
        let Room { bytes: room, bound } = limit::room(s)?;
        let need = peak.saturating_sub(s.rss);
        let free = room as f64 - need as f64;
        let what = format!(
            "proof {id} predicted to peak at {} like the last {mode} proofs; needs {} more, {} free before {}",
            fmt_bytes(peak),
            fmt_bytes(need),
            fmt_bytes(room),
            limit::name(bound, self.binding.as_ref())
        );
        Some((free, what))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GIB: f64 = (1u64 << 30) as f64;

    /// (t ns, rss) at `hz` over `secs`: flat at 10 GiB, then 13 GiB/s for 0.8 s from 5 s,
    /// then flat (a large prover's last allocation).
    fn step_wave(hz: f64, secs: f64) -> Vec<(u64, u64)> {
        let n = (secs * hz) as u64;
        (0..=n)
            .map(|i| {
                let t = i as f64 / hz;
                let rise = (t - 5.0).clamp(0.0, 0.8) * 13.0 * GIB;
                ((t * 1e9) as u64, (10.0 * GIB + rise) as u64)
            })
            .collect()
    }

    #[test]
    fn a_rise_that_stops_is_no_trend_half_a_second_later_though_the_longer_slopes_still_climb() {
        let w = step_wave(20.0, 7.0);
        let upto = |t: f64| w.iter().copied().filter(move |p| p.0 <= (t * 1e9) as u64);
        let rising = growth_rate(upto(5.7)).unwrap();
        assert!(rising > TREND_MIN_RATE, "{rising}: still rising");
        let stopped = growth_rate(upto(5.8 + TREND_NOW_S + 0.1)).unwrap();
        assert!(stopped < TREND_MIN_RATE, "{stopped}: stopped");
        let short = slope(upto(6.4), (6.4 * 1e9) as u64, (TREND_SHORT_S * 1e9) as u64).unwrap();
        assert!(short > GIB, "the 3 s slope alone would still read {short}");
    }

    #[test]
    fn sampled_at_one_hertz_the_newest_slope_is_the_last_two_samples() {
        let w = step_wave(1.0, 9.0);
        let upto = |t: u64| w.iter().copied().filter(move |p| p.0 <= t * 1_000_000_000);
        assert!(
            growth_rate(upto(6)).unwrap() > TREND_MIN_RATE,
            "rising from 5 to 6 s"
        );
        assert!(
            growth_rate(upto(7)).unwrap() < TREND_MIN_RATE,
            "flat from 6 to 7 s"
        );
    }
}
