//! The log pane's entries as data: what happened, not how it reads. The words are made
//! where the log is shown (`crate::text`).
//!
//! The other domains write to the [`Log`] as they apply their records; it keeps the newest
//! [`MAX_LOG`] entries.

use provetop_shared::{Alert, BatchMode, Control, Event, Mark, OutputLine};

/// Most log entries kept.
pub const MAX_LOG: usize = 2_000;

/// Severity of a log line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum LogLevel {
    Debug,
    Info,
    Warn,
    /// Errors and critical alerts.
    Error,
}

/// Something worth a line in the log: mostly the record that said it.
#[derive(Debug, Clone, PartialEq)]
pub enum Logged {
    /// A prover event: hello, SRS, a proof started, failed or cancelled, a mode change or
    /// refusal, a state, the prover's own log line, an error, bye.
    Event(Event),
    /// A proof that finished well, with the peak RSS seen while it ran.
    ProofDone {
        proof_id: u64,
        duration_s: f64,
        mode: BatchMode,
        verified: bool,
        peak: u64,
    },
    /// The monitor's notes: child lifecycle, restarts, drops, bad lines, warnings.
    Mark(Mark),
    Alert(Alert),
    /// A control sent to the prover.
    Control(Control),
    /// A line of the child's output (or of the log file `watch` follows), with its source.
    Output(OutputLine),
}

/// One entry of the log, at `t` (ns).
#[derive(Debug, Clone, PartialEq)]
pub struct LogEntry {
    pub t: u64,
    pub what: Logged,
}

/// The log's entries, oldest first.
#[derive(Debug, Clone, Default)]
pub struct Log {
    entries: super::bounded::History<LogEntry>,
    /// Entries written before the oldest kept and no longer held (the bound's, or a replay
    /// snapshot's cut): the pane says so at its top.
    older: u64,
}

impl Log {
    /// Add an entry at `t`.
    pub fn push(&mut self, t: u64, what: Logged) {
        let before = self.entries.len() + 1;
        self.entries.push_bounded(LogEntry { t, what }, MAX_LOG);
        self.older += (before - self.entries.len()) as u64;
    }

    /// How many entries came before the oldest kept and are not held.
    pub fn older(&self) -> u64 {
        self.older
    }

    /// Entries, oldest first.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &LogEntry> + ExactSizeIterator + '_ {
        self.entries.iter()
    }

    /// The newest entry.
    pub fn back(&self) -> Option<&LogEntry> {
        self.entries.back()
    }

    /// The newest `n` entries alone (a replay snapshot's: those of snapshots far apart are
    /// not shared).
    pub fn newest(&self, n: usize) -> Log {
        let entries = self.entries.newest(n);
        Log {
            older: self.older + (self.entries.len() - entries.len()) as u64,
            entries,
        }
    }

    /// Bytes the entries hold, nearly: each entry where it is shared (its pointer, its
    /// count), and the text of output lines.
    pub fn bytes(&self) -> usize {
        use std::mem::size_of;
        self.entries
            .iter()
            .map(|e| {
                size_of::<LogEntry>()
                    + 3 * size_of::<usize>()
                    + match &e.what {
                        Logged::Output(o) => o.text.capacity(),
                        _ => 0,
                    }
            })
            .sum()
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}
