//! Reading a compact session back: chunks and tail records in sequence order, each record
//! once, damage reported with its byte offset and read past.
//!
//! Contract: [`Records`] yields every record of every intact chunk and every tail record
//! not also in an intact chunk, in sequence order, each sequence number at most once; a
//! damaged block (bad checksum, impossible length, a chunk that does not decompress or
//! decode) is one [`Warning`] with its offset, and reading resynchronizes on the next intact
//! block within the same budget as format 1's reader. Tail records wait (at most
//! [`MAX_CHUNK_RECORDS`] of them) for the chunk that may follow them, so a crash in the middle
//! of a commit reads back in order.

use std::collections::VecDeque;

use super::{block_at, decode_chunk, plausible_block, Block, MAX_CHUNK_RECORDS};
use crate::record::Record;
use crate::session::frame::{FrameError, FrameItem, RESYNC_BUDGET_MIN, RESYNC_BUDGET_PER_BYTE};
use crate::session::header::Head;
use crate::session::{Loaded, SourceKind, Warning};

/// The records of a compact session's bytes, from the first block at `pos`.
pub struct Records<'a> {
    data: &'a [u8],
    pos: usize,
    budget: u64,
    next_seq: u64,
    /// Tail records not yet given: (sequence number, offset, record).
    pending: VecDeque<(u64, u64, Record)>,
    ready: VecDeque<FrameItem>,
}

impl<'a> Records<'a> {
    /// Start at byte `pos` (just after the header).
    pub fn new(data: &'a [u8], pos: usize) -> Self {
        Records {
            data,
            pos,
            budget: RESYNC_BUDGET_MIN
                .saturating_add((data.len() as u64).saturating_mul(RESYNC_BUDGET_PER_BYTE)),
            next_seq: 0,
            pending: VecDeque::new(),
            ready: VecDeque::new(),
        }
    }

    /// Records before sequence number `seq` already read elsewhere (the chunks before a
    /// tail read on its own): skipped, as if read here.
    pub fn after_seq(mut self, seq: u64) -> Self {
        self.next_seq = seq;
        self
    }

    /// The sequence number the next record would have.
    pub fn next_seq(&self) -> u64 {
        self.next_seq
    }

    fn warn(&mut self, at: usize, message: String) {
        self.ready.push_back(FrameItem::Warning(Warning {
            offset: Some(at as u64),
            line: None,
            message,
        }));
    }

    /// Give the pending tail records before sequence number `before`.
    fn release(&mut self, before: u64) {
        while self.pending.front().is_some_and(|p| p.0 < before) {
            let Some((seq, at, rec)) = self.pending.pop_front() else {
                break;
            };
            if seq >= self.next_seq {
                self.next_seq = seq + 1;
                self.ready.push_back(FrameItem::Record(at, rec));
            }
        }
    }

    fn tail(&mut self, at: usize, seq: u64, rec: Record) {
        if seq < self.next_seq || self.pending.back().is_some_and(|l| seq <= l.0) {
            return;
        }
        self.pending.push_back((seq, at as u64, rec));
        if self.pending.len() > MAX_CHUNK_RECORDS as usize {
            let first = self.pending.front().map_or(0, |p| p.0);
            self.release(first + 1);
        }
    }

    fn chunk(&mut self, at: usize, head: super::ChunkHead, z: &[u8]) {
        let end = head.first_seq.saturating_add(u64::from(head.count));
        match decode_chunk(&head, z) {
            Err(why) => {
                let m = format!("damaged chunk ({why}); its {} records are lost", head.count);
                self.warn(at, m);
            }
            Ok((recs, disagree)) => {
                if let Some(d) = disagree {
                    self.warn(at, d);
                }
                self.release(head.first_seq);
                for (i, rec) in recs.into_iter().enumerate() {
                    if head.first_seq + i as u64 >= self.next_seq {
                        self.ready.push_back(FrameItem::Record(at as u64, rec));
                    }
                }
                self.next_seq = self.next_seq.max(end);
                while self.pending.front().is_some_and(|p| p.0 < end) {
                    self.pending.pop_front();
                }
            }
        }
    }

    /// The first offset after `at` holding an intact block; `Err` when the budget ran out.
    fn resync(&mut self, at: usize) -> Result<Option<usize>, ()> {
        for p in at + 1..self.data.len() {
            let rest = &self.data[p..];
            if !plausible_block(rest) {
                continue;
            }
            let len = u64::from(u32::from_le_bytes([rest[0], rest[1], rest[2], rest[3]]));
            if rest.len() as u64 >= 8 + len {
                if self.budget < len {
                    self.budget = 0;
                    return Err(());
                }
                self.budget -= len;
                if block_at(rest).is_ok() {
                    return Ok(Some(p));
                }
            }
        }
        Ok(None)
    }

    fn damaged(&mut self, at: usize, why: &str, cut: bool) {
        let n = self.data.len() - at;
        match self.resync(at) {
            Err(()) => {
                self.pos = self.data.len();
                self.warn(at, format!("damaged block ({why}); looking for the next intact block took too long, {n} bytes to the end ignored"));
            }
            Ok(Some(p)) => {
                self.pos = p;
                self.warn(
                    at,
                    format!(
                        "damaged block ({why}); skipped {} bytes, resumed at byte {p}",
                        p - at
                    ),
                );
            }
            Ok(None) if cut => {
                self.pos = self.data.len();
                self.warn(
                    at,
                    format!("file cut off inside a block ({n} trailing bytes ignored)"),
                );
            }
            Ok(None) => {
                self.pos = self.data.len();
                self.warn(
                    at,
                    format!("damaged block ({why}); {n} bytes to the end ignored"),
                );
            }
        }
    }

    fn step(&mut self) {
        let at = self.pos;
        match block_at(&self.data[at..]) {
            Ok((Block::Tail(seq, rec), len)) => {
                self.pos += len;
                self.tail(at, seq, rec);
            }
            Ok((Block::Chunk(head, z), len)) => {
                self.pos += len;
                self.chunk(at, head, z);
            }
            Err(FrameError::Incomplete) => {
                self.damaged(at, "length runs past the end of the file", true)
            }
            Err(FrameError::Bad(why)) => self.damaged(at, &why, false),
        }
    }
}

impl Iterator for Records<'_> {
    type Item = FrameItem;
    fn next(&mut self) -> Option<FrameItem> {
        loop {
            if let Some(item) = self.ready.pop_front() {
                return Some(item);
            }
            if self.pos >= self.data.len() {
                if self.pending.is_empty() {
                    return None;
                }
                self.release(u64::MAX);
                continue;
            }
            self.step();
        }
    }
}

/// Load a compact session file's bytes, its head read.
pub(in crate::session) fn load_compact(head: Head, data: &[u8]) -> Loaded {
    let mut warnings = head.warnings;
    let mut records: Vec<Record> = Vec::new();
    for item in Records::new(data, head.frames_at) {
        match item {
            FrameItem::Record(_, r) => records.push(r),
            FrameItem::Warning(w) => warnings.push(w),
        }
    }
    Loaded {
        header: head.header,
        records,
        warnings,
        kind: SourceKind::Session,
    }
}
