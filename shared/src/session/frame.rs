//! One frame of a session file, read from the start of a byte slice: the one frame parser of
//! both readers, the whole-file reader ([`super::Frames`]) and the follower of a file still
//! being written (`provetop attach`, `replay --follow`).
//!
//! Contract: [`frame_at`] gives the record of a complete frame whose length is possible, whose
//! kind this build knows, whose CRC checks and whose payload decodes, with the frame's length;
//! [`FrameError::Incomplete`] when the bytes end before the frame does (a cut tail, or a frame
//! the writer has not finished); [`FrameError::Bad`] with the reason for anything else. What
//! to do about either (warn, resynchronize, wait) is the reader's.

use super::{Warning, MAX_FRAME};
use crate::record::{Record, RecordBody, Sample};

/// The highest record kind byte this build knows (6 output, 7 derived, 8 usage and 9 kernel came after
/// the first files; files without them read as before).
const MAX_KIND: u8 = 9;

/// Why the bytes at an offset are not a frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FrameError {
    /// Fewer bytes than the frame's head, or than its length says.
    Incomplete,
    /// Damage: an impossible length, an unknown kind, a checksum mismatch, a payload that does
    /// not decode.
    Bad(String),
}

/// Whether `kind` is a record kind this build reads (a payload's first byte).
pub fn known_kind(kind: u8) -> bool {
    (1..=MAX_KIND).contains(&kind)
}

/// Whether a payload length is possible: at least a kind and a time, at most [`MAX_FRAME`].
pub fn possible_len(len: u32) -> bool {
    (9..=MAX_FRAME).contains(&len)
}

/// The frame at the start of `b`: its record and its length in bytes (head included).
pub fn frame_at(b: &[u8]) -> Result<(Record, usize), FrameError> {
    if b.len() < 8 {
        return Err(FrameError::Incomplete);
    }
    let len = u32::from_le_bytes(b[0..4].try_into().expect("4 bytes"));
    let crc = u32::from_le_bytes(b[4..8].try_into().expect("4 bytes"));
    if !possible_len(len) {
        return Err(FrameError::Bad(format!("impossible record length {len}")));
    }
    let end = 8 + len as usize;
    if b.len() < end {
        return Err(FrameError::Incomplete);
    }
    // A kind byte this reader does not know is damage; checking it before the CRC keeps
    // resynchronization over garbage cheap (most candidate offsets fail here).
    if !known_kind(b[8]) {
        return Err(FrameError::Bad(format!("unknown record kind {}", b[8])));
    }
    let payload = &b[8..end];
    if crc32fast::hash(payload) != crc {
        return Err(FrameError::Bad("checksum mismatch".into()));
    }
    let rec = decode_payload(payload).map_err(FrameError::Bad)?;
    Ok((rec, end))
}

/// Decode a payload written by [`super::encode_payload`].
pub fn decode_payload(p: &[u8]) -> Result<Record, String> {
    if p.len() < 9 {
        return Err(format!("payload of {} bytes is too short", p.len()));
    }
    let t = u64::from_le_bytes(p[1..9].try_into().expect("8 bytes"));
    let b = &p[9..];
    let je = |e: serde_json::Error| e.to_string();
    let body = match p[0] {
        1 => RecordBody::Sample(postcard::from_bytes::<Sample>(b).map_err(|e| e.to_string())?),
        2 => RecordBody::Event(serde_json::from_slice(b).map_err(je)?),
        3 => RecordBody::Alert(serde_json::from_slice(b).map_err(je)?),
        4 => RecordBody::Control(serde_json::from_slice(b).map_err(je)?),
        5 => RecordBody::Mark(serde_json::from_slice(b).map_err(je)?),
        6 => RecordBody::Output(serde_json::from_slice(b).map_err(je)?),
        7 => RecordBody::Derived(serde_json::from_slice(b).map_err(je)?),
        8 => RecordBody::Usage(serde_json::from_slice(b).map_err(je)?),
        9 => RecordBody::Kernel(serde_json::from_slice(b).map_err(je)?),
        k => return Err(format!("unknown record kind {k}")),
    };
    Ok(Record { t, body })
}

/// Encode a record's payload (kind, t, body).
pub fn encode_payload(rec: &Record) -> Vec<u8> {
    let mut p = Vec::with_capacity(128);
    let (kind, body): (u8, Vec<u8>) = match &rec.body {
        RecordBody::Sample(s) => (1, postcard::to_stdvec(s).expect("sample encodes")),
        RecordBody::Event(e) => (2, serde_json::to_vec(e).expect("event encodes")),
        RecordBody::Alert(a) => (3, serde_json::to_vec(a).expect("alert encodes")),
        RecordBody::Control(c) => (4, serde_json::to_vec(c).expect("control encodes")),
        RecordBody::Mark(m) => (5, serde_json::to_vec(m).expect("mark encodes")),
        RecordBody::Output(o) => (6, serde_json::to_vec(o).expect("output encodes")),
        RecordBody::Derived(d) => (7, serde_json::to_vec(d).expect("derived encodes")),
        RecordBody::Usage(u) => (8, serde_json::to_vec(u).expect("usage encodes")),
        RecordBody::Kernel(k) => (9, serde_json::to_vec(k).expect("kernel encodes")),
    };
    p.push(kind);
    p.extend_from_slice(&rec.t.to_le_bytes());
    p.extend_from_slice(&body);
    p
}

/// What the readers of a whole file yield ([`super::Frames`], [`super::compact::Records`]).
#[derive(Debug)]
// Not boxed: records move straight into the loaded Vec; a Box per record would cost an
// allocation each on the load path that opens a million records.
#[allow(clippy::large_enum_variant)]
pub enum FrameItem {
    /// A record and the byte offset of its frame.
    Record(u64, Record),
    /// A damaged or cut-off stretch.
    Warning(Warning),
}

/// Bytes a resynchronization may check per byte of the file (see [`super::Frames`]).
pub const RESYNC_BUDGET_PER_BYTE: u64 = 8;
/// Bytes a resynchronization may always check (see [`super::Frames`]).
pub const RESYNC_BUDGET_MIN: u64 = 256 << 20;
