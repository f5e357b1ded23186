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

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::Context;
use provetop_shared::session::{SessionHeader, SessionWriter};
use provetop_shared::{Mark, Record};

/// Longest time records stay in the buffer. Half a second: a kill -9 loses this, plus up to
/// one tick of the caller (50 ms) and one sampling interval, which must stay under a second.
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
}

impl Recorder {
    /// Create (truncate) the session file with mode 0600 and write its header to disk.
    pub fn create(path: &Path, header: &SessionHeader) -> anyhow::Result<Self> {
        let mut writer = SessionWriter::create(path, header)
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
            Ok(()) => None,
            Err(e) => {
                self.queue(rec.clone());
                self.start_failing(e)
            }
        }
    }

    /// Flush if [`FLUSH_EVERY`] has passed since the last flush; while failing, retry once a
    /// second.
    pub fn tick(&mut self) -> Option<Mark> {
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
        }
        None
    }

    /// Whether writes are failing now.
    pub fn is_failing(&self) -> bool {
        self.failing.is_some()
    }

    /// Flush, fsync and close; the path of the file. Fails if records could not be written.
    pub fn finish(mut self) -> anyhow::Result<PathBuf> {
        if self.failing.is_some() {
            let _ = self.retry();
        }
        let path = self.writer.path().to_path_buf();
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
