//! Reading a session file back: every complete frame, a warning with the byte offset for a
//! cut-off tail or a damaged frame, and resynchronizing on the next frame whose CRC checks.

use std::path::Path;

use super::frame::{
    frame_at, known_kind, possible_len, FrameError, FrameItem, RESYNC_BUDGET_MIN,
    RESYNC_BUDGET_PER_BYTE,
};
use super::header::{estimate_anchors, read_header, Head};
use super::{LoadError, Loaded, SourceKind, Warning};
use crate::record::Record;

pub(super) fn load_session(path: &Path, data: &[u8]) -> Result<Loaded, LoadError> {
    let head = read_header(data).map_err(|e| LoadError::Format {
        path: path.to_path_buf(),
        offset: e.offset,
        detail: e.detail,
    })?;
    if head.header.format == 2 {
        return Ok(super::compact::reader::load_compact(head, data));
    }
    let Head {
        mut header,
        frames_at,
        mut warnings,
        lost_anchors,
    } = head;
    // Fast path: decode the leading run of intact frames on every core, then let the
    // damage-tolerant iterator take over where that run stops (a cut tail, a damaged frame):
    // the result is exactly what the iterator alone would give.
    let (mut records, resume) = decode_intact_run(data, frames_at);
    for item in Frames::new(data, resume) {
        match item {
            FrameItem::Record(_, r) => records.push(r),
            FrameItem::Warning(w) => warnings.push(w),
        }
    }
    if lost_anchors != (false, false) {
        // The file was last written at about its last record.
        let modified = std::fs::metadata(path)
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map(|d| d.as_nanos() as u64);
        estimate_anchors(
            &mut header,
            lost_anchors,
            records.first().map(|r| r.t),
            records.last().map(|r| r.t),
            modified,
        );
    }
    Ok(Loaded {
        header,
        records,
        warnings,
        kind: SourceKind::Session,
    })
}

/// Fewest frames worth spreading over threads.
const PARALLEL_MIN_FRAMES: usize = 4096;

/// Decode the frames from `start` for as long as they are intact, on all cores. Returns the
/// records and the offset of the first frame not decoded (damaged, cut off, or the end).
///
/// Each thread writes its share straight into the result's buffer: no per-thread vectors to
/// copy and fault in twice (on a 1 M-record file that is ~140 MB less memory traffic).
fn decode_intact_run(data: &[u8], start: usize) -> (Vec<Record>, usize) {
    use std::mem::MaybeUninit;
    // Frame boundaries from the length fields alone (cheap); CRCs are checked while decoding.
    let mut offsets = Vec::new();
    let mut pos = start;
    while pos + 8 <= data.len() {
        let len = u32::from_le_bytes(data[pos..pos + 4].try_into().expect("4 bytes"));
        if !possible_len(len) || pos + 8 + len as usize > data.len() {
            break;
        }
        offsets.push(pos);
        pos += 8 + len as usize;
    }
    let end = pos;
    // Decode a share of the offsets into its slots; returns how many slots were written and
    // the offset of the frame that failed, if one did (decoding stops there).
    let decode = |offs: &[usize], slots: &mut [MaybeUninit<Record>]| -> (usize, Option<usize>) {
        for (n, (&o, slot)) in offs.iter().zip(slots.iter_mut()).enumerate() {
            match frame_at(&data[o..]) {
                Ok((rec, _)) => {
                    slot.write(rec);
                }
                Err(_) => return (n, Some(o)),
            }
        }
        (offs.len(), None)
    };
    let threads = if offsets.len() < PARALLEL_MIN_FRAMES {
        1
    } else {
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
            .min(8)
    };
    let per = offsets.len().div_ceil(threads).max(1);
    let mut records: Vec<Record> = Vec::with_capacity(offsets.len());
    let spare = &mut records.spare_capacity_mut()[..offsets.len()];
    let results: Vec<(usize, Option<usize>)> = std::thread::scope(|s| {
        let mut shares = offsets.chunks(per).zip(spare.chunks_mut(per));
        let first = shares.next();
        let handles: Vec<_> = shares
            .map(|(offs, slots)| s.spawn(move || decode(offs, slots)))
            .collect();
        // The first share is decoded on this thread.
        let mut results = vec![first.map_or((0, None), |(offs, slots)| decode(offs, slots))];
        results.extend(
            handles
                .into_iter()
                .map(|h| h.join().expect("decoding a frame does not panic")),
        );
        results
    });
    // The result is the longest initialized prefix: every share up to the first one that
    // stopped at a bad frame, plus that share's written slots. Later shares' records are
    // dropped; the sequential reader resumes at the bad frame and yields them again.
    let spare = &mut records.spare_capacity_mut()[..offsets.len()];
    let mut len = 0;
    let mut resume = None;
    for (k, &(written, failed)) in results.iter().enumerate() {
        if resume.is_none() {
            len += written;
            resume = failed;
        } else {
            for slot in &mut spare[k * per..k * per + written] {
                // SAFETY: `decode` initialized the first `written` slots of share k (it writes
                // slots in order and counts them); they are not part of the exposed prefix, so
                // this is their only drop.
                unsafe { slot.assume_init_drop() };
            }
        }
    }
    // SAFETY: shares before the first failing one are fully written (`written` equals the
    // share length), and the failing share (if any) wrote its first `written` slots, so slots
    // 0..len are initialized and contiguous; capacity ≥ offsets.len() ≥ len.
    unsafe { records.set_len(len) };
    (records, resume.unwrap_or(end))
}

