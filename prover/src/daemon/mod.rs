//! The prover's life: `hello`, the SRS, proofs from the queue until there is nothing left to
//! do (standalone) or until shutdown / stdin EOF / a signal (daemon), then `bye`.
//!
//! Contract, in stream order: `hello`; the SRS events, ending in `srs_ready` and a
//! `memory_report`; `proof_queued` for the sectors asked for on the command line; `state idle`
//! if nothing is queued (and nothing paused or stopped the prover). Controls act from the
//! start, so what they cause may come earlier. Then per proof `proof_started`, its phases,
//! `proof_finished` and a `memory_report`, with `state` and `mode_changed` as they happen.
//! Last, a cancelled `proof_finished` for every proof still queued, and `bye` with the first
//! stop reason (`done`, `shutdown`, `stdin closed`, `signal`, or `error` after a fatal
//! `error`). The exit code is 1 after a fatal error or a proof that failed other than by
//! abort, else 0.
//!
//! Threads: the run loop (`scheduler`) starts proofs, each on a thread of its own; the
//! control reader (`controls`, daemon only) acts on the shared `state` at once; the `signals`
//! thread turns SIGTERM/SIGINT into a stop. `mode` and `budget` judge mode requests; `queue`
//! cuts sectors into proofs.

mod budget;
mod controls;
mod mode;
mod queue;
mod reach;
mod scheduler;
mod signals;
mod state;

use std::io::BufRead;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::{Duration, Instant};

use provetop_shared::protocol::{BatchMode, Event, ProverConfig, ProverState, PROTOCOL_VERSION};

pub use controls::MAX_CONTROL_LINE;
pub use queue::MAX_QUEUED_SECTORS;

use crate::backend::{self, Backend};
use crate::circuit::CIRCUIT_NAME;
use crate::events::Emitter;
use crate::heap;
use crate::job::Workload;
use crate::srs::{self, SrsOptions};
use state::Shared;

/// What to do with the proof in flight on SIGTERM.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum SigtermPolicy {
    /// Let the proof in flight finish, then exit.
    Finish,
    /// Abort it at the next check point, then exit.
    Abort,
}

/// Everything the run loop needs.
#[derive(Debug, Clone)]
pub struct Config {
    pub workload: Workload,
    /// Batch mode at start.
    pub mode: BatchMode,
    /// Synthesis threads (reported in hello; rayon's count when unset).
    pub threads: Option<u32>,
    pub srs: SrsOptions,
    /// Daemon mode (controls on stdin, run until shutdown).
    pub daemon: bool,
    /// Sectors to queue at start.
    pub initial_proofs: u32,
    /// Daemon: queue one proof after this much idle time.
    pub repeat_every: Option<Duration>,
    /// What the first SIGTERM or SIGINT does to the proofs in flight.
    pub on_sigterm: SigtermPolicy,
    /// Refuse mode switches predicted to exceed this many bytes of heap.
    pub mem_budget: Option<u64>,
}

/// One target for the daemon's own log events, whichever of its modules sends them.
const LOG_TARGET: &str = "provetop_prover::daemon";

