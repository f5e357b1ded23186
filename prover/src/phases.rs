//! Phase accounting for one proving call (one bellperson `create_random_proof_batch`).
//!
//! A [`CallTracker`] turns three measured sources into `phase_started` / `phase_ended` events
//! and per-phase totals:
//!
//! * synthesis of each partition, timed inside the circuit's `synthesize` ([`SynthesisHooks`]);
//! * bellperson's `log` markers on the calling thread ([`Marker`], via [`crate::logbridge`]):
//!   "starting proof timer" opens `prove` and `fft_h`, "multiexp h" closes `fft_h`,
//!   "prover time" closes `prove`; the GPU lock/kernel lines bracket `gpu_setup`;
//! * multiexp tasks reported by [`crate::timed_params`]: an MSM phase opens when its first
//!   multiexp starts computing and closes when its last one finishes. On the CPU these phases
//!   overlap each other (bellperson runs them concurrently on its pool), so their totals can
//!   add up to more than `prove`; that is what the machine does.
//!
//! Backends without measured multiexps ([`SubSteps::Markers`]) fall back to bellperson's
//! markers as sequential boundaries; opaque provers ([`SubSteps::None`]) report `prove` only.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::{Arc, Condvar, Mutex};

use provetop_shared::clock::mono_ns;
use provetop_shared::protocol::{Event, Phase};

use crate::circuit::SynthesisHooks;
use crate::events::Emitter;
use crate::timed_params::{MsmKind, MsmObserver};

/// What a backend can tell about the steps inside its proving call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SubSteps {
    /// FFT from markers, MSMs measured by task tracking (bellperson's native prover).
    Measured,
    /// Markers only, taken as sequential step boundaries.
    Markers,
    /// Nothing inside `prove`.
    None,
}

/// A step boundary bellperson logs on the calling thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Marker {
    /// "starting proof timer": synthesis is over, proving begins.
    ProofTimer,
    /// "multiexp h": FFTs are done.
    MultiexpH,
    /// "multiexp l".
    MultiexpL,
    /// "multiexp a b_g1".
    MultiexpAB1,
    /// "multiexp b_g2".
    MultiexpB2,
    /// "prover time: …": the call is done.
    ProverTime,
    /// GPU lock being acquired / kernel being built.
    GpuSetupBegin,
    /// A GPU kernel was instantiated (or failed to be).
    GpuSetupEnd,
    /// A known step line that carries no boundary ("get h", "proofs", …).
    Quiet,
}

impl Marker {
    /// Recognize one of bellperson's log messages.
    pub fn parse(msg: &str) -> Option<Marker> {
        Some(match msg {
            "starting proof timer" => Marker::ProofTimer,
            "multiexp h" => Marker::MultiexpH,
            "multiexp l" => Marker::MultiexpL,
            "multiexp a b_g1" => Marker::MultiexpAB1,
            "multiexp b_g2" => Marker::MultiexpB2,
            "get h" | "get l" | "get_a b_g1 b_g2" | "get a b_g1" | "get b_g2" | "proofs" => {
                Marker::Quiet
            }
            m if m.starts_with("prover time") => Marker::ProverTime,
            m if m.starts_with("synthesis time") => Marker::Quiet,
            m if m.starts_with("Bellperson ") && m.ends_with("is being used!") => Marker::Quiet,
            m if m.starts_with("Acquiring GPU lock") || m.starts_with("GPU lock acquired") => {
                Marker::GpuSetupBegin
            }
            m if m.ends_with("kernel instantiated!") || m.starts_with("Cannot instantiate GPU") => {
                Marker::GpuSetupEnd
            }
            _ => return None,
        })
    }
}

fn msm_phase(k: MsmKind) -> Phase {
    match k {
        MsmKind::H => Phase::MsmH,
        MsmKind::L => Phase::MsmL,
        MsmKind::A | MsmKind::BG1 => Phase::MsmAB1,
        MsmKind::BG2 => Phase::MsmB2,
    }
}

#[derive(Default)]
struct State {
    open: HashMap<(Phase, Option<u32>), u64>,
    totals: BTreeMap<Phase, f64>,
    tasks_done: HashMap<Phase, u32>,
    tasks_started: HashMap<Phase, u32>,
    synth_finished: usize,
    /// Measured phases that were still open at "prover time" (their tasks were not all
    /// seen finishing): a sign that bellperson's multiexp structure changed.
    forced: Vec<Phase>,
    /// Set once every circuit of the call is synthesized (or the call ended).
    synthesized: Option<Arc<Latch>>,
}

/// A one-way flag between threads: "this call's synthesis is over" (the daemon then starts
/// the next pipelined proof), "this proof is announced" (the next may announce its own).
#[derive(Debug, Default)]
pub struct Latch {
    set: Mutex<bool>,
    cv: Condvar,
}

