//! The emitter: one NDJSON line per [`Event`], written and flushed at once (a monitor watches
//! live), from any thread.
//!
//! A mutex serializes the lines and the timestamp is taken while it is held, so `ts` never
//! goes backwards along the stream, except for an event given its own time
//! ([`Emitter::emit_at`]). A write error (the monitor went away) is said once on
//! stderr and the emitter goes quiet: losing the monitor must not stop a proof. `bye` is the
//! protocol's last message, so nothing is written after it.

use std::fs::File;
use std::io::{self, Write};
use std::os::fd::{BorrowedFd, RawFd};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use provetop_shared::protocol::{
    Backend, BatchMode, Event, EventMsg, Phase, ProverConfig, PROTOCOL_VERSION,
};

struct Sink {
    /// `None`: a disabled emitter (no monitor); events are dropped before they are formatted.
    out: Option<Box<dyn Write + Send>>,
    failed: bool,
    said_bye: bool,
    /// Whether a `hello` was written (the tracing layer sends one only where none was).
    said_hello: bool,
    /// Copies of every message (tests and benchmarks read them back).
    tap: Option<Vec<EventMsg>>,
}

/// Writes protocol events; cheap to clone and share between threads.
#[derive(Clone)]
pub struct Emitter {
    sink: Arc<Mutex<Sink>>,
}

impl std::fmt::Debug for Emitter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Emitter")
            .field("enabled", &self.is_enabled())
            .finish()
    }
}

impl Emitter {
    fn with(out: Option<Box<dyn Write + Send>>, tap: Option<Vec<EventMsg>>) -> Self {
        Emitter {
            sink: Arc::new(Mutex::new(Sink {
                out,
                failed: false,
                said_bye: false,
                said_hello: false,
                tap,
            })),
        }
    }

    /// Emit to any writer.
    pub fn new(out: Box<dyn Write + Send>) -> Self {
        Self::with(Some(out), None)
    }

    /// Emit to standard output.
    pub fn stdout() -> Self {
        Self::new(Box::new(io::stdout()))
    }

    /// An emitter that writes nothing (no monitor is listening); every call is a cheap no-op.
    pub fn disabled() -> Self {
        Self::with(None, None)
    }

