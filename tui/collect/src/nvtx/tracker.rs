//! From the injection library's lines to records (the contract: the module doc of
//! [`super`]; the line format: docs/nvtx.md).
//!
//! A range is admitted whole or not at all: a push or start that finds the budget spent (or
//! [`MAX_OPEN`] ranges open) is remembered as not admitted, so its pop or end adds nothing. An
//! end may arrive before its start (the two threads' rings are drained in turn): it waits,
//! bounded, for the start. A line that does not parse is counted and named once.

use std::collections::{HashMap, HashSet};

use provetop_shared::{Derived, Event, Mark, NvtxOrigin, Phase, Record, RecordBody};

use super::{PhaseMap, BURST, MAX_OPEN, MAX_SCOPES, RATE, SCOPE_BASE};

/// An open phase: proof (scope), phase, partition (set only to tell apart two open ranges
/// of the same name in one scope).
type OpenKey = (u64, Phase, Option<u32>);

/// Most ends waiting for their start, and how long one waits (ns).
const MAX_EARLY_ENDS: usize = 4096;
const EARLY_END_WAIT_NS: u64 = 2_000_000_000;
/// Drops are reported at most this often (ns).
const DROP_REPORT_NS: u64 = 1_000_000_000;
/// Open ranges named one by one when the child ends (the rest are counted).
const NAMED_AT_END: usize = 8;

#[derive(Debug)]
struct Open {
    /// `None`: not admitted (its end adds nothing).
    key: Option<OpenKey>,
    start: u64,
    origin: NvtxOrigin,
}

/// Counts the library reports (cumulative, per process).
#[derive(Debug, Default, Clone, Copy, PartialEq)]
struct Counts {
    dropped: u64,
    refused_strings: u64,
    unbalanced: u64,
    lost_ends: u64,
}

/// From lines to records, for one run of the child.
#[derive(Debug)]
pub struct Tracker {
    map: PhaseMap,
    run_start: u64,
    domains: HashMap<(u32, u32), String>,
    categories: HashMap<(u32, u32, u32), String>,
    thread_names: HashMap<(u32, u32), String>,
    scopes: HashMap<(u32, u32, u32), u64>,
    next_scope: u64,
    /// Push/pop ranges open, per (pid, thread, domain), innermost last.
    stacks: HashMap<(u32, u32, u32), Vec<Open>>,
    /// Start/end ranges open, per (pid, id).
    ranges: HashMap<(u32, u64), Open>,
    early_ends: HashMap<(u32, u64), u64>,
    open_keys: HashSet<OpenKey>,
    admitted_open: usize,
    tokens: u64,
    tokens_at: u64,
    counts: HashMap<u32, Counts>,
    /// Ranges dropped here (budget, bound) and by the library, not yet reported.
    unreported_drops: u64,
    drops_reported_at: u64,
    warned: HashSet<&'static str>,
    bad_lines: u64,
    /// The library said hello (some process of the child called NVTX).
    pub hellos: u64,
    /// Ranges recorded.
    pub ranges_seen: u64,
}

fn field<'a>(f: &[&'a str], i: usize) -> Result<&'a str, String> {
    f.get(i)
        .copied()
        .ok_or_else(|| format!("{} fields, field {} missing", f.len(), i + 1))
}

fn num<T: std::str::FromStr>(f: &[&str], i: usize) -> Result<T, String> {
    let s = field(f, i)?;
    s.parse()
        .map_err(|_| format!("field {} ({s:?}) is not a number", i + 1))
}

impl Tracker {
    /// A tracker for a run started at `run_start` (monotonic ns), mapping names with `map`.
    pub fn new(map: PhaseMap, run_start: u64) -> Tracker {
        Tracker {
            map,
            run_start,
            domains: HashMap::new(),
            categories: HashMap::new(),
            thread_names: HashMap::new(),
            scopes: HashMap::new(),
            next_scope: SCOPE_BASE,
            stacks: HashMap::new(),
            ranges: HashMap::new(),
            early_ends: HashMap::new(),
            open_keys: HashSet::new(),
            admitted_open: 0,
            tokens: BURST,
            tokens_at: run_start,
            counts: HashMap::new(),
            unreported_drops: 0,
            drops_reported_at: run_start,
            warned: HashSet::new(),
            bad_lines: 0,
            hellos: 0,
            ranges_seen: 0,
        }
    }

