//! The threshold phase classifier: what operators ran by hand with awk over a 1 Hz
//! `timestamp,rss_kb` CSV, made exact and incremental.
//!
//! Boundaries (GiB = KiB / 1048576), from the seed script: below `idle` → `idle_pre`;
//! above `peak` → `peak_synth`; above `synth` → `synth`; above `gpu` → `gpu_or_transition`;
//! else `idle_post`. Each contiguous run of one phase becomes one line,
//! `synth: samples=25, min=101.4 GiB, max=177.0 GiB`. Unlike the seed script, the first run's
//! minimum is the true minimum (the script started it at 0).

use std::fmt;

use crate::units::GIB;

/// Phase by RSS thresholds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ThresholdPhase {
    /// Below the idle threshold: before the SRS is loaded.
    IdlePre,
    /// SRS resident, nothing running.
    IdlePost,
    /// GPU proving or a transition.
    GpuOrTransition,
    /// Synthesis.
    Synth,
    /// The synthesis peak.
    PeakSynth,
}

impl ThresholdPhase {
    /// All phases, in the order summaries list them.
    pub const ALL: [ThresholdPhase; 5] = [
        ThresholdPhase::IdlePre,
        ThresholdPhase::IdlePost,
        ThresholdPhase::GpuOrTransition,
        ThresholdPhase::Synth,
        ThresholdPhase::PeakSynth,
    ];

    /// The seed's name.
    pub fn name(self) -> &'static str {
        match self {
            ThresholdPhase::IdlePre => "idle_pre",
            ThresholdPhase::IdlePost => "idle_post",
            ThresholdPhase::GpuOrTransition => "gpu_or_transition",
            ThresholdPhase::Synth => "synth",
            ThresholdPhase::PeakSynth => "peak_synth",
        }
    }
}

impl fmt::Display for ThresholdPhase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The four boundaries, in GiB, ascending: idle, gpu, synth, peak.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Thresholds {
    /// Below this: idle_pre.
    pub idle: f64,
    /// Above this: gpu_or_transition.
    pub gpu: f64,
    /// Above this: synth.
    pub synth: f64,
    /// Above this: peak_synth.
    pub peak: f64,
}

impl Default for Thresholds {
    /// The seed's 10/50/100/180 GiB.
    fn default() -> Self {
        Thresholds {
            idle: 10.0,
            gpu: 50.0,
            synth: 100.0,
            peak: 180.0,
        }
    }
}

impl std::str::FromStr for Thresholds {
    type Err = String;
    /// "10,50,100,180" (GiB, ascending).
    fn from_str(s: &str) -> Result<Self, String> {
        let v: Vec<f64> = s
            .split(',')
            .map(|x| {
                x.trim()
                    .parse::<f64>()
                    .map_err(|_| format!("bad threshold {x:?} in {s:?}: expected a number of GiB"))
            })
            .collect::<Result<_, _>>()?;
        if v.len() != 4 {
            return Err(format!(
                "thresholds {s:?}: expected 4 comma-separated GiB values (idle,gpu,synth,peak), got {}",
                v.len()
            ));
        }
        if !(v.iter().all(|x| x.is_finite() && *x >= 0.0)
            && v[0] <= v[1]
            && v[1] <= v[2]
            && v[2] <= v[3])
        {
            return Err(format!(
                "thresholds {s:?}: must be non-negative and ascending"
            ));
        }
        Ok(Thresholds {
            idle: v[0],
            gpu: v[1],
            synth: v[2],
            peak: v[3],
        })
    }
}

impl Thresholds {
    /// Classify one reading given in GiB, exactly as the seed script does.
    pub fn classify_gib(&self, gb: f64) -> ThresholdPhase {
        if gb < self.idle {
            ThresholdPhase::IdlePre
        } else if gb > self.peak {
            ThresholdPhase::PeakSynth
        } else if gb > self.synth {
            ThresholdPhase::Synth
        } else if gb > self.gpu {
            ThresholdPhase::GpuOrTransition
        } else {
            ThresholdPhase::IdlePost
        }
    }

    /// Classify bytes.
    pub fn classify(&self, bytes: u64) -> ThresholdPhase {
        self.classify_gib(bytes as f64 / GIB as f64)
    }

