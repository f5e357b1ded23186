//! Appending records to a session file.

use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use super::compact::sidecar::IndexWriter;
use super::frame::encode_payload;
use super::{SessionHeader, MAGIC};
use crate::record::Record;

/// What is already at `path`, in words ("is a symbolic link", "already exists"), when
/// something is: why [`create_private`] will refuse it, said before anything starts.
pub fn taken(path: &Path) -> Option<&'static str> {
    let m = std::fs::symlink_metadata(path).ok()?;
    Some(if m.file_type().is_symlink() {
        "is a symbolic link"
    } else {
        "already exists"
    })
}

/// Create a new file for writing (and reading back) with mode 0600, whatever the umask: never
/// an existing path, never through a symbolic link (`O_CREAT | O_EXCL | O_NOFOLLOW`), so a
/// link planted at the path cannot make provetop truncate, chmod or append to another file.
/// An existing path is an `AlreadyExists` error whose message says what to do (the caller
/// names the path).
pub fn create_private(path: &Path) -> io::Result<File> {
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .custom_flags(nix::libc::O_NOFOLLOW | nix::libc::O_CLOEXEC)
        .mode(0o600)
        .open(path)
        .map_err(|e| {
            if e.kind() != io::ErrorKind::AlreadyExists {
                return e;
            }
            let why = match std::fs::symlink_metadata(path) {
                Ok(m) if m.file_type().is_symlink() => {
                    "is a symbolic link (provetop does not write through links)"
                }
                _ => "already exists (provetop writes only new files: choose another name, or remove it)",
            };
            io::Error::new(io::ErrorKind::AlreadyExists, why)
        })?;
    // `mode` is filtered by the umask: a umask such as 0o277 would leave the owner unable to
    // write. The file is ours and new: set the mode outright.
    file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    Ok(file)
}

/// Where a session file being written is, by [`SessionWriter::whereabouts`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Whereabouts {
    /// At its path.
    InPlace,
    /// No longer at its path but still linked: at this one.
    Moved(PathBuf),
    /// Unlinked: deleted, or its path replaced by another file. Written on, it is lost when
    /// closed.
    Deleted,
}

/// Appends records to a session file (created with mode 0600: it may hold command lines).
pub struct SessionWriter {
    out: BufWriter<File>,
    path: PathBuf,
    records: u64,
    bytes: u64,
    /// Format 2 only: the records not yet in a chunk.
    tail: Option<Tail>,
    /// Format 2 only: the chunk index beside the file, while it can be written.
    index: Option<IndexWriter>,
}

/// The uncompressed tail of a compact session ([`super::compact`]).
struct Tail {
    /// Offset where the tail starts: the end of the last chunk.
    start: u64,
    /// The tail's records, the first being record number `first_seq`.
    records: super::compact::Pending,
    first_seq: u64,
    /// Bytes of tail blocks written (buffered or not) since `start`.
    bytes: u64,
    /// A commit from [`SessionWriter::append`] failed: the next is left to the next flush.
    commit_failed: bool,
}

/// A tail this long (records or bytes) is committed as a chunk at the next flush.
const COMMIT_RECORDS: usize = 8192;
const COMMIT_BYTES: u64 = 2 << 20;
/// A tail spanning this much record time is committed too (ns): chunks stay a few minutes
/// long however slow the sampling, so seeks decode little.
const COMMIT_SPAN: u64 = 300_000_000_000;

impl SessionWriter {
    /// Create `path` (it must not exist: see [`create_private`]) and write the header.
    pub fn create(path: &Path, header: &SessionHeader) -> io::Result<Self> {
        Self::create_as(path, header, MAGIC).map(|(w, _)| w)
    }