    /// One line (without its newline) that arrived at `arrival`; records go to `out`.
    pub fn line(&mut self, line: &str, arrival: u64, out: &mut Vec<Record>) {
        let f: Vec<&str> = line.splitn(8, '\t').collect();
        if let Err(why) = self.apply(&f, arrival, out) {
            self.bad_lines += 1;
            if self.bad_lines == 1 {
                let head: String = line.chars().take(80).collect();
                warn(
                    out,
                    arrival,
                    format!("nvtx: a line from the injection library was not understood ({why}): {head:?}"),
                );
            }
        }
        if arrival.saturating_sub(self.drops_reported_at) >= DROP_REPORT_NS {
            self.report_drops(arrival, out);
        }
    }

    fn apply(&mut self, f: &[&str], arrival: u64, out: &mut Vec<Record>) -> Result<(), String> {
        let pid: u32 = num(f, 1)?;
        match f[0] {
            "hello" => self.hellos += 1,
            "bye" => {}
            "domain" => {
                let name = field(f, 3)?.to_string();
                self.domains.insert((pid, num(f, 2)?), name);
            }
            "category" => {
                let name = field(f, 4)?.to_string();
                self.categories.insert((pid, num(f, 2)?, num(f, 3)?), name);
            }
            "thread" => {
                let name = field(f, 3)?.to_string();
                self.thread_names.insert((pid, num(f, 2)?), name);
            }
            "dropped" => self.counts_line(pid, f, arrival, out)?,
            "push" | "pop" | "start" | "end" | "mark" => {
                let tid: u32 = num(f, 2)?;
                let ts: u64 = num(f, 3)?;
                let domain: u32 = num(f, 4)?;
                let t = if ts >= self.run_start && ts <= arrival {
                    ts
                } else {
                    arrival
                };
                match f[0] {
                    "push" => {
                        let depth: u32 = num(f, 5)?;
                        let origin = self.origin(pid, tid, domain, num(f, 6)?, field(f, 7)?);
                        self.push(t, (pid, tid, domain), depth, origin, out);
                    }
                    "pop" => self.pop(t, (pid, tid, domain), out),
                    "start" => {
                        let id: u64 = num(f, 5)?;
                        let origin = self.origin(pid, tid, domain, num(f, 6)?, field(f, 7)?);
                        self.start(t, pid, id, origin, out);
                    }
                    "end" => self.end(t, pid, num(f, 5)?, out),
                    _ => {
                        let origin = self.origin(pid, tid, domain, num(f, 5)?, field(f, 6)?);
                        self.mark(t, origin, out);
                    }
                }
            }
            other => return Err(format!("unknown kind {other:?}")),
        }
        Ok(())
    }

    fn origin(&self, pid: u32, tid: u32, domain: u32, category: u32, name: &str) -> NvtxOrigin {
        NvtxOrigin {
            name: name.to_string(),
            pid,
            thread: tid,
            thread_name: self.thread_names.get(&(pid, tid)).cloned(),
            domain: (domain != 0).then(|| {
                self.domains
                    .get(&(pid, domain))
                    .cloned()
                    .unwrap_or_else(|| format!("domain {domain}"))
            }),
            category: (category != 0).then(|| {
                self.categories
                    .get(&(pid, domain, category))
                    .cloned()
                    .unwrap_or_else(|| category.to_string())
            }),
            depth: None,
        }
    }

    /// Take `n` tokens at `t`.
    fn admit(&mut self, n: u64, t: u64) -> bool {
        if t > self.tokens_at {
            let earned = (t - self.tokens_at) as u128 * RATE as u128 / 1_000_000_000;
            if earned > 0 {
                self.tokens = (self.tokens as u128 + earned).min(BURST as u128) as u64;
                self.tokens_at = t;
            }
        }
        if self.tokens >= n && self.admitted_open < MAX_OPEN {
            self.tokens -= n;
            true
        } else {
            self.unreported_drops += 1;
            false
        }
    }

