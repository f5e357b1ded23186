//! Format 2: compact sessions, compressed chunks of columns with a summary each, and an
//! uncompressed tail of the records not yet in a chunk.
//!
//! ```text
//! magic    8 bytes   "PTSESS\0\x02"
//! header   u32 LE length, then that many bytes of JSON (SessionHeader, format 2)
//! blocks   repeated: u32 LE body length, u32 LE CRC-32 of the body, body
//! body     b'C' chunk: u64 first_seq, u32 count, u64 t_min, u64 t_max, u32 raw_len,
//!                      summary (u32 samples, u64 rss_min, u64 rss_max, u64 peak_max,
//!                      u64 gpu_max, u64 avail_min), zstd frame of `raw_len` bytes of columns
//!          b'T' tail record: u64 seq, a format-1 payload (kind, t, body)
//! ```
//! Every record has a sequence number (its index in the session). The writer appends each
//! record as a tail block (pushed to the kernel at least twice a second: a kill -9 loses
//! what a format-1 file loses), and every few thousand records (or minutes) it commits them
//! as one chunk: the chunk is appended after the tail, then copied over the tail's start
//! and the file cut after the copy ([`super::SessionWriter`]). At every instant of that dance the file
//! holds each record at least once, whole: readers take a chunk's records, tail records not
//! in a chunk, each sequence number once, and read past a torn copy as damage.
//!
//! Beside the file the writer keeps the chunks' places and heads, appended as each chunk is
//! committed ([`sidecar`], `NAME.ptop.idx`): a reader opens a session of weeks with one read
//! of it instead of one per chunk. It is a cache: a session without it reads the same.
//!
//! A chunk's summary is the envelope of its samples (the true extremes, no rounding): views
//! zoomed out past a chunk draw from summaries without decompressing; a reader that decodes
//! a chunk checks the summary against the samples and warns when they disagree.
//!
//! Bounds: a body is at most [`super::MAX_FRAME`] bytes, a chunk's columns at most
//! [`MAX_RAW`] bytes (decompression stops there: a bomb costs that much) and
//! [`MAX_CHUNK_RECORDS`] records.

mod columns;
pub mod growing;
pub mod index;
pub mod reader;
pub mod sidecar;
#[cfg(test)]
mod tests;

pub use columns::Pending;
pub use reader::Records;

use super::frame::{decode_payload, encode_payload, FrameError};
use super::MAX_FRAME;
use crate::record::{Record, RecordBody};

/// First bytes of a compact session file.
pub const MAGIC2: &[u8; 8] = b"PTSESS\0\x02";
/// Largest uncompressed chunk a reader accepts.
pub const MAX_RAW: u32 = 16 << 20;
/// Most records a chunk may hold.
pub const MAX_CHUNK_RECORDS: u32 = 1 << 16;
/// Bytes of a chunk body before its compressed columns.
pub const CHUNK_HEAD: usize = 1 + 8 + 4 + 8 + 8 + 4 + SUMMARY_LEN;
/// Bytes of a [`Summary`] in a chunk head.
pub const SUMMARY_LEN: usize = 4 + 5 * 8;

/// The envelope of a chunk's samples.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Summary {
    /// Samples in the chunk.
    pub samples: u32,
    /// Least RSS (`u64::MAX` without samples).
    pub rss_min: u64,
    /// Greatest RSS.
    pub rss_max: u64,
    /// Greatest of the interval peaks (VmHWM), or of RSS where no peak was read.
    pub peak_max: u64,
    /// Greatest GPU memory of the tree (0 when none was read).
    pub gpu_max: u64,
    /// Least MemAvailable (`u64::MAX` when none was read).
    pub avail_min: u64,
}

impl Summary {
    /// The envelope of `records`' samples.
    pub fn of(records: &[Record]) -> Summary {
        Summary::of_samples(records.iter().filter_map(|r| match &r.body {
            RecordBody::Sample(x) => Some(x),
            _ => None,
        }))
    }

    /// The envelope of `samples`.
    pub fn of_samples<'a>(samples: impl Iterator<Item = &'a crate::record::Sample>) -> Summary {
        let mut s = Summary {
            samples: 0,
            rss_min: u64::MAX,
            rss_max: 0,
            peak_max: 0,
            gpu_max: 0,
            avail_min: u64::MAX,
        };
        for x in samples {
            s.samples += 1;
            s.rss_min = s.rss_min.min(x.rss);
            s.rss_max = s.rss_max.max(x.rss);
            s.peak_max = s.peak_max.max(x.peak.unwrap_or(x.rss).max(x.rss));
            s.gpu_max = s.gpu_max.max(x.gpu_used.unwrap_or(0));
            s.avail_min = s.avail_min.min(x.mem_available.unwrap_or(u64::MAX));
        }
        s
    }

    /// Its bytes as a chunk head holds them ([`SUMMARY_LEN`]).
    pub fn put(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.samples.to_le_bytes());
        for v in [
            self.rss_min,
            self.rss_max,
            self.peak_max,
            self.gpu_max,
            self.avail_min,
        ] {
            out.extend_from_slice(&v.to_le_bytes());
        }
    }

    /// The summary [`Summary::put`] wrote at the start of `b`.
    pub fn get(b: &[u8]) -> Summary {
        let u = |i: usize| le64(&b[4 + 8 * i..]);
        Summary {
            samples: le32(b),
            rss_min: u(0),
            rss_max: u(1),
            peak_max: u(2),
            gpu_max: u(3),
            avail_min: u(4),
        }
    }
}

