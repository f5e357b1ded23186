//! Following a session file while it is written: the reader behind `provetop attach` and
//! `provetop replay --follow` (after atop's twin mode and below's forward-polling viewer).
//!
//! Contract:
//! * [`Follower::read`] returns every complete, CRC-valid frame appended since the last call,
//!   in file order. The writer's unfinished last frame (its length says more bytes than the
//!   file has yet) is not damage: it waits for the rest and is never reported.
//! * Real damage (an impossible length, a bad checksum, an undecodable payload in a
//!   complete frame) is a [`Warning`] with its byte offset, and reading resynchronizes on
//!   the next valid frame, as the whole-file reader does.
//! * When to look again: a change reported by the file system (inotify through the `notify`
//!   crate) makes [`Follower::due`] true at once; without one (no inotify, or a file system
//!   that does not report) it is true every [`POLL`], and every [`SAFETY_POLL`] with one, in
//!   case an event was missed. Reading is a `read(2)` from the last offset: a file that did
//!   not grow costs one system call.
//! * Damage is reported once, as soon as it is found, with its byte offset (or, when the next
//!   intact frame is already there, with where reading resumed). A frame whose length runs
//!   past what is written is the writer's unfinished frame until an intact frame turns up
//!   inside it: then it is damage. A file's damaged head is read past as the whole-file
//!   reader does (`read_header`), with its warnings returned by the first read.
//! * A read returns at most about [`BATCH`] records ([`Follower::behind`]: there are more):
//!   a session of weeks is caught up with a batch at a time, its records never held at once.
//! * The work is bounded by the bytes read, not by how often the file is looked at: each
//!   offset is examined once as a possible frame start, each candidate checksummed at most
//!   once, within the whole-file reader's budget (past it, the rest of the file is ignored,
//!   with a warning). The bytes buffered are bounded: at most one frame
//!   ([`provetop_shared::session::MAX_FRAME`]) plus what one read brings.

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use provetop_shared::session::compact::growing::Growing;
use provetop_shared::session::parts::{part_of, part_path, set_of};
use provetop_shared::session::{
    frame_at, known_kind, possible_len, read_header, FrameError, FrameItem, SessionHeader, Warning,
    MAX_HEADER, RESYNC_BUDGET_MIN, RESYNC_BUDGET_PER_BYTE,
};
use provetop_shared::Record;

/// How often the file is looked at when no file-system watch works.
pub const POLL: Duration = Duration::from_millis(100);
/// How often it is looked at anyway while a watch works.
pub const SAFETY_POLL: Duration = Duration::from_secs(1);
/// Bytes read per system call.
const CHUNK: usize = 1 << 20;
/// Records after which a read stops (between frames, or after the chunk that passed it), so
/// that catching up with a file of weeks holds a few chunks' records at once, not the file's.
pub const BATCH: usize = 1 << 14;

/// What [`Follower::read`] yields.
#[derive(Debug)]
// Not boxed: records move straight into the model; a Box each would cost an allocation per
// record on the path that loads a whole session.
#[allow(clippy::large_enum_variant)]
pub enum Item {
    Record(Record),
    Warning(Warning),
}

/// A session file being followed.
pub struct Follower {
    path: PathBuf,
    file: File,
    header: SessionHeader,
    /// Bytes read and not yet consumed; `base` is the file offset of `buf[0]`.
    buf: Vec<u8>,
    base: u64,
    /// Set by the watch when the file changed.
    changed: Arc<AtomicBool>,
    _watcher: Option<notify::RecommendedWatcher>,
    last_look: Instant,
    /// Offset of the next frame to return (or of the damage being read past).
    cursor: u64,
    /// Damage at the cursor, the next intact frame not found yet.
    damage: Option<Damage>,
    /// The search for an intact frame past the cursor (after damage, or past an unfinished
    /// frame that may be damage).
    scan: Option<Scan>,
    /// Bytes that checksumming candidates while resynchronizing may still cost (as the
    /// whole-file reader's budget: it grows with the bytes read).
    budget: u64,
    /// The budget ran out: the rest of the file is ignored.
    gave_up: bool,
    /// Candidate offsets examined and bytes checksummed (the work reading costs).
    work: u64,
    /// Warnings found while opening (a damaged head), returned by the first read.
    opened: Vec<Warning>,
    /// A compact session (format 2) is followed by its own reader: its writer rewrites the
    /// bytes after its last chunk.
    compact: Option<Growing>,
    /// The last read stopped at [`BATCH`] records with more in the file.
    behind: bool,
}

