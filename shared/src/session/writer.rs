//! Appending records to a session file.

use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use super::{SessionHeader, MAGIC};
use crate::record::{Record, RecordBody};

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

/// Appends records to a session file (created with mode 0600: it may hold command lines).
pub struct SessionWriter {
    out: BufWriter<File>,
    path: PathBuf,
    records: u64,
    bytes: u64,
}

impl SessionWriter {
    /// Create `path` (it must not exist: see [`create_private`]) and write the header.
    pub fn create(path: &Path, header: &SessionHeader) -> io::Result<Self> {
        let file = create_private(path)?;
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
