//! Groth16 parameters (the SRS) for one circuit shape: generated once per shape with a
//! deterministic seed, cached on disk, loaded once and then kept resident by the caller.
//!
//! [`obtain`] emits `srs_loading`, `srs_progress` (from generation work done or cache bytes
//! read) and `srs_ready`; a corrupt or truncated cache file yields a `log` warning event and
//! is regenerated, never used.

pub mod cache;
pub mod generate;

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bellperson::groth16::Parameters;
use blstrs::{Bls12, G1Affine, G2Affine};
use provetop_shared::protocol::{Event, SrsSource};
use rand::SeedableRng;
use sha2::{Digest, Sha256};

use crate::circuit::{Layout, PartitionCircuit};
use crate::events::Emitter;
use cache::CacheError;
use generate::{GenError, Progress, Toxic};

/// Where the SRS lives on disk and how progress is shown.
#[derive(Debug, Clone, Default)]
pub struct SrsOptions {
    /// Cache directory; `None` disables the disk cache.
    pub cache_dir: Option<PathBuf>,
    /// Also draw a progress line on stderr (standalone mode).
    pub progress_line: bool,
}

/// Parameters obtained for a shape.
pub struct Srs {
    /// The parameters.
    pub params: Parameters<Bls12>,
    /// Where they came from.
    pub source: SrsSource,
    /// Seconds the load or generation took (including writing the cache).
    pub seconds: f64,
    /// The cache file, when caching is on.
    pub path: Option<PathBuf>,
}

/// Why no SRS could be obtained.
#[derive(Debug, thiserror::Error)]
pub enum SrsError {
    /// Generation failed.
    #[error(transparent)]
    Generate(#[from] GenError),
}

/// The default cache directory: `$XDG_CACHE_HOME/provetop/srs` (usually `~/.cache/provetop/srs`).
pub fn default_cache_dir() -> Option<PathBuf> {
    directories::ProjectDirs::from("", "", "provetop").map(|d| d.cache_dir().join("srs"))
}

/// The cache file of a layout inside `dir`.
pub fn cache_path(dir: &Path, layout: &Layout) -> PathBuf {
    dir.join(format!("{}.params", layout.shape_id()))
}

/// The deterministic toxic waste of a shape (test setup: never use for anything real).
pub fn toxic_for(shape: &str) -> Toxic {
    let seed: [u8; 32] = Sha256::digest(format!("provetop srs v1 {shape}")).into();
    Toxic::random(&mut rand_chacha::ChaCha20Rng::from_seed(seed))
}

/// Bytes the parameters occupy in memory.
pub fn resident_bytes(p: &Parameters<Bls12>) -> u64 {
    let g1 = std::mem::size_of::<G1Affine>() as u64;
    let g2 = std::mem::size_of::<G2Affine>() as u64;
    (p.h.len() + p.l.len() + p.a.len() + p.b_g1.len() + p.vk.ic.len()) as u64 * g1
        + p.b_g2.len() as u64 * g2
        + 3 * g1
        + 3 * g2
}

/// Expected resident bytes of a layout's parameters (before generating them).
pub fn expected_bytes(layout: &Layout) -> u64 {
    let c = crate::circuit::count(*layout);
    let m = c.constraints.next_power_of_two();
    let vars = c.inputs + c.aux;
    let g1 = std::mem::size_of::<G1Affine>() as u64;
    let g2 = std::mem::size_of::<G2Affine>() as u64;
    (m - 1 + c.aux + 2 * vars + c.inputs) * g1 + vars * g2
}

/// Rough resident bytes of the SRS for `constraints` constraints, without building the
/// circuit (for refusing impossible sizes up front).
pub fn approx_bytes(constraints: u64) -> u64 {
    let g1 = std::mem::size_of::<G1Affine>() as u64;
    let g2 = std::mem::size_of::<G2Affine>() as u64;
    constraints.next_power_of_two() * g1 + constraints * (3 * g1 + g2)
}

/// Emits `srs_progress` (and the stderr line) from a counter while work runs.
struct Reporter {
    stop: Arc<AtomicBool>,
    handle: Option<std::thread::JoinHandle<()>>,
}

impl Reporter {
    fn start(
        emitter: Emitter,
        what: String,
        done: Arc<dyn Fn() -> (u64, u64) + Send + Sync>,
        line: bool,
    ) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let handle = std::thread::spawn(move || {
            let t0 = Instant::now();
            let tty = std::io::stderr().is_terminal();
            let mut last = (u64::MAX, 0);
            let mut last_decile = None;
            loop {
                // Read the flag first so the last poll after it is raised sees the final count.
                let stopping = s.load(Relaxed);
                let (d, t) = done();
                if t > 0 && (d, t) != last {
                    last = (d, t);
                    emitter.emit(Event::SrsProgress { done: d, total: t });
                    if line {
                        let pct = (d as f64 * 100.0 / t as f64).min(100.0);
                        let decile = (pct / 10.0) as u32;
                        if tty {
                            eprint!(
                                "\rprovetop-prover: {what}: {pct:5.1}% ({:.1} s)   ",
                                t0.elapsed().as_secs_f64()
                            );
                            let _ = std::io::stderr().flush();
                        } else if last_decile != Some(decile) {
                            eprintln!(
                                "provetop-prover: {what}: {pct:.0}% ({:.1} s)",
                                t0.elapsed().as_secs_f64()
                            );
                            last_decile = Some(decile);
                        }
                    }
                }
                if stopping {
                    break;
                }
                std::thread::park_timeout(Duration::from_millis(200));
            }
            if line && tty {
                eprintln!();
            }
        });
        Reporter {
            stop,
            handle: Some(handle),
        }
    }
}

