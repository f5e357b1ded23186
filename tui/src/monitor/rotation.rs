//! Rotation and retention of a recording (`--rotate`, `--retain`, `--max-disk`; the config
//! file's `rotate`, `retain`, `max_disk`): when a part of the recording is due to end, and
//! which finished parts to remove.
//!
//! Contract: a part ends once its records span the rotation's time, or once its file holds
//! the rotation's size, at a flush (so between two records: nothing is split, a proof's
//! phases go on in the next part and read back as one timeline, see
//! `provetop_shared::session::parts`). Retention removes whole finished parts only, oldest
//! first, never the part being written.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

pub use provetop_shared::session::parts::Rotation;
use provetop_shared::session::parts::{expired, part_path};
use provetop_shared::session::SessionHeader;

/// How often starting the next part is tried again after it failed (a full disk).
const RETRY: Duration = Duration::from_secs(1);

/// A recording that rotates: its base path, the part being written and when it began.
pub struct Rotating {
    /// How.
    pub rotation: Rotation,
    /// The path the recording was asked for (`DIR/NAME.ptop`): its parts are named from it.
    pub base: PathBuf,
    /// Number of the part being written.
    pub part: u32,
    /// The header every part carries.
    pub header: SessionHeader,
    /// First and last record time in this part.
    first_t: Option<u64>,
    last_t: u64,
    /// A failed start of the next part: when, and whether it was said.
    pub failed: Option<Instant>,
}

impl Rotating {
    /// Part 1 of a recording to `base`.
    pub fn new(rotation: Rotation, base: &Path, header: SessionHeader) -> Self {
        Rotating {
            rotation,
            base: base.to_path_buf(),
            part: 1,
            header,
            first_t: None,
            last_t: 0,
            failed: None,
        }
    }

    /// The path of part `n`.
    pub fn path(&self, n: u32) -> PathBuf {
        part_path(&self.base, n)
    }

    /// A record went into the current part.
    pub fn saw(&mut self, t: u64) {
        self.first_t.get_or_insert(t);
        self.last_t = self.last_t.max(t);
    }

    /// Whether the current part, `bytes` long, is due to end (a failed try waits a second).
    pub fn due(&self, bytes: u64) -> bool {
        if self.failed.is_some_and(|t| t.elapsed() < RETRY) {
            return false;
        }
        let span = self.first_t.map_or(0, |f| self.last_t.saturating_sub(f));
        self.rotation.every_ns.is_some_and(|e| span >= e)
            || self.rotation.bytes.is_some_and(|b| bytes >= b)
    }

    /// The next part was started.
    pub fn started_next(&mut self) {
        self.part += 1;
        self.first_t = None;
        self.last_t = 0;
        self.failed = None;
    }

    /// Remove the finished parts retention does not keep; how many were removed.
    pub fn expire(&self) -> usize {
        expired(
            &self.base,
            self.part,
            self.rotation.keep,
            std::time::SystemTime::now(),
        )
        .into_iter()
        .filter(|p| {
            // Its chunk index goes with it (a part copied elsewhere reads without one).
            let _ = std::fs::remove_file(provetop_shared::session::compact::sidecar::path_of(p));
            std::fs::remove_file(p).is_ok()
        })
        .count()
    }
}