/// What a chunk says of itself, readable without decompressing it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChunkHead {
    /// Sequence number of its first record.
    pub first_seq: u64,
    /// Records in it.
    pub count: u32,
    /// Earliest and latest record time.
    pub t_min: u64,
    /// Latest record time.
    pub t_max: u64,
    /// Bytes of its columns, uncompressed.
    pub raw_len: u32,
    /// The envelope of its samples.
    pub summary: Summary,
}

impl ChunkHead {
    /// Its [`CHUNK_HEAD`] bytes as a chunk's body starts (`b'C'` first).
    pub fn put(&self, out: &mut Vec<u8>) {
        out.push(b'C');
        out.extend_from_slice(&self.first_seq.to_le_bytes());
        out.extend_from_slice(&self.count.to_le_bytes());
        out.extend_from_slice(&self.t_min.to_le_bytes());
        out.extend_from_slice(&self.t_max.to_le_bytes());
        out.extend_from_slice(&self.raw_len.to_le_bytes());
        self.summary.put(out);
    }

    /// The head [`ChunkHead::put`] wrote at the start of `body`, unchecked ([`chunk_head`]
    /// checks a head read from a file).
    pub fn get(body: &[u8]) -> ChunkHead {
        ChunkHead {
            first_seq: le64(&body[1..]),
            count: le32(&body[9..]),
            t_min: le64(&body[13..]),
            t_max: le64(&body[21..]),
            raw_len: le32(&body[29..]),
            summary: Summary::get(&body[33..]),
        }
    }
}

/// One block of a compact session.
#[derive(Debug)]
// Not boxed: a tail record is moved straight out.
#[allow(clippy::large_enum_variant)]
pub enum Block<'a> {
    /// A chunk, not yet decompressed: its head and compressed columns.
    Chunk(ChunkHead, &'a [u8]),
    /// A record of the tail.
    Tail(u64, Record),
}

fn le32(b: &[u8]) -> u32 {
    u32::from_le_bytes([b[0], b[1], b[2], b[3]])
}

fn le64(b: &[u8]) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[..8]);
    u64::from_le_bytes(a)
}

/// Whether the bytes at the start of `b` could begin a block (length possible, type known):
/// the cheap test before a checksum while resynchronizing.
pub fn plausible_block(b: &[u8]) -> bool {
    b.len() >= 9 && (10..=MAX_FRAME).contains(&le32(b)) && matches!(b[8], b'C' | b'T')
}

/// The block at the start of `b` and its length in bytes, as [`super::frame_at`] does for
/// format 1: `Incomplete` when the bytes end first, `Bad` for damage.
pub fn block_at(b: &[u8]) -> Result<(Block<'_>, usize), FrameError> {
    if b.len() < 9 {
        return Err(FrameError::Incomplete);
    }
    let len = le32(b);
    if !(10..=MAX_FRAME).contains(&len) {
        return Err(FrameError::Bad(format!("impossible block length {len}")));
    }
    if !matches!(b[8], b'C' | b'T') {
        return Err(FrameError::Bad(format!("unknown block type {}", b[8])));
    }
    let end = 8 + len as usize;
    if b.len() < end {
        return Err(FrameError::Incomplete);
    }
    let body = &b[8..end];
    if crc32fast::hash(body) != le32(&b[4..]) {
        return Err(FrameError::Bad("checksum mismatch".into()));
    }
    if body[0] == b'T' {
        let seq = le64(&body[1..]);
        let rec = decode_payload(&body[9..]).map_err(FrameError::Bad)?;
        return Ok((Block::Tail(seq, rec), end));
    }
    let head = chunk_head(body).map_err(FrameError::Bad)?;
    Ok((Block::Chunk(head, &body[CHUNK_HEAD..]), end))
}

/// The head of a chunk from the start of its body (`b'C'` first), checked for possible
/// counts and lengths; the compressed columns follow at [`CHUNK_HEAD`].
pub fn chunk_head(body: &[u8]) -> Result<ChunkHead, String> {
    if body.len() < CHUNK_HEAD || body[0] != b'C' {
        return Err(format!(
            "chunk of {} bytes is shorter than its head",
            body.len()
        ));
    }
    let head = ChunkHead::get(body);
    if head.count == 0 || head.count > MAX_CHUNK_RECORDS || head.raw_len > MAX_RAW {
        return Err(format!(
            "impossible chunk of {} records in {} bytes",
            head.count, head.raw_len
        ));
    }
    Ok(head)
}

