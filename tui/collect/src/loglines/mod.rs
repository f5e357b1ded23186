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
//! * state is bounded ([`MAX_OPEN`] open phases, [`MAX_SCOPES`] proofs remembered);
//! * no time lies before the child's start ([`Engine::set_floor`]); proofs are counted from
//!   their boundaries in the lines, and a call that fails ends failed ([`tracker`]).

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
pub mod tracker;

use provetop_shared::{Phase, Record};

pub use envelope::{Envelope, Format, Level};
pub use rules::{Action, Rule, Rules, MAX_RULES};
pub use tracker::Tracker;

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
    /// A sector of rust-fil-proofs (its SectorId; `None`: the proof of the innermost call
    /// open now, else one of its own).
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
    /// A rust-fil-proofs call starts now.
    CallStart(At),
    /// A rust-fil-proofs call finishes now.
    CallEnd(At),
    /// An error line: the open call it names (`None`: the innermost) failed.
    CallFailed {
        call: Option<String>,
        message: String,
    },
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
    rules: Rules,
    tracker: Tracker,
    hits: Vec<Hit>,
}

impl Engine {
    /// An engine with the user's rules (tried before the built-in grammars).
    pub fn new(rules: Vec<Rule>) -> Engine {
        Engine {
            rules: Rules::new(rules),
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
        let mut grammar: &str = self.rules.read(&env, &clean, &mut self.hits).unwrap_or("");
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

    /// No derived time before `floor` (monotonic ns: the child's start). A line that states
    /// a duration reaching further back starts its span there, said once.
    pub fn set_floor(&mut self, floor: u64) {
        self.tracker.set_floor(floor);
    }

    /// The stream ended at `t` (the child exited): calls and proofs still open failed.
    pub fn finish(&mut self, t: u64, out: &mut Vec<Record>) {
        self.tracker.finish(t, out);
    }
}
