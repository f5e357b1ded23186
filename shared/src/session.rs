//! Session files: what the recorder writes and replay/classify/export read.
//!
//! # Format (version 1)
//! ```text
//! magic    8 bytes   "PTSESS\0\x01"  (the last byte is the format major version)
//! header   u32 LE length, then that many bytes of JSON (SessionHeader)
//! frames   repeated: u32 LE payload length, u32 LE CRC-32 of the payload, payload
//! payload  u8 kind, u64 LE t (monotonic ns), body
//!          kind 1 = sample  (postcard, fixed layout of `Sample`: the bulk of a file)
//!          kind 2 = event, 3 = alert, 4 = control, 5 = mark  (JSON: rare, self-describing)
//! ```
//! Append-only; a frame is complete or ignored. A file cut off mid-frame (kill -9) loads
//! every complete frame and warns with the byte offset of the cut; a damaged frame in the
//! middle (CRC mismatch, impossible length) is reported with its byte offset, and reading
//! resynchronizes on the next frame whose CRC checks.
//!
//! The plain `timestamp,rss_kb` CSV of ad-hoc samplers (header line, unix seconds, KiB) is
//! accepted everywhere a session file is: [`load`] tells them apart by their first bytes.

use std::fmt;
use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::record::{Record, RecordBody, Sample};

/// First bytes of every session file.
pub const MAGIC: &[u8; 8] = b"PTSESS\0\x01";
/// Largest payload a reader accepts; anything longer is damage.
pub const MAX_FRAME: u32 = 16 << 20;

/// What a session is about; the JSON header of the file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionHeader {
    /// Format version (1).
    pub format: u32,
    /// Version of provetop that wrote it.
    pub provetop_version: String,
    /// Wall clock (unix ns) at `mono_anchor`.
    pub wall_anchor: u64,
    /// Monotonic ns at `wall_anchor`: wall time of a record = wall_anchor + (t - mono_anchor).
    pub mono_anchor: u64,
    /// Host name.
    #[serde(default)]
    pub host: String,
    /// Supervised command, or `watch PID`, or the source file for imports.
    #[serde(default)]
    pub command: Vec<String>,
    /// Sampling rate, Hz.
    #[serde(default)]
    pub sample_hz: f64,
}

impl SessionHeader {
    /// A header anchored now.
    pub fn now(command: Vec<String>, sample_hz: f64) -> Self {
        SessionHeader {
            format: 1,
            provetop_version: env!("CARGO_PKG_VERSION").to_string(),
            wall_anchor: crate::clock::wall_ns(),
            mono_anchor: crate::clock::mono_ns(),
            host: nix::sys::utsname::uname()
                .map(|u| u.nodename().to_string_lossy().into_owned())
                .unwrap_or_default(),
            command,
            sample_hz,
        }
    }

    /// Unix seconds of a record time.
    pub fn wall_secs(&self, t: u64) -> f64 {
        (self.wall_anchor as i128 + t as i128 - self.mono_anchor as i128) as f64 / 1e9
    }
}

/// Appends records to a session file (created with mode 0600: it may hold command lines).
pub struct SessionWriter {
    out: BufWriter<File>,
    path: PathBuf,
    records: u64,
    bytes: u64,
}

impl SessionWriter {
    /// Create (truncate) `path` and write the header.
    pub fn create(path: &Path, header: &SessionHeader) -> io::Result<Self> {
        use std::os::unix::fs::OpenOptionsExt;
        let file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(path)?;
        // `mode` applies only when the file is created: an existing file being overwritten
        // keeps its permissions unless they are set here (special files such as /dev/null
        // are left alone).
        if file.metadata()?.is_file() {
            use std::os::unix::fs::PermissionsExt;
            file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
        }
        let mut out = BufWriter::with_capacity(256 << 10, file);
        let h = serde_json::to_vec(header).map_err(io::Error::other)?;
        out.write_all(MAGIC)?;
        out.write_all(&(h.len() as u32).to_le_bytes())?;
        out.write_all(&h)?;
        Ok(SessionWriter {
            out,
            path: path.to_path_buf(),
            records: 0,
            bytes: (MAGIC.len() + 4 + h.len()) as u64,
        })
    }

