//! Following a compact session while it is written (`provetop attach`, `replay --follow`).
//!
//! Contract: each [`Growing::read`] returns the records that came since the last call, each
//! sequence number once and in order (a tail record as soon as it is flushed; a chunk's
//! records only where its tail was not seen). The writer rewrites the bytes after its last
//! chunk when it commits (the chunk is copied over the tail): so reading restarts each time
//! at the end of the last chunk read whole from the chunks before it, and damage past that
//! point is only reported once it is seen twice with the file unchanged in length (a commit
//! caught half way reads as damage for a moment). The bytes read per call are the tail and
//! what came since, a MiB at a time (a longer block whole; past damage, the window the
//! search for the next intact block needs), and [`Growing::read`] stops between blocks
//! once it has enough records: catching up with a file of weeks holds a few chunks at once.

use std::fs::File;
use std::io;

use super::{block_at, decode_chunk, plausible_block, read_full, Block};
use crate::session::frame::{FrameError, FrameItem};
use crate::session::{Warning, MAX_FRAME};

/// Bytes read at a time (more when a block is longer).
const READ: usize = 1 << 20;
/// Bytes examined past damage for the next intact block: a window and a whole block.
const SCAN: usize = (8 << 20) + MAX_FRAME as usize + 8;

/// A compact session file being followed.
pub struct Growing {
    /// End of the chunks read whole: where each read starts.
    committed: u64,
    next_seq: u64,
    /// Damage seen once: its offset and the file's length then.
    suspect: Option<(u64, u64)>,
    /// Offsets of damage already reported.
    told: Vec<u64>,
    /// Where the last read stopped inside the tail, and the first bytes of the block at
    /// `committed` then: while those bytes are unchanged the writer has not committed, and
    /// the tail read already need not be read again.
    resume: Option<(u64, [u8; 9])>,
    /// The last read stopped short of the end, at its `most` records.
    behind: bool,
}

impl Growing {
    /// Follow from `at`, the first block (just after the header).
    pub fn new(at: u64) -> Self {
        Growing {
            committed: at,
            next_seq: 0,
            suspect: None,
            told: Vec::new(),
            resume: None,
            behind: false,
        }
    }

    /// Offset of the first byte not yet read as a committed chunk.
    pub fn offset(&self) -> u64 {
        self.committed
    }

