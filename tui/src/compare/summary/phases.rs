//! The phase section: per prover phase (the selected proofs' spans) and per threshold phase
//! (the classifier's runs over the selected samples), the median and p90 duration and the
//! peak RSS. Spans and runs are read in passes or folded as they come, their durations in
//! spills: a session of any length costs the same.

use provetop_shared::nth::{upper_median, Rank};
use provetop_shared::spill::Spill;

use provetop_shared::classify::{Run, ThresholdPhase};
use provetop_shared::Phase;

use super::figure::{Figures, Section, Unit};
use super::select::Chosen;
use crate::store::digest::ClosedSpan;
use crate::store::Store;

/// Where the 90th percentile by nearest rank is among `len` sorted values.
fn p90_rank(len: u64) -> u64 {
    (((len as f64) * 0.9).ceil() as u64).clamp(1, len.max(1)) - 1
}

/// Per prover phase, over the spans of the selected proofs: median and p90 of the span
/// durations, and the peak RSS seen while one was open. The closed spans are read in passes
/// (the selected ones first copied to a spill of their own, then a pass for the phases and a
/// few for each percentile), never held.
pub(super) fn phases(f: &mut Figures, store: &Store, chosen: &Chosen) -> std::io::Result<()> {
    let digest = store.span_digest();
    let mut own: Spill<ClosedSpan> = Spill::default();
    let closed = if chosen.picks_every() {
        &digest.closed
    } else {
        let proofs = store.finished_proofs();
        for s in digest.closed.iter() {
            let s = s?;
            if chosen.picks(proofs, &s)? {
                own.push(s);
            }
        }
        &own
    };
    // Per phase: its first selected span's start, and its peak.
    let mut order: Vec<(u64, u32)> = Vec::new();
    let mut peak: std::collections::HashMap<u32, u64> = Default::default();
    closed.each(&mut |s| {
        let e = peak.entry(s.row).or_insert_with(|| {
            order.push((s.start, s.row));
            0
        });
        *e = (*e).max(s.rss_max);
    })?;
    order.sort_by_key(|o| o.0);
    for (_, row) in order {
        // Durations are finite and never negative (the digest's), so their bits sort as they do.
        let pick = |s: &ClosedSpan| (s.row == row).then(|| s.duration_s.to_bits());
        let at = |rank: Rank| -> std::io::Result<f64> {
            let v = closed.nth(rank, &pick)?;
            Ok(f64::from_bits(v.expect("the phase has a selected span")))
        };
        let (median, p90) = (at(upper_median)?, at(p90_rank)?);
        let phase: &Phase = &digest.rows[row as usize].phase;
        let name = crate::text::inert(phase.as_str()).into_owned();
        push_phase(f, &name, median, p90, peak[&row], false);
    }
    Ok(())
}

fn push_phase(f: &mut Figures, name: &str, median: f64, p90: f64, peak: u64, threshold: bool) {
    let absent = format!("no {name} phase");
    f.push(
        format!("phase_median[{name}]"),
        format!("{name}: median duration"),
        Section::Phase,
        Unit::Seconds,
        Ok(median),
        absent.clone(),
        threshold,
    );
    f.push(
        format!("phase_p90[{name}]"),
        format!("{name}: p90 duration"),
        Section::Phase,
        Unit::Seconds,
        Ok(p90),
        absent.clone(),
        threshold,
    );
    f.push(
        format!("phase_peak[{name}]"),
        format!("{name}: peak RSS"),
        Section::Phase,
        Unit::Bytes,
        Ok(peak as f64),
        absent,
        threshold,
    );
}
/// The threshold phases' runs (the seed's classifier over the selected samples), folded as
/// they come: each run lasts until the next one starts (the last one its span and one
/// sampling interval, known once the runs end). Per phase its durations (a spill) and peak.
#[derive(Debug, Default)]
pub(super) struct RunFold {
    last: Option<Run>,
    per: Vec<(ThresholdPhase, Spill<u64>, f64)>,
}

impl RunFold {
    /// The next run.
    pub(super) fn push(&mut self, r: Run) {
        let next = r.start;
        if let Some(p) = self.last.replace(r) {
            self.add(&p, next);
        }
    }

    fn add(&mut self, r: &Run, end: u64) {
        let d = end.saturating_sub(r.start) as f64 / 1e9;
        let i = match self.per.iter().position(|p| p.0 == r.phase) {
            Some(i) => i,
            None => {
                self.per.push((r.phase, Spill::default(), r.max_gib));
                self.per.len() - 1
            }
        };
        let p = &mut self.per[i];
        // Durations are never negative, so their bits sort as they do.
        p.1.push(d.to_bits());
        p.2 = p.2.max(r.max_gib);
    }

