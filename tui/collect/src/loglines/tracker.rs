//! From hits to events ([`Tracker`]): which phases are open, which proof a name belongs to,
//! which proofs the lines announce.
//!
//! * Times never lie before the child started ([`Tracker::set_floor`]): a line that states a
//!   duration reaching further back (a user rule's `duration`, a tracing close, cuzk's
//!   timings) has its span start at the child's start, and the first such line is said once
//!   (a warning record).
//! * Proofs are counted from their boundaries in the lines: an outermost rust-fil-proofs
//!   proof call (C2, a PoSt, …: [`filproofs::is_proof_call`]) from its `:start` to its
//!   `:finish`, else each bellperson proof from its version line to `prover time`; each is a
//!   `proof_started` and a `proof_finished`, so back-to-back proofs are apart and counted.
//! * A rust-fil-proofs call that fails logs no `:finish`: its error line, the next start of
//!   the same call, or the end of the child's output ([`Tracker::finish`]) ends it, failed
//!   (its proof, when it is one, finishes not ok; else an error is logged), with the phases
//!   opened inside it.

use std::collections::{HashMap, VecDeque};

use provetop_shared::{BatchMode, Derived, Event, Mark, Phase, Record, RecordBody};

use super::{bellperson, filproofs, At, Hit, Scope, MAX_BELLPERSON, MAX_OPEN, MAX_SCOPES};
use super::{CUZK_REANCHOR_NS, MAX_SECS};

#[derive(Debug, Default)]
struct BpProof {
    id: u64,
    /// A proof of its own (announced by its version line), not a call's circuit proof.
    own: bool,
    synthesizing: bool,
    synthesized: bool,
    proving: bool,
    /// The MSM running now: its phase, when it began, whether its start was sent (only in a
    /// GPU build, where MSMs run one after another; else it waits for a GPU line).
    step: Option<(Phase, u64, bool)>,
}

/// An open phase: its proof, phase and partition.
type OpenKey = (u64, Phase, Option<u32>);

/// From hits to events: which phases are open, which proof a name belongs to.
#[derive(Debug, Default)]
pub struct Tracker {
    next_id: u64,
    scopes: HashMap<String, u64>,
    scope_order: VecDeque<String>,
    pub(super) open: HashMap<OpenKey, u64>,
    /// rust-fil-proofs calls open now, innermost last.
    calls: Vec<OpenKey>,
    /// The proof id of each call that names no sector, by name, while it is open.
    unnamed: HashMap<String, u64>,
    /// Proofs announced (`proof_started`) and not finished: id → start.
    proofs: HashMap<u64, (u64, String)>,
    bellperson: VecDeque<BpProof>,
    gpu_build: bool,
    /// cuzk: monotonic ns of its engine's epoch, from the first TIMELINE line.
    cuzk_epoch: Option<u64>,
    /// No time before it (the child's start, monotonic ns).
    floor: Option<u64>,
    /// A time was moved to the floor (said once).
    clamped: bool,
}

impl Tracker {
    fn new_id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    /// No derived time before `floor` (the child's start): see the module doc.
    pub fn set_floor(&mut self, floor: u64) {
        self.floor = Some(floor);
    }

    /// `t`, or the floor when `t` lies before it (the first time said in a warning).
    fn clamp(&mut self, t: u64, g: &str, out: &mut Vec<Record>) -> u64 {
        match self.floor {
            Some(f) if t < f => {
                if !self.clamped {
                    self.clamped = true;
                    let text = format!(
                        "a line read by {g} states a time {:.1} s before the child started: \
                         its phase is placed from the child's start (so are any later ones)",
                        (f - t) as f64 / 1e9
                    );
                    out.push(Record::new(f, RecordBody::Mark(Mark::Warning { text })));
                }
                f
            }
            _ => t,
        }
    }

    fn scope_id(&mut self, grammar: &str, scope: &Scope) -> u64 {
        let key = match scope {
            Scope::Sector(Some(s)) => format!("sector:{s}"),
            Scope::Sector(None) => match self.calls.last() {
                Some(k) => return k.0,
                None => "fil_proofs".to_string(),
            },
            Scope::Job(j) => format!("job:{j}"),
            Scope::Grammar => format!("grammar:{grammar}"),
        };
        if let Some(&id) = self.scopes.get(&key) {
            return id;
        }
        let id = self.new_id();
        if self.scope_order.len() >= MAX_SCOPES {
            if let Some(old) = self.scope_order.pop_front() {
                self.scopes.remove(&old);
            }
        }
        self.scope_order.push_back(key.clone());
        self.scopes.insert(key, id);
        id
    }

