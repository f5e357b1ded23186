//! The run loop: hello, SRS, then proofs from the queue until there is nothing left to do
//! (standalone) or until shutdown / stdin EOF / a signal (daemon), then bye.
//!
//! Threads: the run loop proves; a reader thread parses control lines from stdin and acts on
//! the shared state at once (queue, pause, mode requests, shutdown); a signal thread turns
//! SIGTERM/SIGINT into a shutdown (finishing or aborting the proof in flight per
//! `--on-sigterm`; a second signal always aborts).
//!
//! Mode changes take effect at the next proof boundary: the proof in flight keeps the mode it
//! started with; `mode_changed` is emitted when the new mode takes over (at once when idle),
//! and what is still queued is then cut anew into proofs of the new mode's size.

use std::collections::VecDeque;
use std::io::BufRead;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use provetop_shared::protocol::{
    parse_control, BatchMode, Control, Event, ProverConfig, ProverState, PROTOCOL_VERSION,
};

use crate::backend::{self, Backend};
use crate::circuit::CIRCUIT_NAME;
use crate::events::Emitter;
use crate::heap;
use crate::job::{self, ProofSpec, Workload};
use crate::modes;
use crate::phases::Latch;
use crate::srs::{self, SrsOptions};

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
    /// The circuit workload.
    pub workload: Workload,
    /// Batch mode at start.
    pub mode: BatchMode,
    /// Synthesis threads (reported in hello).
    pub threads: Option<u32>,
    /// SRS cache and progress options.
    pub srs: SrsOptions,
    /// Daemon mode (controls on stdin, run until shutdown).
    pub daemon: bool,
    /// Sectors to queue at start.
    pub initial_proofs: u32,
    /// Daemon: queue one proof after this much idle time.
    pub repeat_every: Option<Duration>,
    /// SIGTERM behaviour.
    pub on_sigterm: SigtermPolicy,
    /// Refuse mode switches predicted to exceed this many bytes of heap.
    pub mem_budget: Option<u64>,
}

/// Measured memory cost of earlier proofs, for `--mem-budget` predictions.
#[derive(Debug, Default, Clone, Copy)]
struct MemModel {
    /// Largest measured working-set bytes per live constraint.
    bytes_per_constraint: Option<f64>,
    proofs: u32,
}

struct Ctl {
    queue: VecDeque<ProofSpec>,
    paused: bool,
    mode: BatchMode,
    pending_mode: Option<BatchMode>,
    /// Proofs between their start and their `proof_finished`.
    running: usize,
    stop: Option<String>,
    next_proof: u64,
    next_sector: u64,
    idle_since: Instant,
    mem: MemModel,
    floor: u64,
    signals: u32,
    /// Last state announced (a `state` event is sent on changes only).
    state: Option<ProverState>,
}

