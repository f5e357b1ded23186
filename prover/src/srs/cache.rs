//! The on-disk SRS cache file.
//!
//! Layout: bellperson's own parameter encoding (so `Parameters::read`, mapped parameters and
//! supraseal's `SRS::try_new` read the file as is), followed by a trailer:
//!
//! ```text
//! payload (payload_len bytes) | shape (L bytes, UTF-8) | L: u32 LE | payload_len: u64 LE
//!                             | crc32(payload): u32 LE | magic "PVTSRS01"
//! ```
//!
//! A file is used only if the magic, the total size, the shape and the checksum all match;
//! anything else is reported as [`CacheError::Corrupt`] and the caller regenerates. Files are
//! written to a temporary name in the same directory, fsynced and renamed, so a crash or a
//! full disk never leaves a half-written file under the real name.

use std::fs::{self, File};
use std::io::{self, BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

use bellperson::groth16::Parameters;
use blstrs::Bls12;

/// Trailer magic.
pub const MAGIC: &[u8; 8] = b"PVTSRS01";
const FIXED_TRAILER: u64 = 4 + 8 + 4 + 8;

/// Why a cache file was not used.
#[derive(Debug, thiserror::Error)]
pub enum CacheError {
    /// No file.
    #[error("no cache file")]
    Missing,
    /// The file exists but fails a check.
    #[error("{0}")]
    Corrupt(String),
    /// Reading failed.
    #[error("read error: {0}")]
    Io(#[from] io::Error),
}

struct CrcReader<R> {
    inner: R,
    crc: crc32fast::Hasher,
    n: u64,
    counter: Option<Arc<AtomicU64>>,
}

impl<R: Read> Read for CrcReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let k = self.inner.read(buf)?;
        self.crc.update(&buf[..k]);
        self.n += k as u64;
        if let Some(c) = &self.counter {
            c.fetch_add(k as u64, Relaxed);
        }
        Ok(k)
    }
}

struct CrcWriter<W> {
    inner: W,
    crc: crc32fast::Hasher,
    n: u64,
}

impl<W: Write> Write for CrcWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let k = self.inner.write(buf)?;
        self.crc.update(&buf[..k]);
        self.n += k as u64;
        Ok(k)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// The trailer of a cache file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Trailer {
    /// Circuit shape id.
    pub shape: String,
    /// Bytes of bellperson-encoded parameters at the start of the file.
    pub payload_len: u64,
    /// CRC-32 of the payload.
    pub crc: u32,
}

/// Read and check the trailer against the file size.
pub fn read_trailer(path: &Path) -> Result<Trailer, CacheError> {
    let mut f = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(CacheError::Missing),
        Err(e) => return Err(e.into()),
    };
    let size = f.metadata()?.len();
    if size < FIXED_TRAILER {
        return Err(CacheError::Corrupt(format!(
            "truncated: {size} bytes, no trailer"
        )));
    }
    f.seek(SeekFrom::Start(size - FIXED_TRAILER))?;
    let mut t = [0u8; FIXED_TRAILER as usize];
    f.read_exact(&mut t)?;
    if &t[16..24] != MAGIC {
        return Err(CacheError::Corrupt(format!(
            "no trailer magic at the end ({size} bytes; truncated or not a provetop SRS file)"
        )));
    }
    let shape_len = u32::from_le_bytes(t[0..4].try_into().expect("4 bytes")) as u64;
    let payload_len = u64::from_le_bytes(t[4..12].try_into().expect("8 bytes"));
    let crc = u32::from_le_bytes(t[12..16].try_into().expect("4 bytes"));
    let expected = payload_len
        .checked_add(shape_len)
        .and_then(|v| v.checked_add(FIXED_TRAILER));
    if expected != Some(size) || shape_len > 4096 {
        return Err(CacheError::Corrupt(format!(
            "size mismatch: file has {size} bytes, trailer describes {payload_len} + {shape_len} + {FIXED_TRAILER}"
        )));
    }
    f.seek(SeekFrom::Start(payload_len))?;
    let mut shape = vec![0u8; shape_len as usize];
    f.read_exact(&mut shape)?;
    let shape = String::from_utf8(shape)
        .map_err(|_| CacheError::Corrupt("shape in trailer is not UTF-8".into()))?;
    Ok(Trailer {
        shape,
        payload_len,
        crc,
    })
}

