//! Opening a compact session without reading it: the heads of its chunks (time range,
//! record count, summary) read one by one from the file, each chunk decoded only when asked.
//!
//! Contract: [`Index::open`] costs one read of the header and of the chunk index beside the
//! file ([`super::sidecar`]) and a few small reads, then one small read per chunk the index
//! does not name (every chunk, without one); memory: the heads are in a [`Spill`] (its newest
//! block in memory, the rest in a temporary file), so a session of any length costs the same;
//! [`Index::chunk`]
//! reads and decodes one chunk, checksum first; [`Index::tail`] reads the records after the
//! last chunk. [`Index::envelope`] is the min/max of every chunk a time range touches, from
//! the summaries alone: never lower than a sample's peak, since a summary is the true
//! envelope of its chunk's samples. A head that is not a block's is damage: the scan looks
//! for the next intact block, and the damage is a warning with its offset.

use std::fs::File;
use std::io;
use std::path::Path;

use super::{
    block_at, chunk_head, decode_chunk, plausible_block, read_full, sidecar, Block, ChunkHead,
    Summary, CHUNK_HEAD,
};
use crate::record::Record;
use crate::session::frame::FrameItem;
use crate::session::header::read_header;
use crate::session::{SessionHeader, Warning, MAX_FRAME, MAX_HEADER};
use crate::spill::{u64_at, Fixed, Spill};

/// A chunk's offset and head, as the index keeps them: the head in its own bytes.
impl Fixed for (u64, ChunkHead) {
    const SIZE: usize = 8 + CHUNK_HEAD;
    fn put(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.0.to_le_bytes());
        self.1.put(out);
    }
    fn take(b: &[u8]) -> Self {
        (u64_at(b, 0), ChunkHead::get(&b[8..]))
    }
}

/// A compact session, opened.
pub struct Index {
    file: File,
    /// Header.
    pub header: SessionHeader,
    /// Each chunk's offset and head, in file order.
    pub chunks: Spill<(u64, ChunkHead)>,
    /// Offset of the tail (the first block after the last chunk).
    pub tail_at: u64,
    /// Damage found while scanning.
    pub warnings: Vec<Warning>,
}