struct Shared {
    ctl: Mutex<Ctl>,
    cv: Condvar,
    abort: Arc<AtomicBool>,
    emitter: Emitter,
    workload: Workload,
    on_sigterm: SigtermPolicy,
    mem_budget: Option<u64>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Ctl> {
        self.ctl.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn set_state(&self, c: &mut Ctl, state: ProverState) {
        if c.state != Some(state) {
            c.state = Some(state);
            self.emitter.emit(Event::State { state });
        }
    }

    fn effective_mode(c: &Ctl) -> BatchMode {
        c.pending_mode.unwrap_or(c.mode)
    }

    fn queue_sectors(&self, c: &mut Ctl, count: u32) {
        let first = c.next_sector;
        c.next_sector += count as u64;
        self.queue_range(c, first, count);
    }

    /// Queue sectors `first..first + count` as proofs of the effective mode's size; returns
    /// their ids.
    fn queue_range(&self, c: &mut Ctl, first: u64, count: u32) -> Vec<u64> {
        let mode = Self::effective_mode(c);
        let per = mode.sectors_per_proof();
        let mut ids = Vec::new();
        let mut next_sector = first;
        let mut left = count;
        while left > 0 {
            let n = left.min(per);
            left -= n;
            let spec = ProofSpec {
                proof_id: c.next_proof,
                first_sector: next_sector,
                sectors: n,
            };
            ids.push(spec.proof_id);
            c.next_proof += 1;
            next_sector += n as u64;
            self.emitter.emit(Event::ProofQueued {
                proof_id: spec.proof_id,
                mode,
                sectors: n,
                partitions: self.workload.partitions,
                constraints: spec.constraints(&self.workload),
            });
            c.queue.push_back(spec);
        }
        self.cv.notify_all();
        ids
    }

    /// Sectors are cut into proofs when they are queued, under the mode of that moment. When
    /// a switch takes effect (nothing in flight), what is still queued is cut again for the
    /// new mode: its proofs are cancelled, naming the proofs that now hold their sectors, and
    /// the same sectors are queued anew, in order. Otherwise `batch:N` would go on proving
    /// one sector a call until the old queue drains, and `single` would prove batches.
    fn requeue_for(&self, c: &mut Ctl, mode: BatchMode) {
        let per = mode.sectors_per_proof();
        let last = c.queue.len().saturating_sub(1);
        let cut_right = c
            .queue
            .iter()
            .enumerate()
            .all(|(i, s)| s.sectors == per || (i == last && s.sectors < per));
        if cut_right {
            return;
        }
        let old: Vec<ProofSpec> = c.queue.drain(..).collect();
        // Runs of consecutive sectors (the queue is one run unless ids were ever reordered).
        let mut runs: Vec<(u64, u32, Vec<u64>)> = Vec::new();
        for s in &old {
            match runs.last_mut() {
                Some((first, n, ids)) if *first + *n as u64 == s.first_sector => {
                    *n += s.sectors;
                    ids.push(s.proof_id);
                }
                _ => runs.push((s.first_sector, s.sectors, vec![s.proof_id])),
            }
        }
        for (first, n, old_ids) in runs {
            let new_ids = self.queue_range(c, first, n);
            let new: Vec<(u64, u64, u64)> = c
                .queue
                .iter()
                .filter(|s| new_ids.contains(&s.proof_id))
                .map(|s| {
                    (
                        s.proof_id,
                        s.first_sector,
                        s.first_sector + s.sectors as u64,
                    )
                })
                .collect();
            for o in old.iter().filter(|o| old_ids.contains(&o.proof_id)) {
                let (from, to) = (o.first_sector, o.first_sector + o.sectors as u64);
                // The new proofs that hold this one's sectors.
                let requeued_as = new
                    .iter()
                    .filter(|(_, a, b)| *a < to && from < *b)
                    .map(|(id, _, _)| *id)
                    .collect();
                self.emitter.emit(Event::ProofFinished {
                    proof_id: o.proof_id,
                    ok: false,
                    verified: false,
                    duration_s: 0.0,
                    mode,
                    phases: Vec::new(),
                    error: Some(format!("requeued under {mode}")),
                    cancelled: true,
                    requeued_as,
                });
            }
            self.emitter.emit(Event::Log {
                level: "info".into(),
                target: "provetop_prover::daemon".into(),
                message: format!(
                    "requeued {n} sector{} under {mode}: {} proof{} became {}",
                    if n == 1 { "" } else { "s" },
                    old_ids.len(),
                    if old_ids.len() == 1 { "" } else { "s" },
                    new_ids.len()
                ),
            });
        }
    }

    fn predict(&self, c: &Ctl, mode: BatchMode) -> (u64, f64, bool) {
        let w = &self.workload;
        let live = modes::live_constraints(
            mode,
            mode.sectors_per_proof(),
            w.partitions,
            w.layout.constraints,
        );
        let (bpc, measured) = match c.mem.bytes_per_constraint {
            Some(b) => (b, true),
            None => (modes::PRIOR_BYTES_PER_CONSTRAINT, false),
        };
        (c.floor + (bpc * live as f64) as u64, bpc, measured)
    }

    fn request_mode(&self, c: &mut Ctl, mode: BatchMode) {
        if Self::effective_mode(c) == mode {
            self.emitter.emit(Event::Log {
                level: "info".into(),
                target: "provetop_prover::daemon".into(),
                message: format!("already in mode {mode}"),
            });
            return;
        }
        if let Some(budget) = self.mem_budget {
            let (peak, bpc, measured) = self.predict(c, mode);
            if peak > budget {
                let basis = if measured {
                    format!(
                        "{bpc:.0} B/constraint measured over {} proof(s)",
                        c.mem.proofs
                    )
                } else {
                    format!("{bpc:.0} B/constraint assumed (no proof measured yet)")
                };
                self.emitter.emit(Event::ModeRefused {
                    requested: mode,
                    reason: format!(
                        "predicted peak {} exceeds --mem-budget {} ({basis}, resident floor {})",
                        provetop_shared::units::fmt_bytes(peak),
                        provetop_shared::units::fmt_bytes(budget),
                        provetop_shared::units::fmt_bytes(c.floor),
                    ),
                });
                return;
            }
        }
        if c.running > 0 {
            c.pending_mode = Some(mode);
            self.emitter.emit(Event::Log {
                level: "info".into(),
                target: "provetop_prover::daemon".into(),
                message: format!("mode {mode} takes effect when the proof in flight ends"),
            });
        } else {
            c.pending_mode = None;
            self.switch(c, mode);
        }
    }

    /// The mode changes now (nothing in flight): announce it, cut the waiting queue anew.
    fn switch(&self, c: &mut Ctl, mode: BatchMode) {
        let from = c.mode;
        c.mode = mode;
        self.emitter.emit(Event::ModeChanged { from, to: mode });
        self.requeue_for(c, mode);
    }

    fn stop(&self, c: &mut Ctl, reason: &str, abort: bool) {
        if abort {
            self.abort.store(true, Relaxed);
        }
        if c.stop.is_none() {
            c.stop = Some(reason.to_string());
            self.set_state(c, ProverState::Stopping);
        }
        self.cv.notify_all();
    }

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

    fn signal(&self) {
        let mut c = self.lock();
        c.signals += 1;
        let abort = self.on_sigterm == SigtermPolicy::Abort || c.signals > 1;
        self.stop(&mut c, "signal", abort);
    }
}

/// Most sectors that may wait in the queue (a `prove` beyond it is refused).
pub const MAX_QUEUED_SECTORS: u64 = 100_000;

/// Longest control line accepted.
pub const MAX_CONTROL_LINE: usize = 1 << 20;

fn read_controls(shared: Arc<Shared>, mut input: Box<dyn BufRead + Send>) {
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

fn spawn_signal_thread(shared: Arc<Shared>) -> std::io::Result<()> {
    use signal_hook::consts::{SIGINT, SIGTERM};
    let mut signals = signal_hook::iterator::Signals::new([SIGTERM, SIGINT])?;
    std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || {
            for _ in signals.forever() {
                shared.signal();
            }
        })?;
    Ok(())
}

fn emit_memory(emitter: &Emitter, b: &Backend) {
    emitter.emit(Event::MemoryReport {
        pinned_bytes: b.pinned_bytes(),
        gpu_bytes: b.gpu_bytes(),
        srs_bytes: b.srs_bytes(),
    });
}

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
    let shared = Arc::new(Shared {
        ctl: Mutex::new(Ctl {
            queue: VecDeque::new(),
            paused: false,
            mode: cfg.mode,
            pending_mode: None,
            running: 0,
            stop: None,
            next_proof: 1,
            next_sector: 0,
            idle_since: Instant::now(),
            mem: MemModel::default(),
            floor: 0,
            signals: 0,
            state: None,
        }),
        cv: Condvar::new(),
        abort: Arc::new(AtomicBool::new(false)),
        emitter: emitter.clone(),
        workload: w,
        on_sigterm: cfg.on_sigterm,
        mem_budget: cfg.mem_budget,
    });
    if let Err(e) = spawn_signal_thread(shared.clone()) {
        log::warn!("cannot watch signals: {e}");
    }
    if let Some(input) = input {
        let s = shared.clone();
        let spawned = std::thread::Builder::new()
            .name("controls".into())
            .spawn(move || read_controls(s, input));
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
        c.floor = if heap::counting() {
            heap::live()
        } else {
            heap::vm_rss().unwrap_or(0)
        };
        c.idle_since = Instant::now();
        if cfg.initial_proofs > 0 && c.stop.is_none() {
            shared.queue_sectors(&mut c, cfg.initial_proofs);
        }
        if c.queue.is_empty() && !c.paused && c.stop.is_none() {
            shared.set_state(&mut c, ProverState::Idle);
        }
    }

