//! Which proofs of a session are compared ([`Selection`], `--mode` and `--proofs`), the
//! selected proofs folded in one pass over the session's ([`Chosen`]) and the time they
//! cover.

use std::cell::OnceCell;
use std::io;

use provetop_shared::nth::upper_median;
use provetop_shared::spill::Spill;
use provetop_shared::BatchMode;

use crate::store::digest::ClosedSpan;
use crate::store::modes::ModeFold;
use crate::store::proofs::ProofList;

/// Which proofs of a session are compared.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Selection {
    /// Only proofs of this mode.
    pub mode: Option<BatchMode>,
    /// Only the proofs numbered `from..=to` (1-based, in start order, counted after the
    /// mode filter); `None`: every one.
    pub range: Option<(usize, Option<usize>)>,
}

impl Selection {
    /// Whether every proof (and so the whole recording) is compared.
    pub fn is_all(&self) -> bool {
        self.mode.is_none() && self.range.is_none()
    }

    /// In words: "the whole recording", "mode sps", "proofs 2..5", "mode sps, proofs 3".
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if let Some(m) = self.mode {
            parts.push(format!("mode {m}"));
        }
        if let Some((a, b)) = self.range {
            parts.push(match b {
                Some(b) if b == a => format!("proof {a}"),
                Some(b) => format!("proofs {a}..{b}"),
                None => format!("proofs {a}.."),
            });
        }
        if parts.is_empty() {
            "the whole recording".into()
        } else {
            parts.join(", ")
        }
    }
}

/// The proofs a selection picks, folded in one pass over the session's (in start order):
/// what the memory, proof and phase figures read of them, and the time they cover. Nothing
/// in memory grows with their number: the peaks and the time are spills.
#[derive(Debug)]
pub(super) struct Chosen {
    /// The session's proofs that finished ok.
    pub(super) all: usize,
    /// The session's modes, in the order their first proof started.
    pub(super) modes: Vec<BatchMode>,
    /// Proofs selected.
    pub(super) count: usize,
    pub(super) sectors: u64,
    /// The time they cover: their (start, end), merged where they overlap or touch, in order.
    time: Spill<(u64, u64)>,
    /// Its length.
    pub(super) busy_ns: u64,
    /// Each one's peak RSS, for the median.
    peaks: Spill<u64>,
    /// Folded per mode: the mode rows.
    pub(super) per_mode: ModeFold,
    /// The mode selected, and the keys (start, id) of the first and last proof selected:
    /// a proof of that mode between them is selected.
    mode: Option<BatchMode>,
    keys: Option<((u64, u64), (u64, u64))>,
    every: bool,
    /// Why the time could not be read back (the summary fails with it).
    lost: OnceCell<String>,
}

impl Chosen {
    /// The proofs of `list` that `sel` picks.
    pub(super) fn of(list: &ProofList, sel: &Selection) -> io::Result<Chosen> {
        let mut c = Chosen {
            all: 0,
            modes: Vec::new(),
            count: 0,
            sectors: 0,
            time: Spill::default(),
            busy_ns: 0,
            peaks: Spill::default(),
            per_mode: ModeFold::default(),
            mode: sel.mode,
            keys: None,
            every: sel.is_all(),
            lost: OnceCell::new(),
        };
        let (mut of_mode, mut now): (usize, Option<(u64, u64)>) = (0, None);
        for d in list.iter() {
            let d = d?;
            c.all += 1;
            if !c.modes.contains(&d.mode) {
                c.modes.push(d.mode);
            }
            if sel.mode.is_some_and(|m| d.mode != m) {
                continue;
            }
            of_mode += 1;
            if sel
                .range
                .is_some_and(|(a, b)| of_mode < a || b.is_some_and(|b| of_mode > b))
            {
                continue;
            }
            c.count += 1;
            c.sectors += u64::from(d.sectors);
            c.peaks.push(d.peak);
            c.per_mode.add(&d.finished());
            c.keys = Some((c.keys.map_or(d.key(), |k| k.0), d.key()));
            // In start order: a proof meets the time so far at its end, or begins more.
            let end = d.end.max(d.start);
            match now.as_mut() {
                Some(t) if d.start <= t.1 => t.1 = t.1.max(end),
                _ => {
                    if let Some(t) = now.replace((d.start, end)) {
                        c.busy_ns += t.1 - t.0;
                        c.time.push(t);
                    }
                }
            }
        }
        if let Some(t) = now {
            c.busy_ns += t.1 - t.0;
            c.time.push(t);
        }
        Ok(c)
    }

