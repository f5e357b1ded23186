//! The user's own line rules (the `[[log_rule]]` tables of the config file): a regex with
//! named captures, for a prover provetop has no grammar for.
//!
//! ```toml
//! [[log_rule]]
//! name = "myprover-synth-end"
//! regex = '^synth done part=(?P<partition>\d+) in (?P<duration>\S+)$'
//! action = "end"
//! phase = "synthesis"
//! ```
//!
//! Captures: `phase` (else the rule's `phase`), `partition` (a number), `duration` (`1.2s`,
//! `850ms`, or a bare number of seconds), `proof` (lines with the same proof are one
//! proof's phases, whichever rule read them; without it, all rules' phases are one proof). The action says what a match is: `start` opens the phase, `end` closes
//! it (with a `duration` capture and no start seen, it opens that long ago), `instant` is a
//! phase of no length.
//!
//! A line costs one pass over all the rules, not one per rule: [`Rules`] matches it against a
//! `RegexSet` of every pattern first and runs the captures of only the rules that matched. At
//! most [`MAX_RULES`] rules are read (the config file with more is refused in one line): the
//! set is compiled when a session starts, and its time and memory grow with the patterns.

use provetop_shared::Phase;
use std::sync::OnceLock;

use regex::{Regex, RegexSet, RegexSetBuilder};

use super::duration::parse_secs;
use super::envelope::Envelope;
use super::{At, Hit, Scope};

/// Most rules a config file may hold.
pub const MAX_RULES: usize = 1000;

/// The set's compiled size, at most: [`MAX_RULES`] rules with Unicode classes (`\w`, `\S`)
/// need several times regex's default.
const SET_BYTES: usize = 64 << 20;
/// The set's lazy DFA cache, at most (grown as lines need it): with many rules the default
/// is too small to keep the states every line needs, and each line would build them anew.
const SET_DFA_BYTES: usize = 64 << 20;

/// The user's rules in order, with the set that picks which of them a line matches.
#[derive(Debug, Clone, Default)]
pub struct Rules {
    rules: Vec<Rule>,
    /// Every rule's pattern; `None` when there are no rules or the set did not compile
    /// (patterns that together exceed regex's size limit): then each rule is tried in turn.
    set: Option<RegexSet>,
    matched: Vec<usize>,
}

impl Rules {
    /// The set of `rules` (in the order they are tried); rules whose set does not compile
    /// ([`Rules::check`] refuses them first) are tried one after another.
    pub fn new(rules: Vec<Rule>) -> Rules {
        let set = Self::set(&rules).ok().flatten();
        Rules {
            rules,
            set,
            matched: Vec::new(),
        }
    }

    /// Whether `rules` can be matched in one pass: at most [`MAX_RULES`], and their patterns
    /// together within the set's size; else why not, in one line.
    pub fn check(rules: &[Rule]) -> Result<(), String> {
        if rules.len() > MAX_RULES {
            return Err(format!(
                "{} [[log_rule]] tables, more than the {MAX_RULES} provetop reads",
                rules.len()
            ));
        }
        Self::set(rules).map(|_| ())
    }

    fn set(rules: &[Rule]) -> Result<Option<RegexSet>, String> {
        if rules.is_empty() {
            return Ok(None);
        }
        RegexSetBuilder::new(rules.iter().map(|r| r.pattern.as_str()))
            .size_limit(SET_BYTES)
            .dfa_size_limit(SET_DFA_BYTES)
            .build()
            .map(Some)
            .map_err(|e| {
                let text = e.to_string();
                let reason = text.lines().last().unwrap_or(&text).trim().to_string();
                format!("the {} [[log_rule]] patterns together are too large to match in one pass: {reason}", rules.len())
            })
    }

    /// Read a line with the first rule (in order) that matches its message or the whole
    /// line; that rule's name.
    pub fn read(&mut self, e: &Envelope<'_>, whole: &str, out: &mut Vec<Hit>) -> Option<&str> {
        if self.rules.is_empty() {
            return None;
        }
        let Some(set) = &self.set else {
            let r = self.rules.iter().find(|r| r.read(e, whole, out))?;
            return Some(&r.name);
        };
        self.matched.clear();
        self.matched.extend(set.matches(&e.msg).iter());
        if whole != e.msg {
            self.matched.extend(set.matches(whole).iter());
            self.matched.sort_unstable();
            self.matched.dedup();
        }
        let i = self
            .matched
            .iter()
            .copied()
            .find(|&i| self.rules[i].read(e, whole, out))?;
        Some(&self.rules[i].name)
    }
}