    /// The boundaries in bytes (for threshold lines on a chart).
    pub fn lines_bytes(&self) -> [u64; 4] {
        [self.idle, self.gpu, self.synth, self.peak].map(|g| (g * GIB as f64) as u64)
    }
}

/// One contiguous run of a phase.
#[derive(Debug, Clone, PartialEq)]
pub struct Run {
    pub phase: ThresholdPhase,
    /// Samples in the run.
    pub samples: u64,
    /// Minimum, GiB.
    pub min_gib: f64,
    /// Maximum, GiB.
    pub max_gib: f64,
    /// Time of the first sample (ns).
    pub start: u64,
    /// Time of the last sample (ns).
    pub end: u64,
}

impl fmt::Display for Run {
    /// The seed's line: `synth: samples=25, min=101.4 GiB, max=177.0 GiB`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: samples={}, min={:.1} GiB, max={:.1} GiB",
            self.phase, self.samples, self.min_gib, self.max_gib
        )
    }
}

/// Incremental run builder: push readings, get runs as they close.
#[derive(Debug, Clone)]
pub struct Classifier {
    thresholds: Thresholds,
    current: Option<Run>,
}

impl Classifier {
    /// New classifier.
    pub fn new(thresholds: Thresholds) -> Self {
        Classifier {
            thresholds,
            current: None,
        }
    }

    /// Thresholds in use.
    pub fn thresholds(&self) -> &Thresholds {
        &self.thresholds
    }

    /// Add a reading; returns the run it closed, if the phase changed.
    pub fn push(&mut self, t: u64, bytes: u64) -> Option<Run> {
        let gb = bytes as f64 / GIB as f64;
        let phase = self.thresholds.classify_gib(gb);
        match &mut self.current {
            Some(run) if run.phase == phase => {
                run.samples += 1;
                run.min_gib = run.min_gib.min(gb);
                run.max_gib = run.max_gib.max(gb);
                run.end = t;
                None
            }
            cur => cur.replace(Run {
                phase,
                samples: 1,
                min_gib: gb,
                max_gib: gb,
                start: t,
                end: t,
            }),
        }
    }

    /// The run in progress.
    pub fn current(&self) -> Option<&Run> {
        self.current.as_ref()
    }

    /// Close and return the run in progress.
    pub fn finish(&mut self) -> Option<Run> {
        self.current.take()
    }
}

/// Classify a whole series of `(t_ns, rss_bytes)` readings into runs.
pub fn classify_series(
    thresholds: Thresholds,
    series: impl IntoIterator<Item = (u64, u64)>,
) -> Vec<Run> {
    let mut c = Classifier::new(thresholds);
    let mut out: Vec<Run> = series
        .into_iter()
        .filter_map(|(t, b)| c.push(t, b))
        .collect();
    out.extend(c.finish());
    out
}

/// Totals over a classified series.
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    /// Readings.
    pub samples: u64,
    /// Proof cycles: rises above the synth boundary after being at or below the gpu boundary.
    pub cycles: u64,
    /// Seconds spent in each phase (a reading lasts until the next one; the last one lasts
    /// the median interval).
    pub time_in: Vec<(ThresholdPhase, f64)>,
    /// Peak reading, bytes, and its time (ns).
    pub peak: (u64, u64),
    /// Idle floor: median of idle_post readings, bytes (None without any).
    pub idle_floor: Option<u64>,
    /// Median sampling interval, seconds.
    pub interval_s: f64,
    /// Span of the series, seconds.
    pub span_s: f64,
}