impl Follower {
    /// Open `path` and read its header. Only a provetop session file can be followed. A
    /// rotated recording named by its recording path (`NAME.ptop`, its parts being there) is
    /// followed from its first part still there; a part, from that part on.
    pub fn open(path: &Path) -> anyhow::Result<Follower> {
        if path.exists() {
            return Self::open_file(path);
        }
        let set = set_of(path);
        Self::open_file(set.first().map_or(path, |p| p.as_path()))
    }

    fn open_file(path: &Path) -> anyhow::Result<Follower> {
        let name = path.display();
        let mut file = provetop_shared::session::open_regular(path)
            .map_err(|e| anyhow::anyhow!("{name}: {e}"))?;
        // The recorder writes the header at creation; allow a moment for it to land. A
        // damaged head is read past as the whole-file reader does (shared's `read_header`),
        // from what the file holds now: the header, and the first frames if it needs them.
        let t0 = Instant::now();
        let mut buf = Vec::new();
        let head = loop {
            let have = buf.len();
            buf.resize(have + CHUNK, 0);
            let n = file
                .read(&mut buf[have..])
                .map_err(|e| anyhow::anyhow!("{name}: {e}"));
            buf.truncate(have + n.as_ref().map_or(0, |&n| n));
            let n = n?;
            if n == CHUNK && buf.len() < 12 + MAX_HEADER as usize + 2 * CHUNK {
                continue;
            }
            match read_header(&buf) {
                Ok(h) => break h,
                Err(e) if e.offset == 0 && buf.len() >= 12 => anyhow::bail!(
                    "{name}: byte 0: {}: only session files can be followed",
                    e.detail
                ),
                Err(_) if t0.elapsed() < Duration::from_secs(2) => {
                    std::thread::sleep(Duration::from_millis(20))
                }
                Err(e) => anyhow::bail!("{name}: byte {}: {}", e.offset, e.detail),
            }
        };
        let mut header = head.header;
        if head.lost_anchors != (false, false) {
            // A followed file is being written now: its last byte is about now.
            header.wall_anchor = provetop_shared::clock::wall_ns();
            header.mono_anchor = provetop_shared::clock::mono_ns();
        }
        let base = head.frames_at as u64;
        buf.drain(..head.frames_at.min(buf.len()));
        let changed = Arc::new(AtomicBool::new(true));
        let watcher = watch(path, changed.clone());
        Ok(Follower {
            path: path.to_path_buf(),
            file,
            budget: RESYNC_BUDGET_MIN
                .saturating_add((buf.len() as u64).saturating_mul(RESYNC_BUDGET_PER_BYTE)),
            buf,
            base,
            changed,
            _watcher: watcher,
            last_look: Instant::now(),
            cursor: base,
            damage: None,
            scan: None,
            gave_up: false,
            work: 0,
            opened: head.warnings,
            compact: (header.format == 2).then(|| Growing::new(base)),
            behind: false,
            header,
        })
    }

    /// The file's header.
    pub fn header(&self) -> &SessionHeader {
        &self.header
    }

    /// The file followed.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether a file-system watch reports changes (else it is polled every [`POLL`]).
    pub fn watched(&self) -> bool {
        self._watcher.is_some()
    }

    /// Offset of the first byte not yet returned as a frame.
    pub fn offset(&self) -> u64 {
        self.compact.as_ref().map_or(self.cursor, Growing::offset)
    }

    /// Whether it is time to [`Self::read`]: the watch saw a change, or the poll interval
    /// passed.
    pub fn due(&self) -> bool {
        let every = if self.watched() { SAFETY_POLL } else { POLL };
        self.changed.load(Ordering::Acquire) || self.last_look.elapsed() >= every
    }

    /// Every complete frame appended since the last call (and warnings for damage). A
    /// rotated recording is followed from part to part: once the next part exists, the
    /// current one is finished; it is read to its end, then the next is opened.
    pub fn read(&mut self) -> std::io::Result<Vec<Item>> {
        let next = part_of(&self.path)
            .map(|(base, n)| part_path(&base, n + 1))
            .filter(|p| p.exists());
        let mut out = self.read_part()?;
        if let Some(next) = next.filter(|_| !self.behind) {
            let mut f = Follower::open_file(&next).map_err(std::io::Error::other)?;
            out.extend(f.read()?);
            *self = f;
        }
        Ok(out)
    }