    fn emit(out: &mut Vec<Record>, t: u64, grammar: &str, event: Event) {
        out.push(Record::new(
            t,
            RecordBody::Derived(Derived {
                grammar: grammar.to_string(),
                event,
                nvtx: None,
            }),
        ));
    }

    /// The start of `key`'s phase at `t`.
    fn emit_started(out: &mut Vec<Record>, t: u64, grammar: &str, key: OpenKey) {
        let (proof_id, phase, partition) = key;
        let event = Event::PhaseStarted {
            proof_id,
            phase,
            partition,
        };
        Self::emit(out, t, grammar, event);
    }

    /// The end of `key`'s phase at `t`, after `duration_s`.
    fn emit_ended(out: &mut Vec<Record>, t: u64, grammar: &str, key: OpenKey, duration_s: f64) {
        let (proof_id, phase, partition) = key;
        let event = Event::PhaseEnded {
            proof_id,
            phase,
            partition,
            duration_s,
        };
        Self::emit(out, t, grammar, event);
    }

    fn start(&mut self, t: u64, g: &str, key: OpenKey, out: &mut Vec<Record>) {
        if !self.open.contains_key(&key) && self.open.len() >= MAX_OPEN {
            return;
        }
        if self.open.contains_key(&key) {
            // Its end was lost: close it here, as the model would.
            self.end(t, g, key.clone(), out);
        }
        self.open.insert(key.clone(), t);
        Self::emit_started(out, t, g, key);
    }

    fn end(&mut self, t: u64, g: &str, key: OpenKey, out: &mut Vec<Record>) -> bool {
        let Some(t0) = self.open.remove(&key) else {
            return false;
        };
        let t = t.max(t0);
        Self::emit_ended(out, t, g, key, (t - t0) as f64 / 1e9);
        true
    }

    fn took(&mut self, t: u64, g: &str, key: OpenKey, secs: f64, ago: f64, out: &mut Vec<Record>) {
        if !(0.0..=MAX_SECS).contains(&secs) || !(0.0..=MAX_SECS).contains(&ago) {
            return;
        }
        let end = t.saturating_sub((ago * 1e9) as u64);
        let start = end.saturating_sub((secs * 1e9) as u64);
        let (start, end) = (self.clamp(start, g, out), self.clamp(end, g, out));
        // Open already (a start was read too): this line is its end.
        self.open.remove(&key);
        Self::emit_started(out, start, g, key.clone());
        Self::emit_ended(out, end, g, key, secs);
    }

    /// The open key of the phase `at` names, in grammar `g`.
    fn key(&mut self, g: &str, at: At) -> OpenKey {
        (self.scope_id(g, &at.scope), at.phase, at.partition)
    }

    pub(super) fn apply(&mut self, t: u64, g: &str, target: &str, hit: Hit, out: &mut Vec<Record>) {
        let t = self.clamp(t, g, out);
        match hit {
            Hit::CallStart(at) => {
                // A call that names no sector, started again while open: that one failed.
                if let Scope::Job(name) = &at.scope {
                    if let Some(&id) = self.unnamed.get(name) {
                        let key = (id, at.phase.clone(), at.partition);
                        if let Some(i) = self.calls.iter().position(|k| *k == key) {
                            self.fail(t, g, i, "started again before it finished", out);
                        }
                    }
                }
                if let Some(key) = self.call_key(g, at, true) {
                    self.call_start(t, g, key, out);
                }
            }
            Hit::CallEnd(at) => {
                if let Some(key) = self.call_key(g, at, false) {
                    self.call_end(t, g, key, out);
                }
            }
            Hit::CallFailed { call, message } => {
                // The call it names, else (an error of the proofs' own targets) the innermost.
                let i = match call {
                    Some(name) => self.calls.iter().rposition(|k| k.1.as_str() == name),
                    None => self.calls.len().checked_sub(1),
                };
                if let Some(i) = i {
                    self.fail(t, g, i, &message, out);
                }
            }
            Hit::Offset { .. } => {}
            Hit::Bellperson(line) => self.bellperson(t, g, target, line, out),
            Hit::Start(at) => {
                let key = self.key(g, at);
                self.start(t, g, key, out);
            }
            Hit::End(at) => {
                let key = self.key(g, at);
                self.end(t, g, key, out);
            }
            Hit::EndOrTook { at, secs } => {
                let key = self.key(g, at);
                if !self.end(t, g, key.clone(), out) {
                    self.took(t, g, key, secs, 0.0, out);
                }
            }
            Hit::Took { at, secs, ago } => {
                let key = self.key(g, at);
                self.took(t, g, key, secs, ago, out);
            }
        }
    }

