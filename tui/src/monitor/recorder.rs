//! The recorder: appends records to a session file and survives write errors.
//!
//! Records are buffered and pushed to the kernel twice a second ([`Recorder::tick`]), so
//! killing provetop loses at most the last second even counting the caller's tick and the
//! sampling interval; [`Recorder::finish`] also fsyncs.
//!
//! A write error (disk full, quota, file size limit) never stops monitoring: the recorder
//! reports it once as a [`Mark::Warning`], keeps the records that could not be written in a
//! bounded queue (oldest dropped first), retries once a second, and reports again when writing
//! works again, with how many records were lost.
//!
//! Losing the file is noticed at every flush (its device and inode against its path's):
//! * moved (renamed): recording goes on in it, under its new name, and says so;
//! * deleted, or its path replaced by another file: everything recorded so far is copied
//!   from the open (deleted) file into a new file at the path, or, when another file took the
//!   path, next to it (`PATH.recovered-PID`), and recording goes on there; said once;
//! * when no new file can be made (the directory went too): said, the recording shows as
//!   failing (`✖ rec failing`), it goes on into the deleted file and making the new file is
//!   retried every second and at the end; if that never works, the end says the recording is
//!   lost.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::Context;
use provetop_shared::session::{SessionHeader, SessionWriter, Whereabouts};
use provetop_shared::{Mark, Record, RecordBody};

use super::rotation::{Rotating, Rotation};

/// Longest time records stay in the buffer. Half a second: a kill -9 loses this, plus up to
/// one pump of the caller ([`super::PUMP_EVERY`] at most) and one sampling interval, which
/// together must stay under a second.
pub const FLUSH_EVERY: Duration = Duration::from_millis(500);
/// How often writing is retried while it fails.
pub const RETRY_EVERY: Duration = Duration::from_secs(1);
/// Records kept in memory while the file cannot be written (about 30 min at 20 Hz).
pub const BACKLOG_MAX: usize = 36_000;

/// Writes a session file.
pub struct Recorder {
    writer: SessionWriter,
    last_flush: Instant,
    /// Set while writes fail: the first error's text.
    failing: Option<String>,
    last_retry: Instant,
    backlog: VecDeque<Record>,
    lost: u64,
    /// Set while the file is deleted and no new one could be made: the path it had.
    orphaned: Option<PathBuf>,
    rescue_failed_once: bool,
    /// Set when the recording rotates (`--rotate`).
    rotating: Option<Rotating>,
}

impl Recorder {
    /// Create (truncate) the session file with mode 0600 and write its header to disk.
    pub fn create(path: &Path, header: &SessionHeader) -> anyhow::Result<Self> {
        let mut writer = SessionWriter::create_compact(path, header)
            .with_context(|| format!("cannot create session file {}", path.display()))?;
        // The header goes to disk at once, so even a session killed in its first second
        // leaves a file that replays.
        writer
            .flush()
            .with_context(|| format!("cannot write session file {}", path.display()))?;
        Ok(Recorder {
            writer,
            last_flush: Instant::now(),
            failing: None,
            last_retry: Instant::now(),
            backlog: VecDeque::new(),
            lost: 0,
            orphaned: None,
            rescue_failed_once: false,
            rotating: None,
        })
    }

    /// Append a record. Returns a [`Mark::Warning`] when writing starts failing (once) or
    /// recovers; the caller should show it and pass it back to `record`.
    pub fn record(&mut self, rec: &Record) -> Option<Mark> {
        if self.failing.is_some() {
            self.queue(rec.clone());
            return None;
        }
        match self.writer.append(rec) {
            Ok(()) => {
                if let Some(r) = &mut self.rotating {
                    r.saw(rec.t);
                }
                None
            }
            Err(e) => {
                self.queue(rec.clone());
                self.start_failing(e)
            }
        }
    }