/// Summarize a series of `(t_ns, rss_bytes)` readings (in time order).
pub fn summarize(thresholds: Thresholds, series: &[(u64, u64)]) -> Option<Summary> {
    let first = series.first()?;
    let mut gaps: Vec<u64> = series
        .windows(2)
        .map(|w| w[1].0.saturating_sub(w[0].0))
        .collect();
    gaps.sort_unstable();
    let median_gap = gaps.get(gaps.len() / 2).copied().unwrap_or(0);
    let mut time = [0f64; 5];
    let mut cycles = 0;
    let mut armed = true; // at or below the gpu boundary since the last cycle
    let mut peak = (first.1, first.0);
    let mut idle: Vec<u64> = Vec::new();
    for (i, &(t, b)) in series.iter().enumerate() {
        let phase = thresholds.classify(b);
        let dur = series
            .get(i + 1)
            .map(|n| n.0.saturating_sub(t))
            .unwrap_or(median_gap);
        let idx = ThresholdPhase::ALL
            .iter()
            .position(|p| *p == phase)
            .unwrap_or(0);
        time[idx] += dur as f64 / 1e9;
        match phase {
            ThresholdPhase::Synth | ThresholdPhase::PeakSynth => {
                if armed {
                    cycles += 1;
                    armed = false;
                }
            }
            ThresholdPhase::IdlePre | ThresholdPhase::IdlePost => armed = true,
            ThresholdPhase::GpuOrTransition => {}
        }
        if phase == ThresholdPhase::IdlePost {
            idle.push(b);
        }
        if b > peak.0 {
            peak = (b, t);
        }
    }
    idle.sort_unstable();
    // Times may go backwards (CSV rows out of order): the span is latest minus earliest.
    let lo = series.iter().map(|x| x.0).min().unwrap_or(first.0);
    let hi = series.iter().map(|x| x.0).max().unwrap_or(first.0);
    Some(Summary {
        samples: series.len() as u64,
        cycles,
        time_in: ThresholdPhase::ALL.iter().copied().zip(time).collect(),
        peak,
        idle_floor: idle.get(idle.len() / 2).copied(),
        interval_s: median_gap as f64 / 1e9,
        span_s: (hi - lo) as f64 / 1e9,
    })
}

/// [`summarize`] one reading at a time, in bounded memory: the medians it needs (the
/// sampling interval, the idle floor) come from [`Medians`], which may need the readings
/// more than once.
#[derive(Debug, Clone)]
pub struct Summarizer {
    thresholds: Thresholds,
    samples: u64,
    cycles: u64,
    armed: bool,
    time: [f64; 5],
    /// The previous reading's time and phase (its duration is known at the next one).
    prev: Option<(u64, usize)>,
    peak: Option<(u64, u64)>,
    lo: u64,
    hi: u64,
}

impl Summarizer {
    /// Nothing read yet.
    pub fn new(thresholds: Thresholds) -> Self {
        Summarizer {
            thresholds,
            samples: 0,
            cycles: 0,
            armed: true,
            time: [0.0; 5],
            prev: None,
            peak: None,
            lo: u64::MAX,
            hi: 0,
        }
    }

    /// The next reading, in series order.
    pub fn push(&mut self, t: u64, b: u64) {
        let phase = self.thresholds.classify(b);
        if let Some((pt, idx)) = self.prev {
            self.time[idx] += t.saturating_sub(pt) as f64 / 1e9;
        }
        let idx = ThresholdPhase::ALL
            .iter()
            .position(|p| *p == phase)
            .unwrap_or(0);
        match phase {
            ThresholdPhase::Synth | ThresholdPhase::PeakSynth => {
                if self.armed {
                    self.cycles += 1;
                    self.armed = false;
                }
            }
            ThresholdPhase::IdlePre | ThresholdPhase::IdlePost => self.armed = true,
            ThresholdPhase::GpuOrTransition => {}
        }
        match self.peak {
            Some((p, _)) if b <= p => {}
            _ => self.peak = Some((b, t)),
        }
        self.samples += 1;
        self.lo = self.lo.min(t);
        self.hi = self.hi.max(t);
        self.prev = Some((t, idx));
    }

    /// The summary, given the series' medians (what [`Medians`] found); None without a
    /// reading.
    pub fn finish(mut self, median_gap: u64, idle_floor: Option<u64>) -> Option<Summary> {
        let (_, idx) = self.prev?;
        self.time[idx] += median_gap as f64 / 1e9;
        Some(Summary {
            samples: self.samples,
            cycles: self.cycles,
            time_in: ThresholdPhase::ALL.iter().copied().zip(self.time).collect(),
            peak: self.peak.map_or((0, 0), |p| p),
            idle_floor,
            interval_s: median_gap as f64 / 1e9,
            span_s: (self.hi - self.lo) as f64 / 1e9,
        })
    }
}

/// The medians of a series that [`summarize`] takes: of the gaps between consecutive
/// readings, and of the idle_post readings, exactly, from passes over the series (see
/// [`crate::nth`]).
#[derive(Debug, Clone)]
pub struct Medians {
    thresholds: Thresholds,
    gap: crate::nth::Nth,
    idle: crate::nth::Nth,
    prev: Option<u64>,
}