    /// The open key of a rust-fil-proofs call. One that names its sector is a phase of the
    /// sector's proof; one that names none is a proof of its own each time it starts
    /// (`starting`), its id kept by name until it ends (`None`: no room, or an end of a
    /// call not open).
    fn call_key(&mut self, g: &str, at: At, starting: bool) -> Option<OpenKey> {
        let Scope::Job(name) = &at.scope else {
            return Some(self.key(g, at));
        };
        let id = match (starting, self.unnamed.get(name)) {
            (false, id) => *id?,
            (true, _) => {
                if !self.unnamed.contains_key(name) && self.unnamed.len() >= MAX_OPEN {
                    return None;
                }
                let id = self.new_id();
                self.unnamed.insert(name.clone(), id);
                id
            }
        };
        Some((id, at.phase, at.partition))
    }

    /// A rust-fil-proofs call starts: a start of the same call still open means that one
    /// failed (its finish never came); an outermost proof call is a proof.
    fn call_start(&mut self, t: u64, g: &str, key: OpenKey, out: &mut Vec<Record>) {
        if let Some(i) = self.calls.iter().position(|k| *k == key) {
            self.fail(t, g, i, "started again before it finished", out);
        }
        self.start(t, g, key.clone(), out);
        if !self.open.contains_key(&key) {
            return;
        }
        let outer_proof = self
            .calls
            .iter()
            .any(|k| filproofs::is_proof_call(k.1.as_str()));
        self.calls.push(key.clone());
        if filproofs::is_proof_call(key.1.as_str()) && !outer_proof {
            self.proof_started(t, g, key.0, out);
        }
    }

    /// A rust-fil-proofs call finishes: its proof too, when it made one.
    fn call_end(&mut self, t: u64, g: &str, key: OpenKey, out: &mut Vec<Record>) {
        let Some(i) = self.calls.iter().rposition(|k| *k == key) else {
            // Not seen starting: nothing (no phantom).
            return;
        };
        self.calls.remove(i);
        self.unnamed.retain(|_, id| *id != key.0);
        self.end(t, g, key.clone(), out);
        let inner_proof = self.calls.iter().any(|k| k.0 == key.0);
        if filproofs::is_proof_call(key.1.as_str()) && !inner_proof {
            self.proof_finished(t, g, key.0, None, out);
        }
    }

    /// The call `calls[i]` failed (`why`): it ends now with the calls nested in it and the
    /// phases opened inside it; its proof finishes not ok, or (no proof) an error says so.
    fn fail(&mut self, t: u64, g: &str, i: usize, why: &str, out: &mut Vec<Record>) {
        let failed: Vec<OpenKey> = self.calls.drain(i..).collect();
        for key in failed.into_iter().rev() {
            self.unnamed.retain(|_, id| *id != key.0);
            let t0 = self.open.get(&key).copied().unwrap_or(t);
            let is_proof = filproofs::is_proof_call(key.1.as_str());
            if is_proof && self.proofs.contains_key(&key.0) {
                // Its `proof_finished` (not ok) ends its phases: a reader marks them failed.
                let name = key.1.as_str();
                let error = if why.contains(name) {
                    why.to_string()
                } else {
                    format!("{name}: {why}")
                };
                self.proof_finished(t, g, key.0, Some(error), out);
            } else {
                self.end_inside(t, g, key.0, t0, true, out);
                Self::failed_note(out, t, g, &key.1, why);
            }
        }
    }

    /// End at `t` every phase of proof `id` that opened at `t0` or later, latest first; said
    /// when `emit`, else only forgotten.
    fn end_inside(&mut self, t: u64, g: &str, id: u64, t0: u64, emit: bool, out: &mut Vec<Record>) {
        let mut inside: Vec<(u64, OpenKey)> = self
            .open
            .iter()
            .filter(|(k, &s)| k.0 == id && s >= t0)
            .map(|(k, &s)| (s, k.clone()))
            .collect();
        inside.sort_by_key(|x| std::cmp::Reverse(x.clone()));
        for (_, k) in inside {
            if emit {
                self.end(t, g, k, out);
            } else {
                self.open.remove(&k);
            }
        }
    }

    /// An error record: call `name` failed.
    fn failed_note(out: &mut Vec<Record>, t: u64, g: &str, name: &Phase, why: &str) {
        let message = if why.contains(name.as_str()) {
            why.to_string()
        } else {
            format!("{name} failed: {why}")
        };
        let event = Event::Log {
            level: "error".into(),
            target: g.to_string(),
            message,
        };
        Self::emit(out, t, g, event);
    }