    /// Flush if [`FLUSH_EVERY`] has passed since the last flush; while failing, retry once a
    /// second.
    pub fn tick(&mut self) -> Option<Mark> {
        if self.orphaned.is_some() {
            if self.last_retry.elapsed() >= RETRY_EVERY {
                self.last_retry = Instant::now();
                return self.rescue();
            }
            return None;
        }
        if self.failing.is_some() {
            if self.last_retry.elapsed() >= RETRY_EVERY {
                self.last_retry = Instant::now();
                return self.retry();
            }
            return None;
        }
        if self.last_flush.elapsed() >= FLUSH_EVERY {
            self.last_flush = Instant::now();
            if let Err(e) = self.writer.flush() {
                return self.start_failing(e);
            }
            if self
                .rotating
                .as_ref()
                .is_some_and(|r| r.due(self.writer.bytes()))
            {
                return self.next_part();
            }
            return self.check_whereabouts();
        }
        None
    }

    /// Is the file still at its path? Follow a move; rescue a deleted file.
    fn check_whereabouts(&mut self) -> Option<Mark> {
        match self.writer.whereabouts() {
            Ok(Whereabouts::InPlace) | Err(_) => None,
            Ok(Whereabouts::Moved(to)) => {
                let text = format!(
                    "session file {} was moved to {} while recording; recording goes on there",
                    self.writer.path().display(),
                    to.display()
                );
                self.writer.moved_to(to);
                Some(Mark::Warning { text })
            }
            Ok(Whereabouts::Deleted) => {
                self.orphaned = Some(self.writer.path().to_path_buf());
                self.last_retry = Instant::now();
                self.rescue()
            }
        }
    }

    /// The file was deleted: copy it into a new file (at its path, or next to it when another
    /// file took the path) and go on there. Says what happened, once: when it works, or the
    /// first time it does not.
    fn rescue(&mut self) -> Option<Mark> {
        let path = self.orphaned.clone()?;
        let first = !self.rescue_failed_once;
        let taken = std::fs::symlink_metadata(&path).is_ok();
        let to = if taken {
            let mut p = path.clone().into_os_string();
            p.push(format!(".recovered-{}", std::process::id()));
            PathBuf::from(p)
        } else {
            path.clone()
        };
        match self.writer.relocate(&to) {
            Ok(()) => {
                self.orphaned = None;
                self.rescue_failed_once = false;
                let what = if taken {
                    "replaced by another file (left alone)"
                } else {
                    "deleted"
                };
                Some(Mark::Warning {
                    text: format!(
                        "session file {} was {what} while recording; everything recorded so far is in {}, and recording goes on there",
                        path.display(),
                        to.display()
                    ),
                })
            }
            Err(e) => {
                self.rescue_failed_once = true;
                let what = if taken {
                    format!(
                        "replaced by another file, and {} cannot be created",
                        to.display()
                    )
                } else {
                    "deleted, and cannot be re-created".to_string()
                };
                first.then(|| Mark::Warning {
                    text: format!(
                        "session file {} was {what} ({e}); recording goes on into the deleted file, retrying every second: the recording is lost if provetop ends first",
                        path.display(),
                    ),
                })
            }
        }
    }

    /// Rotate this recording (before any record): the file becomes part 1 of `rotation`'s
    /// parts (`NAME.0001.ptop` next to it), and parts follow as it says.
    pub fn rotate(&mut self, rotation: Rotation, header: SessionHeader) -> anyhow::Result<()> {
        let base = self.writer.path().to_path_buf();
        let r = Rotating::new(rotation, &base, header);
        let first = r.path(1);
        if let Some(what) = provetop_shared::session::taken(&first) {
            anyhow::bail!(
                "--rotate: {} {what}; choose another --record name",
                first.display()
            );
        }
        std::fs::rename(&base, &first)
            .with_context(|| format!("cannot rename {} to {}", base.display(), first.display()))?;
        self.writer.moved_to(first);
        self.rotating = Some(r);
        Ok(())
    }