    let mut tally = Tally::default();
    std::thread::scope(|scope| {
        // Proofs running, oldest first. Only `pipelined:D` has more than one: the next starts
        // once the newest has finished synthesis, so its synthesis overlaps that one's proving.
        let mut flight: VecDeque<InFlight<'_>> = VecDeque::new();
        loop {
            while flight.front().is_some_and(|f| f.handle.is_finished()) {
                let f = flight.pop_front().expect("checked");
                reap(&shared, f, &mut tally);
            }
            let next = {
                let mut c = shared.lock();
                loop {
                    if c.stop.is_some() {
                        break Next::Stop;
                    }
                    // A mode switch waits until nothing is in flight (the next proof boundary).
                    let may_start = match flight.back() {
                        None => true,
                        Some(last) => {
                            c.pending_mode.is_none()
                                && flight.len() < modes::in_flight(c.mode)
                                && last.synthesized.is_set()
                        }
                    };
                    if may_start && !c.paused && !c.queue.is_empty() {
                        if let Some(m) = c.pending_mode.take() {
                            shared.switch(&mut c, m);
                        }
                        if let Some(spec) = c.queue.pop_front() {
                            c.running += 1;
                            shared.set_state(&mut c, ProverState::Proving);
                            break Next::Start(spec, c.mode);
                        }
                    }
                    if !flight.is_empty() {
                        // Come back to reap it or to start the next one.
                        let _ = shared
                            .cv
                            .wait_timeout(c, FLIGHT_POLL)
                            .unwrap_or_else(|p| p.into_inner());
                        break Next::Look;
                    }
                    if !cfg.daemon && c.queue.is_empty() {
                        c.stop = Some("done".into());
                        break Next::Stop;
                    }
                    match cfg.repeat_every {
                        Some(every) if !c.paused => {
                            let due = c.idle_since + every;
                            let now = Instant::now();
                            if now >= due {
                                // One proof of the mode's size (batch:N proves N sectors).
                                let n = Shared::effective_mode(&c).sectors_per_proof();
                                shared.queue_sectors(&mut c, n);
                                c.idle_since = now;
                            } else {
                                c = shared
                                    .cv
                                    .wait_timeout(c, due - now)
                                    .unwrap_or_else(|p| p.into_inner())
                                    .0;
                            }
                        }
                        _ => c = shared.cv.wait(c).unwrap_or_else(|p| p.into_inner()),
                    }
                }
            };
            match next {
                Next::Start(spec, mode) => {
                    let latch = Arc::new(Latch::default());
                    let l = latch.clone();
                    // Proofs alive at once during each proof's life: its working set is
                    // theirs together. One that has announced is over (it may wait to be
                    // reaped) and holds nothing.
                    let live: Vec<_> = flight.iter().filter(|f| !f.announced.is_set()).collect();
                    let alive = live.len() + 1;
                    for f in live {
                        f.overlap.fetch_max(alive, Relaxed);
                    }
                    let overlap = Arc::new(AtomicUsize::new(alive));
                    let o = overlap.clone();
                    // Proofs are announced in order even when a later one proves faster.
                    let before = flight.back().map(|f| f.announced.clone());
                    let announced = Arc::new(Latch::default());
                    let a = announced.clone();
                    let (b, sh) = (&backend, &shared);
                    let handle = scope.spawn(move || {
                        let out = job::run(b, &w, &spec, mode, &sh.emitter, &sh.abort, Some(l));
                        if let Some(before) = before {
                            before.wait();
                        }
                        // Account before announcing, so a control reacting to
                        // `proof_finished` sees the measured model and the freed slot.
                        account(sh, &spec, mode, &out, o.load(Relaxed));
                        sh.emitter.emit(job::finished_event(&spec, mode, &out));
                        emit_memory(&sh.emitter, b);
                        a.set();
                        out
                    });
                    flight.push_back(InFlight {
                        spec,
                        mode,
                        synthesized: latch,
                        announced,
                        overlap,
                        handle,
                    });
                }
                Next::Look => {}
                Next::Stop => break,
            }
        }
        // Stopping: what is in flight ends (cut short if the abort flag is up), in order.
        while let Some(f) = flight.pop_front() {
            reap(&shared, f, &mut tally);
        }
    });
    let (done, failures) = (tally.done, tally.failures);
    let reason = shared.lock().stop.clone().unwrap_or_else(|| "done".into());
    finish(&shared, &reason, done, i32::from(failures > 0))
}