/// Load parameters for `shape` from `path`, verifying size, shape and checksum.
/// `bytes_read` (if given) counts payload bytes as they are read, for progress.
pub fn load(
    path: &Path,
    shape: &str,
    bytes_read: Option<Arc<AtomicU64>>,
) -> Result<Parameters<Bls12>, CacheError> {
    let t = read_trailer(path)?;
    if t.shape != shape {
        return Err(CacheError::Corrupt(format!(
            "file is for circuit shape {:?}, expected {shape:?}",
            t.shape
        )));
    }
    let f = File::open(path)?;
    let mut r = CrcReader {
        inner: BufReader::with_capacity(1 << 20, f.take(t.payload_len)),
        crc: crc32fast::Hasher::new(),
        n: 0,
        counter: bytes_read,
    };
    // Unchecked point decoding is safe here: nothing is used before the checksum matches.
    let parsed = Parameters::<Bls12>::read(&mut r, false);
    if r.n != t.payload_len {
        // Drain so that the checksum covers every byte (a short parse is corruption too).
        io::copy(&mut r, &mut io::sink())?;
    }
    let crc = r.crc.finalize();
    if crc != t.crc {
        return Err(CacheError::Corrupt(format!(
            "checksum mismatch (crc32 {crc:08x}, trailer says {:08x})",
            t.crc
        )));
    }
    let mut params = parsed.map_err(|e| {
        CacheError::Corrupt(format!("checksum matches but parameters do not parse: {e}"))
    })?;
    if r.n != t.payload_len {
        return Err(CacheError::Corrupt(format!(
            "parameters end at byte {} of a {}-byte payload",
            r.n, t.payload_len
        )));
    }
    shrink(&mut params);
    Ok(params)
}

/// Drop the spare capacity `Parameters::read` leaves behind (it grows its vectors by pushing),
/// so that resident bytes are what the SRS really needs.
fn shrink(p: &mut Parameters<Bls12>) {
    fn one<T>(v: &mut Arc<Vec<T>>) {
        if let Some(v) = Arc::get_mut(v) {
            v.shrink_to_fit();
        }
    }
    one(&mut p.h);
    one(&mut p.l);
    one(&mut p.a);
    one(&mut p.b_g1);
    one(&mut p.b_g2);
    p.vk.ic.shrink_to_fit();
}

/// Write `params` for `shape` to `path` atomically. Returns the file size.
pub fn store(path: &Path, shape: &str, params: &Parameters<Bls12>) -> io::Result<u64> {
    let dir = path.parent().unwrap_or(Path::new("."));
    fs::create_dir_all(dir)?;
    let tmp: PathBuf = dir.join(format!(
        ".{}.tmp.{}",
        path.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "srs".into()),
        std::process::id()
    ));
    let res = (|| -> io::Result<u64> {
        let f = File::create(&tmp)?;
        let mut w = CrcWriter {
            inner: BufWriter::with_capacity(1 << 20, f),
            crc: crc32fast::Hasher::new(),
            n: 0,
        };
        params.write(&mut w)?;
        let (payload_len, crc) = (w.n, w.crc.finalize());
        let mut out = w.inner;
        out.write_all(shape.as_bytes())?;
        out.write_all(&(shape.len() as u32).to_le_bytes())?;
        out.write_all(&payload_len.to_le_bytes())?;
        out.write_all(&crc.to_le_bytes())?;
        out.write_all(MAGIC)?;
        let f = out.into_inner().map_err(|e| e.into_error())?;
        f.sync_all()?;
        Ok(payload_len + shape.len() as u64 + FIXED_TRAILER)
    })();
    match res {
        Ok(size) => {
            fs::rename(&tmp, path)?;
            if let Ok(d) = File::open(dir) {
                let _ = d.sync_all();
            }
            Ok(size)
        }
        Err(e) => {
            let _ = fs::remove_file(&tmp);
            Err(e)
        }
    }
}