/// A tail block holding `rec` as record `seq`.
pub fn tail_block(seq: u64, rec: &Record) -> Vec<u8> {
    tail_block_of(seq, &encode_payload(rec))
}

/// A tail block holding the record whose format-1 payload is `payload` as record `seq`.
pub fn tail_block_of(seq: u64, payload: &[u8]) -> Vec<u8> {
    let mut body = Vec::with_capacity(9 + payload.len());
    body.push(b'T');
    body.extend_from_slice(&seq.to_le_bytes());
    body.extend_from_slice(payload);
    framed(&body)
}

fn framed(body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(8 + body.len());
    out.extend_from_slice(&(body.len() as u32).to_le_bytes());
    out.extend_from_slice(&crc32fast::hash(body).to_le_bytes());
    out.extend_from_slice(body);
    out
}

/// zstd level of chunks: the writer compresses a chunk every few minutes, so a level above
/// the default costs little CPU; higher levels' tables would cost the recorder several MiB
/// more at every commit for a few per cent of size.
const LEVEL: i32 = 6;

/// A chunk block holding `records` (at most [`MAX_CHUNK_RECORDS`]) from sequence number
/// `first_seq`.
pub fn chunk_block(first_seq: u64, records: &[Record]) -> std::io::Result<Vec<u8>> {
    let mut p = Pending::default();
    for r in records {
        p.push(r, &encode_payload(r));
    }
    pending_chunk(first_seq, &p, 0, p.len())
}

/// A chunk block of records `a..b` of `p` (at most [`MAX_CHUNK_RECORDS`]), the first being
/// record `first_seq`.
pub fn pending_chunk(first_seq: u64, p: &Pending, a: usize, b: usize) -> std::io::Result<Vec<u8>> {
    let raw = p.encode(a, b);
    let raw_len = u32::try_from(raw.len())
        .ok()
        .filter(|&n| n <= MAX_RAW)
        .ok_or_else(|| std::io::Error::other("chunk too large"))?;
    let z = zstd::bulk::compress(&raw, LEVEL)?;
    let mut body = Vec::with_capacity(CHUNK_HEAD + z.len());
    let times = p.times(a, b);
    ChunkHead {
        first_seq,
        count: (b - a) as u32,
        t_min: times.iter().copied().min().unwrap_or(0),
        t_max: times.iter().copied().max().unwrap_or(0),
        raw_len,
        summary: p.summary(a, b),
    }
    .put(&mut body);
    body.extend_from_slice(&z);
    Ok(framed(&body))
}

/// A chunk's records, decompressed and decoded; `Err` says what was wrong. A summary or
/// time range that disagrees with the records is the second value (the records are kept:
/// they are what was recorded, the summary only a digest of them).
pub fn decode_chunk(head: &ChunkHead, z: &[u8]) -> Result<(Vec<Record>, Option<String>), String> {
    let raw = decompress(head, z)?;
    let records = columns::decode(&raw, head.count as usize)?;
    let t_min = records.iter().map(|r| r.t).min().unwrap_or(0);
    let t_max = records.iter().map(|r| r.t).max().unwrap_or(0);
    let disagree = if Summary::of(&records) != head.summary {
        Some("the chunk's summary disagrees with its records (records kept)".to_string())
    } else if (t_min, t_max) != (head.t_min, head.t_max) {
        Some("the chunk's time range disagrees with its records (records kept)".to_string())
    } else {
        None
    };
    Ok((records, disagree))
}

/// A chunk's columns decompressed, exactly the length its head states (`Err` says why not).
pub(crate) fn decompress(head: &ChunkHead, z: &[u8]) -> Result<Vec<u8>, String> {
    // Decompression writes into a buffer of the stated size and fails past it: a bomb costs
    // at most MAX_RAW bytes.
    let raw = zstd::bulk::decompress(z, head.raw_len as usize)
        .map_err(|e| format!("chunk does not decompress: {e}"))?;
    if raw.len() != head.raw_len as usize {
        return Err(format!(
            "chunk decompresses to {} bytes, its head says {}",
            raw.len(),
            head.raw_len
        ));
    }
    Ok(raw)
}

/// Read up to `buf.len()` bytes at `at`, as many as the file holds there (a short count only at
/// its end): what every reader of a file still being written needs.
pub(crate) fn read_full(file: &std::fs::File, buf: &mut [u8], at: u64) -> std::io::Result<usize> {
    use std::os::unix::fs::FileExt as _;
    let mut n = 0;
    while n < buf.len() {
        match file.read_at(&mut buf[n..], at + n as u64) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}
