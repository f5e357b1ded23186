//! The chunk index kept beside a compact session (`NAME.ptop.idx`): each committed chunk's
//! place and head, so that opening a session of weeks is one read of this file, not one read
//! per chunk, each found from the one before (below's store keeps its index beside its data
//! the same way).
//!
//! ```text
//! magic    8 bytes   "PTIDX\0\0\x01"
//! session  u32 LE CRC-32 of the session's first bytes up to its first block (magic, header)
//! entries  repeated, 97 bytes: u64 LE offset of the chunk's block, the block's first
//!          8 + CHUNK_HEAD bytes (length, checksum, head), u32 LE CRC-32 of those 93 bytes
//! ```
//!
//! Contract: the index is a cache, never the record. The writer appends an entry only once
//! its chunk is in place for good, and gives the index up (removing it) at the first failed
//! write, so a session without one, or with one cut short, still reads whole: [`read`] takes
//! the entries up to the first that is torn, impossible or not just after the one before
//! (chunks lie back to back from the header), and only when the file's own heads
//! agree with the index at its last entry and at a few spread over it; a reader then walks
//! the session's blocks from the end of the last entry, as it walks a session without one.
//! An index of another file (its session's first bytes differ) is never used.

use std::fs::File;
use std::io::{self, Write as _};
use std::path::{Path, PathBuf};

use super::{chunk_head, le32, le64, plausible_block, read_full, ChunkHead, CHUNK_HEAD};
use crate::spill::Spill;

/// First bytes of a chunk index.
pub const MAGIC: &[u8; 8] = b"PTIDX\0\0\x01";
/// The bytes of a block that an entry copies: its length, checksum and chunk head.
const HEAD: usize = 8 + CHUNK_HEAD;
/// Bytes of one entry.
pub const ENTRY: usize = 8 + HEAD + 4;
/// Entries checked against the session's own heads, besides the last.
const CHECKS: usize = 8;

/// Where the index of the session at `session` is kept.
pub fn path_of(session: &Path) -> PathBuf {
    let mut s = session.as_os_str().to_owned();
    s.push(".idx");
    PathBuf::from(s)
}

/// What identifies a session to its index: the CRC-32 of its bytes before its first block.
pub fn session_crc(start: &[u8]) -> u32 {
    crc32fast::hash(start)
}

/// Appends entries to a session's index.
pub struct IndexWriter {
    file: File,
    path: PathBuf,
}

impl IndexWriter {
    /// Start the index at `path` (just created: [`path_of`] the session) of the session
    /// whose bytes before its first block are `start`. `None` when it cannot be written (the
    /// file is removed): the session is recorded without it.
    pub fn start(mut file: File, path: PathBuf, start: &[u8]) -> Option<IndexWriter> {
        let mut first = Vec::with_capacity(12);
        first.extend_from_slice(MAGIC);
        first.extend_from_slice(&session_crc(start).to_le_bytes());
        if file.write_all(&first).is_err() {
            let _ = std::fs::remove_file(&path);
            return None;
        }
        Some(IndexWriter { file, path })
    }

    /// Add the chunk whose block starts at `at` and begins with `block` (at least its
    /// length, checksum and head). On failure the index is removed: the caller drops it.
    pub fn add(&mut self, at: u64, block: &[u8]) -> io::Result<()> {
        let Some(head) = block.get(..HEAD) else {
            return Err(io::Error::other("a block shorter than a chunk's head"));
        };
        let mut e = Vec::with_capacity(ENTRY);
        e.extend_from_slice(&at.to_le_bytes());
        e.extend_from_slice(head);
        e.extend_from_slice(&crc32fast::hash(&e).to_le_bytes());
        // One write per entry: a torn one is where a reader stops.
        self.file.write_all(&e).inspect_err(|_| self.remove())
    }

    /// Give the index up: remove its file.
    pub fn remove(&self) {
        let _ = std::fs::remove_file(&self.path);
    }

    /// The session was renamed to `session`: take the index along (`false` when it could
    /// not be: the caller drops it).
    pub fn moved_to(&mut self, session: &Path) -> bool {
        let to = path_of(session);
        if std::fs::rename(&self.path, &to).is_ok() {
            self.path = to;
            return true;
        }
        self.remove();
        false
    }
}