impl Latch {
    /// Raise the flag (idempotent).
    pub fn set(&self) {
        *self.set.lock().unwrap_or_else(|p| p.into_inner()) = true;
        self.cv.notify_all();
    }

    pub fn is_set(&self) -> bool {
        *self.set.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Block until the flag is up.
    pub fn wait(&self) {
        let mut up = self.set.lock().unwrap_or_else(|p| p.into_inner());
        while !*up {
            up = self.cv.wait(up).unwrap_or_else(|p| p.into_inner());
        }
    }
}

/// What one proving call is, as its [`CallTracker`] needs to know it.
pub struct Call {
    /// Where the call's events go (the log bridge forwards its log lines there too).
    pub emitter: Emitter,
    pub proof_id: u64,
    /// Partition label for prove sub-phases (a call over one partition), else `None`.
    pub partition: Option<u32>,
    /// Circuits the call synthesizes and proves.
    pub circuits: u32,
    /// What the backend shows of the steps inside its proving call.
    pub steps: SubSteps,
    /// Polled during synthesis and, except under supraseal, on every MSM base read; once
    /// raised, the call fails at the next check.
    pub abort: Arc<AtomicBool>,
}

/// Phase bookkeeping and event emission for one proving call.
pub struct CallTracker {
    call: Call,
    st: Mutex<State>,
}

impl CallTracker {
    pub fn new(call: Call) -> Arc<Self> {
        Arc::new(CallTracker {
            call,
            st: Mutex::new(State::default()),
        })
    }

    /// The emitter (the log bridge forwards log lines of this call through it).
    pub fn emitter(&self) -> &Emitter {
        &self.call.emitter
    }

    /// For the parameter source the backend builds (it checks the flag on every base read).
    pub fn abort_flag(&self) -> Arc<AtomicBool> {
        self.call.abort.clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.st.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn start_locked(&self, st: &mut State, phase: Phase, partition: Option<u32>) {
        if st.open.contains_key(&(phase.clone(), partition)) {
            return;
        }
        // Stamp under the state lock so a phase's start and end are ordered with its events.
        st.open.insert((phase.clone(), partition), mono_ns());
        self.call.emitter.emit(Event::PhaseStarted {
            proof_id: self.call.proof_id,
            phase,
            partition,
        });
    }

    fn end_locked(&self, st: &mut State, phase: Phase, partition: Option<u32>) {
        if let Some(t0) = st.open.remove(&(phase.clone(), partition)) {
            let secs = mono_ns().saturating_sub(t0) as f64 / 1e9;
            *st.totals.entry(phase.clone()).or_default() += secs;
            self.call.emitter.emit(Event::PhaseEnded {
                proof_id: self.call.proof_id,
                phase,
                partition,
                duration_s: secs,
            });
        }
    }

    /// Open a phase of this call (prove sub-phase label).
    pub fn start(&self, phase: Phase) {
        let mut st = self.lock();
        self.start_locked(&mut st, phase, self.call.partition);
    }

    /// Close a phase of this call; a phase that is not open is left alone.
    pub fn end(&self, phase: Phase) {
        let mut st = self.lock();
        self.end_locked(&mut st, phase, self.call.partition);
    }

    /// A bellperson marker seen on this call's thread.
    pub fn marker(&self, m: Marker) {
        let mut st = self.lock();
        let p = self.call.partition;
        let seq = self.call.steps == SubSteps::Markers;
        match m {
            Marker::ProofTimer => {
                self.start_locked(&mut st, Phase::Prove, p);
                if self.call.steps != SubSteps::None {
                    self.start_locked(&mut st, Phase::FftH, p);
                }
            }
            Marker::MultiexpH => {
                self.end_locked(&mut st, Phase::FftH, p);
                if seq {
                    self.start_locked(&mut st, Phase::MsmH, p);
                }
            }
            Marker::MultiexpL if seq => {
                self.end_locked(&mut st, Phase::MsmH, p);
                self.start_locked(&mut st, Phase::MsmL, p);
            }
            Marker::MultiexpAB1 if seq => {
                self.end_locked(&mut st, Phase::MsmL, p);
                self.start_locked(&mut st, Phase::MsmAB1, p);
            }
            Marker::MultiexpB2 if seq => {
                self.end_locked(&mut st, Phase::MsmAB1, p);
                self.start_locked(&mut st, Phase::MsmB2, p);
            }
            Marker::ProverTime => self.close_all_locked(&mut st),
            Marker::GpuSetupBegin => self.start_locked(&mut st, Phase::GpuSetup, p),
            Marker::GpuSetupEnd => self.end_locked(&mut st, Phase::GpuSetup, p),
            _ => {}
        }
    }

    fn close_all_locked(&self, st: &mut State) {
        // Sub-phases first, `prove` last, so that the stream nests.
        let mut open: Vec<(Phase, Option<u32>)> = st.open.keys().cloned().collect();
        open.sort_by_key(|(ph, _)| (*ph == Phase::Prove, ph.clone()));
        for (ph, part) in open {
            if self.call.steps == SubSteps::Measured && ph.is_multiexp() {
                log::debug!(target: "provetop_prover::phases", "{ph} still open at the end of the call; closed there");
                st.forced.push(ph.clone());
            }
            self.end_locked(st, ph, part);
        }
    }

    /// Close whatever is still open (a call that failed half-way).
    pub fn finish(&self) {
        let mut st = self.lock();
        self.close_all_locked(&mut st);
        if let Some(l) = &st.synthesized {
            l.set();
        }
    }

    /// Raise `latch` once every circuit of this call is synthesized (or the call ends).
    pub fn signal_synthesized(&self, latch: Arc<Latch>) {
        let mut st = self.lock();
        if st.synth_finished >= self.call.circuits as usize {
            latch.set();
        }
        st.synthesized = Some(latch);
    }

    /// Measured MSM phases that had to be closed at the end of the call instead of when their
    /// last multiexp finished (empty when task tracking matches bellperson).
    pub fn forced(&self) -> Vec<Phase> {
        self.lock().forced.clone()
    }

    /// Seconds per phase measured so far.
    pub fn totals(&self) -> BTreeMap<Phase, f64> {
        self.lock().totals.clone()
    }

    fn expected_tasks(&self, phase: &Phase) -> u32 {
        // Multiexps per circuit in bellperson's native prover: h 1, l 1, a 2 + b_g1 2, b_g2 2.
        self.call.circuits
            * match phase {
                Phase::MsmAB1 => 4,
                Phase::MsmB2 => 2,
                _ => 1,
            }
    }
}

impl SynthesisHooks for CallTracker {
    fn started(&self, partition: u32) {
        let mut st = self.lock();
        self.start_locked(&mut st, Phase::Synthesis, Some(partition));
    }