    /// The last [`Follower::read`] stopped at [`BATCH`] records with more in the file (a
    /// file of weeks is caught up with a batch at a time): read again without waiting.
    pub fn behind(&self) -> bool {
        self.behind
    }

    /// How far into the file (the part followed) reading is, in per cent.
    pub fn percent(&self) -> u32 {
        let len = self.file.metadata().map_or(0, |m| m.len());
        if len == 0 {
            return 100;
        }
        ((self.offset() as f64 / len as f64) * 100.0).min(100.0) as u32
    }

    fn read_part(&mut self) -> std::io::Result<Vec<Item>> {
        self.changed.store(false, Ordering::Release);
        self.last_look = Instant::now();
        let mut out: Vec<Item> = self.opened.drain(..).map(Item::Warning).collect();
        self.behind = false;
        if let Some(g) = &mut self.compact {
            out.extend(g.read(&self.file, BATCH)?.into_iter().map(|i| match i {
                FrameItem::Record(_, r) => Item::Record(r),
                FrameItem::Warning(w) => Item::Warning(w),
            }));
            self.behind = g.behind();
            return Ok(out);
        }
        if self.gave_up {
            return Ok(out);
        }
        loop {
            let have = self.buf.len();
            self.buf.resize(have + CHUNK, 0);
            let n = match self.file.read(&mut self.buf[have..]) {
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => 0,
                Err(e) => {
                    self.buf.truncate(have);
                    return Err(e);
                }
            };
            self.buf.truncate(have + n);
            self.budget = self
                .budget
                .saturating_add((n as u64).saturating_mul(RESYNC_BUDGET_PER_BYTE));
            self.frames(&mut out);
            if n < CHUNK || self.gave_up {
                return Ok(out);
            }
            if out.len() >= BATCH {
                self.behind = true;
                return Ok(out);
            }
        }
    }

    /// Consume the complete frames in the buffer; look for the next intact frame after damage.
    ///
    /// Every byte is examined as a candidate frame start once, and every candidate's checksum
    /// is computed at most once (a candidate not complete yet waits in `pending`), so the work
    /// is proportional to the bytes read, however the file grows and however damaged it is.
    fn frames(&mut self, out: &mut Vec<Item>) {
        loop {
            if self.damage.is_none() {
                let p = (self.cursor - self.base) as usize;
                self.work += 1;
                match growing_frame_at(&self.buf[p..]) {
                    Ok((rec, len)) => {
                        out.push(Item::Record(rec));
                        self.cursor += len as u64;
                        // Whatever was looked for past an unfinished frame is moot now.
                        self.scan = None;
                        continue;
                    }
                    // The writer's unfinished frame — or a damaged length that runs past the
                    // end: that is known once an intact frame is found inside it.
                    Err(FrameError::Incomplete) => {}
                    Err(FrameError::Bad(why)) => {
                        self.damage = Some(Damage {
                            at: self.cursor,
                            why,
                            told: false,
                        });
                    }
                }
            }
            let scan = self.scan.get_or_insert_with(|| Scan {
                next: self.cursor + 1,
                pending: Vec::new(),
            });
            match find_next(&self.buf, self.base, scan, &mut self.budget, &mut self.work) {
                Next::Found(q) => {
                    let d = self.damage.take().unwrap_or_else(|| Damage {
                        at: self.cursor,
                        why: "its length runs past the next intact record".into(),
                        told: false,
                    });
                    if !d.told {
                        out.push(Item::Warning(Warning {
                            offset: Some(d.at),
                            line: None,
                            message: format!(
                                "damaged record ({}); skipped {} bytes, resumed at byte {q}",
                                d.why,
                                q - d.at
                            ),
                        }));
                    }
                    self.cursor = q;
                    self.scan = None;
                }
                Next::NotYet => break,
                Next::GiveUp => {
                    let at = self.damage.as_ref().map_or(self.cursor, |d| d.at);
                    out.push(Item::Warning(Warning {
                        offset: Some(at),
                        line: None,
                        message: "damaged record; looking for the next intact record took too long, the rest of the file is ignored".into(),
                    }));
                    self.gave_up = true;
                    self.buf = Vec::new();
                    return;
                }
            }
        }
        // Damage is said as soon as it is found (the writer may have stopped: no intact
        // record may ever follow), and only once.
        if let Some(d) = self.damage.as_mut().filter(|d| !d.told) {
            d.told = true;
            out.push(Item::Warning(Warning {
                offset: Some(d.at),
                line: None,
                message: format!(
                    "damaged record ({}); reading resumes at the next intact record",
                    d.why
                ),
            }));
        }
        // Keep only the bytes still needed: from the frame start being waited for, or, past
        // damage, from the first candidate that may still prove intact.
        let keep = match (&self.damage, &self.scan) {
            (Some(_), Some(s)) => s.pending.first().map_or(s.next, |&(c, _)| c.min(s.next)),
            _ => self.cursor,
        };
        let drop = (keep.saturating_sub(self.base) as usize).min(self.buf.len());
        self.buf.drain(..drop);
        self.base += drop as u64;
    }
}