    /// Create `path` as a compact session (format 2, [`super::compact`]): records go to an
    /// uncompressed tail as they come and are committed as compressed chunks at a
    /// [`flush`](Self::flush) once the tail is long enough, and at [`sync`](Self::sync).
    pub fn create_compact(path: &Path, header: &SessionHeader) -> io::Result<Self> {
        let mut header = header.clone();
        header.format = 2;
        let (mut w, start) = Self::create_as(path, &header, super::compact::MAGIC2)?;
        // An index found at its path is another session's (this one is new): replaced.
        let ix = super::compact::sidecar::path_of(path);
        let _ = std::fs::remove_file(&ix);
        w.index = create_private(&ix)
            .ok()
            .and_then(|f| IndexWriter::start(f, ix, &start));
        w.tail = Some(Tail {
            start: w.bytes,
            records: super::compact::Pending::default(),
            first_seq: 0,
            bytes: 0,
            commit_failed: false,
        });
        Ok(w)
    }

    /// The writer and the bytes it wrote first (magic and header).
    fn create_as(
        path: &Path,
        header: &SessionHeader,
        magic: &[u8; 8],
    ) -> io::Result<(Self, Vec<u8>)> {
        let file = create_private(path)?;
        let mut out = BufWriter::with_capacity(256 << 10, file);
        let h = super::header::with_checksum(serde_json::to_vec(header).map_err(io::Error::other)?);
        let mut start = Vec::with_capacity(12 + h.len());
        start.extend_from_slice(magic);
        start.extend_from_slice(&(h.len() as u32).to_le_bytes());
        start.extend_from_slice(&h);
        out.write_all(&start)?;
        let w = SessionWriter {
            out,
            path: path.to_path_buf(),
            records: 0,
            bytes: start.len() as u64,
            tail: None,
            index: None,
        };
        Ok((w, start))
    }

    /// Append one record (buffered; call [`flush`](Self::flush) at least once a second).
    pub fn append(&mut self, rec: &Record) -> io::Result<()> {
        if let Some(tail) = &mut self.tail {
            let payload = encode_payload(rec);
            let block = super::compact::tail_block_of(self.records, &payload);
            // One write per block, as for frames below.
            self.out.write_all(&block)?;
            tail.records.push(rec, &payload);
            tail.bytes += block.len() as u64;
            self.records += 1;
            self.bytes += block.len() as u64;
            // A tail that fills between two flushes (a flood of events) is committed at once,
            // so what a commit holds in memory stays bounded. The record is in the tail
            // already: a failed commit is not this append's failure; the next flush retries
            // it and says why.
            let full = tail.records.len() >= COMMIT_RECORDS || tail.bytes >= COMMIT_BYTES;
            if full && !tail.commit_failed && self.commit().is_err() {
                if let Some(t) = &mut self.tail {
                    t.commit_failed = true;
                }
            }
            return Ok(());
        }
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

    /// Push buffered records to the kernel; in a compact session, commit the tail as a chunk
    /// once it is long enough.
    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()?;
        if let Some(t) = &mut self.tail {
            t.commit_failed = false;
        }
        let due = self.tail.as_ref().is_some_and(|t| {
            t.records.len() >= COMMIT_RECORDS
                || t.bytes >= COMMIT_BYTES
                || t.records.span() >= COMMIT_SPAN
        });
        if due {
            self.commit()?;
        }
        Ok(())
    }

    /// Flush (committing a compact session's whole tail) and fsync.
    pub fn sync(&mut self) -> io::Result<()> {
        self.out.flush()?;
        if self.tail.as_ref().is_some_and(|t| !t.records.is_empty()) {
            self.commit()?;
        }
        self.out.get_ref().sync_data()
    }