    /// Whether every proof (and every span, and every time) is selected.
    pub(super) fn picks_every(&self) -> bool {
        self.every
    }

    /// No proof selected.
    pub(super) fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The median of the selected proofs' peaks (the upper one of an even count).
    pub(super) fn median_peak(&self) -> io::Result<Option<u64>> {
        self.peaks.nth(upper_median, &|&v| Some(v))
    }

    /// Whether time `t` is in the time the selection covers (every time with every proof
    /// selected). Times nearly in order cost a search in memory. A failed read is false,
    /// and [`Chosen::lost`] says why.
    pub(super) fn inside(&self, t: u64) -> bool {
        if self.every {
            return true;
        }
        let found = self.time.first_where(|iv| iv.0 > t).and_then(|i| match i {
            0 => Ok(false),
            i => self.time.get(i - 1).map(|iv| t <= iv.1),
        });
        found.unwrap_or_else(|e| {
            self.lost.get_or_init(|| e.to_string());
            false
        })
    }

    /// Why a time could not be read back, once one could not.
    pub(super) fn lost(&self) -> Option<&str> {
        self.lost.get().map(String::as_str)
    }

    /// Whether span `s` is one of a selected proof's (every span with every proof selected).
    pub(super) fn picks(&self, list: &ProofList, s: &ClosedSpan) -> io::Result<bool> {
        if self.every {
            return Ok(true);
        }
        let key = (s.proof_start, s.proof_id);
        match self.keys {
            Some((lo, hi)) if lo <= key && key <= hi => Ok(list
                .find(s.proof_start, s.proof_id)?
                .is_some_and(|d| self.mode.is_none_or(|m| d.mode == m))),
            _ => Ok(false),
        }
    }
}

