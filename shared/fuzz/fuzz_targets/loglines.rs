//! A child's output as arbitrary bytes, cut into reads at fuzzed points and into lines by the
//! product's splitter as the supervisor's copier uses it (`lines::Splitter::keeping_heads`,
//! 16 KiB heads; a cut line is not derived), through the line grammars: the line sink
//! (configured user rules, then the built-in grammars), an engine with the built-in grammars
//! alone, and every grammar on its own on each line's envelope.
//!
//! Asserted, for any input: no panic; a line's head is at most the cap and its length at
//! least its head; a line yields a bounded number of records (at most a couple per
//! `key=value` a line can hold) and of grammar hits; a line is recorded at most once, with at
//! most one dropped mark; derived records are `Derived`, their durations finite and not
//! negative; the engine's open phases stay within `MAX_OPEN`.
#![no_main]
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use provetop_collect::lines::{Piece, Splitter};
use provetop_collect::loglines::{
    ark, bellperson, cuzk, envelope, filproofs, tracing, Action, Engine, Hit, Rule, MAX_OPEN,
};
use provetop_collect::supervisor::{LineSink, MAX_OUTPUT_LINE};
use provetop_shared::{Event, OutputSource, Record, RecordBody};

type Grammar = fn(&envelope::Envelope<'_>, &mut Vec<Hit>) -> bool;
const GRAMMARS: [Grammar; 5] = [
    bellperson::read,
    filproofs::read,
    cuzk::read,
    tracing::read,
    ark::read,
];

/// User rules with every action and capture, so the rule path runs too (`fz …` lines).
fn user_rules() -> Vec<Rule> {
    let r = |name: &str, re: &str, action, phase| Rule::new(name, re, action, phase).unwrap();
    vec![
        r(
            "fz-start",
            r"^fz start (?P<phase>\w+)(?: part=(?P<partition>\d+))?(?: proof=(?P<proof>\S+))?",
            Action::Start,
            None,
        ),
        r(
            "fz-end",
            r"^fz end (?P<phase>\w+)(?: part=(?P<partition>\d+))?(?: in (?P<duration>\S+))?(?: proof=(?P<proof>\S+))?",
            Action::End,
            None,
        ),
        r(
            "fz-mark",
            r"fz mark(?: proof=(?P<proof>\S+))?",
            Action::Instant,
            Some("fz_mark"),
        ),
    ]
}

/// Compiled once: a regex compile per input would be most of the time of a run.
static RULES: OnceLock<Vec<Rule>> = OnceLock::new();

struct Run {
    sink: LineSink,
    plain: Engine,
    rules: &'static [Rule],
    derived: Vec<Record>,
    recorded: Vec<Record>,
    out: Vec<Record>,
    hits: Vec<Hit>,
}

/// Most records (or hits) one line of `len` bytes may yield: `CUZK_TIMING: a_ms=1 b_ms=2 …`
/// is the densest grammar, two records per pair of at least four bytes; a start can close a
/// lost one first, a bellperson proof's end closes three phases.
fn bound(len: usize) -> usize {
    len / 2 + 4
}

/// [`bound`] for a line read while `open` phases were open: a failed call ends those inside
/// it, each with an end and an error or its proof's end.
fn bound_open(len: usize, open: usize) -> usize {
    bound(len) + 2 * open
}

fn check_derived(recs: &[Record]) {
    for r in recs {
        let RecordBody::Derived(d) = &r.body else {
            panic!("a grammar yielded a record that is not Derived: {r:?}");
        };
        if let Event::PhaseEnded { duration_s, .. } = &d.event {
            assert!(
                duration_s.is_finite() && *duration_s >= 0.0,
                "phase duration {duration_s} from {}",
                d.grammar
            );
        }
    }
}

impl Run {
    fn line(&mut self, head: &[u8], len: u64, t: u64) {
        assert!(head.len() <= MAX_OUTPUT_LINE && len >= head.len() as u64);
        self.derived.clear();
        self.recorded.clear();
        let (derived, recorded) = (&mut self.derived, &mut self.recorded);
        let sink_open = self.sink.open_phases();
        self.sink.line(
            head,
            len,
            OutputSource::Stdout,
            t,
            true,
            |r| derived.push(r),
            |r| recorded.push(r),
        );
        assert!(
            self.derived.len() <= bound_open(head.len(), sink_open),
            "{} derived",
            self.derived.len()
        );
        check_derived(&self.derived);
        assert!(self.recorded.len() <= 2, "{} recorded", self.recorded.len());
        if len > head.len() as u64 {
            // A cut line is recorded, never read by the grammars.
            assert!(self.derived.is_empty());
            return;
        }

        let text = String::from_utf8_lossy(head);
        self.out.clear();
        let open = self.plain.open_phases();
        // A fixed wall clock: the same input gives the same times.
        self.plain
            .line_at(&text, t, Some(1_764_633_600_000_000_000), &mut self.out);
        assert!(
            self.out.len() <= bound_open(text.len(), open),
            "{} records",
            self.out.len()
        );
        check_derived(&self.out);
        assert!(self.plain.open_phases() <= MAX_OPEN);

        // Each grammar on its own, past the one that would have read the line first.
        let clean = provetop_collect::loglines::ansi::strip(&text);
        let env = envelope::read(&clean);
        for read in GRAMMARS {
            self.hits.clear();
            read(&env, &mut self.hits);
            assert!(
                self.hits.len() <= bound(clean.len()),
                "{} hits",
                self.hits.len()
            );
        }
        for rule in self.rules {
            self.hits.clear();
            rule.read(&env, &clean, &mut self.hits);
            assert!(self.hits.len() <= 1);
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let user = RULES.get_or_init(user_rules);
    let mut run = Run {
        // The rules checked once, cloned (a clone keeps the regexes compiled so far).
        sink: LineSink::with_rules(user.to_vec()),
        plain: Engine::new(Vec::new()),
        rules: user,
        derived: Vec::new(),
        recorded: Vec::new(),
        out: Vec::new(),
        hits: Vec::new(),
    };
    // Lines cut as the copier cuts them: its splitter, its cap.
    let mut lines = Splitter::keeping_heads(MAX_OUTPUT_LINE);
    let mut t = 1_000_000_000u64;
    let mut rest = data;
    while !rest.is_empty() {
        // One read: its size from its own first byte (1..=251), so reads cut lines anywhere.
        let n = (1 + (rest[0] as usize * 31) % 251).min(rest.len());
        let (read, after) = rest.split_at(n);
        rest = after;
        t += 1_000_000;
        lines.feed(read, |line: Piece<'_>| {
            let (head, len) = line.head_and_len();
            run.line(head, len, t);
        });
    }
    lines.finish(|line| {
        let (head, len) = line.head_and_len();
        run.line(head, len, t);
    });
    assert!(run.plain.open_phases() <= MAX_OPEN);
});
