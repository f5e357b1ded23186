//! The scheduler: starts queued proofs on threads of their own, reaps them, and decides when
//! the run is over.
//!
//! Contract: proofs start in queue order, never while paused or stopping. Only `pipelined:D`
//! has more than one in flight (up to D): the next starts once the newest has finished
//! synthesis, so its synthesis overlaps that one's proving. A pending mode switch waits until
//! nothing is in flight, and takes effect just before the next proof starts (or when the last
//! one is reaped). Each proof's `proof_finished` comes after its measurement is recorded and
//! before its `memory_report`, and proofs are announced in start order even when a later one
//! proves faster. Standalone, the run stops with reason `done` once the queue is empty and
//! nothing is in flight; in the daemon, `--repeat-every` queues one proof of the effective
//! mode's size after that much idle, unpaused time. Once stopping, what is in flight is
//! reaped in order (cut short if the abort flag is up).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

use provetop_shared::protocol::{BatchMode, ProverState};

use super::state::Shared;
use super::{emit_memory, Config};
use crate::backend::Backend;
use crate::heap;
use crate::job::{self, ProofSpec};
use crate::modes;
use crate::phases::Latch;

/// How often the run loop looks at proofs in flight (to reap them, or to start the next
/// pipelined one once the newest has finished synthesis).
const FLIGHT_POLL: Duration = Duration::from_millis(20);

/// How the proofs that were reaped ended.
#[derive(Default)]
pub(super) struct Tally {
    /// Proved and verified.
    pub(super) done: u64,
    /// Failed other than by the abort flag.
    pub(super) failures: u32,
}

enum Next {
    Start(ProofSpec, BatchMode),
    /// Something in flight may have changed: look again.
    Look,
    Stop,
}

struct InFlight<'s> {
    spec: ProofSpec,
    mode: BatchMode,
    /// Raised once its synthesis is over (the next pipelined proof may start).
    synthesized: Arc<Latch>,
    /// Raised once its proving is over (it holds no working set any more).
    proved: Arc<Latch>,
    /// Raised once its `proof_finished` is out.
    announced: Arc<Latch>,
    /// Most proofs alive at once during its life (its working set is theirs together).
    overlap: Arc<AtomicUsize>,
    handle: std::thread::ScopedJoinHandle<'s, job::Outcome>,
}

/// Prove from the queue until the run stops.
pub(super) fn prove_queue(shared: &Shared, backend: &Backend, cfg: &Config) -> Tally {
    let w = shared.workload;
    let mut tally = Tally::default();
    std::thread::scope(|scope| {
        // Proofs running, oldest first.
        let mut flight: VecDeque<InFlight<'_>> = VecDeque::new();
        loop {
            while flight.front().is_some_and(|f| f.handle.is_finished()) {
                let f = flight.pop_front().expect("checked");
                reap(shared, f, &mut tally);
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
                    // theirs together. One that has proved is over (it may still wait to
                    // announce or be reaped) and holds nothing.
                    let live: Vec<_> = flight.iter().filter(|f| !f.proved.is_set()).collect();
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
                    let proved = Arc::new(Latch::default());
                    let p = proved.clone();
                    let (b, sh) = (backend, shared);
                    let handle = scope.spawn(move || {
                        let out = job::run(b, &w, &spec, mode, &sh.emitter, &sh.abort, Some(l));
                        p.set();
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
                        proved,
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
            reap(shared, f, &mut tally);
        }
    });
    tally
}

/// A proof ended (on its thread, before `proof_finished` goes out): the running count, the
/// memory model. `overlap`: most proofs alive at once while it ran (pipelined).
fn account(shared: &Shared, spec: &ProofSpec, mode: BatchMode, out: &job::Outcome, overlap: usize) {
    let mut c = shared.lock();
    c.running = c.running.saturating_sub(1);
    c.mem
        .measure(&shared.emitter, &shared.workload, spec, mode, out, overlap);
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