/// Parse `--proofs`: `3`, `2..5`, `4..`, `..6` (1-based, inclusive).
pub fn parse_range(s: &str) -> Result<(usize, Option<usize>), String> {
    let num = |x: &str| -> Result<usize, String> {
        match x.trim().parse::<usize>() {
            Ok(n) if n >= 1 => Ok(n),
            _ => Err(format!(
                "bad proof range {s:?}: proofs are numbered from 1 (want N, A..B, A.. or ..B)"
            )),
        }
    };
    match s.split_once("..") {
        None => num(s).map(|n| (n, Some(n))),
        Some((a, b)) => {
            let from = if a.trim().is_empty() { 1 } else { num(a)? };
            let to = if b.trim().is_empty() {
                None
            } else {
                Some(num(b)?)
            };
            if to.is_some_and(|t| t < from) {
                return Err(format!("bad proof range {s:?}: it ends before it starts"));
            }
            Ok((from, to))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{busy_ns, ProofSpan, Stats};
    use crate::store::cover::merged;
    use proptest::prelude::*;
    use std::collections::HashSet;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]
        /// Hundreds of proofs of three modes, finishing out of start order, some failed, their
        /// ids repeating (a restarted prover counts from 1 again), under any selection: what
        /// the one pass folds is what the old all-in-memory selection gave (the proofs sorted
        /// by start, the chosen ones' merged intervals), a span picked where its proof is one
        /// of the chosen (by start and id: the old selection took every proof of a chosen id).
        #[test]
        fn the_folded_selection_is_the_sorted_list_s(
            seed in any::<u64>(),
            n in 1usize..900,
            mode in prop::option::of(0usize..3),
            range in prop::option::of((1usize..400, prop::option::of(0usize..400))),
        ) {
            let mut rnd = provetop_testkit::xorshift::xorshift(seed);
            let modes = [BatchMode::Single, BatchMode::Sps, BatchMode::Pipelined(2)];
            let mut spans: Vec<ProofSpan> = (0..n as u64)
                .map(|i| {
                    let start = i * 1_000 + rnd() % 4_000;
                    let mut rss = Stats::default();
                    rss.add(rnd() % 10_000);
                    ProofSpan {
                        proof_id: i % 97 + 1,
                        mode: modes[(i / 90 % 3) as usize],
                        sectors: 1 + (rnd() % 4) as u32,
                        partitions: 10,
                        start,
                        end: Some(start + rnd() % 3_000),
                        duration_s: None,
                        ok: Some(rnd() % 9 != 0),
                        verified: None,
                        rss,
                    }
                })
                .collect();
            // They finish in end order.
            spans.sort_by_key(|p| p.end);
            let mut list = ProofList::default();
            spans.iter().for_each(|p| list.add(p));
            let sel = Selection {
                mode: mode.map(|m| modes[m]),
                range: range.map(|(a, b)| (a, b.map(|b| a + b))),
            };
            let c = Chosen::of(&list, &sel).unwrap();

            // The old way: every proof that finished ok, sorted, filtered, numbered.
            let mut ok: Vec<&ProofSpan> = spans.iter().filter(|p| p.ok == Some(true)).collect();
            ok.sort_by_key(|p| (p.start, p.proof_id));
            let of_mode: Vec<&ProofSpan> =
                ok.iter().copied().filter(|p| sel.mode.is_none_or(|m| p.mode == m)).collect();
            let chosen: Vec<&ProofSpan> = of_mode
                .iter()
                .copied()
                .enumerate()
                .filter(|(i, _)| sel.range.is_none_or(|(a, b)| *i + 1 >= a && b.is_none_or(|b| *i < b)))
                .map(|(_, p)| p)
                .collect();
            prop_assert_eq!(c.all, ok.len());
            prop_assert_eq!(c.count, chosen.len());
            prop_assert_eq!(c.sectors, chosen.iter().map(|p| u64::from(p.sectors)).sum::<u64>());
            let iv: Vec<(u64, u64)> = chosen.iter().map(|p| (p.start, p.end.unwrap())).collect();
            prop_assert_eq!(c.busy_ns, busy_ns(&iv));
            let mut peaks: Vec<u64> = chosen.iter().map(|p| p.rss.max).collect();
            peaks.sort_unstable();
            prop_assert_eq!(c.median_peak().unwrap(), peaks.get(peaks.len() / 2).copied());
            let mut seen: Vec<BatchMode> = Vec::new();
            ok.iter().for_each(|p| if !seen.contains(&p.mode) { seen.push(p.mode) });
            prop_assert_eq!(&c.modes, &seen);

            // Times in order, then anywhere: inside the chosen proofs' merged intervals.
            let time = merged(iv);
            let inside = |t: u64| {
                sel.is_all() || {
                    let i = time.partition_point(|v| v.0 <= t);
                    i > 0 && t <= time[i - 1].1
                }
            };
            let top = n as u64 * 1_000 + 8_000;
            let times = (0..top).step_by(97).chain((0..500).map(|_| rnd() % top));
            for t in times {
                prop_assert_eq!(c.inside(t), inside(t), "time {}", t);
            }
            prop_assert!(c.lost().is_none());

            // Spans of every proof (the failed ones', and a proof never started): picked where
            // their proof is one of the chosen.
            let keys: HashSet<(u64, u64)> = chosen.iter().map(|p| (p.start, p.proof_id)).collect();
            for p in spans.iter().chain([&ProofSpan { proof_id: 0, start: 5, ..spans[0].clone() }]) {
                let s = ClosedSpan {
                    proof_id: p.proof_id,
                    proof_start: if p.proof_id == 0 { u64::MAX } else { p.start },
                    row: 0,
                    start: p.start + 1,
                    duration_s: 1.0,
                    rss_max: 0,
                };
                prop_assert_eq!(
                    c.picks(&list, &s).unwrap(),
                    sel.is_all() || keys.contains(&(s.proof_start, p.proof_id)),
                    "proof {}", p.proof_id
                );
            }
        }
    }

    #[test]
    fn proof_ranges_parse_and_refuse_nonsense() {
        assert_eq!(parse_range("3"), Ok((3, Some(3))));
        assert_eq!(parse_range("2..5"), Ok((2, Some(5))));
        assert_eq!(parse_range("4.."), Ok((4, None)));
        assert_eq!(parse_range("..6"), Ok((1, Some(6))));
        assert!(parse_range("0").unwrap_err().contains("numbered from 1"));
        assert!(parse_range("5..2").unwrap_err().contains("ends before"));
        assert!(parse_range("x").is_err());
    }
}