/// How often the run loop looks at proofs in flight (to reap them, or to start the next
/// pipelined one once the newest has finished synthesis).
const FLIGHT_POLL: Duration = Duration::from_millis(20);

enum Next {
    Start(ProofSpec, BatchMode),
    Look,
    Stop,
}

struct InFlight<'s> {
    spec: ProofSpec,
    mode: BatchMode,
    synthesized: Arc<Latch>,
    /// Raised once its `proof_finished` is out.
    announced: Arc<Latch>,
    overlap: Arc<AtomicUsize>,
    handle: std::thread::ScopedJoinHandle<'s, job::Outcome>,
}

#[derive(Default)]
struct Tally {
    done: u64,
    failures: u32,
}

/// A proof ended (on its thread, before `proof_finished` goes out): the memory model, the
/// running count. `overlap`: most proofs alive at once while it ran (pipelined).
fn account(shared: &Shared, spec: &ProofSpec, mode: BatchMode, out: &job::Outcome, overlap: usize) {
    let mut c = shared.lock();
    c.running = c.running.saturating_sub(1);
    // Pipelined proofs that did not overlap held one sector, not D.
    let live = match mode {
        BatchMode::Pipelined(_) => overlap.max(1) as u64 * spec.constraints(&shared.workload),
        _ => out.live_constraints,
    };
    if out.ok && out.verified {
        if let Some(ws) = out.working_set {
            let bpc = ws as f64 / live.max(1) as f64;
            shared.emitter.emit(Event::Log {
                level: "info".into(),
                target: "provetop_prover::heap".into(),
                message: format!(
                    "proof {}: working set {ws} B ({}; {bpc:.0} B per live constraint, {} live in {mode})",
                    spec.proof_id,
                    provetop_shared::units::fmt_bytes(ws),
                    live
                ),
            });
            let m = &mut c.mem;
            m.bytes_per_constraint = Some(m.bytes_per_constraint.map_or(bpc, |b| b.max(bpc)));
            m.proofs += 1;
        }
    }
}

