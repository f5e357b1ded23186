//! The control reader: a thread that parses NDJSON control lines from stdin and acts on the
//! shared state at once, whatever the run loop is doing.
//!
//! Contract: lines are numbered from 1 and errors name the line. A line longer than
//! [`MAX_CONTROL_LINE`] bytes, or one that does not parse, gets a non-fatal `error` and is
//! skipped; blank lines are ignored. `prove` is refused while the queue would exceed
//! [`MAX_QUEUED_SECTORS`] sectors and ignored once stopping. `pause` announces `paused` at
//! once; no proof starts until `resume`, and those in flight finish. `shutdown` stops with
//! reason `shutdown`, cutting the proofs in flight short if it says `abort`. EOF (or a read
//! error) stops with reason `stdin closed`, letting the proofs in flight finish.

use std::io::BufRead;
use std::sync::Arc;
use std::time::Instant;

use provetop_shared::protocol::{parse_control, Control, Event, ProverState};

use super::queue::MAX_QUEUED_SECTORS;
use super::state::Shared;

/// Longest control line accepted.
pub const MAX_CONTROL_LINE: usize = 1 << 20;

pub(super) fn read_controls(shared: Arc<Shared>, mut input: Box<dyn BufRead + Send>) {
    let mut lineno = 0u64;
    let mut buf = Vec::new();
    loop {
        buf.clear();
        // Read one line, but never hold more than MAX_CONTROL_LINE bytes of it.
        let mut too_long = false;
        let eof = loop {
            let chunk = match input.fill_buf() {
                Ok(c) => c,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(_) => break true,
            };
            if chunk.is_empty() {
                break true;
            }
            let (take, done) = match chunk.iter().position(|&b| b == b'\n') {
                Some(i) => (i + 1, true),
                None => (chunk.len(), false),
            };
            if buf.len() + take <= MAX_CONTROL_LINE {
                buf.extend_from_slice(&chunk[..take]);
            } else {
                too_long = true;
            }
            input.consume(take);
            if done {
                break false;
            }
        };
        if eof && buf.is_empty() && !too_long {
            break;
        }
        lineno += 1;
        if too_long {
            shared.emitter.emit(Event::Error {
                message: format!(
                    "control line {lineno}: longer than {MAX_CONTROL_LINE} bytes, ignored"
                ),
                fatal: false,
            });
        } else {
            let line = String::from_utf8_lossy(&buf);
            let line = line.trim();
            if !line.is_empty() {
                match parse_control(line) {
                    Ok(msg) => shared.handle(msg.control),
                    Err(e) => shared.emitter.emit(Event::Error {
                        message: format!("control line {lineno}: {e}"),
                        fatal: false,
                    }),
                }
            }
        }
        if eof {
            break;
        }
    }
    let mut c = shared.lock();
    shared.stop(&mut c, "stdin closed", false);
}

impl Shared {
    fn handle(&self, control: Control) {
        let mut c = self.lock();
        match control {
            Control::Prove { count } => {
                let queued: u64 = c.queue.iter().map(|p| p.sectors as u64).sum();
                if queued + count as u64 > MAX_QUEUED_SECTORS {
                    self.emitter.emit(Event::Error {
                        message: format!(
                            "prove {count} refused: at most {MAX_QUEUED_SECTORS} sectors may wait in the queue ({queued} do)"
                        ),
                        fatal: false,
                    });
                } else if c.stop.is_some() {
                    self.emitter.emit(Event::Error {
                        message: format!("prove {count} ignored: shutting down"),
                        fatal: false,
                    });
                } else {
                    self.queue_sectors(&mut c, count);
                }
            }
            Control::SetMode { mode } => self.request_mode(&mut c, mode),
            Control::Pause => {
                if !c.paused {
                    c.paused = true;
                    if c.stop.is_none() {
                        self.set_state(&mut c, ProverState::Paused);
                    }
                }
            }
            Control::Resume => {
                if c.paused {
                    c.paused = false;
                    c.idle_since = Instant::now();
                    let state = if c.running > 0 {
                        ProverState::Proving
                    } else {
                        ProverState::Idle
                    };
                    if c.stop.is_none() {
                        self.set_state(&mut c, state);
                    }
                    self.cv.notify_all();
                }
            }
            Control::Shutdown { abort } => self.stop(&mut c, "shutdown", abort),
        }
    }
}