/// The chunks the index beside `path` gives for the session open as `file` (`len` bytes,
/// its bytes before the first block being `start`): each chunk's offset and head, in file
/// order, and the offset just after the last. `None` when there is no index, or it is of
/// another file, or the session's own heads disagree with it. Reads the index a block of
/// entries at a time, the chunks going to a [`Spill`]: a month's index costs no memory.
pub fn read(
    path: &Path,
    file: &File,
    len: u64,
    start: &[u8],
) -> Option<(Spill<(u64, ChunkHead)>, u64)> {
    let ix = File::open(path_of(path)).ok()?;
    // An entry per chunk, a chunk at least a head long: a longer index is not this file's.
    let most = 12 + (len / HEAD as u64 + 1) * ENTRY as u64;
    let size = ix.metadata().ok()?.len().min(most);
    let mut first = [0u8; 12];
    if read_full(&ix, &mut first, 0).ok()? < 12
        || &first[..8] != MAGIC
        || le32(&first[8..]) != session_crc(start)
    {
        return None;
    }
    let mut chunks = Spill::default();
    let mut next = start.len() as u64;
    let mut b = vec![0u8; ENTRY * 512];
    let mut pos = 12u64;
    'entries: while pos < size {
        let want = ((size - pos) as usize).min(b.len());
        let got = read_full(&ix, &mut b[..want], pos).ok()?;
        for e in b[..got].chunks_exact(ENTRY) {
            match entry(e, next, len) {
                Some((at, h, end)) => {
                    chunks.push((at, h));
                    next = end;
                }
                None => break 'entries,
            }
        }
        if got < want || got % ENTRY != 0 {
            break;
        }
        pos += got as u64;
    }
    // The session's own heads must be those the index gives: at the last entry (the one a
    // crash or a replaced file would leave wrong first) and a few spread over the rest.
    let n = chunks.len();
    let picks = (0..CHECKS).map(|k| k * n / CHECKS).chain(n.checked_sub(1));
    let (mut mine, mut theirs) = ([0u8; ENTRY], [0u8; HEAD]);
    for i in picks.filter(|&i| i < n) {
        let at = 12 + (i * ENTRY) as u64;
        if read_full(&ix, &mut mine, at).ok()? != ENTRY
            || read_full(file, &mut theirs, le64(&mine)).ok()? != HEAD
            || theirs[..] != mine[8..8 + HEAD]
        {
            return None;
        }
    }
    Some((chunks, next))
}

/// An entry's chunk (offset, head, and the offset after its block), where it is intact and
/// its chunk starts at `next`, the end of the one before (chunks lie back to back from the
/// header: an entry elsewhere, a gap left by an entry not written, ends what the index
/// gives, and the rest is walked), within the session's `len` bytes.
fn entry(e: &[u8], next: u64, len: u64) -> Option<(u64, ChunkHead, u64)> {
    if crc32fast::hash(&e[..8 + HEAD]) != le32(&e[8 + HEAD..]) {
        return None;
    }
    let (at, head) = (le64(e), &e[8..8 + HEAD]);
    let end = at + 8 + u64::from(le32(head));
    if at != next || end > len || !plausible_block(head) {
        return None;
    }
    Some((at, chunk_head(&head[8..]).ok()?, end))
}

#[cfg(test)]
mod tests {
    use super::super::index::Index;
    use super::super::tests::{records, write};
    use super::*;

    /// Everything an open gives of a session: its chunks, where its tail starts, its
    /// warnings, and each chunk's record count (or why it does not read).
    type Opened = (
        Vec<(u64, ChunkHead)>,
        u64,
        usize,
        Vec<Result<usize, String>>,
    );

    fn opened(p: &Path) -> Opened {
        let ix = Index::open(p).unwrap();
        let decoded = (0..ix.chunks.len())
            .map(|i| ix.chunk(i).map(|(r, _)| r.len()))
            .collect();
        (
            ix.chunks.to_vec().unwrap(),
            ix.tail_at,
            ix.warnings.len(),
            decoded,
        )
    }

    /// What the same session gives walked chunk by chunk, its index set aside.
    fn walked(p: &Path) -> Opened {
        let aside = p.with_extension("aside");
        std::fs::rename(path_of(p), &aside).unwrap();
        let w = opened(p);
        std::fs::rename(&aside, path_of(p)).unwrap();
        w
    }

    fn entries(p: &Path) -> usize {
        (std::fs::metadata(path_of(p)).unwrap().len() as usize - 12) / ENTRY
    }

