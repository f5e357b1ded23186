//! Phases from what provers already print: the line grammars.
//!
//! Every line of a child's output (or of a log file `watch` follows) goes through
//! [`Engine::line`]: its escape sequences are stripped ([`ansi`]), its envelope (time, level,
//! target) is read ([`envelope`]: env_logger, fil_logger, GOLOG JSON, journald, tracing), and
//! the message is offered to the grammars in turn, the user's rules first ([`rules`]), then
//! [`bellperson`], [`filproofs`], [`cuzk`], [`tracing`], [`ark`]. A line that one of them
//! reads becomes [`Hit`]s, and the [`Tracker`] turns those into protocol events
//! ([`Derived`] records): phases opened and closed, warnings.
//!
//! The contract, for any input:
//! * a line no grammar reads changes nothing (it is still recorded as text by the caller);
//! * an end without its start adds nothing: no phantom phase (only lines that carry their
//!   own duration, such as `synthesis time: 79.4s` or a tracing span close, open their span
//!   in the past, at the line's time minus the duration);
//! * times are the line's own timestamp mapped onto the monotonic axis where it has one
//!   ([`stamp`]), else its arrival;
//! * state is bounded ([`MAX_OPEN`] open phases, [`MAX_SCOPES`] proofs remembered).

pub mod ansi;
pub mod ark;
pub mod bellperson;
pub mod cuzk;
pub mod duration;
pub mod envelope;
pub mod filproofs;
pub mod rules;
pub mod stamp;
pub mod tracing;

use std::collections::{HashMap, VecDeque};

use provetop_shared::{Derived, Event, Phase, Record, RecordBody};

pub use envelope::{Envelope, Format, Level};
pub use rules::{Action, Rule};

/// Most phases open at once; starts beyond it are ignored (a flood of starts without ends).
pub const MAX_OPEN: usize = 4096;
/// Most proofs (sectors, jobs) remembered by name; past it the oldest names are forgotten.
pub const MAX_SCOPES: usize = 4096;
/// Most bellperson proofs in flight followed at once (pipelined provers have a few).
pub const MAX_BELLPERSON: usize = 64;
/// A cuzk TIMELINE offset this far past its line's arrival starts a new epoch.
pub const CUZK_REANCHOR_NS: u64 = 60_000_000_000;
/// Longest duration a line is believed to state (30 days); a longer one is a broken line.
pub const MAX_SECS: f64 = 30.0 * 86_400.0;

/// Which proof a phase belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Scope {
    /// A sector of rust-fil-proofs (its SectorId; `None`: the one last named).
    Sector(Option<String>),
    /// A job (cuzk's job id, a user rule's `proof` capture).
    Job(String),
    /// One proof for everything the grammar reads (tracing spans, ark-std).
    Grammar,
}

/// The phase a hit is about: whose (its scope), which, and of which partition.
#[derive(Debug, Clone, PartialEq)]
pub struct At {
    pub scope: Scope,
    pub phase: Phase,
    pub partition: Option<u32>,
}

impl At {
    pub fn new(scope: Scope, phase: Phase, partition: Option<u32>) -> At {
        At {
            scope,
            phase,
            partition,
        }
    }
}

/// What a grammar read in a line.
#[derive(Debug, Clone, PartialEq)]
pub enum Hit {
    /// A bellperson line (its proofs are followed in order, see [`Tracker`]).
    Bellperson(bellperson::Line),
    /// A phase starts now.
    Start(At),
    /// A phase ends now (nothing if it was not seen starting).
    End(At),
    /// A phase ends now, or, when it was not seen starting, took `secs` up to now.
    EndOrTook { at: At, secs: f64 },
    /// A phase that lasted `secs` and ended `ago` seconds before the line.
    Took { at: At, secs: f64, ago: f64 },
    /// cuzk's TIMELINE offset (ms since its engine started): the line's time.
    Offset { ms: u64 },
}

/// Grammars in the order they are tried.
const GRAMMARS: [(&str, Reader); 5] = [
    ("bellperson", bellperson::read),
    ("fil_proofs", filproofs::read),
    ("cuzk", cuzk::read),
    ("tracing", tracing::read),
    ("ark", ark::read),
];

