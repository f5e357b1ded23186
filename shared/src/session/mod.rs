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
//!          kind 6 = a line of the child's output, 7 = an event derived from log lines,
//!          8 = a usage reading: CPU, I/O, per-process and GPU details (JSON; added within
//!          version 1: older files have none and read as before, a reader older than them
//!          takes such a frame for damage and skips it)
//! ```
//! Append-only; a frame is complete or ignored. A damaged head costs at most what it holds
//! ([`header`]: the magic, version byte, length and JSON fields are each read past with a
//! warning). A file cut off mid-frame (kill -9) loads
//! every complete frame and warns with the byte offset of the cut; a damaged frame in the
//! middle (CRC mismatch, impossible length) is reported with its byte offset, and reading
//! resynchronizes on the next frame whose CRC checks.
//!
//! The plain `timestamp,rss_kb` CSV of ad-hoc samplers (header line, unix seconds, KiB) is
//! accepted everywhere a session file is: [`load`] tells them apart by their first bytes.
//!
//! Format 2 ([`compact`]: compressed chunks of columns, an index-free scan of chunk heads,
//! a min/max summary per chunk) is what the recorder writes; format 1 files still read.
//!
//! * [`writer`]: appending records; [`frame`]: one frame read at an offset, the parser of both
//!   the whole-file reader and the follower of a growing file; [`reader`]: reading frames back,
//!   resynchronizing on damage; [`csv`]: the seed's CSV; [`stream`]: a session record by record in
//!   bounded memory.

pub mod compact;
pub mod csv;
mod frame;
mod header;
pub mod parts;
mod reader;
pub mod stream;
#[cfg(test)]
mod tests;
mod writer;

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::record::Record;

pub use frame::{
    decode_payload, encode_payload, frame_at, known_kind, possible_len, FrameError, FrameItem,
    RESYNC_BUDGET_MIN, RESYNC_BUDGET_PER_BYTE,
};
pub use header::{estimate_anchors, looks_like_session, read_header, Head, HeadError};
use reader::load_session;
pub use reader::Frames;
pub use writer::{create_private, taken, SessionWriter, Whereabouts};

/// First bytes of every session file.
pub const MAGIC: &[u8; 8] = b"PTSESS\0\x01";
/// Largest payload a reader accepts; anything longer is damage.
pub const MAX_FRAME: u32 = 16 << 20;
/// Largest header a reader accepts.
pub const MAX_HEADER: u32 = 1 << 20;

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
///
/// Only a regular file is read (a FIFO, a device such as `/dev/zero`, a directory is a
/// one-line error, and opening never waits for a FIFO's writer), and only once its first
/// bytes say it is a session or a CSV: a large file of anything else costs one small read.
///
/// A rotated recording ([`parts`]) loads whole: named by any of its parts, or by the path it
/// was recorded to, its parts are read in order as one timeline (a warning names its part).
pub fn load(path: &Path) -> Result<Loaded, LoadError> {
    let files = parts::set_of(path);
    let [first, rest @ ..] = files.as_slice() else {
        return load_one(path);
    };
    if rest.is_empty() {
        return load_one(first);
    }
    let name = |p: &Path| {
        p.file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned())
    };
    let mut all = load_one(first)?;
    for w in &mut all.warnings {
        w.message = format!("{}: {}", name(first), w.message);
    }
    for p in rest {
        match load_one(p) {
            Ok(l) => {
                all.records.extend(l.records);
                all.warnings.extend(l.warnings.into_iter().map(|mut w| {
                    w.message = format!("{}: {}", name(p), w.message);
                    w
                }));
            }
            // A part that cannot be read at all (removed meanwhile, damaged head) is skipped.
            Err(e) => all.warnings.push(Warning {
                offset: None,
                line: None,
                message: format!("{e}; part skipped"),
            }),
        }
    }
    Ok(all)
}

/// Load one file (see [`load`]).
fn load_one(path: &Path) -> Result<Loaded, LoadError> {
    use std::io::Read;
    let io = |error| LoadError::Io {
        path: path.to_path_buf(),
        error,
    };
    let mut file = open_regular(path).map_err(io)?;
    let mut data = Vec::new();
    (&mut file)
        .take(SNIFF as u64)
        .read_to_end(&mut data)
        .map_err(io)?;
    if !data.is_empty() && !looks_like_session(&data) && !looks_like_csv(&data) {
        return load_bytes(path, &data);
    }
    // A head that is damaged or not this build's (another format version, an impossible
    // length) is judged from a bounded prefix, before the rest is read: refused if it cannot
    // be read at all.
    if looks_like_session(&data) && data.len() == SNIFF {
        let hlen = u32::from_le_bytes(data[8..12].try_into().expect("4 bytes"));
        if data[..8] != MAGIC[..] || hlen > MAX_HEADER {
            (&mut file)
                .take((HEAD_PROBE - SNIFF) as u64)
                .read_to_end(&mut data)
                .map_err(io)?;
            if data.len() < HEAD_PROBE {
                return load_bytes(path, &data);
            }
            if let Err(e) = header::read_header(&data) {
                return Err(LoadError::Format {
                    path: path.to_path_buf(),
                    offset: e.offset,
                    detail: e.detail,
                });
            }
        }
    }
    if data.len() == SNIFF || data.len() == HEAD_PROBE {
        let size = file.metadata().map_or(0, |m| m.len()) as usize;
        data.reserve(size.saturating_sub(SNIFF));
        file.read_to_end(&mut data).map_err(io)?;
    }
    load_bytes(path, &data)
}

/// Bytes read to tell a session from a CSV from anything else.
const SNIFF: usize = 64;
/// Bytes read to judge a damaged or foreign head: the largest header and a first frame.
const HEAD_PROBE: usize = 12 + MAX_HEADER as usize + (1 << 20);

/// Open `path` for reading if it is a regular file (symbolic links followed): a FIFO, a
/// socket, a device or a directory is an error saying what it is. The open does not block on
/// a FIFO with no writer (`O_NONBLOCK`, which a regular file ignores).
pub fn open_regular(path: &Path) -> io::Result<std::fs::File> {
    use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_NONBLOCK | nix::libc::O_CLOEXEC)
        .open(path)?;
    let t = file.metadata()?.file_type();
    let what = if t.is_file() {
        return Ok(file);
    } else if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a named pipe (FIFO)"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_socket() {
        "a socket"
    } else {
        "not a regular file"
    };
    Err(io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("{what}, not a file (provetop reads regular files only)"),
    ))
}

/// Like [`load`], from bytes already read (`path` names the source in messages).
pub fn load_bytes(path: &Path, data: &[u8]) -> Result<Loaded, LoadError> {
    if data.is_empty() {
        return Err(LoadError::Empty {
            path: path.to_path_buf(),
        });
    }
    if looks_like_session(data) {
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