impl Medians {
    /// Before the first pass.
    pub fn new(thresholds: Thresholds) -> Self {
        Medians {
            thresholds,
            gap: crate::nth::Nth::new(crate::nth::upper_median),
            idle: crate::nth::Nth::new(crate::nth::upper_median),
            prev: None,
        }
    }

    /// The next reading of this pass.
    pub fn push(&mut self, t: u64, b: u64) {
        if let Some(p) = self.prev {
            self.gap.feed(t.saturating_sub(p));
        }
        self.prev = Some(t);
        if self.thresholds.classify(b) == ThresholdPhase::IdlePost {
            self.idle.feed(b);
        }
    }

    /// The end of a pass: (median gap, 0 without two readings; idle floor) once both are
    /// known, else None (push the series again).
    pub fn end_pass(&mut self) -> Option<(u64, Option<u64>)> {
        self.prev = None;
        let g = self.gap.end_pass();
        let i = self.idle.end_pass();
        Some((g?.unwrap_or(0), i?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kb(gb: f64) -> u64 {
        (gb * 1048576.0) as u64 * 1024
    }

    #[test]
    fn seed_boundaries() {
        let t = Thresholds::default();
        assert_eq!(t.classify_gib(9.99), ThresholdPhase::IdlePre);
        assert_eq!(t.classify_gib(10.0), ThresholdPhase::IdlePost);
        assert_eq!(t.classify_gib(50.0), ThresholdPhase::IdlePost);
        assert_eq!(t.classify_gib(50.1), ThresholdPhase::GpuOrTransition);
        assert_eq!(t.classify_gib(100.0), ThresholdPhase::GpuOrTransition);
        assert_eq!(t.classify_gib(100.1), ThresholdPhase::Synth);
        assert_eq!(t.classify_gib(180.0), ThresholdPhase::Synth);
        assert_eq!(t.classify_gib(180.1), ThresholdPhase::PeakSynth);
    }

    #[test]
    fn first_run_min_is_true_min() {
        let runs = classify_series(Thresholds::default(), [(0, kb(3.0)), (1, kb(2.0))]);
        assert_eq!(runs.len(), 1);
        assert_eq!(
            runs[0].to_string(),
            "idle_pre: samples=2, min=2.0 GiB, max=3.0 GiB"
        );
    }

    #[test]
    fn cycles_counted() {
        let s: Vec<(u64, u64)> = [1.0, 45.0, 120.0, 190.0, 60.0, 120.0, 45.0, 150.0, 45.0]
            .iter()
            .enumerate()
            .map(|(i, g)| (i as u64 * 1_000_000_000, kb(*g)))
            .collect();
        let sum = summarize(Thresholds::default(), &s).unwrap();
        assert_eq!(sum.cycles, 2);
        assert_eq!(sum.peak.1, 3_000_000_000);
        assert_eq!(sum.idle_floor, Some(kb(45.0)));
    }

    #[test]
    fn thresholds_parse() {
        assert_eq!(
            "10,50,100,180".parse::<Thresholds>().unwrap(),
            Thresholds::default()
        );
        assert!("10,50,100".parse::<Thresholds>().is_err());
        assert!("10,5,100,180".parse::<Thresholds>().is_err());
    }

    #[test]
    fn the_streaming_summary_is_the_whole_series_summary() {
        let t = Thresholds::default();
        let mut x = 7u64;
        let series: Vec<(u64, u64)> = (0..5000u64)
            .map(|i| {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let gb = [1.0, 12.0, 60.0, 150.0, 190.0][(x >> 60) as usize % 5];
                (
                    i * 50_000_000 + (x >> 40) % 3_000_000,
                    kb(gb + (x >> 20) as f64 % 1.0),
                )
            })
            .collect();
        let mut m = Medians::new(t);
        let (gap, idle) = loop {
            series.iter().for_each(|&(a, b)| m.push(a, b));
            if let Some(r) = m.end_pass() {
                break r;
            }
        };
        let mut s = Summarizer::new(t);
        series.iter().for_each(|&(a, b)| s.push(a, b));
        assert_eq!(s.finish(gap, idle), summarize(t, &series));
        assert_eq!(Summarizer::new(t).finish(0, None), None);
    }
}