/// Join a proof in flight: counts, a mode switch that waited for it, the state.
fn reap(shared: &Shared, f: InFlight<'_>, tally: &mut Tally) {
    let out = f.handle.join().unwrap_or_else(|_| {
        let out = job::Outcome::failed("proving thread panicked");
        let mut c = shared.lock();
        c.running = c.running.saturating_sub(1);
        shared
            .emitter
            .emit(job::finished_event(&f.spec, f.mode, &out));
        f.announced.set();
        out
    });
    let mut c = shared.lock();
    c.idle_since = Instant::now();
    if out.ok && out.verified {
        tally.done += 1;
    } else if !out.aborted {
        tally.failures += 1;
    }
    if c.running == 0 {
        // Idle: return the proof's freed heap to the kernel, so RSS falls to the floor.
        heap::release_free_memory();
        // Nothing in flight any more: a switch requested meanwhile takes effect now.
        if let Some(m) = c.pending_mode.take() {
            shared.switch(&mut c, m);
        }
        if c.stop.is_none() {
            let state = if c.paused {
                ProverState::Paused
            } else if c.queue.is_empty() {
                ProverState::Idle
            } else {
                ProverState::Proving
            };
            if state != ProverState::Proving {
                shared.set_state(&mut c, state);
            }
        }
    }
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