    /// Append one record (buffered; call [`flush`](Self::flush) at least once a second).
    pub fn append(&mut self, rec: &Record) -> io::Result<()> {
        let payload = encode_payload(rec);
        let crc = crc32fast::hash(&payload);
        // One write per frame: when the buffer cannot be flushed (disk full), BufWriter
        // refuses the whole frame instead of keeping half of it, so a recorder that retries
        // later never writes a torn frame.
        let mut frame = Vec::with_capacity(8 + payload.len());
        frame.extend_from_slice(&(payload.len() as u32).to_le_bytes());
        frame.extend_from_slice(&crc.to_le_bytes());
        frame.extend_from_slice(&payload);
        self.out.write_all(&frame)?;
        self.records += 1;
        self.bytes += 8 + payload.len() as u64;
        Ok(())
    }

    /// Push buffered records to the kernel.
    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }

    /// Flush and fsync.
    pub fn sync(&mut self) -> io::Result<()> {
        self.out.flush()?;
        self.out.get_ref().sync_data()
    }

    /// Path written.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Records appended.
    pub fn records(&self) -> u64 {
        self.records
    }

    /// Bytes written (header included).
    pub fn bytes(&self) -> u64 {
        self.bytes
    }
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
    };
    p.push(kind);
    p.extend_from_slice(&rec.t.to_le_bytes());
    p.extend_from_slice(&body);
    p
}

/// Decode a payload written by [`encode_payload`].
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
        k => return Err(format!("unknown record kind {k}")),
    };
    Ok(Record { t, body })
}

/// A problem that did not stop loading: where it is and what it was.
#[derive(Debug, Clone, PartialEq)]
pub struct Warning {
    /// Byte offset in a session file.
    pub offset: Option<u64>,
    /// Line number (1-based) in a CSV.
    pub line: Option<u64>,
    /// What.
    pub message: String,
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.line, self.offset) {
            (Some(l), _) => write!(f, "line {l}: {}", self.message),
            (None, Some(o)) => write!(f, "byte {o}: {}", self.message),
            _ => f.write_str(&self.message),
        }
    }
}

/// Why a file could not be loaded at all.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// Could not open or read.
    #[error("{path}: {error}")]
    Io {
        /// File.
        path: PathBuf,
        /// Cause.
        // Not `source`: the message already says it, and a source would repeat it in
        // error chains ("…: No such file…: No such file…").
        error: io::Error,
    },
    /// Zero bytes.
    #[error("{path}: empty file (not a provetop session or timestamp,rss_kb CSV)")]
    Empty {
        /// File.
        path: PathBuf,
    },
    /// Neither a session file nor a CSV, or a bad header.
    #[error("{path}: byte {offset}: {detail}")]
    Format {
        /// File.
        path: PathBuf,
        /// Byte offset.
        offset: u64,
        /// What.
        detail: String,
    },
    /// A CSV row that cannot be read.
    #[error("{path}: line {line}: {detail}")]
    Csv {
        /// File.
        path: PathBuf,
        /// Line (1-based).
        line: u64,
        /// What.
        detail: String,
    },
}

/// Which kind of file was loaded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SourceKind {
    /// A provetop session file.
    Session,
    /// A `timestamp,rss_kb` CSV.
    Csv,
}

/// A loaded file: header, every readable record in file order, and warnings.
#[derive(Debug, Clone)]
pub struct Loaded {
    /// Header (synthesized for CSVs).
    pub header: SessionHeader,
    /// Records, in file order.
    pub records: Vec<Record>,
    /// Problems that were survived.
    pub warnings: Vec<Warning>,
    /// What the file was.
    pub kind: SourceKind,
}

/// Load a session file or a `timestamp,rss_kb` CSV.
pub fn load(path: &Path) -> Result<Loaded, LoadError> {
    let data = std::fs::read(path).map_err(|error| LoadError::Io {
        path: path.to_path_buf(),
        error,
    })?;
    load_bytes(path, &data)
}

/// Like [`load`], from bytes already read (`path` names the source in messages).
pub fn load_bytes(path: &Path, data: &[u8]) -> Result<Loaded, LoadError> {
    if data.is_empty() {
        return Err(LoadError::Empty {
            path: path.to_path_buf(),
        });
    }
    if data.starts_with(&MAGIC[..7]) {
        return load_session(path, data);
    }
    if looks_like_csv(data) {
        return crate::session::csv::load_csv(path, data);
    }
    Err(LoadError::Format {
        path: path.to_path_buf(),
        offset: 0,
        detail: "not a provetop session file (magic \"PTSESS\") nor a CSV with a \"timestamp,rss_kb\" header".into(),
    })
}