    /// Commit the tail as a chunk: append the chunk after the tail, copy it over the tail's
    /// start, cut the file after the copy. A crash at any point leaves every record whole at
    /// least once (the reader takes each sequence number once); a failed append (disk full)
    /// is cut off again and leaves the tail as it was.
    fn commit(&mut self) -> io::Result<()> {
        use std::io::{Seek, SeekFrom};
        use std::os::unix::fs::FileExt;
        let Some(tail) = &mut self.tail else {
            return Ok(());
        };
        self.out.flush()?;
        let mut done = 0;
        while done < tail.records.len() {
            let n = (tail.records.len() - done).min(super::compact::MAX_CHUNK_RECORDS as usize);
            let first = tail.first_seq + done as u64;
            let block = super::compact::pending_chunk(first, &tail.records, done, done + n)?;
            let file = self.out.get_mut();
            let end = tail.start + tail.bytes;
            if let Err(e) = file.write_all_at(&block, end) {
                let _ = file.set_len(end);
                // The records not committed stay in the tail, after the chunks that were.
                tail.records.drain(done);
                tail.first_seq = first;
                return Err(e);
            }
            file.write_all_at(&block, tail.start)?;
            // The chunk is in place for good (a crash from here on leaves it whole where it
            // is): the index may name it.
            if self
                .index
                .as_mut()
                .is_some_and(|ix| ix.add(tail.start, &block).is_err())
            {
                self.index = None;
            }
            tail.start += block.len() as u64;
            tail.bytes = end + block.len() as u64 - tail.start;
            done += n;
        }
        let file = self.out.get_mut();
        file.set_len(tail.start)?;
        file.seek(SeekFrom::Start(tail.start))?;
        tail.first_seq += tail.records.len() as u64;
        tail.records = super::compact::Pending::default();
        tail.bytes = 0;
        self.bytes = tail.start;
        Ok(())
    }

    /// Path written.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether the file is still at [`path`](Self::path) (same device and inode); if not,
    /// where it went. Costs two `stat`s.
    pub fn whereabouts(&self) -> io::Result<Whereabouts> {
        use std::os::unix::fs::MetadataExt;
        let ours = self.out.get_ref().metadata()?;
        if let Ok(m) = std::fs::symlink_metadata(&self.path) {
            if (m.dev(), m.ino()) == (ours.dev(), ours.ino()) {
                return Ok(Whereabouts::InPlace);
            }
        }
        if ours.nlink() == 0 {
            return Ok(Whereabouts::Deleted);
        }
        // Still linked somewhere: where the kernel says the descriptor points.
        use std::os::fd::AsRawFd;
        let fd = self.out.get_ref().as_raw_fd();
        match std::fs::read_link(format!("/proc/self/fd/{fd}")) {
            Ok(p) if p.is_absolute() && !p.to_string_lossy().ends_with(" (deleted)") => {
                // A file system whose stat and fstat disagree on the numbers still names
                // the same path: not a move.
                if std::fs::canonicalize(&self.path).is_ok_and(|c| c == p) {
                    return Ok(Whereabouts::InPlace);
                }
                Ok(Whereabouts::Moved(p))
            }
            _ => Ok(Whereabouts::Deleted),
        }
    }

    /// The file was moved: go on calling it `path`.
    pub fn moved_to(&mut self, path: PathBuf) {
        if self.index.as_mut().is_some_and(|ix| !ix.moved_to(&path)) {
            self.index = None;
        }
        self.path = path;
    }

    /// Go on in a new file at `path` ([`create_private`]) holding everything written so far
    /// (copied from the file written until now, which may have been deleted: it lives while
    /// it is open).
    pub fn relocate(&mut self, path: &Path) -> io::Result<()> {
        use std::os::unix::fs::FileExt;
        self.out.flush()?;
        let mut new = create_private(path)?;
        let old = self.out.get_ref();
        let mut buf = vec![0u8; 1 << 20];
        let mut at = 0u64;
        let copied = (|| loop {
            let n = old.read_at(&mut buf, at)?;
            if n == 0 {
                return new.flush();
            }
            new.write_all(&buf[..n])?;
            at += n as u64;
        })();
        if let Err(e) = copied {
            let _ = std::fs::remove_file(path);
            return Err(e);
        }
        self.out = BufWriter::with_capacity(256 << 10, new);
        self.path = path.to_path_buf();
        // The new file is read without an index (it holds the same chunks at the same
        // places, but the old index may be gone with the old file).
        self.index = None;
        Ok(())
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