/// Run until done; returns the process exit code.
pub fn run(cfg: Config, emitter: Emitter, input: Option<Box<dyn BufRead + Send>>) -> i32 {
    let w = cfg.workload;
    emitter.emit(Event::Hello {
        protocol: PROTOCOL_VERSION.to_string(),
        prover_version: env!("CARGO_PKG_VERSION").to_string(),
        pid: std::process::id(),
        backend: backend::build_kind(),
        gpus: backend::detect_gpus(),
        config: ProverConfig {
            partitions: w.partitions,
            constraints: w.layout.constraints,
            circuit: CIRCUIT_NAME.to_string(),
            mode: cfg.mode,
            threads: Some(cfg.threads.unwrap_or(rayon::current_num_threads() as u32)),
        },
    });
    log::info!(
        target: "provetop_prover",
        "{} partitions × {} constraints ({} challenges per partition), mode {}, SRS cache {}",
        w.partitions,
        w.layout.constraints,
        w.layout.challenges,
        cfg.mode,
        cfg.srs
            .cache_dir
            .as_ref()
            .map(|d| d.display().to_string())
            .unwrap_or_else(|| "off".into())
    );
    let shared = Arc::new(Shared::new(&cfg, emitter.clone()));
    if let Err(e) = signals::spawn_signal_thread(shared.clone()) {
        log::warn!("cannot watch signals: {e}");
    }
    if let Some(input) = input {
        let s = shared.clone();
        let spawned = std::thread::Builder::new()
            .name("controls".into())
            .spawn(move || controls::read_controls(s, input));
        if let Err(e) = spawned {
            emitter.emit(Event::Error {
                message: format!("cannot start the control reader: {e}"),
                fatal: true,
            });
            return finish(&shared, "error", 0, 1);
        }
    }

    // SRS: loaded once, resident until exit.
    let t0 = Instant::now();
    let srs = match srs::obtain(&w.layout, &cfg.srs, &emitter, &shared.abort) {
        Ok(s) => s,
        Err(e) => {
            let aborted = shared.abort.load(Relaxed);
            if !aborted {
                emitter.emit(Event::Error {
                    message: format!("cannot obtain the SRS: {e}"),
                    fatal: true,
                });
            }
            let reason = shared.lock().stop.clone().unwrap_or_else(|| "error".into());
            return finish(&shared, &reason, 0, if aborted { 0 } else { 1 });
        }
    };
    let source = srs.source;
    let backend = match Backend::new(srs) {
        Ok(b) => b,
        Err(e) => {
            emitter.emit(Event::Error {
                message: e.to_string(),
                fatal: true,
            });
            return finish(&shared, "error", 0, 1);
        }
    };
    emitter.emit(Event::SrsReady {
        bytes: backend.srs_bytes(),
        pinned_bytes: backend.pinned_bytes(),
        source,
        duration_s: t0.elapsed().as_secs_f64(),
    });
    emit_memory(&emitter, &backend);
    // Generation's and loading's scratch goes back to the kernel: the floor is the SRS.
    heap::release_free_memory();

    {
        let mut c = shared.lock();
        // The budget is on RSS: the floor is the resident set at idle (SRS, code, stacks,
        // caches), the heap alone only where RSS cannot be read.
        c.floor = heap::vm_rss().unwrap_or_else(|| if heap::counting() { heap::live() } else { 0 });
        c.idle_since = Instant::now();
        if cfg.initial_proofs > 0 && c.stop.is_none() {
            shared.queue_sectors(&mut c, cfg.initial_proofs);
        }
        if c.queue.is_empty() && !c.paused && c.stop.is_none() {
            shared.set_state(&mut c, ProverState::Idle);
        }
    }

    let tally = scheduler::prove_queue(&shared, &backend, &cfg);
    let (done, failures) = (tally.done, tally.failures);
    let reason = shared.lock().stop.clone().unwrap_or_else(|| "done".into());
    finish(&shared, &reason, done, i32::from(failures > 0))
}

/// The pinned, GPU and SRS bytes held now.
fn emit_memory(emitter: &Emitter, b: &Backend) {
    emitter.emit(Event::MemoryReport {
        pinned_bytes: b.pinned_bytes(),
        gpu_bytes: b.gpu_bytes(),
        srs_bytes: b.srs_bytes(),
        gpu_live_bytes: None,
        gpu_reserved_bytes: None,
    });
}

/// Cancel what is still queued, say bye.
fn finish(shared: &Shared, reason: &str, done: u64, code: i32) -> i32 {
    let mut c = shared.lock();
    let mode = c.mode;
    for spec in c.queue.drain(..) {
        shared.emitter.emit(Event::ProofFinished {
            proof_id: spec.proof_id,
            ok: false,
            verified: false,
            duration_s: 0.0,
            mode,
            phases: Vec::new(),
            error: Some(format!("cancelled before it started ({reason})")),
            cancelled: true,
            requeued_as: vec![],
        });
    }
    shared.emitter.emit(Event::Bye {
        reason: reason.to_string(),
        proofs_done: done,
    });
    code
}