fn looks_like_csv(data: &[u8]) -> bool {
    let head = &data[..data.len().min(64)];
    let s = String::from_utf8_lossy(head)
        .trim_start_matches('\u{feff}')
        .to_ascii_lowercase();
    s.starts_with("timestamp,rss_kb")
}

fn load_session(path: &Path, data: &[u8]) -> Result<Loaded, LoadError> {
    let fmt_err = |offset: u64, detail: String| LoadError::Format {
        path: path.to_path_buf(),
        offset,
        detail,
    };
    if data.len() < 12 {
        return Err(fmt_err(0, "session file cut off inside its header".into()));
    }
    if data[7] != MAGIC[7] {
        return Err(fmt_err(
            7,
            format!(
                "session format version {} is not supported by this build (it reads version {})",
                data[7], MAGIC[7]
            ),
        ));
    }
    let hlen = u32::from_le_bytes(data[8..12].try_into().expect("4 bytes")) as usize;
    if hlen > 1 << 20 || 12 + hlen > data.len() {
        return Err(fmt_err(
            8,
            format!("header length {hlen} is impossible or cut off"),
        ));
    }
    let header: SessionHeader = serde_json::from_slice(&data[12..12 + hlen])
        .map_err(|e| fmt_err(12, format!("bad session header: {e}")))?;
    // Fast path: decode the leading run of intact frames on every core, then let the
    // damage-tolerant iterator take over where that run stops (a cut tail, a damaged frame):
    // the result is exactly what the iterator alone would give.
    let (mut records, resume) = decode_intact_run(data, 12 + hlen);
    let mut warnings = Vec::new();
    for item in Frames::new(data, resume) {
        match item {
            FrameItem::Record(_, r) => records.push(r),
            FrameItem::Warning(w) => warnings.push(w),
        }
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
        let len = u32::from_le_bytes(data[pos..pos + 4].try_into().expect("4 bytes")) as usize;
        if !(9..=MAX_FRAME as usize).contains(&len) || pos + 8 + len > data.len() {
            break;
        }
        offsets.push(pos);
        pos += 8 + len;
    }
    let end = pos;
    let frames = Frames::new(data, start);
    // Decode a share of the offsets into its slots; returns how many slots were written and
    // the offset of the frame that failed, if one did (decoding stops there).
    let decode = |offs: &[usize], slots: &mut [MaybeUninit<Record>]| -> (usize, Option<usize>) {
        for (n, (&o, slot)) in offs.iter().zip(slots.iter_mut()).enumerate() {
            match frames.frame_at(o) {
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

/// What [`Frames`] yields.
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

/// Iterates the frames of a session file's bytes, surviving damage.
pub struct Frames<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> Frames<'a> {
    /// Start at byte `pos` (just after the header).
    pub fn new(data: &'a [u8], pos: usize) -> Self {
        Frames { data, pos }
    }

    /// A complete, CRC-valid, decodable frame at `pos`?
    fn frame_at(&self, pos: usize) -> Result<(Record, usize), FrameProblem> {
        let rest = &self.data[pos..];
        if rest.len() < 8 {
            return Err(FrameProblem::Truncated);
        }
        let len = u32::from_le_bytes(rest[0..4].try_into().expect("4 bytes"));
        let crc = u32::from_le_bytes(rest[4..8].try_into().expect("4 bytes"));
        if !(9..=MAX_FRAME).contains(&len) {
            return Err(FrameProblem::Bad(format!("impossible record length {len}")));
        }
        let end = 8 + len as usize;
        if rest.len() < end {
            return Err(FrameProblem::Truncated);
        }
        // A kind byte this reader does not know is damage; checking it before the CRC keeps
        // resynchronization over garbage cheap (most candidate offsets fail here).
        if !(1..=5).contains(&rest[8]) {
            return Err(FrameProblem::Bad(format!(
                "unknown record kind {}",
                rest[8]
            )));
        }
        let payload = &rest[8..end];
        if crc32fast::hash(payload) != crc {
            return Err(FrameProblem::Bad("checksum mismatch".into()));
        }
        let rec = decode_payload(payload).map_err(FrameProblem::Bad)?;
        Ok((rec, end))
    }
}

impl Frames<'_> {
    /// The first offset after `at` that holds a complete, valid frame.
    fn resync(&self, at: usize) -> Option<usize> {
        (at + 1..self.data.len().saturating_sub(7)).find(|&p| self.frame_at(p).is_ok())
    }
}

enum FrameProblem {
    Truncated,
    Bad(String),
}

impl Iterator for Frames<'_> {
    type Item = FrameItem;
    fn next(&mut self) -> Option<FrameItem> {
        if self.pos >= self.data.len() {
            return None;
        }
        let at = self.pos;
        match self.frame_at(at) {
            Ok((rec, len)) => {
                self.pos += len;
                Some(FrameItem::Record(at as u64, rec))
            }
            Err(FrameProblem::Truncated) => {
                // A damaged length in the middle also "runs past the end": it is only a cut
                // tail if no valid frame follows.
                match self.resync(at) {
                    Some(p) => {
                        self.pos = p;
                        Some(FrameItem::Warning(Warning {
                            offset: Some(at as u64),
                            line: None,
                            message: format!(
                                "damaged record (length runs past the end of the file); skipped {} bytes, resumed at byte {p}",
                                p - at
                            ),
                        }))
                    }
                    None => {
                        self.pos = self.data.len();
                        Some(FrameItem::Warning(Warning {
                            offset: Some(at as u64),
                            line: None,
                            message: format!(
                                "file cut off inside a record ({} trailing bytes ignored)",
                                self.data.len() - at
                            ),
                        }))
                    }
                }
            }
            Err(FrameProblem::Bad(why)) => {
                // Resynchronize: the next offset holding a complete frame whose CRC checks.
                let (p, message) = match self.resync(at) {
                    Some(p) => (
                        p,
                        format!(
                            "damaged record ({why}); skipped {} bytes, resumed at byte {p}",
                            p - at
                        ),
                    ),
                    None => (
                        self.data.len(),
                        format!(
                            "damaged record ({why}); {} bytes to the end ignored",
                            self.data.len() - at
                        ),
                    ),
                };
                self.pos = p;
                Some(FrameItem::Warning(Warning {
                    offset: Some(at as u64),
                    line: None,
                    message,
                }))
            }
        }
    }
}

pub mod csv {
    //! The `timestamp,rss_kb` CSV of ad-hoc samplers (and of `provetop export --format csv`,
    //! whose extra columns are ignored here).

    use super::*;

    /// Largest RSS a row may claim: 1 PiB in KiB. Anything above is a broken sampler.
    pub const MAX_RSS_KB: u64 = 1 << 40;
    /// Timestamps after this (year 5138) are not unix seconds; loading warns.
    pub const MAX_UNIX_SECS: f64 = 1e11;
    /// Rows may span at most this many seconds (about 500 years), so that nanoseconds since
    /// the first row fit in a `u64`.
    pub const MAX_SPAN_SECS: f64 = 1.5e10;

    /// Parse CSV bytes into sample records (t = ns since the earliest row).
    pub fn load_csv(path: &Path, data: &[u8]) -> Result<Loaded, LoadError> {
        let err = |line: u64, detail: String| LoadError::Csv {
            path: path.to_path_buf(),
            line,
            detail,
        };
        let ends_with_newline = data.ends_with(b"\n");
        let text = std::str::from_utf8(data).map_err(|e| {
            let line = data[..e.valid_up_to()]
                .iter()
                .filter(|b| **b == b'\n')
                .count() as u64
                + 1;
            err(line, format!("invalid UTF-8 at byte {}", e.valid_up_to()))
        })?;
        let lines: Vec<&str> = text.lines().collect();
        let mut warnings = Vec::new();
        // (unix seconds, KiB, 1-based line number)
        let mut rows: Vec<(f64, u64, u64)> = Vec::with_capacity(lines.len());
        for (i, raw) in lines.iter().enumerate().skip(1) {
            let lineno = i as u64 + 1;
            let line = raw.trim_end_matches('\r');
            if line.trim().is_empty() {
                continue;
            }
            let last = i + 1 == lines.len();
            match parse_row(line) {
                Ok((ts, kb)) => rows.push((ts, kb, lineno)),
                Err(e) if last && !ends_with_newline => {
                    warnings.push(Warning {
                        offset: None,
                        line: Some(lineno),
                        message: format!("last line is cut off ({e}); skipped"),
                    });
                }
                Err(e) => return Err(err(lineno, e)),
            }
        }
        let mut prev: Option<f64> = None;
        let mut reported = 0;
        for &(ts, _, lineno) in &rows {
            if let Some(p) = prev {
                if ts < p {
                    reported += 1;
                    if reported <= 5 {
                        warnings.push(Warning {
                            offset: None,
                            line: Some(lineno),
                            message: format!(
                                "timestamp {} goes back in time (previous row {}); kept in file order",
                                fmt_ts(ts),
                                fmt_ts(p)
                            ),
                        });
                    }
                }
            }
            prev = Some(ts);
        }
        if reported > 5 {
            warnings.push(Warning {
                offset: None,
                line: None,
                message: format!(
                    "{} more rows go back in time; kept in file order",
                    reported - 5
                ),
            });
        }
        if let Some(&(ts, _, lineno)) = rows.iter().find(|r| r.0 > MAX_UNIX_SECS) {
            warnings.push(Warning {
                offset: None,
                line: Some(lineno),
                message: format!(
                    "timestamp {} is after the year 5000: milliseconds instead of unix seconds? durations will be wrong",
                    fmt_ts(ts)
                ),
            });
        }
        let (lo, hi) = rows
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), r| {
                (lo.min(r.0), hi.max(r.0))
            });
        if hi - lo > MAX_SPAN_SECS {
            let lineno = rows.iter().find(|r| r.0 == hi).map(|r| r.2).unwrap_or(0);
            return Err(err(
                lineno,
                format!(
                    "absurd timestamp {}: the rows span more than {MAX_SPAN_SECS:e} seconds",
                    fmt_ts(hi)
                ),
            ));
        }
        let rows: Vec<(f64, u64)> = rows.into_iter().map(|(ts, kb, _)| (ts, kb)).collect();
        let first = rows.iter().map(|r| r.0).fold(f64::INFINITY, f64::min);
        let first = if first.is_finite() { first } else { 0.0 };
        let records = rows
            .iter()
            .map(|&(ts, kb)| Record {
                t: ((ts - first) * 1e9).round() as u64,
                body: RecordBody::Sample(Sample {
                    rss: kb * 1024,
                    ..Sample::default()
                }),
            })
            .collect();
        let mut gaps: Vec<f64> = rows
            .windows(2)
            .map(|w| w[1].0 - w[0].0)
            .filter(|g| *g > 0.0)
            .collect();
        gaps.sort_by(f64::total_cmp);
        let hz = gaps.get(gaps.len() / 2).map(|g| 1.0 / g).unwrap_or(0.0);
        Ok(Loaded {
            header: SessionHeader {
                format: 1,
                provetop_version: env!("CARGO_PKG_VERSION").to_string(),
                wall_anchor: (first * 1e9) as u64,
                mono_anchor: 0,
                host: String::new(),
                command: vec![path.display().to_string()],
                sample_hz: hz,
            },
            records,
            warnings,
            kind: SourceKind::Csv,
        })
    }

    /// One row: unix seconds (may be fractional), KiB (integer).
    pub fn parse_row(line: &str) -> Result<(f64, u64), String> {
        let mut cols = line.split(',');
        let ts = cols.next().unwrap_or("").trim();
        let kb = cols
            .next()
            .ok_or_else(|| format!("expected \"timestamp,rss_kb\", got {:?}", excerpt(line)))?
            .trim();
        let ts: f64 = ts
            .parse()
            .map_err(|_| format!("bad timestamp {:?}", excerpt(ts)))?;
        if !ts.is_finite() || ts < 0.0 {
            return Err(format!("bad timestamp {ts}"));
        }
        let kb: u64 = kb.parse().map_err(|_| {
            if kb.starts_with('-') {
                format!("negative rss_kb {:?}", excerpt(kb))
            } else {
                format!(
                    "bad rss_kb {:?} (want an integer number of KiB)",
                    excerpt(kb)
                )
            }
        })?;
        if kb > MAX_RSS_KB {
            return Err(format!("absurd rss_kb {kb} (more than 1 PiB)"));
        }
        Ok((ts, kb))
    }

    /// A timestamp as written: plain for ordinary ones, scientific for huge ones.
    fn fmt_ts(ts: f64) -> String {
        if ts.abs() < 1e15 {
            format!("{ts}")
        } else {
            format!("{ts:e}")
        }
    }

    fn excerpt(s: &str) -> String {
        s.chars().take(40).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::Event;
    use crate::record::Mark;

    fn sample(rss: u64) -> RecordBody {
        RecordBody::Sample(Sample {
            rss,
            peak: Some(rss + 1),
            gpus: vec![crate::record::GpuReading {
                index: 0,
                proc_used: 5,
                used: 6,
                total: 7,
                util: 80,
            }],
            ..Sample::default()
        })
    }

    fn write(path: &Path, recs: &[Record]) {
        let mut w =
            SessionWriter::create(path, &SessionHeader::now(vec!["x".into()], 20.0)).unwrap();
        for r in recs {
            w.append(r).unwrap();
        }
        w.sync().unwrap();
    }

    fn recs() -> Vec<Record> {
        vec![
            Record::new(1, sample(100)),
            Record::new(
                2,
                RecordBody::Event(Event::Log {
                    level: "info".into(),
                    target: "t".into(),
                    message: "hi".into(),
                }),
            ),
            Record::new(3, RecordBody::Mark(Mark::Note { text: "n".into() })),
            Record::new(4, sample(200)),
        ]
    }

    #[test]
    fn roundtrip_and_mode() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.ptop");
        write(&p, &recs());
        let l = load(&p).unwrap();
        assert_eq!(l.records, recs());
        assert!(l.warnings.is_empty());
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            std::fs::metadata(&p).unwrap().permissions().mode() & 0o777,
            0o600
        );
    }

    #[test]
    fn truncated_tail_keeps_complete_records() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.ptop");
        write(&p, &recs());
        let full = std::fs::read(&p).unwrap();
        for cut in 1..40 {
            let data = &full[..full.len() - cut];
            let l = load_bytes(&p, data).unwrap();
            assert_eq!(l.records, recs()[..3].to_vec(), "cut {cut}");
            assert_eq!(l.warnings.len(), 1);
            assert!(l.warnings[0].message.contains("cut off"));
        }
    }

    #[test]
    fn damage_in_middle_is_reported_and_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.ptop");
        write(&p, &recs());
        let mut data = std::fs::read(&p).unwrap();
        // Find the offset of frame 2 (the event) and flip a payload byte.
        let items: Vec<_> = Frames::new(
            &data,
            12 + u32::from_le_bytes(data[8..12].try_into().unwrap()) as usize,
        )
        .collect();
        let off = match &items[1] {
            FrameItem::Record(o, _) => *o as usize,
            _ => panic!(),
        };
        data[off + 12] ^= 0xff;
        let l = load_bytes(&p, &data).unwrap();
        assert_eq!(l.records.len(), 3);
        assert_eq!(l.warnings.len(), 1);
        assert_eq!(l.warnings[0].offset, Some(off as u64));
        assert!(l.warnings[0].to_string().contains("checksum"));
    }

    #[test]
    fn csv_rows_and_errors() {
        let p = Path::new("x.csv");
        let l = load_bytes(p, b"timestamp,rss_kb\n100,1024\n101,2048\n").unwrap();
        assert_eq!(l.kind, SourceKind::Csv);
        assert_eq!(l.records.len(), 2);
        assert_eq!(l.records[1].t, 1_000_000_000);
        let e = load_bytes(p, b"timestamp,rss_kb\n100,1024\n101,abc\n102,1\n").unwrap_err();
        assert_eq!(
            e.to_string(),
            "x.csv: line 3: bad rss_kb \"abc\" (want an integer number of KiB)"
        );
        let l = load_bytes(p, b"timestamp,rss_kb\n100,1024\n101,20").unwrap();
        assert_eq!(
            l.records.len(),
            2,
            "a parsable last line without newline is kept"
        );
        let l = load_bytes(p, b"timestamp,rss_kb\n100,1024\n101,").unwrap();
        assert_eq!(l.records.len(), 1);
        assert!(l.warnings[0]
            .to_string()
            .starts_with("line 3: last line is cut off"));
        let l = load_bytes(p, b"timestamp,rss_kb\n100,1\n99,2\n").unwrap();
        assert_eq!(l.records[0].t, 1_000_000_000);
        assert!(l.warnings[0].message.contains("back in time"));
        assert!(load_bytes(p, b"").is_err());
        let e = load_bytes(p, b"hello world").unwrap_err();
        assert!(e
            .to_string()
            .starts_with("x.csv: byte 0: not a provetop session"));
        let e = load_bytes(p, b"timestamp,rss_kb\n1,99999999999999999\n").unwrap_err();
        assert!(e.to_string().contains("absurd"));
    }
}