/// Damage found at the cursor, the next intact frame not found yet.
struct Damage {
    at: u64,
    why: String,
    /// Already reported.
    told: bool,
}

/// Looking for the next intact frame past the cursor.
struct Scan {
    /// File offset of the next candidate frame start not examined yet.
    next: u64,
    /// Candidates (offset, end) whose frame is not complete yet, in file order.
    pending: Vec<(u64, u64)>,
}

/// Most candidates waiting to be complete; past that, a candidate is not kept (only a crafted
/// file has that many plausible frame heads in one unfinished stretch).
const MAX_PENDING: usize = 4096;

enum Next {
    Found(u64),
    NotYet,
    GiveUp,
}

/// The first intact frame among the scan's candidates, as far as the buffer goes. `buf[0]` is
/// at file offset `base`. Checksums cost `budget`; `work` counts what was examined.
fn find_next(buf: &[u8], base: u64, scan: &mut Scan, budget: &mut u64, work: &mut u64) -> Next {
    let end = base + buf.len() as u64;
    let check = |at: u64, len: u32, budget: &mut u64, work: &mut u64| -> Option<bool> {
        if *budget < u64::from(len) {
            return None;
        }
        *budget -= u64::from(len);
        *work += u64::from(len);
        Some(frame_at(&buf[(at - base) as usize..]).is_ok())
    };
    // Earlier candidates that are complete now.
    let mut i = 0;
    while i < scan.pending.len() {
        let (at, fend) = scan.pending[i];
        if fend > end {
            i += 1;
            continue;
        }
        let r = &buf[(at - base) as usize..];
        let len = u32::from_le_bytes(r[0..4].try_into().expect("4 bytes"));
        if known_kind(r[8]) {
            match check(at, len, budget, work) {
                None => return Next::GiveUp,
                Some(true) => return Next::Found(at),
                Some(false) => {}
            }
        }
        scan.pending.remove(i);
    }
    // New candidates, each examined once.
    while scan.next + 8 <= end {
        let at = scan.next;
        *work += 1;
        let r = &buf[(at - base) as usize..];
        let len = u32::from_le_bytes(r[0..4].try_into().expect("4 bytes"));
        if !possible_len(len) {
            scan.next += 1;
            continue;
        }
        let fend = at + 8 + u64::from(len);
        if fend > end {
            if (r.len() <= 8 || known_kind(r[8])) && scan.pending.len() < MAX_PENDING {
                scan.pending.push((at, fend));
            }
            scan.next += 1;
            continue;
        }
        scan.next += 1;
        if !known_kind(r[8]) {
            continue;
        }
        match check(at, len, budget, work) {
            None => return Next::GiveUp,
            Some(true) => {
                // An earlier candidate still unfinished would overlap this intact frame.
                return Next::Found(at);
            }
            Some(false) => {}
        }
    }
    Next::NotYet
}

/// The frame at the start of `b` ([`frame_at`]), in a file still being written: an unfinished
/// frame whose kind byte is already one no writer writes is damage, not the writer's
/// unfinished last frame.
fn growing_frame_at(b: &[u8]) -> Result<(Record, usize), FrameError> {
    match frame_at(b) {
        Err(FrameError::Incomplete) if b.len() > 8 && !known_kind(b[8]) => {
            Err(FrameError::Bad(format!("unknown record kind {}", b[8])))
        }
        found => found,
    }
}