/// Iterates the frames of a session file's bytes, surviving damage.
///
/// Resynchronizing checks the CRC of every candidate frame, each up to
/// [`super::MAX_FRAME`] bytes: a crafted file whose every offset looks like the start of a
/// long frame would cost that much per byte. The bytes checked while resynchronizing are bounded by
/// [`RESYNC_BUDGET_PER_BYTE`] times the file's size (plus [`RESYNC_BUDGET_MIN`]); past that,
/// the rest of the file is reported as damaged and ignored.
pub struct Frames<'a> {
    data: &'a [u8],
    pos: usize,
    budget: u64,
    /// File offset of `data[0]` (0 unless reading the rest of a file).
    base: usize,
}

impl<'a> Frames<'a> {
    /// Start at byte `pos` (just after the header).
    pub fn new(data: &'a [u8], pos: usize) -> Self {
        Frames {
            data,
            pos,
            budget: RESYNC_BUDGET_MIN
                .saturating_add((data.len() as u64).saturating_mul(RESYNC_BUDGET_PER_BYTE)),
            base: 0,
        }
    }

    /// The frames of `rest`, the bytes of a file of `file_len` bytes from offset `base` on:
    /// what [`Frames::new`] over the whole file gives from `base` (the same offsets, the
    /// same resynchronization budget).
    pub fn rest_of(rest: &'a [u8], base: usize, file_len: u64) -> Self {
        Frames {
            data: rest,
            pos: 0,
            budget: RESYNC_BUDGET_MIN
                .saturating_add(file_len.saturating_mul(RESYNC_BUDGET_PER_BYTE)),
            base,
        }
    }

    /// The first offset after `at` that holds a complete, valid frame; `Err` when the budget
    /// ran out first (with the offset it stopped at).
    fn resync(&mut self, at: usize) -> Result<Option<usize>, usize> {
        for p in at + 1..self.data.len().saturating_sub(7) {
            // What checking this candidate costs: its length, when the length and kind are
            // plausible (the cheap checks of `frame_at`).
            let rest = &self.data[p..];
            let len = u32::from_le_bytes(rest[0..4].try_into().expect("4 bytes"));
            if !possible_len(len) || rest.len() < 8 + len as usize {
                continue;
            }
            if !known_kind(rest[8]) {
                continue;
            }
            if self.budget < u64::from(len) {
                self.budget = 0;
                return Err(p);
            }
            self.budget -= u64::from(len);
            if frame_at(&self.data[p..]).is_ok() {
                return Ok(Some(p));
            }
        }
        Ok(None)
    }

    /// The rest of the file from `at` given up on: too damaged to resynchronize cheaply.
    fn give_up(&mut self, at: usize, why: &str) -> FrameItem {
        self.pos = self.data.len();
        FrameItem::Warning(Warning {
            offset: Some((self.base + at) as u64),
            line: None,
            message: format!(
                "damaged record ({why}); looking for the next intact record took too long, {} bytes to the end ignored",
                self.data.len() - at
            ),
        })
    }
}

impl Iterator for Frames<'_> {
    type Item = FrameItem;
    fn next(&mut self) -> Option<FrameItem> {
        if self.pos >= self.data.len() {
            return None;
        }
        let at = self.pos;
        match frame_at(&self.data[at..]) {
            Ok((rec, len)) => {
                self.pos += len;
                Some(FrameItem::Record((self.base + at) as u64, rec))
            }
            Err(FrameError::Incomplete) => {
                // A damaged length in the middle also "runs past the end": it is only a cut
                // tail if no valid frame follows.
                match self.resync(at) {
                    Err(_) => Some(self.give_up(at, "length runs past the end of the file")),
                    Ok(Some(p)) => {
                        self.pos = p;
                        Some(FrameItem::Warning(Warning {
                            offset: Some((self.base + at) as u64),
                            line: None,
                            message: format!(
                                "damaged record (length runs past the end of the file); skipped {} bytes, resumed at byte {}",
                                p - at,
                                self.base + p
                            ),
                        }))
                    }
                    Ok(None) => {
                        self.pos = self.data.len();
                        Some(FrameItem::Warning(Warning {
                            offset: Some((self.base + at) as u64),
                            line: None,
                            message: format!(
                                "file cut off inside a record ({} trailing bytes ignored)",
                                self.data.len() - at
                            ),
                        }))
                    }
                }
            }
            Err(FrameError::Bad(why)) => {
                // Resynchronize: the next offset holding a complete frame whose CRC checks.
                let (p, message) = match self.resync(at) {
                    Err(_) => return Some(self.give_up(at, &why)),
                    Ok(Some(p)) => (
                        p,
                        format!(
                            "damaged record ({why}); skipped {} bytes, resumed at byte {}",
                            p - at,
                            self.base + p
                        ),
                    ),
                    Ok(None) => (
                        self.data.len(),
                        format!(
                            "damaged record ({why}); {} bytes to the end ignored",
                            self.data.len() - at
                        ),
                    ),
                };
                self.pos = p;
                Some(FrameItem::Warning(Warning {
                    offset: Some((self.base + at) as u64),
                    line: None,
                    message,
                }))
            }
        }
    }
}