impl Index {
    /// Read the header and the chunks' heads of a compact session.
    pub fn open(path: &Path) -> io::Result<Index> {
        let file = crate::session::open_regular(path)?;
        let len = file.metadata()?.len();
        let mut head = vec![0u8; (len as usize).min(12 + MAX_HEADER as usize)];
        let n = read_full(&file, &mut head, 0)?;
        head.truncate(n);
        let h = read_header(&head).map_err(|e| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("byte {}: {}", e.offset, e.detail),
            )
        })?;
        if h.header.format != 2 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "not a compact session (format 2)",
            ));
        }
        let mut ix = Index {
            file,
            header: h.header,
            chunks: Spill::default(),
            tail_at: len,
            warnings: h.warnings,
        };
        let mut at = h.frames_at as u64;
        // The index beside the file, when there is one that agrees with it, gives the chunks
        // it names at once; the blocks after them are walked.
        if let Some((chunks, next)) = sidecar::read(path, &ix.file, len, &head[..h.frames_at]) {
            ix.chunks = chunks;
            at = next;
        }
        let mut b = [0u8; 8 + CHUNK_HEAD];
        while at < len {
            let n = read_full(&ix.file, &mut b, at)?;
            let blen = u64::from(u32::from_le_bytes([b[0], b[1], b[2], b[3]]));
            if n >= 9 && plausible_block(&b[..n]) && b[8] == b'T' {
                ix.tail_at = at;
                break;
            }
            if n == b.len() && plausible_block(&b) && at + 8 + blen <= len {
                if let Ok(head) = chunk_head(&b[8..]) {
                    ix.chunks.push((at, head));
                    at += 8 + blen;
                    continue;
                }
            }
            // Not a chunk's head: damage, or a chunk cut off at the end.
            let next = ix.resync(at, len)?;
            ix.warnings.push(Warning {
                offset: Some(at),
                line: None,
                message: match next {
                    Some(q) => format!(
                        "damaged block; skipped {} bytes, resumed at byte {q}",
                        q - at
                    ),
                    None => format!(
                        "damaged or cut-off block; {} bytes to the end ignored",
                        len - at
                    ),
                },
            });
            match next {
                Some(q) => at = q,
                None => break,
            }
        }
        Ok(ix)
    }

    /// The next offset after `at` holding an intact block (its checksum read in full).
    fn resync(&self, at: u64, len: u64) -> io::Result<Option<u64>> {
        let window = 4usize << 20;
        let mut from = at + 1;
        while from < len {
            let mut buf = vec![0u8; ((len - from) as usize).min(window + MAX_FRAME as usize + 8)];
            let n = read_full(&self.file, &mut buf, from)?;
            buf.truncate(n);
            for q in 0..buf.len().min(window) {
                if plausible_block(&buf[q..]) && block_at(&buf[q..]).is_ok() {
                    return Ok(Some(from + q as u64));
                }
            }
            from += window as u64;
        }
        Ok(None)
    }

    /// Chunk `i`'s block as the file holds it (its length read first, bounded).
    fn block(&self, i: usize) -> Result<Vec<u8>, String> {
        let (at, _) = self.chunks.get(i).map_err(|e| e.to_string())?;
        let mut lenb = [0u8; 4];
        read_full(&self.file, &mut lenb, at).map_err(|e| e.to_string())?;
        let blen = u32::from_le_bytes(lenb).min(MAX_FRAME) as usize;
        let mut b = vec![0u8; 8 + blen];
        read_full(&self.file, &mut b, at).map_err(|e| e.to_string())?;
        Ok(b)
    }

    /// Chunk `i`'s block has the head it was opened with (an index beside the file that
    /// disagrees with the file is damage, never another chunk's records read as this one's).
    fn agrees(&self, i: usize, head: &ChunkHead) -> Result<(), String> {
        if *head == self.chunks.get(i).map_err(|e| e.to_string())?.1 {
            Ok(())
        } else {
            Err("its head is not the one the chunk index beside the file gives".into())
        }
    }

    /// The records of chunk `i`, with a warning when its summary disagrees with them.
    pub fn chunk(&self, i: usize) -> Result<(Vec<Record>, Option<String>), String> {
        let b = self.block(i)?;
        match block_at(&b) {
            Ok((Block::Chunk(head, z), _)) => {
                self.agrees(i, &head)?;
                decode_chunk(&head, z)
            }
            Ok(_) => Err("not a chunk".into()),
            Err(e) => Err(format!("{e:?}")),
        }
    }

    /// The kind of each record of chunk `i` (decompressed, the other columns left alone):
    /// what a reader that looks for a few kinds of record needs.
    pub fn kinds(&self, i: usize) -> Result<Vec<u8>, String> {
        let (count, raw) = self.raw(i)?;
        super::columns::kinds(&raw, count).map(<[u8]>::to_vec)
    }

    /// The samples of chunk `i`, each with its index among the chunk's records and its time,
    /// the other records left undecoded.
    pub fn samples(&self, i: usize) -> Result<Vec<(usize, u64, crate::Sample)>, String> {
        let (count, raw) = self.raw(i)?;
        super::columns::samples(&raw, count)
    }

    /// Chunk `i`'s record count and its columns decompressed.
    fn raw(&self, i: usize) -> Result<(usize, Vec<u8>), String> {
        let b = self.block(i)?;
        match block_at(&b) {
            Ok((Block::Chunk(head, z), _)) => {
                self.agrees(i, &head)?;
                Ok((head.count as usize, super::decompress(&head, z)?))
            }
            Ok(_) => Err("not a chunk".into()),
            Err(e) => Err(format!("{e:?}")),
        }
    }

    /// The records after the last chunk (the tail of a session still being written, or cut
    /// off by a crash).
    pub fn tail(&self) -> io::Result<Vec<FrameItem>> {
        let len = self.file.metadata()?.len();
        let mut b = vec![0u8; (len.saturating_sub(self.tail_at)) as usize];
        let n = read_full(&self.file, &mut b, self.tail_at)?;
        b.truncate(n);
        Ok(super::Records::new(&b, 0).collect())
    }

    /// [`Index::tail`] after the chunks' records up to sequence number `next_seq` were read,
    /// each record and warning with its offset in the file.
    pub fn tail_after(&self, next_seq: u64) -> io::Result<Vec<FrameItem>> {
        let len = self.file.metadata()?.len();
        let mut b = vec![0u8; (len.saturating_sub(self.tail_at)) as usize];
        let n = read_full(&self.file, &mut b, self.tail_at)?;
        b.truncate(n);
        let at = self.tail_at;
        Ok(super::Records::new(&b, 0)
            .after_seq(next_seq)
            .map(|item| match item {
                FrameItem::Record(o, r) => FrameItem::Record(o + at, r),
                FrameItem::Warning(mut w) => {
                    w.offset = w.offset.map(|o| o + at);
                    FrameItem::Warning(w)
                }
            })
            .collect())
    }

    /// The chunk holding time `t`: the last chunk starting at or before it.
    pub fn seek(&self, t: u64) -> io::Result<usize> {
        Ok(self
            .chunks
            .first_where(|(_, h)| h.t_min > t)?
            .saturating_sub(1))
    }

    /// The envelope of the chunks overlapping `[t0, t1]`, from their summaries.
    pub fn envelope(&self, t0: u64, t1: u64) -> io::Result<Summary> {
        let mut s = Summary::of(&[]);
        for item in self.chunks.iter() {
            let (_, h) = item?;
            if h.t_max < t0 || h.t_min > t1 {
                continue;
            }
            let x = h.summary;
            s.samples += x.samples;
            s.rss_min = s.rss_min.min(x.rss_min);
            s.rss_max = s.rss_max.max(x.rss_max);
            s.peak_max = s.peak_max.max(x.peak_max);
            s.gpu_max = s.gpu_max.max(x.gpu_max);
            s.avail_min = s.avail_min.min(x.avail_min);
        }
        Ok(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunk_heads_kept_in_a_spill_come_back_as_they_were() {
        let head = |i: u64| ChunkHead {
            first_seq: i * 7,
            count: 1 + i as u32,
            t_min: i * 1_000,
            t_max: i * 1_000 + 999,
            raw_len: 3 * i as u32,
            summary: Summary {
                samples: i as u32,
                rss_min: i,
                rss_max: i << 20,
                peak_max: (i << 20) + 1,
                gpu_max: i << 10,
                avail_min: u64::MAX - i,
            },
        };
        let mut s = Spill::<(u64, ChunkHead)>::default();
        let n = Spill::<(u64, ChunkHead)>::block() as u64 * 3 + 5;
        (0..n).for_each(|i| s.push((i * 4096, head(i))));
        assert!(s.on_disk() > 0);
        let back = s.to_vec().unwrap();
        assert_eq!(back.len() as u64, n);
        assert!(back.iter().zip(0..).all(|(x, i)| *x == (i * 4096, head(i))));
    }
}