/// A watch on `path` that sets `changed`; None when the file system cannot be watched.
fn watch(path: &Path, changed: Arc<AtomicBool>) -> Option<notify::RecommendedWatcher> {
    use notify::Watcher;
    if std::env::var_os("PROVETOP_FOLLOW_POLL").is_some() {
        // The poll fallback, on demand (tests and benchmarks of it).
        return None;
    }
    let mut w = notify::recommended_watcher(move |ev: notify::Result<notify::Event>| {
        if ev.is_ok() {
            changed.store(true, Ordering::Release);
        }
    })
    .ok()?;
    w.watch(path, notify::RecursiveMode::NonRecursive).ok()?;
    Some(w)
}

#[cfg(test)]
mod tests {
    use super::*;
    use provetop_shared::session::{encode_payload, SessionWriter};
    use provetop_shared::{Mark, OutputLine, OutputSource, RecordBody};
    use std::io::Write;

    fn note(t: u64, text: &str) -> Record {
        Record::new(t, RecordBody::Mark(Mark::Note { text: text.into() }))
    }

    fn frame(rec: &Record) -> Vec<u8> {
        let p = encode_payload(rec);
        let mut f = (p.len() as u32).to_le_bytes().to_vec();
        f.extend_from_slice(&crc32fast::hash(&p).to_le_bytes());
        f.extend_from_slice(&p);
        f
    }

    fn records(items: &[Item]) -> Vec<u64> {
        items
            .iter()
            .filter_map(|i| match i {
                Item::Record(r) => Some(r.t),
                Item::Warning(_) => None,
            })
            .collect()
    }

    /// DIR/s.ptop holding one note (t = 1), its writer still open as a recording's is, and a
    /// follower of it that has read nothing yet.
    fn one_note(dir: &Path) -> (PathBuf, SessionWriter, Follower) {
        let p = dir.join("s.ptop");
        let mut w = SessionWriter::create(&p, &SessionHeader::now(vec!["x".into()], 10.0)).unwrap();
        w.append(&note(1, "one")).unwrap();
        w.flush().unwrap();
        let f = Follower::open(&p).unwrap();
        (p, w, f)
    }

    #[test]
    fn the_writers_unfinished_last_frame_waits_and_is_never_damage() {
        let dir = tempfile::tempdir().unwrap();
        let (p, _w, mut f) = one_note(dir.path());
        let got = f.read().unwrap();
        assert_eq!(records(&got), vec![1]);
        // Half of the next frame, as a writer caught mid-write leaves it.
        halves_then_whole(&p, &mut f, &note(2, "two"));
    }

    /// Half of `rec`'s frame appended (a writer caught mid-write) reads as nothing yet; the
    /// rest appended, it reads as the record, with no damage said.
    fn halves_then_whole(p: &Path, f: &mut Follower, rec: &Record) {
        let fr = frame(rec);
        let mut raw = std::fs::OpenOptions::new().append(true).open(p).unwrap();
        raw.write_all(&fr[..fr.len() / 2]).unwrap();
        let got = f.read().unwrap();
        assert!(got.is_empty(), "{got:?}");
        raw.write_all(&fr[fr.len() / 2..]).unwrap();
        let got = f.read().unwrap();
        assert_eq!(records(&got), vec![rec.t]);
        assert!(got.iter().all(|i| matches!(i, Item::Record(_))), "{got:?}");
    }

    #[test]
    fn an_unfinished_frame_of_a_later_kind_waits_too() {
        // Kinds 6 to 8 (output lines, derived events, usage) are as much the writer's as a
        // note: half of one is the writer caught mid-write, not damage.
        let dir = tempfile::tempdir().unwrap();
        let (p, _w, mut f) = one_note(dir.path());
        let _ = f.read().unwrap();
        let line = Record::new(
            2,
            RecordBody::Output(OutputLine {
                source: OutputSource::Stdout,
                text: "proving".into(),
                cut: None,
            }),
        );
        halves_then_whole(&p, &mut f, &line);
    }