impl Drop for Reporter {
    fn drop(&mut self) {
        self.stop.store(true, Relaxed);
        if let Some(h) = self.handle.take() {
            h.thread().unpark();
            let _ = h.join();
        }
    }
}

fn warn(emitter: &Emitter, message: String) {
    log::warn!(target: "provetop_prover::srs", "{message}");
    emitter.emit(Event::Log {
        level: "warn".into(),
        target: "provetop_prover::srs".into(),
        message,
    });
}

fn try_disk(path: &Path, layout: &Layout, opts: &SrsOptions, emitter: &Emitter) -> Option<Srs> {
    let size = match std::fs::metadata(path) {
        Ok(m) => m.len(),
        Err(_) => return None,
    };
    let t0 = Instant::now();
    emitter.emit(Event::SrsLoading {
        source: SrsSource::Disk,
        bytes: Some(size),
    });
    let read = Arc::new(AtomicU64::new(0));
    let res = {
        let r = read.clone();
        let _rep = Reporter::start(
            emitter.clone(),
            "loading SRS".into(),
            Arc::new(move || (r.load(Relaxed), size)),
            opts.progress_line,
        );
        let r = cache::load(path, &layout.shape_id(), Some(read.clone()));
        // The counter covers the payload; the final progress event covers the whole file.
        if r.is_ok() {
            read.store(size, Relaxed);
        }
        r
    };
    match res {
        Ok(params) => Some(Srs {
            params,
            source: SrsSource::Disk,
            seconds: t0.elapsed().as_secs_f64(),
            path: Some(path.to_path_buf()),
        }),
        Err(CacheError::Missing) => None,
        Err(e) => {
            warn(
                emitter,
                format!(
                    "SRS cache file {} is unusable ({e}); regenerating it",
                    path.display()
                ),
            );
            None
        }
    }
}

/// Get the parameters of `layout`: from the disk cache when it holds a valid file, otherwise
/// generated (and then cached). Emits the SRS events; `srs_ready` is left to the caller, who
/// knows how the parameters end up resident (pinned or not).
pub fn obtain(
    layout: &Layout,
    opts: &SrsOptions,
    emitter: &Emitter,
    abort: &AtomicBool,
) -> Result<Srs, SrsError> {
    let path = opts.cache_dir.as_ref().map(|d| cache_path(d, layout));
    if let Some(p) = &path {
        if let Some(srs) = try_disk(p, layout, opts, emitter) {
            return Ok(srs);
        }
    }
    let t0 = Instant::now();
    emitter.emit(Event::SrsLoading {
        source: SrsSource::Generated,
        bytes: Some(expected_bytes(layout)),
    });
    let progress = Arc::new(Progress::default());
    let params = {
        let p = progress.clone();
        let _rep = Reporter::start(
            emitter.clone(),
            format!("generating SRS for {}", layout.shape_id()),
            Arc::new(move || (p.done.load(Relaxed), p.total.load(Relaxed))),
            opts.progress_line,
        );
        generate::generate(
            PartitionCircuit::shape(*layout),
            &toxic_for(&layout.shape_id()),
            &progress,
            abort,
        )?
    };
    if let Some(p) = &path {
        match cache::store(p, &layout.shape_id(), &params) {
            Ok(bytes) => log::info!(
                target: "provetop_prover::srs",
                "SRS cached at {} ({bytes} bytes)",
                p.display()
            ),
            Err(e) => warn(
                emitter,
                format!(
                    "could not write SRS cache {} ({e}); continuing with the SRS in memory",
                    p.display()
                ),
            ),
        }
    }
    Ok(Srs {
        params,
        source: SrsSource::Generated,
        seconds: t0.elapsed().as_secs_f64(),
        path,
    })
}