/// What a match of a rule means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Start,
    End,
    Instant,
}

impl std::str::FromStr for Action {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "start" => Ok(Action::Start),
            "end" => Ok(Action::End),
            "instant" => Ok(Action::Instant),
            _ => Err(format!(
                "unknown action {s:?} (want \"start\", \"end\" or \"instant\")"
            )),
        }
    }
}

/// One rule, checked. Its own regex (for the captures) is compiled when a line first
/// matches it: a `Regex` with Unicode classes holds most of a megabyte, and most rules of a
/// long list never match; the set alone says which do.
#[derive(Debug, Clone)]
pub struct Rule {
    /// Its name (the grammar its events are marked with).
    pub name: String,
    pattern: String,
    regex: OnceLock<Regex>,
    action: Action,
    phase: Option<String>,
}

/// Two rules are the same when written the same.
impl PartialEq for Rule {
    fn eq(&self, o: &Rule) -> bool {
        self.name == o.name
            && self.pattern == o.pattern
            && self.action == o.action
            && self.phase == o.phase
    }
}

impl Rule {
    /// Compile a rule; the error says what is wrong with it (the caller names the file).
    pub fn new(
        name: &str,
        pattern: &str,
        action: Action,
        phase: Option<&str>,
    ) -> Result<Rule, String> {
        let regex = Regex::new(pattern).map_err(|e| {
            // regex's message is several lines (the pattern, a caret, the reason).
            let text = e.to_string();
            let reason = text.lines().last().unwrap_or(&text).trim().to_string();
            format!("regex {pattern:?} does not compile: {reason}")
        })?;
        if phase.is_none() && !regex.capture_names().flatten().any(|n| n == "phase") {
            return Err("names no phase: give `phase = \"…\"` or a `(?P<phase>…)` capture".into());
        }
        Ok(Rule {
            name: name.to_string(),
            pattern: pattern.to_string(),
            regex: OnceLock::new(),
            action,
            phase: phase.map(str::to_string),
        })
    }

    /// The rule's regex, compiled on first use.
    fn regex(&self) -> &Regex {
        self.regex.get_or_init(|| {
            // The same pattern compiled in `Rule::new`, with the same builder: it compiles.
            Regex::new(&self.pattern).expect("the pattern compiled when the rule was made")
        })
    }

    /// Match the rule against a line's message, then against the whole line.
    pub fn read(&self, e: &Envelope<'_>, whole: &str, out: &mut Vec<Hit>) -> bool {
        let regex = self.regex();
        let Some(c) = regex.captures(&e.msg).or_else(|| regex.captures(whole)) else {
            return false;
        };
        let phase = match c.name("phase") {
            Some(p) => Phase::from(p.as_str().to_string()),
            None => Phase::from(self.phase.clone().unwrap_or_default()),
        };
        let partition = c.name("partition").and_then(|p| p.as_str().parse().ok());
        // Shared by every rule, so a start rule and an end rule pair up.
        let scope = match c.name("proof") {
            Some(p) => Scope::Job(format!("rule:{}", p.as_str())),
            None => Scope::Job("rule".into()),
        };
        let secs = c.name("duration").and_then(|d| {
            let d = d.as_str();
            d.parse::<f64>()
                .ok()
                .filter(|s| s.is_finite() && *s >= 0.0)
                .or_else(|| parse_secs(d))
        });
        out.push(match (self.action, secs) {
            (Action::Start, _) => Hit::Start(At::new(scope, phase, partition)),
            (Action::End, Some(secs)) => Hit::EndOrTook {
                at: At::new(scope, phase, partition),
                secs,
            },
            (Action::End, None) => Hit::End(At::new(scope, phase, partition)),
            (Action::Instant, _) => Hit::Took {
                at: At::new(scope, phase, partition),
                secs: 0.0,
                ago: 0.0,
            },
        });
        true
    }
}