    /// A session of chunks, the last of them not in its index, and a tail; the chunks its
    /// index names.
    fn session(dir: &Path) -> (std::path::PathBuf, usize) {
        let p = dir.join("s.ptop");
        let recs = records(12 * 8192 + 300);
        let mut w = write(&p, &recs[..11 * 8192], true);
        let n = entries(&p);
        assert!(n >= 11, "{n}");
        // A chunk past the index's end (as a crash between the commit and its entry leaves).
        let keep = std::fs::read(path_of(&p)).unwrap();
        for r in &recs[11 * 8192..12 * 8192] {
            w.append(r).unwrap();
        }
        w.sync().unwrap();
        std::fs::write(path_of(&p), keep).unwrap();
        for r in &recs[12 * 8192..] {
            w.append(r).unwrap();
        }
        w.flush().unwrap();
        (p, n)
    }

    #[test]
    fn a_session_opens_from_its_chunk_index_exactly_as_by_walking_its_chunks() {
        let dir = tempfile::tempdir().unwrap();
        let (p, n) = session(dir.path());
        let (ix, walk) = (opened(&p), walked(&p));
        assert!(ix.0.len() > n);
        assert_eq!(ix, walk);
        assert!(ix.3.iter().all(|r| r.as_ref().is_ok_and(|&k| k > 0)));
        // The index is the session's, and private like it.
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(path_of(&p)).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    #[test]
    fn an_index_cut_short_torn_or_with_a_gap_is_used_only_up_to_there() {
        let dir = tempfile::tempdir().unwrap();
        let (p, _) = session(dir.path());
        let walk = walked(&p);
        let whole = std::fs::read(path_of(&p)).unwrap();
        for cut in [0, 5, 12, 12 + ENTRY, 12 + 4 * ENTRY + 50] {
            std::fs::write(path_of(&p), &whole[..cut]).unwrap();
            assert_eq!(opened(&p), walk, "cut at {cut}");
        }
        // A torn entry in the middle: the entries after it are not used either.
        let mut torn = whole.clone();
        torn[12 + 3 * ENTRY + 20] ^= 1;
        std::fs::write(path_of(&p), &torn).unwrap();
        assert_eq!(opened(&p), walk);
        // An entry missing in the middle (one whose write failed): the chunks after the gap
        // are walked, not left out.
        let mut gap = whole[..12 + 3 * ENTRY].to_vec();
        gap.extend_from_slice(&whole[12 + 4 * ENTRY..]);
        std::fs::write(path_of(&p), &gap).unwrap();
        assert_eq!(opened(&p), walk);
    }

    /// `whole` with entry `i`'s head changed at byte `b` of the head and its checksum made
    /// right again (an index that lies well).
    fn lying(whole: &[u8], i: usize, b: usize) -> Vec<u8> {
        let mut v = whole.to_vec();
        let e = 12 + i * ENTRY;
        v[e + 8 + b] ^= 0x40;
        let crc = crc32fast::hash(&v[e..e + 8 + HEAD]);
        v[e + 8 + HEAD..e + ENTRY].copy_from_slice(&crc.to_le_bytes());
        v
    }

    #[test]
    fn an_index_of_another_session_or_one_its_file_disagrees_with_is_never_taken_for_its_records() {
        let dir = tempfile::tempdir().unwrap();
        let (p, n) = session(dir.path());
        let walk = walked(&p);
        let whole = std::fs::read(path_of(&p)).unwrap();
        // Another session's index (its header differs) is not used.
        let q = dir.path().join("other.ptop");
        drop(write(&q, &records(3 * 8192), true));
        std::fs::copy(path_of(&q), path_of(&p)).unwrap();
        assert_eq!(opened(&p), walk);
        // One whose last entry disagrees with the file is not used.
        std::fs::write(path_of(&p), lying(&whole, n - 1, 8 + 21)).unwrap();
        assert_eq!(opened(&p), walk);
        // One that lies about a chunk no check reads gives that chunk's place, but reading it
        // is an error naming the index, never other records.
        let unchecked = (0..n)
            .find(|i| (0..CHECKS).all(|k| k * n / CHECKS != *i))
            .unwrap();
        std::fs::write(path_of(&p), lying(&whole, unchecked, 8 + 21)).unwrap();
        let (chunks, tail, warnings, decoded) = opened(&p);
        assert_eq!((chunks.len(), tail, warnings), (walk.0.len(), walk.1, 0));
        for (i, d) in decoded.iter().enumerate() {
            if i == unchecked {
                assert!(
                    d.as_ref().is_err_and(|e| e.contains("chunk index")),
                    "{d:?}"
                );
            } else {
                assert_eq!(d, &walk.3[i]);
            }
        }
    }
}