    #[test]
    fn a_damaged_frame_in_the_middle_is_reported_with_its_offset_and_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let (p, _w, mut f) = one_note(dir.path());
        let _ = f.read().unwrap();
        let at = f.offset();
        let mut bad = frame(&note(2, "two"));
        let last = bad.len() - 1;
        bad[last] ^= 0xff;
        let mut raw = std::fs::OpenOptions::new().append(true).open(&p).unwrap();
        raw.write_all(&bad).unwrap();
        raw.write_all(&frame(&note(3, "three"))).unwrap();
        let got = f.read().unwrap();
        assert_eq!(records(&got), vec![3]);
        let w: Vec<_> = got
            .iter()
            .filter_map(|i| match i {
                Item::Warning(w) => Some(w),
                _ => None,
            })
            .collect();
        assert_eq!(w.len(), 1);
        assert_eq!(w[0].offset, Some(at));
    }

    /// What a second writer appends: each class of garbage the follower must read past.
    fn garbages() -> Vec<(&'static str, Vec<u8>)> {
        let mut lcg = 0x2545_f491_u32;
        let random: Vec<u8> = (0..300)
            .map(|_| {
                lcg = lcg.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                (lcg >> 24) as u8
            })
            .collect();
        // The head of a frame of a known kind whose length runs far past what is written.
        let mut long_head = 1_000_000u32.to_le_bytes().to_vec();
        long_head.extend_from_slice(&[0, 0, 0, 0, 5]);
        long_head.extend_from_slice(b"not the rest of a frame");
        let mut bad_crc = frame(&note(99, "a copy with a bad checksum"));
        bad_crc[4] ^= 1;
        vec![
            ("text", b"a log line from another writer\n".repeat(6)),
            ("random bytes", random),
            ("a long frame head", long_head),
            ("a bad checksum", bad_crc),
        ]
    }

    #[test]
    fn garbage_a_second_writer_appends_is_reported_once_at_its_offset_and_later_records_still_come()
    {
        for (what, garbage) in garbages() {
            let dir = tempfile::tempdir().unwrap();
            let (p, mut w, mut f) = one_note(dir.path());
            let mut got = f.read().unwrap();
            assert_eq!(records(&got), vec![1], "{what}");
            let at = f.offset();
            let mut other = std::fs::OpenOptions::new().append(true).open(&p).unwrap();
            other.write_all(&garbage).unwrap();
            got.extend(f.read().unwrap());
            // The recorder writes on at its own offset, over the garbage the follower read.
            for t in 2..=30 {
                w.append(&note(t, "a later record")).unwrap();
                w.flush().unwrap();
                got.extend(f.read().unwrap());
            }
            let warnings: Vec<_> = got
                .iter()
                .filter_map(|i| match i {
                    Item::Warning(w) => Some(w),
                    _ => None,
                })
                .collect();
            assert_eq!(warnings.len(), 1, "{what}: {warnings:?}");
            assert_eq!(warnings[0].offset, Some(at), "{what}");
            let ts = records(&got);
            assert!(ts.windows(2).all(|w| w[0] < w[1]), "{what}: {ts:?}");
            assert!(ts.ends_with(&[28, 29, 30]), "{what}: {ts:?}");
        }
    }

    #[test]
    fn reading_past_damage_costs_work_in_proportion_to_the_bytes_not_to_how_often_it_reads() {
        // Garbage arriving in small pieces, read after each: each read used to search the
        // whole damaged stretch again (checksumming every plausible frame in it), which grows
        // with every piece.
        let dir = tempfile::tempdir().unwrap();
        let (p, mut w, mut f) = one_note(dir.path());
        let _ = f.read().unwrap();
        let mut other = std::fs::OpenOptions::new().append(true).open(&p).unwrap();
        let mut written = 0u64;
        for (_, g) in garbages() {
            for piece in g.chunks(7).cycle().take(400) {
                other.write_all(piece).unwrap();
                written += piece.len() as u64;
                let got = f.read().unwrap();
                assert!(records(&got).is_empty());
            }
        }
        assert!(
            f.work <= 4 * written + 1_000_000,
            "{} units of work for {written} bytes",
            f.work
        );
        // And the follower is still there for the next intact record.
        let _ = w.flush();
        drop(w);
        let mut tail = std::fs::OpenOptions::new().append(true).open(&p).unwrap();
        tail.write_all(&frame(&note(7, "after"))).unwrap();
        let got = f.read().unwrap();
        assert_eq!(records(&got), vec![7]);
    }

    #[test]
    fn a_csv_cannot_be_followed_and_says_so_in_one_line() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.csv");
        std::fs::write(&p, "timestamp,rss_kb\n1,2\n").unwrap();
        let e = Follower::open(&p).err().unwrap().to_string();
        assert!(e.contains("only session files can be followed"), "{e}");
        assert!(!e.contains('\n'));
    }

    #[test]
    fn a_compact_session_is_followed_across_its_commits_each_record_once_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("c.ptop");
        let h = SessionHeader::now(vec!["x".into()], 20.0);
        let mut w = SessionWriter::create_compact(&p, &h).unwrap();
        w.flush().unwrap();
        let mut f = Follower::open(&p).unwrap();
        let mut seen = Vec::new();
        for i in 0..12_000u64 {
            w.append(&note(i, &format!("note {i} of a long enough text")))
                .unwrap();
            if i % 20 == 19 {
                w.flush().unwrap();
                let got = f.read().unwrap();
                assert!(got.iter().all(|i| matches!(i, Item::Record(_))));
                seen.extend(records(&got));
                assert_eq!(seen.len() as u64, i + 1, "everything flushed is read");
            }
        }
        w.sync().unwrap();
        seen.extend(records(&f.read().unwrap()));
        assert_eq!(seen, (0..12_000).collect::<Vec<u64>>());
        assert!(f.offset() > 0 && f.offset() == std::fs::metadata(&p).unwrap().len());
    }

    #[test]
    fn a_long_compact_session_is_caught_up_with_in_batches_each_record_once_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("long.ptop");
        let h = SessionHeader::now(vec!["x".into()], 20.0);
        let mut w = SessionWriter::create_compact(&p, &h).unwrap();
        // A history of several chunks, one record longer than a read of the file.
        let big = "x".repeat(3 << 19);
        for i in 0..60_000u64 {
            let text = if i == 7 {
                big.clone()
            } else {
                format!("note {i}")
            };
            w.append(&note(i, &text)).unwrap();
            if i % 1000 == 999 {
                w.flush().unwrap();
            }
        }
        w.sync().unwrap();
        let mut f = Follower::open(&p).unwrap();
        let mut seen = Vec::new();
        let mut reads = 0;
        // The writer goes on while the history is read.
        for i in 60_000..61_000u64 {
            w.append(&note(i, &format!("note {i}"))).unwrap();
            if i % 50 == 49 {
                w.flush().unwrap();
                let got = f.read().unwrap();
                assert!(got.iter().all(|i| matches!(i, Item::Record(_))));
                // A batch, and at most the chunk it stopped in.
                assert!(got.len() <= BATCH + 8192, "{}", got.len());
                seen.extend(records(&got));
                reads += 1;
            }
        }
        w.sync().unwrap();
        while f.behind() || seen.len() < 61_000 {
            seen.extend(records(&f.read().unwrap()));
            reads += 1;
            assert!(reads < 100, "caught up");
        }
        assert!(!f.behind());
        assert_eq!(seen, (0..61_000).collect::<Vec<u64>>());
        assert!(reads > 61_000 / (BATCH + 8192), "{reads} reads");
    }

    #[test]
    fn a_damaged_chunk_met_while_catching_up_is_said_once_with_its_offset_and_costs_only_its_records(
    ) {
        use provetop_shared::session::compact::index::Index;
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("dam.ptop");
        let h = SessionHeader::now(vec!["x".into()], 20.0);
        let mut w = SessionWriter::create_compact(&p, &h).unwrap();
        for i in 0..50_000u64 {
            w.append(&note(i, &format!("note {i}"))).unwrap();
            if i % 1000 == 999 {
                w.flush().unwrap();
            }
        }
        w.sync().unwrap();
        drop(w);
        let (at, head) = Index::open(&p).unwrap().chunks.get(2).unwrap();
        let mut data = std::fs::read(&p).unwrap();
        data[at as usize + 300] ^= 0x20;
        std::fs::write(&p, &data).unwrap();
        let mut f = Follower::open(&p).unwrap();
        let (mut seen, mut warnings) = (Vec::new(), Vec::new());
        for _ in 0..40 {
            for i in f.read().unwrap() {
                match i {
                    Item::Record(r) => seen.push(r.t),
                    Item::Warning(w) => warnings.push(w),
                }
            }
        }
        let lost = head.first_seq..head.first_seq + u64::from(head.count);
        assert_eq!(
            seen,
            (0..50_000)
                .filter(|i| !lost.contains(i))
                .collect::<Vec<u64>>()
        );
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert_eq!(warnings[0].offset, Some(at));
    }
}
