//! The event emitter: one NDJSON line per [`Event`], flushed at once (a monitor watches live).
//!
//! Events come from several threads (the run loop, the control reader, bellperson's worker
//! threads through the log bridge). A mutex serializes them and the timestamp is taken while
//! it is held, so `ts` never goes backwards along the stream.

use std::fs::File;
use std::io::{self, Write};
use std::os::fd::{BorrowedFd, RawFd};
use std::sync::{Arc, Mutex};

use provetop_shared::protocol::{Event, EventMsg};

struct Sink {
    out: Box<dyn Write + Send>,
    failed: bool,
    /// `bye` was written: nothing follows it.
    said_bye: bool,
    /// Copies of every message (tests and benchmarks read them back).
    tap: Option<Vec<EventMsg>>,
}

/// Writes events; cheap to clone and share between threads.
#[derive(Clone)]
pub struct Emitter {
    sink: Arc<Mutex<Sink>>,
}

impl Emitter {
    /// Emit to any writer.
    pub fn new(out: Box<dyn Write + Send>) -> Self {
        Emitter {
            sink: Arc::new(Mutex::new(Sink {
                out,
                failed: false,
                said_bye: false,
                tap: None,
            })),
        }
    }

    /// Emit to standard output.
    pub fn stdout() -> Self {
        Self::new(Box::new(io::stdout()))
    }

    /// Emit to an inherited file descriptor (e.g. the pipe a supervisor passed as fd 3).
    pub fn to_fd(fd: RawFd) -> io::Result<Self> {
        if fd < 0 || std::fs::symlink_metadata(format!("/proc/self/fd/{fd}")).is_err() {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!("file descriptor {fd} is not open"),
            ));
        }
        // SAFETY: /proc/self/fd/N exists, so the descriptor is open right now, and at start-up
        // nothing else in this process closes it while it is borrowed for the duplication.
        let borrowed = unsafe { BorrowedFd::borrow_raw(fd) };
        let owned = borrowed.try_clone_to_owned()?;
        Ok(Self::new(Box::new(File::from(owned))))
    }

    /// An emitter that writes nowhere and keeps every message (for tests and benchmarks).
    pub fn memory() -> Self {
        let e = Self::new(Box::new(io::sink()));
        e.sink.lock().expect("emitter lock").tap = Some(Vec::new());
        e
    }

    /// Also keep a copy of every message from now on.
    pub fn tap(&self) {
        let mut s = self.sink.lock().unwrap_or_else(|p| p.into_inner());
        if s.tap.is_none() {
            s.tap = Some(Vec::new());
        }
    }

    /// The kept copies so far (empty unless [`Emitter::memory`] or [`Emitter::tap`]).
    pub fn taken(&self) -> Vec<EventMsg> {
        let s = self.sink.lock().unwrap_or_else(|p| p.into_inner());
        s.tap.clone().unwrap_or_default()
    }

    /// Stamp and write one event. A broken pipe is reported once on stderr and then ignored:
    /// losing the monitor must not stop a proof.
    ///
    /// `bye` is the last message of the protocol: anything after it (say, a log line from a
    /// proving thread still unwinding after an abort) is not written.
    pub fn emit(&self, event: Event) {
        let mut s = self.sink.lock().unwrap_or_else(|p| p.into_inner());
        if s.said_bye {
            return;
        }
        s.said_bye = matches!(event, Event::Bye { .. });
        let msg = EventMsg::now(event);
        if !s.failed {
            let mut line = msg.to_line();
            line.push('\n');
            let res = s.out.write_all(line.as_bytes()).and_then(|_| s.out.flush());
            if let Err(e) = res {
                s.failed = true;
                eprintln!("provetop-prover: cannot write events ({e}); continuing without them");
            }
        }
        if let Some(t) = s.tap.as_mut() {
            t.push(msg);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamps_in_order() {
        let e = Emitter::memory();
        for i in 0..5 {
            e.emit(Event::Log {
                level: "info".into(),
                target: "t".into(),
                message: format!("{i}"),
            });
        }
        let got = e.taken();
        assert_eq!(got.len(), 5);
        assert!(got.windows(2).all(|w| w[0].ts <= w[1].ts));
        assert!(Emitter::to_fd(987_654).is_err());
    }

    #[test]
    fn nothing_follows_bye() {
        let e = Emitter::memory();
        e.emit(Event::Bye {
            reason: "signal".into(),
            proofs_done: 0,
        });
        e.emit(Event::Log {
            level: "info".into(),
            target: "bellperson".into(),
            message: "prover time: 1s".into(),
        });
        let got = e.taken();
        assert_eq!(got.len(), 1);
        assert!(matches!(got[0].event, Event::Bye { .. }));
    }
}