    /// The rows, the runs over (`interval_ns`: the sampling interval).
    pub(super) fn figures(
        mut self,
        f: &mut Figures,
        interval_ns: Option<u64>,
    ) -> std::io::Result<()> {
        if let Some(r) = self.last.take() {
            self.add(&r, r.end + interval_ns.unwrap_or(0));
        }
        self.per
            .sort_by_key(|p| ThresholdPhase::ALL.iter().position(|a| *a == p.0));
        for (phase, d, max_gib) in &self.per {
            let at = |rank: Rank| -> std::io::Result<f64> {
                let v = d.nth(rank, &|&v| Some(v))?;
                Ok(f64::from_bits(v.expect("a phase in the list has a run")))
            };
            let peak = (max_gib * provetop_shared::units::GIB as f64).round() as u64;
            push_phase(
                f,
                phase.name(),
                at(upper_median)?,
                at(p90_rank)?,
                peak,
                true,
            );
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The median of sorted values (the upper one of an even count, as `classify`'s mode
    /// table takes it).
    fn median(sorted: &[f64]) -> f64 {
        sorted[sorted.len() / 2]
    }

    /// The 90th percentile of sorted values, by nearest rank.
    fn p90(sorted: &[f64]) -> f64 {
        let rank = ((sorted.len() as f64) * 0.9).ceil() as usize;
        sorted[rank.clamp(1, sorted.len()) - 1]
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(24))]
        /// Thousands of threshold runs, folded as they come, give the rows the runs listed
        /// and sorted gave: the same durations (each to the next run's start, the last one
        /// its span and an interval), medians, p90s and peaks, to the bit.
        #[test]
        fn folded_runs_give_the_rows_of_the_sorted_durations(
            seed in proptest::prelude::any::<u64>(),
            n in proptest::prop_oneof![1usize..4, 4usize..3_000],
            gap in proptest::option::of(0u64..5_000),
        ) {
            let mut rnd = provetop_testkit::xorshift::xorshift(seed);
            let mut t = 0u64;
            let runs: Vec<Run> = (0..n)
                .map(|_| {
                    let start = t + rnd() % 3;
                    let end = start + rnd() % 90_000;
                    t = end + rnd() % 4;
                    Run {
                        phase: ThresholdPhase::ALL[(rnd() % 3) as usize * 2 % ThresholdPhase::ALL.len()],
                        samples: 1,
                        min_gib: 0.0,
                        max_gib: (rnd() % 2_000) as f64 / 7.0,
                        start,
                        end,
                    }
                })
                .collect();
            let mut fold = RunFold::default();
            runs.iter().for_each(|r| fold.push(r.clone()));
            let mut got = Figures::default();
            fold.figures(&mut got, gap).unwrap();

            let mut per: Vec<(ThresholdPhase, Vec<f64>, f64)> = Vec::new();
            for (i, r) in runs.iter().enumerate() {
                let end = runs.get(i + 1).map_or(r.end + gap.unwrap_or(0), |n| n.start);
                let d = end.saturating_sub(r.start) as f64 / 1e9;
                match per.iter_mut().find(|p| p.0 == r.phase) {
                    Some(p) => {
                        p.1.push(d);
                        p.2 = p.2.max(r.max_gib);
                    }
                    None => per.push((r.phase, vec![d], r.max_gib)),
                }
            }
            per.sort_by_key(|p| ThresholdPhase::ALL.iter().position(|a| *a == p.0));
            let mut want = Figures::default();
            for (phase, mut d, max_gib) in per {
                d.sort_by(f64::total_cmp);
                let peak = (max_gib * provetop_shared::units::GIB as f64).round() as u64;
                push_phase(&mut want, phase.name(), median(&d), p90(&d), peak, true);
            }
            let bits = |f: &Figures| -> Vec<(String, u64)> {
                f.0.iter().map(|g| (g.key.clone(), g.value.clone().unwrap().to_bits())).collect()
            };
            proptest::prop_assert_eq!(bits(&got), bits(&want));
        }
    }

    #[test]
    fn percentiles_by_nearest_rank() {
        let v: Vec<f64> = (1..=10).map(f64::from).collect();
        assert_eq!(median(&v), 6.0);
        assert_eq!(p90(&v), 9.0);
        assert_eq!(p90(&[4.0]), 4.0);
        assert_eq!(median(&[4.0]), 4.0);
        // The rank the closed spans' pass selects is the one the sorted slice reads.
        for n in 1..=25u64 {
            let v: Vec<f64> = (0..n).map(|i| i as f64).collect();
            assert_eq!(v[p90_rank(n) as usize], p90(&v), "{n} values");
            assert_eq!(v[upper_median(n) as usize], median(&v), "{n} values");
        }
    }
}