    /// End the current part (synced: every record in it committed) and go on in the next;
    /// then remove what retention does not keep. A next part that cannot be made (disk full)
    /// is said once, recording goes on in the current part and it is tried again.
    fn next_part(&mut self) -> Option<Mark> {
        let r = self.rotating.as_mut()?;
        let next = r.path(r.part + 1);
        let made = self.writer.sync().and_then(|()| {
            let mut w = SessionWriter::create_compact(&next, &r.header)?;
            w.flush().inspect_err(|_| {
                let _ = std::fs::remove_file(&next);
            })?;
            Ok(w)
        });
        match made {
            Ok(w) => {
                self.writer = w;
                let said = r.failed.is_some();
                r.started_next();
                let removed = r.expire();
                let mut text = Vec::new();
                if said {
                    text.push(format!(
                        "recording goes on in the next part, {}",
                        next.display()
                    ));
                }
                if removed > 0 {
                    text.push(format!("{removed} expired parts of the recording removed"));
                }
                (!text.is_empty()).then(|| Mark::Note {
                    text: text.join("; "),
                })
            }
            Err(e) => {
                let first = r.failed.is_none();
                r.failed = Some(Instant::now());
                first.then(|| Mark::Warning {
                    text: format!(
                        "cannot start the next part of the recording, {} ({e}); recording goes on in {}, retrying",
                        next.display(),
                        self.writer.path().display()
                    ),
                })
            }
        }
    }

    /// Whether writes are failing now.
    pub fn is_failing(&self) -> bool {
        self.failing.is_some() || self.orphaned.is_some()
    }

    /// Flush, fsync and close; the path of the file. Fails if records could not be written.
    pub fn finish(mut self) -> anyhow::Result<PathBuf> {
        if self.failing.is_some() {
            let _ = self.retry();
        }
        if self.orphaned.is_none() && self.failing.is_none() && self.writer.flush().is_ok() {
            // Lost since the last flush?
            // Lost since the last flush? What is said goes into the file (the caller names
            // the path it ends up at).
            if let Some(m) = self.check_whereabouts() {
                let now = provetop_shared::clock::mono_ns();
                let _ = self.writer.append(&Record::new(now, RecordBody::Mark(m)));
            }
        }
        if self.orphaned.is_some() {
            if let Some(m) = self.rescue() {
                let now = provetop_shared::clock::mono_ns();
                let _ = self.writer.append(&Record::new(now, RecordBody::Mark(m)));
            }
        }
        let path = match &self.rotating {
            // The parts are read as one session by the name they were recorded to.
            Some(r) => r.base.clone(),
            None => self.writer.path().to_path_buf(),
        };
        if let Some(was) = &self.orphaned {
            anyhow::bail!(
                "session file {} was deleted while recording and could not be re-created: the recording is lost",
                was.display()
            );
        }
        if let Some(e) = &self.failing {
            anyhow::bail!(
                "session file {} is incomplete: {} records not written ({e})",
                path.display(),
                self.backlog.len() as u64 + self.lost
            );
        }
        self.writer
            .sync()
            .with_context(|| format!("cannot finish session file {}", path.display()))?;
        Ok(path)
    }

    fn queue(&mut self, rec: Record) {
        if self.backlog.len() >= BACKLOG_MAX {
            self.backlog.pop_front();
            self.lost += 1;
        }
        self.backlog.push_back(rec);
    }

    fn start_failing(&mut self, e: std::io::Error) -> Option<Mark> {
        let text = e.to_string();
        self.failing = Some(text.clone());
        self.last_retry = Instant::now();
        Some(Mark::Warning {
            text: format!(
                "recording to {} failed: {text}; monitoring continues, retrying every second",
                self.writer.path().display()
            ),
        })
    }

    /// Try to write the buffer and then the backlog.
    fn retry(&mut self) -> Option<Mark> {
        if self.writer.flush().is_err() {
            return None;
        }
        while let Some(rec) = self.backlog.front() {
            if self.writer.append(rec).is_err() {
                return None;
            }
            self.backlog.pop_front();
        }
        if self.writer.flush().is_err() {
            return None;
        }
        self.failing = None;
        self.last_flush = Instant::now();
        let lost = std::mem::take(&mut self.lost);
        Some(Mark::Warning {
            text: if lost == 0 {
                format!(
                    "recording to {} works again; nothing was lost",
                    self.writer.path().display()
                )
            } else {
                format!(
                    "recording to {} works again; {lost} records were lost",
                    self.writer.path().display()
                )
            },
        })
    }
}