    /// The records (and warnings) that came since the last call, stopping between blocks
    /// once `most` records are out: a file of weeks is caught up with in bounded memory
    /// ([`Growing::behind`] says there is more).
    pub fn read(&mut self, file: &File, most: usize) -> io::Result<Vec<FrameItem>> {
        self.behind = false;
        let len = file.metadata()?.len();
        let mut out = Vec::new();
        let mut pos = self.committed.min(len);
        // Whether every block from `committed` to `pos` was a whole chunk.
        let mut contiguous = true;
        let mut saw_damage = false;
        let mut first = [0u8; 9];
        let have = read_full(file, &mut first, pos)?;
        if let Some((at, was)) = self.resume.take() {
            if have == 9 && was == first && at <= len {
                pos = at;
                contiguous = false;
            }
        }
        let mut buf = Vec::new();
        // Bytes the next read must bring: a block longer than a read, or room to look for
        // the next intact block past damage.
        let mut need = 0usize;
        while pos < len {
            let want = (len - pos).min(READ.max(need) as u64) as usize;
            need = 0;
            buf.resize(want, 0);
            let n = read_full(file, &mut buf, pos)?;
            buf.truncate(n);
            // Whether the buffer reaches the end of the file (or the file was cut meanwhile).
            let to_end = n < want || pos + n as u64 >= len;
            let mut p = 0usize;
            let stop = loop {
                if p >= buf.len() {
                    break to_end;
                }
                if out.len() >= most {
                    self.behind = true;
                    break true;
                }
                let at = pos + p as u64;
                match block_at(&buf[p..]) {
                    Ok((Block::Chunk(head, z), n)) => {
                        let end = head.first_seq.saturating_add(u64::from(head.count));
                        if end > self.next_seq {
                            self.chunk(at, &head, z, &mut out);
                        }
                        p += n;
                        if contiguous {
                            self.committed = pos + p as u64;
                        }
                    }
                    Ok((Block::Tail(seq, rec), n)) => {
                        if seq >= self.next_seq {
                            self.next_seq = seq + 1;
                            out.push(FrameItem::Record(at, rec));
                        }
                        contiguous = false;
                        p += n;
                    }
                    Err(FrameError::Incomplete) => {
                        let rest = &buf[p..];
                        let whole = rest.get(..4).map_or(9, |b| {
                            8 + u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize
                        });
                        if !to_end && at + whole as u64 <= len {
                            // Longer than this read: read again from its start (a length
                            // past any block's is damage, which a full head then shows).
                            need = whole.clamp(9, 8 + MAX_FRAME as usize);
                            break false;
                        }
                        // The writer's unfinished block.
                        break true;
                    }
                    Err(FrameError::Bad(_)) if !to_end && buf.len() - p < SCAN => {
                        // Look for the next intact block with as much before it as a whole
                        // read would have had.
                        need = SCAN;
                        break false;
                    }
                    Err(FrameError::Bad(why)) => {
                        contiguous = false;
                        saw_damage = true;
                        let Some(q) = next_block(&buf[p..]) else {
                            self.damage(at, len, &why, None, &mut out);
                            break true;
                        };
                        let resumed = at + q as u64;
                        if self.damage(at, len, &why, Some(resumed), &mut out)
                            && self.committed == at
                        {
                            // Damage that stays: read on from the next intact block.
                            self.committed = resumed;
                            contiguous = true;
                        }
                        p += q;
                    }
                }
            };
            pos += p as u64;
            if stop || (p == 0 && need == 0) {
                break;
            }
        }
        if !saw_damage {
            self.suspect = None;
        }
        if !contiguous && have == 9 && !saw_damage {
            self.resume = Some((pos, first));
        }
        Ok(out)
    }

    /// The last read stopped at its `most` records with more in the file.
    pub fn behind(&self) -> bool {
        self.behind
    }

    fn chunk(&mut self, at: u64, head: &super::ChunkHead, z: &[u8], out: &mut Vec<FrameItem>) {
        let warn = |out: &mut Vec<FrameItem>, message: String| {
            out.push(FrameItem::Warning(Warning {
                offset: Some(at),
                line: None,
                message,
            }))
        };
        match decode_chunk(head, z) {
            Err(why) => {
                if !self.told.contains(&at) {
                    self.told.push(at);
                    warn(
                        out,
                        format!("damaged chunk ({why}); its {} records are lost", head.count),
                    );
                }
            }
            Ok((recs, disagree)) => {
                if let Some(d) = disagree {
                    warn(out, d);
                }
                for (i, rec) in recs.into_iter().enumerate() {
                    if head.first_seq + i as u64 >= self.next_seq {
                        out.push(FrameItem::Record(at, rec));
                    }
                }
            }
        }
        self.next_seq = self
            .next_seq
            .max(head.first_seq.saturating_add(u64::from(head.count)));
    }

    /// Damage at `at` in a file of `len` bytes: reported (true) once seen twice at the same
    /// length, and only once.
    fn damage(
        &mut self,
        at: u64,
        len: u64,
        why: &str,
        resumed: Option<u64>,
        out: &mut Vec<FrameItem>,
    ) -> bool {
        if self.suspect != Some((at, len)) {
            self.suspect = Some((at, len));
            return false;
        }
        if !self.told.contains(&at) {
            self.told.push(at);
            let message = match resumed {
                Some(q) => format!(
                    "damaged block ({why}); skipped {} bytes, resumed at byte {q}",
                    q - at
                ),
                None => format!("damaged block ({why}); reading resumes at the next intact block"),
            };
            out.push(FrameItem::Warning(Warning {
                offset: Some(at),
                line: None,
                message,
            }));
        }
        true
    }
}

/// The offset in `b` (after its first byte) of the next intact block.
fn next_block(b: &[u8]) -> Option<usize> {
    (1..b.len()).find(|&q| plausible_block(&b[q..]) && block_at(&b[q..]).is_ok())
}