    /// Emit to an inherited file descriptor (the pipe provetop passes, fd 3 by default). The
    /// descriptor is duplicated, so the caller's stays open.
    pub fn to_fd(fd: RawFd) -> io::Result<Self> {
        if fd < 0 || std::fs::symlink_metadata(format!("/proc/self/fd/{fd}")).is_err() {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!("file descriptor {fd} is not open"),
            ));
        }
        // SAFETY: /proc/self/fd/N exists, so the descriptor is open right now, and it is only
        // borrowed for the duplication, which happens before this function returns.
        let borrowed = unsafe { BorrowedFd::borrow_raw(fd) };
        let owned = borrowed.try_clone_to_owned()?;
        Ok(Self::new(Box::new(File::from(owned))))
    }

    /// An emitter that writes nowhere and keeps every message (for tests and benchmarks).
    pub fn memory() -> Self {
        Self::with(Some(Box::new(io::sink())), Some(Vec::new()))
    }

    /// Also keep a copy of every message from now on.
    pub fn tap(&self) {
        let mut s = self.lock();
        if s.tap.is_none() {
            s.tap = Some(Vec::new());
        }
    }

    /// The kept copies so far (empty unless [`Emitter::memory`] or [`Emitter::tap`]).
    pub fn taken(&self) -> Vec<EventMsg> {
        self.lock().tap.clone().unwrap_or_default()
    }

    /// Whether events go anywhere (false for [`Emitter::disabled`]).
    pub fn is_enabled(&self) -> bool {
        let s = self.lock();
        s.out.is_some() || s.tap.is_some()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Sink> {
        // A panic while a line was written leaves nothing half-done that matters here.
        self.sink.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Stamp and write one event.
    pub fn emit(&self, event: Event) {
        self.write(None, event);
    }

    /// Write one event stamped `ts` (monotonic ns, [`provetop_shared::clock::mono_ns`]) instead
    /// of now: for an end noticed after it happened. provetop keeps a `ts` up to 5 s old.
    pub fn emit_at(&self, ts: u64, event: Event) {
        self.write(Some(ts), event);
    }

    fn write(&self, ts: Option<u64>, event: Event) {
        let mut s = self.lock();
        if s.said_bye || (s.out.is_none() && s.tap.is_none()) {
            return;
        }
        s.said_bye = matches!(event, Event::Bye { .. });
        s.said_hello |= matches!(event, Event::Hello { .. });
        let msg = match ts {
            Some(ts) => EventMsg { ts, event },
            None => EventMsg::now(event),
        };
        let failed = s.failed;
        if let (false, Some(out)) = (failed, s.out.as_mut()) {
            let mut line = msg.to_line();
            line.push('\n');
            if let Err(e) = out.write_all(line.as_bytes()).and_then(|_| out.flush()) {
                s.failed = true;
                eprintln!("provetop-emit: cannot write events ({e}); continuing without them");
            }
        }
        if let Some(t) = s.tap.as_mut() {
            t.push(msg);
        }
    }

    /// Whether a `hello` went out through this emitter (or a clone of it).
    pub fn said_hello(&self) -> bool {
        self.lock().said_hello
    }

    /// `hello`, the first event: this process's pid and the protocol version are filled in.
    pub fn hello(&self, prover_version: &str, backend: Backend, config: ProverConfig) {
        self.emit(Event::Hello {
            protocol: PROTOCOL_VERSION.to_string(),
            prover_version: prover_version.to_string(),
            pid: std::process::id(),
            backend,
            gpus: Vec::new(),
            config,
        });
    }

    /// `proof_started` for a proof of one sector in `single` mode.
    pub fn proof_started(&self, proof_id: u64, partitions: u32, constraints: u64) {
        self.emit(Event::ProofStarted {
            proof_id,
            mode: BatchMode::Single,
            sectors: 1,
            partitions,
            constraints,
        });
    }

    /// `proof_finished`; `error` makes it a failed proof.
    pub fn proof_finished(
        &self,
        proof_id: u64,
        verified: bool,
        took: Duration,
        error: Option<String>,
    ) {
        self.emit(Event::ProofFinished {
            proof_id,
            ok: error.is_none(),
            verified,
            duration_s: took.as_secs_f64(),
            mode: BatchMode::Single,
            phases: Vec::new(),
            error,
            cancelled: false,
            requeued_as: Vec::new(),
        });
    }

    /// `phase_started`; a name the protocol does not know is kept as it is.
    pub fn phase_started(&self, proof_id: u64, phase: impl Into<Phase>, partition: Option<u32>) {
        self.emit(Event::PhaseStarted {
            proof_id,
            phase: phase.into(),
            partition,
        });
    }

    /// `phase_ended`, `took` after its start.
    pub fn phase_ended(
        &self,
        proof_id: u64,
        phase: impl Into<Phase>,
        partition: Option<u32>,
        took: Duration,
    ) {
        self.emit(Event::PhaseEnded {
            proof_id,
            phase: phase.into(),
            partition,
            duration_s: took.as_secs_f64(),
        });
    }

    /// `memory_report`: memory provetop cannot see from /proc (pinned host, GPU, the SRS).
    pub fn memory_report(&self, pinned_bytes: u64, gpu_bytes: u64, srs_bytes: u64) {
        self.emit(Event::MemoryReport {
            pinned_bytes,
            gpu_bytes,
            srs_bytes,
            gpu_live_bytes: None,
            gpu_reserved_bytes: None,
        });
    }

    /// `memory_report` of a prover that keeps a GPU memory pool (a caching allocator, fixed
    /// arenas): besides what [`Emitter::memory_report`] carries, the bytes in live use in
    /// the pool now and the pool's size (reserved from the driver, what NVML shows). provetop
    /// draws the live figure under NVML's.
    pub fn memory_report_pool(
        &self,
        pinned_bytes: u64,
        srs_bytes: u64,
        gpu_live_bytes: u64,
        gpu_reserved_bytes: u64,
    ) {
        self.emit(Event::MemoryReport {
            pinned_bytes,
            gpu_bytes: gpu_reserved_bytes,
            srs_bytes,
            gpu_live_bytes: Some(gpu_live_bytes),
            gpu_reserved_bytes: Some(gpu_reserved_bytes),
        });
    }

    /// `bye`, the last event.
    pub fn bye(&self, reason: &str, proofs_done: u64) {
        self.emit(Event::Bye {
            reason: reason.to_string(),
            proofs_done,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_stamped_in_order() {
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
    fn a_pool_report_carries_live_and_reserved_and_gpu_bytes_is_the_pool() {
        let e = Emitter::memory();
        e.memory_report_pool(1, 2, 3 << 30, 28 << 30);
        let got = e.taken();
        assert_eq!(
            got[0].event,
            Event::MemoryReport {
                pinned_bytes: 1,
                gpu_bytes: 28 << 30,
                srs_bytes: 2,
                gpu_live_bytes: Some(3 << 30),
                gpu_reserved_bytes: Some(28 << 30),
            }
        );
        let line = got[0].to_line();
        assert!(
            line.contains(r#""gpu_live_bytes":3221225472,"gpu_reserved_bytes":30064771072"#),
            "{line}"
        );
        // The plain report says nothing of a pool.
        e.memory_report(1, 2, 3);
        assert!(!e.taken()[1].to_line().contains("gpu_live"));
    }

    #[test]
    fn nothing_follows_bye() {
        let e = Emitter::memory();
        e.bye("signal", 0);
        e.phase_started(1, "synthesis".to_string(), None);
        let got = e.taken();
        assert_eq!(got.len(), 1);
        assert!(matches!(got[0].event, Event::Bye { .. }));
    }

    #[test]
    fn a_disabled_emitter_keeps_nothing_even_when_tapped_later_it_starts() {
        let e = Emitter::disabled();
        assert!(!e.is_enabled());
        e.proof_started(1, 1, 10);
        e.tap();
        assert!(e.is_enabled());
        e.proof_started(2, 1, 10);
        assert_eq!(e.taken().len(), 1);
    }
}
