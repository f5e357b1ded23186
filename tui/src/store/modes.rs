//! The batch-mode table's figures (`classify`'s `batch modes`), folded proof by proof as the
//! reducer finishes them: per mode its proofs, sectors, busy time ([`Cover`]: overlapping
//! proofs count once), highest peak, and every peak in a [`Spill`] for the exact median. What
//! [`crate::model::mode_rows`] makes of a list of proofs, without the list: a session of any
//! length holds the same.

use std::io;

use provetop_shared::nth::upper_median;
use provetop_shared::BatchMode;

use super::cover::Cover;
use crate::model::{FinishedProof, ModeRow};
use provetop_shared::spill::Spill;

/// One mode's proofs, folded.
#[derive(Debug, Default)]
struct Mode {
    proofs: usize,
    sectors: u64,
    busy: Cover,
    peaks: Spill<u64>,
    peak_max: u64,
}

/// The proofs that finished ok, folded per mode in the order the modes first ran.
#[derive(Debug, Default)]
pub struct ModeFold {
    modes: Vec<(BatchMode, Mode)>,
    /// Why a mode's busy time could not be read back from its file.
    failed: Option<String>,
}

impl ModeFold {
    /// Fold a proof that finished ok.
    pub fn add(&mut self, &(mode, start, end, sectors, peak): &FinishedProof) {
        let i = match self.modes.iter().position(|m| m.0 == mode) {
            Some(i) => i,
            None => {
                self.modes.push((mode, Mode::default()));
                self.modes.len() - 1
            }
        };
        let m = &mut self.modes[i].1;
        m.proofs += 1;
        m.sectors += u64::from(sectors);
        m.peak_max = m.peak_max.max(peak);
        m.peaks.push(peak);
        if let Err(e) = m.busy.add((start, end)) {
            self.failed.get_or_insert_with(|| e.to_string());
        }
    }

    /// No proof folded.
    pub fn is_empty(&self) -> bool {
        self.modes.is_empty()
    }

    /// The rows, as [`crate::model::mode_rows`] gives them for the same proofs.
    pub fn rows(&self) -> io::Result<Vec<ModeRow>> {
        if let Some(e) = &self.failed {
            return Err(io::Error::other(e.clone()));
        }
        self.modes
            .iter()
            .map(|(mode, m)| {
                let median = m.peaks.nth(upper_median, &|&v| Some(v))?;
                Ok(ModeRow {
                    mode: *mode,
                    proofs: m.proofs,
                    sectors: m.sectors,
                    busy_s: m.busy.total_ns() as f64 / 1e9,
                    peak_median: median.expect("a mode in the list has a proof"),
                    peak_max: m.peak_max,
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::mode_rows;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(16))]
        /// Thousands of proofs of a few modes, some overlapping (pipelined), some at once:
        /// the rows of the list, field for field.
        #[test]
        fn folded_proofs_give_the_rows_of_the_list(
            seed in any::<u64>(),
            n in 1usize..4_000,
        ) {
            let mut rnd = provetop_testkit::xorshift::xorshift(seed);
            let modes = [BatchMode::Single, BatchMode::Pipelined(2), BatchMode::Pipelined(4)];
            let mut list: Vec<FinishedProof> = Vec::new();
            let mut fold = ModeFold::default();
            for i in 0..n as u64 {
                let mode = modes[(i / 700 % 3) as usize];
                let start = i * 1_000 + rnd() % 3_000;
                let p = (mode, start, start + rnd() % 2_500, 1 + (rnd() % 4) as u32, rnd() % 1_000);
                fold.add(&p);
                list.push(p);
            }
            let want = mode_rows(&list);
            let got = fold.rows().unwrap();
            prop_assert_eq!(got.len(), want.len());
            for (g, w) in got.iter().zip(&want) {
                prop_assert_eq!(
                    (g.mode, g.proofs, g.sectors, g.busy_s.to_bits(), g.peak_median, g.peak_max),
                    (w.mode, w.proofs, w.sectors, w.busy_s.to_bits(), w.peak_median, w.peak_max)
                );
            }
        }
    }
}