    fn scope(&mut self, key: (u32, u32, u32)) -> u64 {
        if let Some(&id) = self.scopes.get(&key) {
            return id;
        }
        if self.scopes.len() >= MAX_SCOPES {
            // A flood of threads: the oldest scopes are forgotten (their ids stay unique).
            self.scopes.clear();
        }
        let id = self.next_scope;
        self.next_scope += 1;
        self.scopes.insert(key, id);
        id
    }

    /// A key for `phase` in `scope` that no open range holds.
    fn free_key(&self, scope: u64, phase: Phase, hint: u32) -> OpenKey {
        let plain = (scope, phase, None);
        if !self.open_keys.contains(&plain) {
            return plain;
        }
        let mut p = hint;
        loop {
            let k = (scope, plain.1.clone(), Some(p));
            if !self.open_keys.contains(&k) {
                return k;
            }
            p = p.wrapping_add(1);
        }
    }

    fn open(
        &mut self,
        t: u64,
        scope: u64,
        hint: u32,
        origin: &NvtxOrigin,
        out: &mut Vec<Record>,
    ) -> Option<OpenKey> {
        if !self.admit(2, t) {
            return None;
        }
        let key = self.free_key(scope, self.map.phase(&origin.name), hint);
        self.open_keys.insert(key.clone());
        self.admitted_open += 1;
        self.ranges_seen += 1;
        let event = Event::PhaseStarted {
            proof_id: key.0,
            phase: key.1.clone(),
            partition: key.2,
        };
        derived(out, t, event, origin.clone());
        Some(key)
    }

    fn close(&mut self, t: u64, o: Open, out: &mut Vec<Record>) {
        let Some(key) = o.key else { return };
        self.open_keys.remove(&key);
        self.admitted_open -= 1;
        let t = t.max(o.start);
        let event = Event::PhaseEnded {
            proof_id: key.0,
            phase: key.1,
            partition: key.2,
            duration_s: (t - o.start) as f64 / 1e9,
        };
        derived(out, t, event, o.origin);
    }

    fn push(
        &mut self,
        t: u64,
        at: (u32, u32, u32),
        depth: u32,
        mut origin: NvtxOrigin,
        out: &mut Vec<Record>,
    ) {
        origin.depth = Some(depth);
        let scope = self.scope(at);
        let key = self.open(t, scope, depth, &origin, out);
        self.stacks.entry(at).or_default().push(Open {
            key,
            start: t,
            origin,
        });
    }

    fn pop(&mut self, t: u64, at: (u32, u32, u32), out: &mut Vec<Record>) {
        // The library sends a pop only for a push it sent: one is open here.
        let Some(o) = self.stacks.get_mut(&at).and_then(Vec::pop) else {
            return;
        };
        self.close(t, o, out);
    }

    fn start(&mut self, t: u64, pid: u32, id: u64, origin: NvtxOrigin, out: &mut Vec<Record>) {
        let scope = self.scope((pid, u32::MAX, self.domain_of(&origin)));
        let key = self.open(t, scope, 1, &origin, out);
        let o = Open {
            key,
            start: t,
            origin,
        };
        match self.early_ends.remove(&(pid, id)) {
            Some(end) => self.close(end, o, out),
            None => {
                self.ranges.insert((pid, id), o);
            }
        }
    }

    /// Start/end ranges of one domain share a scope: the domain's id by name.
    fn domain_of(&self, o: &NvtxOrigin) -> u32 {
        match &o.domain {
            None => 0,
            Some(name) => self
                .domains
                .iter()
                .find(|((p, _), n)| *p == o.pid && *n == name)
                .map_or(u32::MAX - 1, |((_, d), _)| *d),
        }
    }

    fn end(&mut self, t: u64, pid: u32, id: u64, out: &mut Vec<Record>) {
        match self.ranges.remove(&(pid, id)) {
            Some(o) => self.close(t, o, out),
            None => {
                let stale = t.saturating_sub(EARLY_END_WAIT_NS);
                self.early_ends.retain(|_, at| *at >= stale);
                if self.early_ends.len() < MAX_EARLY_ENDS {
                    self.early_ends.insert((pid, id), t);
                }
            }
        }
    }

