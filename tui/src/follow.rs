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
//! * The bytes buffered are bounded: at most one frame ([`MAX_FRAME`]) plus what one read
//!   brings, and a damaged stretch with no valid frame after it is given up past twice that.

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use provetop_shared::session::{
    frame_at, known_kind, FrameError, SessionHeader, Warning, MAGIC, MAX_FRAME, MAX_HEADER,
};
use provetop_shared::Record;

/// How often the file is looked at when no file-system watch works.
pub const POLL: Duration = Duration::from_millis(100);
/// How often it is looked at anyway while a watch works.
pub const SAFETY_POLL: Duration = Duration::from_secs(1);
/// Bytes read per system call.
const CHUNK: usize = 1 << 20;

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
    /// Damage found at this offset and no valid frame after it yet.
    damaged_at: Option<u64>,
}

impl Follower {
    /// Open `path` and read its header. Only a provetop session file can be followed.
    pub fn open(path: &Path) -> anyhow::Result<Follower> {
        let name = path.display();
        let mut file = provetop_shared::session::open_regular(path)
            .map_err(|e| anyhow::anyhow!("{name}: {e}"))?;
        let mut head = [0u8; 12];
        // The recorder writes the header at creation; allow a moment for it to land.
        let t0 = Instant::now();
        let mut got = 0;
        while got < head.len() {
            let n = file
                .read(&mut head[got..])
                .map_err(|e| anyhow::anyhow!("{name}: {e}"))?;
            got += n;
            if n == 0 {
                if t0.elapsed() > Duration::from_secs(2) {
                    anyhow::bail!("{name}: byte {got}: no session header (empty or cut off)");
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        if &head[..8] != MAGIC {
            anyhow::bail!(
                "{name}: byte 0: not a provetop session file (magic \"PTSESS\"): only session files can be followed"
            );
        }
        let hlen = u32::from_le_bytes(head[8..12].try_into().expect("4 bytes"));
        if hlen > MAX_HEADER {
            anyhow::bail!("{name}: byte 8: impossible header length {hlen}");
        }
        let mut hbuf = vec![0u8; hlen as usize];
        file.read_exact(&mut hbuf)
            .map_err(|e| anyhow::anyhow!("{name}: byte 12: cannot read the header: {e}"))?;
        let header: SessionHeader = serde_json::from_slice(&hbuf)
            .map_err(|e| anyhow::anyhow!("{name}: byte 12: bad session header: {e}"))?;
        let changed = Arc::new(AtomicBool::new(true));
        let watcher = watch(path, changed.clone());
        Ok(Follower {
            path: path.to_path_buf(),
            file,
            header,
            buf: Vec::new(),
            base: 12 + u64::from(hlen),
            changed,
            _watcher: watcher,
            last_look: Instant::now(),
            damaged_at: None,
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
        self.base
    }

    /// Whether it is time to [`Self::read`]: the watch saw a change, or the poll interval
    /// passed.
    pub fn due(&self) -> bool {
        let every = if self.watched() { SAFETY_POLL } else { POLL };
        self.changed.load(Ordering::Acquire) || self.last_look.elapsed() >= every
    }

    /// Every complete frame appended since the last call (and warnings for damage).
    pub fn read(&mut self) -> std::io::Result<Vec<Item>> {
        self.changed.store(false, Ordering::Release);
        self.last_look = Instant::now();
        let mut out = Vec::new();
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
            self.frames(&mut out);
            if n < CHUNK {
                return Ok(out);
            }
        }
    }

    /// Consume the complete frames at the front of the buffer.
    fn frames(&mut self, out: &mut Vec<Item>) {
        let mut p = 0;
        loop {
            match growing_frame_at(&self.buf[p..]) {
                Ok((rec, len)) => {
                    if let Some(at) = self.damaged_at.take() {
                        out.push(damage(at, self.base + p as u64));
                    }
                    out.push(Item::Record(rec));
                    p += len;
                }
                Err(FrameError::Incomplete) => break,
                Err(FrameError::Bad(_)) => {
                    let at = self.base + p as u64;
                    self.damaged_at.get_or_insert(at);
                    // The next offset holding a complete valid frame.
                    match (p + 1..self.buf.len()).find(|&q| frame_at(&self.buf[q..]).is_ok()) {
                        Some(q) => p = q,
                        None => {
                            // Wait for the frame after the damage, within bounds.
                            let rest = self.buf.len() - p;
                            if rest > 2 * (MAX_FRAME as usize + 8) {
                                out.push(Item::Warning(Warning {
                                    offset: Some(at),
                                    line: None,
                                    message: format!("damaged record; no intact record in the next {rest} bytes, skipped"),
                                }));
                                self.damaged_at = None;
                                p = self.buf.len();
                            }
                            break;
                        }
                    }
                }
            }
        }
        self.buf.drain(..p);
        self.base += p as u64;
    }
}

fn damage(at: u64, resumed: u64) -> Item {
    Item::Warning(Warning {
        offset: Some(at),
        line: None,
        message: format!(
            "damaged record; skipped {} bytes, resumed at byte {resumed}",
            resumed - at
        ),
    })
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

    #[test]
    fn a_csv_cannot_be_followed_and_says_so_in_one_line() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.csv");
        std::fs::write(&p, "timestamp,rss_kb\n1,2\n").unwrap();
        let e = Follower::open(&p).err().unwrap().to_string();
        assert!(e.contains("only session files can be followed"), "{e}");
        assert!(!e.contains('\n'));
    }
}