    /// Proof `id` starts at `t` (bounded like open phases).
    fn proof_started(&mut self, t: u64, g: &str, id: u64, out: &mut Vec<Record>) {
        if self.proofs.len() >= MAX_OPEN || self.proofs.contains_key(&id) {
            return;
        }
        self.proofs.insert(id, (t, g.to_string()));
        let event = Event::ProofStarted {
            proof_id: id,
            mode: BatchMode::Single,
            sectors: 1,
            partitions: 0,
            constraints: 0,
        };
        Self::emit(out, t, g, event);
    }

    /// Proof `id` ends at `t`, ok unless `error`; phases of it still open end with it.
    fn proof_finished(
        &mut self,
        t: u64,
        g: &str,
        id: u64,
        error: Option<String>,
        out: &mut Vec<Record>,
    ) {
        let Some((t0, _)) = self.proofs.remove(&id) else {
            return;
        };
        // A failed proof's phases end with its `proof_finished` (the reader closes them).
        self.end_inside(t, g, id, t0, error.is_none(), out);
        if error.is_some() {
            self.bellperson.retain(|p| p.id != id);
        }
        let t = t.max(t0);
        let event = Event::ProofFinished {
            proof_id: id,
            ok: error.is_none(),
            // Nothing in the lines says a proof verified.
            verified: false,
            duration_s: (t - t0) as f64 / 1e9,
            mode: BatchMode::Single,
            phases: Vec::new(),
            error,
            cancelled: false,
            requeued_as: Vec::new(),
        };
        Self::emit(out, t, g, event);
    }

    /// The child's output ended at `t`: calls and proofs still open failed. Their phases
    /// are left to the reader of the records, which closes every phase at the child's exit
    /// (an end here could arrive after that and be taken for a phase of its own).
    pub fn finish(&mut self, t: u64, out: &mut Vec<Record>) {
        let why = "the child's output ended before it finished";
        for key in std::mem::take(&mut self.calls).into_iter().rev() {
            if !(filproofs::is_proof_call(key.1.as_str()) && self.proofs.contains_key(&key.0)) {
                Self::failed_note(out, t, "fil_proofs", &key.1, why);
            }
        }
        let mut proofs: Vec<(u64, (u64, String))> = self.proofs.drain().collect();
        proofs.sort_unstable();
        for (id, (t0, g)) in proofs {
            let event = Event::ProofFinished {
                proof_id: id,
                ok: false,
                verified: false,
                duration_s: t.saturating_sub(t0) as f64 / 1e9,
                mode: BatchMode::Single,
                phases: Vec::new(),
                error: Some(why.to_string()),
                cancelled: false,
                requeued_as: Vec::new(),
            };
            Self::emit(out, t.max(t0), &g, event);
        }
        self.open.clear();
        self.unnamed.clear();
        self.bellperson.clear();
    }

    /// The time of a cuzk TIMELINE line `ms` after its engine's epoch, which the first line
    /// anchors at its arrival. Lines that arrive together (a file read at once) keep their
    /// offsets apart; one more than [`CUZK_REANCHOR_NS`] after its arrival means another
    /// epoch (cuzk restarted), anchored anew.
    pub(super) fn cuzk_at(&mut self, ms: u64, arrival: u64) -> u64 {
        let off = ms.saturating_mul(1_000_000);
        let epoch = *self.cuzk_epoch.get_or_insert(arrival.saturating_sub(off));
        let t = epoch.saturating_add(off);
        if t > arrival.saturating_add(CUZK_REANCHOR_NS) {
            self.cuzk_epoch = Some(arrival.saturating_sub(off));
            return arrival;
        }
        t
    }

    /// The proof a bellperson proof belongs to: the innermost rust-fil-proofs proof call open
    /// (C2's circuit proofs are its proof), else a proof of its own, announced at `t`.
    fn bellperson_id(&mut self, t: u64, g: &str, out: &mut Vec<Record>) -> (u64, bool) {
        let call = self
            .calls
            .iter()
            .rev()
            .find(|k| filproofs::is_proof_call(k.1.as_str()))
            .map(|k| k.0);
        match call {
            Some(id) => (id, false),
            None => {
                let id = self.new_id();
                self.proof_started(t, g, id, out);
                (id, true)
            }
        }
    }