    fn mark(&mut self, t: u64, origin: NvtxOrigin, out: &mut Vec<Record>) {
        if !self.admit(1, t) {
            return;
        }
        let mut text = format!("nvtx mark {} (thread {}", origin.name, origin.thread);
        if let Some(d) = &origin.domain {
            text.push_str(&format!(", domain {d}"));
        }
        text.push(')');
        out.push(Record::new(t, RecordBody::Mark(Mark::Note { text })));
    }

    fn counts_line(
        &mut self,
        pid: u32,
        f: &[&str],
        t: u64,
        out: &mut Vec<Record>,
    ) -> Result<(), String> {
        let now = Counts {
            dropped: num(f, 2)?,
            refused_strings: num(f, 3)?,
            unbalanced: num(f, 4)?,
            lost_ends: num(f, 5)?,
        };
        let was = self.counts.insert(pid, now).unwrap_or_default();
        self.unreported_drops += now.dropped.saturating_sub(was.dropped);
        let said = [
            (now.refused_strings > 0, "strings", "registered more distinct strings (or domains) than it keeps; the rest show as \"(too many registered strings)\""),
            (now.unbalanced > 0, "unbalanced", "popped a range with none open (unbalanced pops are ignored)"),
            (now.lost_ends > 0, "ends", "ended ranges the library could not pass on (they end when the child does)"),
        ];
        for (yes, what, text) in said {
            if yes && self.warned.insert(what) {
                warn(out, t, format!("nvtx: process {pid} {text}"));
            }
        }
        Ok(())
    }

    fn report_drops(&mut self, t: u64, out: &mut Vec<Record>) {
        self.drops_reported_at = t;
        if self.unreported_drops > 0 {
            out.push(Record::new(
                t,
                RecordBody::Mark(Mark::Dropped {
                    what: "nvtx ranges".into(),
                    count: std::mem::take(&mut self.unreported_drops),
                }),
            ));
        }
    }

    /// The child ended at `t`: drops still unsaid are reported, the totals the library sent
    /// are summed up, and the ranges still open are named (the child's exit closes them).
    pub fn finish(&mut self, t: u64, out: &mut Vec<Record>) {
        self.report_drops(t, out);
        let mut open: Vec<&Open> = self
            .stacks
            .values()
            .flatten()
            .chain(self.ranges.values())
            .filter(|o| o.key.is_some())
            .collect();
        open.sort_by_key(|o| o.start);
        for o in open.iter().take(NAMED_AT_END) {
            warn(
                out,
                t,
                format!(
                    "nvtx: range {:?} (process {}, thread {}) was still open when the child ended",
                    o.origin.name, o.origin.pid, o.origin.thread
                ),
            );
        }
        if open.len() > NAMED_AT_END {
            warn(
                out,
                t,
                format!(
                    "nvtx: {} more ranges were still open when the child ended",
                    open.len() - NAMED_AT_END
                ),
            );
        }
        let total = self.counts.values().fold(Counts::default(), |a, c| Counts {
            dropped: a.dropped + c.dropped,
            refused_strings: a.refused_strings + c.refused_strings,
            unbalanced: a.unbalanced + c.unbalanced,
            lost_ends: a.lost_ends + c.lost_ends,
        });
        if total != Counts::default() {
            warn(
                out,
                t,
                format!(
                    "nvtx totals: {} ranges and markers dropped in the child, {} strings refused, {} unbalanced pops, {} ends lost",
                    total.dropped, total.refused_strings, total.unbalanced, total.lost_ends
                ),
            );
        }
    }

    /// Ranges open now (admitted).
    pub fn open_ranges(&self) -> usize {
        self.admitted_open
    }
}

fn derived(out: &mut Vec<Record>, t: u64, event: Event, origin: NvtxOrigin) {
    out.push(Record::new(
        t,
        RecordBody::Derived(Derived {
            grammar: "nvtx".into(),
            event,
            nvtx: Some(origin),
        }),
    ));
}

fn warn(out: &mut Vec<Record>, t: u64, text: String) {
    out.push(Record::new(t, RecordBody::Mark(Mark::Warning { text })));
}

#[cfg(test)]
mod tests;
