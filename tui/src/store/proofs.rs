//! The proofs that finished ok, in start order, as `compare` selects them (`--mode`,
//! `--proofs`) and the baseline aligns them: per proof its start, id, end, sectors, mode and
//! peak RSS ([`Done`], 44 bytes), in a [`Spill`] so that a session of any length holds the same.
//!
//! Contract: after any sequence of [`ProofList::add`], the items are every proof added, sorted
//! by (start, id) — the order `compare` numbers them in. Proofs finish nearly in start order
//! (a pipelined one a few behind), so an insertion is near the end.

use std::io;

use provetop_shared::spill::{u64_at, Fixed, Spill};
use provetop_shared::BatchMode;

use crate::model::{FinishedProof, ProofSpan};

/// A proof that finished ok.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Done {
    pub start: u64,
    pub proof_id: u64,
    pub end: u64,
    /// The highest RSS seen while it ran (interval peaks included).
    pub peak: u64,
    pub sectors: u32,
    pub mode: BatchMode,
}

impl Done {
    /// The proof, when it finished ok.
    pub fn of(p: &ProofSpan) -> Option<Done> {
        let (mode, start, end, sectors, peak) = p.finished_ok()?;
        Some(Done {
            start,
            proof_id: p.proof_id,
            end,
            peak,
            sectors,
            mode,
        })
    }

    /// Where it sorts: by start, then id.
    pub fn key(&self) -> (u64, u64) {
        (self.start, self.proof_id)
    }

    /// As the mode table folds it.
    pub fn finished(&self) -> FinishedProof {
        (self.mode, self.start, self.end, self.sectors, self.peak)
    }
}

/// A mode as two words: its kind and its count.
fn mode_words(m: BatchMode) -> (u32, u32) {
    match m {
        BatchMode::Single => (0, 0),
        BatchMode::Batch(n) => (1, n),
        BatchMode::Sps => (2, 0),
        BatchMode::Pipelined(n) => (3, n),
    }
}

fn mode_of(kind: u32, n: u32) -> BatchMode {
    match kind {
        1 => BatchMode::Batch(n),
        2 => BatchMode::Sps,
        3 => BatchMode::Pipelined(n),
        _ => BatchMode::Single,
    }
}

impl Fixed for Done {
    const SIZE: usize = 44;
    fn put(&self, out: &mut Vec<u8>) {
        for v in [self.start, self.proof_id, self.end, self.peak] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        let (kind, n) = mode_words(self.mode);
        for v in [self.sectors, kind, n] {
            out.extend_from_slice(&v.to_le_bytes());
        }
    }
    fn take(b: &[u8]) -> Self {
        let u32_at = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().expect("4 bytes"));
        Done {
            start: u64_at(b, 0),
            proof_id: u64_at(b, 1),
            end: u64_at(b, 2),
            peak: u64_at(b, 3),
            sectors: u32_at(32),
            mode: mode_of(u32_at(36), u32_at(40)),
        }
    }
}

/// The proofs that finished ok, sorted by (start, id).
#[derive(Debug, Default)]
pub struct ProofList {
    list: Spill<Done>,
    /// Why an insertion could not move the file's items.
    failed: Option<String>,
}

impl ProofList {
    /// Add a proof that finished (ignored unless it finished ok).
    pub fn add(&mut self, p: &ProofSpan) {
        let Some(d) = Done::of(p) else {
            return;
        };
        let at = match self.list.last() {
            Ok(Some(last)) if last.key() > d.key() => self.list.first_where(|x| x.key() > d.key()),
            Ok(_) => Ok(self.list.len()),
            Err(e) => Err(e),
        };
        let put = at.and_then(|i| match i == self.list.len() {
            true => {
                self.list.push(d);
                Ok(())
            }
            false => self.list.replace(i, i, d),
        });
        if let Err(e) = put {
            self.failed.get_or_insert_with(|| e.to_string());
        }
    }

    /// The proofs, in start order.
    pub fn iter(&self) -> impl Iterator<Item = io::Result<Done>> + '_ {
        self.list.iter()
    }

    /// How many.
    pub fn len(&self) -> usize {
        self.list.len()
    }

    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// Whether the proof that started at `start` with id `proof_id` is in the list (and so
    /// finished ok): its proof, by bisection (keys nearly in order cost a search in memory).
    pub fn find(&self, start: u64, proof_id: u64) -> io::Result<Option<Done>> {
        let key = (start, proof_id);
        let i = self.list.first_where(|x| x.key() >= key)?;
        if i == self.list.len() {
            return Ok(None);
        }
        let d = self.list.get(i)?;
        Ok((d.key() == key).then_some(d))
    }

    /// Why the list is short: an insertion into its file failed (the readers fail with it).
    pub fn failed(&self) -> Option<&str> {
        self.failed.as_deref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Stats;

    fn proof(id: u64, start: u64, mode: BatchMode, ok: bool) -> ProofSpan {
        let mut rss = Stats::default();
        rss.add(1_000 + id);
        ProofSpan {
            proof_id: id,
            mode,
            sectors: 1 + (id % 3) as u32,
            partitions: 10,
            start,
            end: Some(start + 5_000),
            duration_s: None,
            ok: Some(ok),
            verified: None,
            rss,
        }
    }

    #[test]
    fn proofs_finishing_out_of_start_order_are_kept_in_start_order() {
        let modes = [
            BatchMode::Single,
            BatchMode::Batch(4),
            BatchMode::Sps,
            BatchMode::Pipelined(3),
        ];
        let mut list = ProofList::default();
        let mut want: Vec<Done> = Vec::new();
        // Proofs finish up to four behind their start order; every seventh failed; some share
        // a start (ids break the tie).
        let n = Spill::<Done>::block() as u64 * 3 + 17;
        let mut rnd = provetop_testkit::xorshift::xorshift(0x2545_f491_4f6c_dd1d);
        let mut order: Vec<u64> = (0..n).collect();
        for i in (0..order.len()).step_by(5) {
            let x = rnd();
            let j = (i + (x % 5) as usize).min(order.len() - 1);
            order.swap(i, j);
        }
        for &i in &order {
            let p = proof(n - i, i / 2 * 1_000, modes[(i % 4) as usize], i % 7 != 3);
            list.add(&p);
            want.extend(Done::of(&p));
        }
        // Only those that finished ok.
        assert_eq!(
            want.len() as u64,
            (0..n).filter(|i| i % 7 != 3).count() as u64
        );
        want.sort_by_key(Done::key);
        let got: Vec<Done> = list.iter().collect::<io::Result<_>>().unwrap();
        assert_eq!(got, want);
        assert!(list.failed().is_none());
        for d in &want {
            assert_eq!(list.find(d.start, d.proof_id).unwrap(), Some(*d));
        }
        assert_eq!(list.find(500, n + 1).unwrap(), None);
        assert_eq!(list.find(u64::MAX, 0).unwrap(), None);
    }
}