    /// Follow one more bellperson proof that began at `t`, `proof` under the id it belongs to
    /// (see [`Self::bellperson_id`]), the oldest let go past [`MAX_BELLPERSON`]; its id.
    fn follow_bellperson(&mut self, t: u64, g: &str, proof: BpProof, out: &mut Vec<Record>) -> u64 {
        let (id, own) = self.bellperson_id(t, g, out);
        if self.bellperson.len() >= MAX_BELLPERSON {
            if let Some(old) = self.bellperson.pop_front() {
                if old.own {
                    self.proofs.remove(&old.id);
                }
            }
        }
        self.bellperson.push_back(BpProof { id, own, ..proof });
        id
    }

    fn bellperson(
        &mut self,
        t: u64,
        g: &str,
        target: &str,
        line: bellperson::Line,
        out: &mut Vec<Record>,
    ) {
        use bellperson::Line;
        match line {
            Line::Begin { supraseal } => {
                self.gpu_build |= supraseal;
                let p = BpProof {
                    synthesizing: true,
                    ..BpProof::default()
                };
                let id = self.follow_bellperson(t, g, p, out);
                self.start(t, g, (id, Phase::Synthesis, None), out);
            }
            Line::Synthesized { secs } => {
                match self.bellperson.iter_mut().find(|p| p.synthesizing) {
                    Some(p) => {
                        p.synthesizing = false;
                        p.synthesized = true;
                        let id = p.id;
                        self.end(t, g, (id, Phase::Synthesis, None), out);
                    }
                    None if !(0.0..=MAX_SECS).contains(&secs) => {}
                    None => {
                        // The version line was not seen (the log began later): the
                        // duration places the synthesis.
                        let p = BpProof {
                            synthesized: true,
                            ..BpProof::default()
                        };
                        let began = self.clamp(t.saturating_sub((secs * 1e9) as u64), g, out);
                        let id = self.follow_bellperson(began, g, p, out);
                        self.took(t, g, (id, Phase::Synthesis, None), secs, 0.0, out);
                    }
                }
            }
            Line::ProveStart => {
                let Some(p) = self
                    .bellperson
                    .iter_mut()
                    .find(|p| p.synthesized && !p.proving)
                else {
                    return;
                };
                p.proving = true;
                let id = p.id;
                self.start(t, g, (id, Phase::Prove, None), out);
            }
            Line::FftStart => {
                if let Some(p) = self.bellperson.iter().find(|p| p.proving) {
                    let id = p.id;
                    if !self.open.contains_key(&(id, Phase::FftH, None)) {
                        self.start(t, g, (id, Phase::FftH, None), out);
                    }
                }
            }
            Line::Multiexp(phase) => {
                let gpu = self.gpu_build;
                let Some(i) = self.bellperson.iter().position(|p| p.proving) else {
                    return;
                };
                let id = self.bellperson[i].id;
                if phase == Phase::MsmH {
                    self.end(t, g, (id, Phase::FftH, None), out);
                }
                self.step_over(i, t, g, out);
                self.bellperson[i].step = Some((phase.clone(), t, gpu));
                if gpu {
                    self.start(t, g, (id, phase, None), out);
                }
            }
            Line::StepOver => {
                if let Some(i) = self.bellperson.iter().position(|p| p.proving) {
                    self.step_over(i, t, g, out);
                }
            }
            Line::Proved { .. } => {
                let Some(i) = self.bellperson.iter().position(|p| p.proving) else {
                    return;
                };
                self.step_over(i, t, g, out);
                let id = self.bellperson[i].id;
                self.end(t, g, (id, Phase::FftH, None), out);
                self.end(t, g, (id, Phase::Prove, None), out);
                if self.bellperson.remove(i).is_some_and(|p| p.own) {
                    self.proof_finished(t, g, id, None, out);
                }
            }
            Line::Gpu => {
                self.gpu_build = true;
                // An MSM that began before the kernel line said this is a GPU build.
                if let Some(i) = self.bellperson.iter().position(|p| p.proving) {
                    if let Some((phase, t0, false)) = self.bellperson[i].step.clone() {
                        self.bellperson[i].step = Some((phase.clone(), t0, true));
                        let id = self.bellperson[i].id;
                        self.start(t0, g, (id, phase, None), out);
                    }
                }
            }
            Line::GpuWarning(message) => Self::emit(
                out,
                t,
                g,
                Event::Log {
                    level: "warn".into(),
                    target: target.to_string(),
                    message,
                },
            ),
        }
    }

    /// The MSM of proof `i` is over (if one was sent as started).
    fn step_over(&mut self, i: usize, t: u64, g: &str, out: &mut Vec<Record>) {
        if let Some((phase, _, sent)) = self.bellperson[i].step.take() {
            if sent {
                let id = self.bellperson[i].id;
                self.end(t, g, (id, phase, None), out);
            }
        }
    }
}