    fn finished(&self, partition: u32, _seconds: f64, _ok: bool) {
        let mut st = self.lock();
        st.synth_finished += 1;
        self.end_locked(&mut st, Phase::Synthesis, Some(partition));
        if st.synth_finished >= self.call.circuits as usize {
            if let Some(l) = &st.synthesized {
                l.set();
            }
        }
    }

    fn should_abort(&self) -> bool {
        self.call.abort.load(Relaxed)
    }
}

impl MsmObserver for CallTracker {
    fn task_started(&self, kind: MsmKind) {
        let ph = msm_phase(kind);
        let mut st = self.lock();
        *st.tasks_started.entry(ph.clone()).or_default() += 1;
        if self.call.steps == SubSteps::Measured {
            self.start_locked(&mut st, ph, self.call.partition);
        }
    }

    fn task_finished(&self, kind: MsmKind) {
        let ph = msm_phase(kind);
        let mut st = self.lock();
        let done = {
            let d = st.tasks_done.entry(ph.clone()).or_default();
            *d += 1;
            *d
        };
        if self.call.steps == SubSteps::Measured && done >= self.expected_tasks(&ph) {
            self.end_locked(&mut st, ph, self.call.partition);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers() {
        assert_eq!(Marker::parse("multiexp h"), Some(Marker::MultiexpH));
        assert_eq!(Marker::parse("prover time: 1.2s"), Some(Marker::ProverTime));
        assert_eq!(
            Marker::parse("GPU Multiexp kernel instantiated!"),
            Some(Marker::GpuSetupEnd)
        );
        assert_eq!(Marker::parse("something else"), None);
    }

    #[test]
    fn sequential_markers_nest() {
        let e = Emitter::memory();
        let t = CallTracker::new(Call {
            emitter: e.clone(),
            proof_id: 7,
            partition: Some(1),
            circuits: 1,
            steps: SubSteps::Markers,
            abort: Arc::new(AtomicBool::new(false)),
        });
        for m in [
            Marker::ProofTimer,
            Marker::MultiexpH,
            Marker::MultiexpL,
            Marker::MultiexpAB1,
            Marker::MultiexpB2,
            Marker::ProverTime,
        ] {
            t.marker(m);
        }
        let kinds: Vec<String> = e
            .taken()
            .iter()
            .map(|m| match &m.event {
                Event::PhaseStarted { phase, .. } => format!("+{phase}"),
                Event::PhaseEnded { phase, .. } => format!("-{phase}"),
                _ => "?".into(),
            })
            .collect();
        assert_eq!(
            kinds,
            [
                "+prove",
                "+fft_h",
                "-fft_h",
                "+msm_h",
                "-msm_h",
                "+msm_l",
                "-msm_l",
                "+msm_a_b1",
                "-msm_a_b1",
                "+msm_b2",
                "-msm_b2",
                "-prove"
            ]
        );
        assert_eq!(t.totals().len(), 6);
    }
}