type Reader = fn(&Envelope<'_>, &mut Vec<Hit>) -> bool;

/// The line grammars and what they have seen so far, for one stream of lines.
#[derive(Debug)]
pub struct Engine {
    rules: Vec<Rule>,
    tracker: Tracker,
    hits: Vec<Hit>,
}

impl Engine {
    /// An engine with the user's rules (tried before the built-in grammars).
    pub fn new(rules: Vec<Rule>) -> Engine {
        Engine {
            rules,
            tracker: Tracker::default(),
            hits: Vec::new(),
        }
    }

    /// Read one line (without its line ending) that arrived at `arrival` (monotonic ns);
    /// the events it implies are appended to `out`, stamped with their times.
    pub fn line(&mut self, line: &str, arrival: u64, out: &mut Vec<Record>) {
        self.line_at(line, arrival, None, out)
    }

    /// [`Engine::line`] with the wall clock at its arrival given (unix ns; `None`: now), for
    /// lines read back from a file and for tests.
    pub fn line_at(
        &mut self,
        line: &str,
        arrival: u64,
        arrival_wall: Option<i128>,
        out: &mut Vec<Record>,
    ) {
        // Cheap refusal first: every grammar needs a letter.
        if line.len() < 4 {
            return;
        }
        let clean = ansi::strip(line);
        let env = envelope::read(&clean);
        self.hits.clear();
        let mut grammar: &str = "";
        for r in &self.rules {
            if r.read(&env, &clean, &mut self.hits) {
                grammar = &r.name;
                break;
            }
        }
        if self.hits.is_empty() {
            for (name, read) in GRAMMARS {
                if read(&env, &mut self.hits) {
                    grammar = name;
                    break;
                }
            }
        }
        if self.hits.is_empty() {
            return;
        }
        let t = match (self.hits.first(), env.stamp) {
            (Some(Hit::Offset { ms }), _) => self.tracker.cuzk_at(*ms, arrival),
            (_, Some(s)) => s.to_mono(
                arrival,
                arrival_wall.unwrap_or_else(|| provetop_shared::clock::wall_ns() as i128),
            ),
            _ => arrival,
        };
        let grammar = grammar.to_string();
        let target = env.target.as_deref().unwrap_or("").to_string();
        for hit in std::mem::take(&mut self.hits) {
            self.tracker.apply(t, &grammar, &target, hit, out);
        }
    }

    /// Phases open now (for tests and the end of a stream).
    pub fn open_phases(&self) -> usize {
        self.tracker.open.len()
    }
}

#[derive(Debug, Default)]
struct BpProof {
    id: u64,
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
    open: HashMap<OpenKey, u64>,
    last_sector: Option<String>,
    bellperson: VecDeque<BpProof>,
    gpu_build: bool,
    /// cuzk: monotonic ns of its engine's epoch, from the first TIMELINE line.
    cuzk_epoch: Option<u64>,
}

impl Tracker {
    fn new_id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    fn scope_id(&mut self, grammar: &str, scope: &Scope) -> u64 {
        let key = match scope {
            Scope::Sector(Some(s)) => {
                self.last_sector = Some(s.clone());
                format!("sector:{s}")
            }
            Scope::Sector(None) => format!("sector:{}", self.last_sector.as_deref().unwrap_or("")),
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
        // Open already (a start was read too): this line is its end.
        self.open.remove(&key);
        Self::emit_started(out, start, g, key.clone());
        Self::emit_ended(out, end, g, key, secs);
    }

    /// The open key of the phase `at` names, in grammar `g`.
    fn key(&mut self, g: &str, at: At) -> OpenKey {
        (self.scope_id(g, &at.scope), at.phase, at.partition)
    }

    fn apply(&mut self, t: u64, g: &str, target: &str, hit: Hit, out: &mut Vec<Record>) {
        match hit {
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

    /// The time of a cuzk TIMELINE line `ms` after its engine's epoch, which the first line
    /// anchors at its arrival. Lines that arrive together (a file read at once) keep their
    /// offsets apart; one more than [`CUZK_REANCHOR_NS`] after its arrival means another
    /// epoch (cuzk restarted), anchored anew.
    fn cuzk_at(&mut self, ms: u64, arrival: u64) -> u64 {
        let off = ms.saturating_mul(1_000_000);
        let epoch = *self.cuzk_epoch.get_or_insert(arrival.saturating_sub(off));
        let t = epoch.saturating_add(off);
        if t > arrival.saturating_add(CUZK_REANCHOR_NS) {
            self.cuzk_epoch = Some(arrival.saturating_sub(off));
            return arrival;
        }
        t
    }

    /// The proof a bellperson proof belongs to: the sector whose C2 is open (its circuit
    /// proofs are this proof), else a proof of its own.
    fn bellperson_id(&mut self) -> u64 {
        let c2 = self
            .open
            .keys()
            .filter(|(_, p, _)| p.as_str().starts_with("seal_commit_phase2"))
            .map(|(id, _, _)| *id)
            .max();
        match c2 {
            Some(id) => id,
            None => self.new_id(),
        }
    }

    /// Follow one more bellperson proof, `proof` under the id it belongs to (see
    /// [`Self::bellperson_id`]), the oldest let go past [`MAX_BELLPERSON`]; its id.
    fn follow_bellperson(&mut self, proof: BpProof) -> u64 {
        let id = self.bellperson_id();
        if self.bellperson.len() >= MAX_BELLPERSON {
            self.bellperson.pop_front();
        }
        self.bellperson.push_back(BpProof { id, ..proof });
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
                let id = self.follow_bellperson(BpProof {
                    synthesizing: true,
                    ..BpProof::default()
                });
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
                    None => {
                        // The version line was not seen (the log began later): the
                        // duration places the synthesis.
                        let id = self.follow_bellperson(BpProof {
                            synthesized: true,
                            ..BpProof::default()
                        });
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
                self.bellperson.remove(i);
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
