//! `--fail-if` rules: the regression gate of `compare`, in the alert rules' words.
//!
//! ```text
//! peak > +5%                 the other's interval peak is more than 5 % above the baseline's
//! s_per_sector > +3%         3 % slower per sector
//! sectors_per_hour < -10%    10 % less throughput
//! above_floor > +512MiB      the working set grew by more than 512 MiB
//! phase_p90[synthesis] > +2s the slow synthesis spans got 2 s slower
//! rss > 190GiB               the other's peak RSS itself is above 190 GiB
//! ```
//!
//! `METRIC OP VALUE`: the metric is a row of the table (`rss`, `peak`, `pinned` and `gpu` are
//! the alert rules' metrics of the same name, [`provetop_shared::metric`]; the others are the
//! comparison's own; per-mode and per-phase rows take the mode or phase in brackets); the
//! operators are the alert rules' (`>`, `>=`, `<`, `<=`); the value is a change in percent
//! of the baseline (`+5%`, `-10%`), a signed difference in the metric's unit (`+2GiB`, `-30s`),
//! or, unsigned, a bound on the other's value itself. A rule is checked against every other
//! session; it fails where it holds, and where the row has no value on either side (a gate
//! that cannot be checked does not pass).

use std::fmt;
use std::str::FromStr;

use provetop_shared::alerts::Op;
use provetop_shared::metric::Metric;
use provetop_shared::units::{parse_bytes, parse_duration_s};
use provetop_shared::BatchMode;

use super::summary::Unit;
use super::table::{fmt_diff, fmt_value, Cell, Comparison};
use crate::delta::{delta, fmt_pct};

/// What a metric's qualifier names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Qual {
    None,
    Mode,
    Phase,
}

/// Every metric a rule may name: name, what its brackets hold, unit.
const VOCABULARY: &[(&str, Qual, Unit)] = &[
    ("rss", Qual::None, Unit::Bytes),
    ("peak", Qual::None, Unit::Bytes),
    ("floor", Qual::None, Unit::Bytes),
    ("above_floor", Qual::None, Unit::Bytes),
    ("oom_window", Qual::None, Unit::Seconds),
    ("oom_window_per_proof", Qual::None, Unit::Seconds),
    ("pinned", Qual::None, Unit::Bytes),
    ("gpu", Qual::None, Unit::Bytes),
    ("proofs", Qual::None, Unit::Count),
    ("cycles", Qual::None, Unit::Count),
    ("s_per_proof", Qual::None, Unit::Seconds),
    ("s_per_sector", Qual::None, Unit::Seconds),
    ("sectors_per_hour", Qual::None, Unit::PerHour),
    ("proofs", Qual::Mode, Unit::Count),
    ("s_per_proof", Qual::Mode, Unit::Seconds),
    ("s_per_sector", Qual::Mode, Unit::Seconds),
    ("sectors_per_hour", Qual::Mode, Unit::PerHour),
    ("phase_median", Qual::Phase, Unit::Seconds),
    ("phase_p90", Qual::Phase, Unit::Seconds),
    ("phase_peak", Qual::Phase, Unit::Bytes),
    ("mem_limit", Qual::None, Unit::Bytes),
    ("oom_kills", Qual::None, Unit::Count),
    ("limit_events", Qual::None, Unit::Count),
    ("high_events", Qual::None, Unit::Count),
    ("psi_memory_some_max", Qual::None, Unit::Percent),
    ("psi_memory_full_max", Qual::None, Unit::Percent),
    ("psi_memory_some_mean", Qual::None, Unit::Percent),
];

/// The metric names, as an error lists them.
fn names() -> String {
    let mut v: Vec<String> = Vec::new();
    for (n, q, _) in VOCABULARY {
        let s = match q {
            Qual::None => n.to_string(),
            Qual::Mode => format!("{n}[MODE]"),
            Qual::Phase => format!("{n}[PHASE]"),
        };
        if !v.contains(&s) {
            v.push(s);
        }
    }
    v.join(", ")
}

/// What the value bounds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Bound {
    /// The change in percent of the baseline (`+5%`).
    Pct(f64),
    /// other − baseline, in the metric's unit (`+2GiB`).
    Diff(f64),
    /// The other's value (`190GiB`).
    Value(f64),
}

/// One `--fail-if` rule.
#[derive(Debug, Clone, PartialEq)]
pub struct FailIf {
    /// The row it reads (`s_per_sector[sps]`).
    pub key: String,
    pub unit: Unit,
    pub op: Op,
    pub bound: Bound,
    /// As written (trimmed).
    pub text: String,
}

impl fmt::Display for FailIf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

const GRAMMAR: &str = "METRIC OP VALUE, e.g. 'peak > +5%' or 's_per_sector > +3%'";

impl FromStr for FailIf {
    type Err = String;

    fn from_str(s: &str) -> Result<FailIf, String> {
        let text = s.trim();
        let err = |d: String| format!("bad --fail-if rule {text:?}: {d}");
        if text.is_empty() {
            return Err(err(format!("empty rule (want {GRAMMAR})")));
        }
        let mend = text
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(text.len());
        let name = text[..mend].to_ascii_lowercase();
        let mut rest = &text[mend..];
        let mut qual: Option<String> = None;
        if let Some(r) = rest.strip_prefix('[') {
            let Some(close) = r.find(']') else {
                return Err(err(format!("no ']' after {:?}", &text[..mend + 1])));
            };
            qual = Some(r[..close].trim().to_string());
            rest = &r[close + 1..];
        }
        if name.is_empty() {
            let tok = text.split_whitespace().next().unwrap_or("");
            return Err(err(format!(
                "expected a metric, found {tok:?} (want {GRAMMAR})"
            )));
        }
        let wanted = if qual.is_some() {
            [Qual::Mode, Qual::Phase]
        } else {
            [Qual::None; 2]
        };
        let Some(&(_, q, unit)) = VOCABULARY
            .iter()
            .find(|(n, q, _)| *n == name && wanted.contains(q))
        else {
            if VOCABULARY.iter().any(|(n, _, _)| *n == name) {
                return Err(err(match qual {
                    Some(_) => format!("{name} takes no [..] (want one of {})", names()),
                    None => format!("{name} needs a mode or phase in brackets, e.g. {name}[sps]"),
                }));
            }
            let alert_only = Metric::parse(&name).is_some();
            return Err(err(if alert_only {
                format!(
                    "{name} is an alert metric with no value for a whole session (compare knows {})",
                    names()
                )
            } else {
                format!(
                    "unknown metric {:?} (want one of {}; the alert rules' {} are the same words)",
                    &text[..mend],
                    names(),
                    [Metric::Rss, Metric::Peak, Metric::Pinned, Metric::Gpu]
                        .iter()
                        .map(|m| m.name())
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            }));
        };
        let key = match (q, &qual) {
            (Qual::None, _) => name.clone(),
            (Qual::Mode, Some(m)) => {
                let mode: BatchMode = m
                    .parse()
                    .map_err(|e: String| err(format!("bad mode {m:?} in {name}[..]: {e}")))?;
                format!("{name}[{mode}]")
            }
            (Qual::Phase, Some(p)) if !p.is_empty() => format!("{name}[{p}]"),
            _ => {
                return Err(err(format!(
                    "{name}[..] needs a phase, e.g. {name}[synthesis]"
                )))
            }
        };
        let (op, v) = Op::parse_leading(rest.trim_start(), &key).map_err(err)?;
        let v = v.trim();
        if v.is_empty() {
            return Err(err(format!("missing value after {:?}", op.as_str())));
        }
        let (sign, body) = match v.as_bytes()[0] {
            b'+' => (Some(1.0), v[1..].trim()),
            b'-' => (Some(-1.0), v[1..].trim()),
            _ => (None, v),
        };
        // A percent figure (pressure) takes `10%` as its own unit, as alert rules do; a
        // change of it is in points (`+5`).
        let relative = match unit {
            Unit::Percent => None,
            _ => body.strip_suffix('%'),
        };
        let bound = if let Some(p) = relative {
            let x: f64 = p
                .trim()
                .parse()
                .map_err(|_| err(format!("bad percent {v:?}")))?;
            if !x.is_finite() {
                return Err(err(format!("bad percent {v:?}")));
            }
            Bound::Pct(sign.unwrap_or(1.0) * x)
        } else {
            let x = match unit {
                Unit::Bytes => parse_bytes(body).map_err(err)? as f64,
                Unit::Seconds => parse_duration_s(body).map_err(err)?,
                Unit::Count | Unit::PerHour | Unit::Percent => {
                    let b = body.strip_suffix("/h").unwrap_or(body);
                    let b = b.strip_suffix('%').unwrap_or(b).trim();
                    b.parse::<f64>()
                        .ok()
                        .filter(|x| x.is_finite())
                        .ok_or_else(|| err(format!("bad number {v:?}")))?
                }
            };
            match sign {
                Some(s) => Bound::Diff(s * x),
                None => Bound::Value(x),
            }
        };
        Ok(FailIf {
            key,
            unit,
            op,
            bound,
            text: text.to_string(),
        })
    }
}

/// A rule checked against one other session.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    pub rule: String,
    /// The other session's file.
    pub other: String,
    /// Whether the other session is within the rule.
    pub ok: bool,
    /// The numbers, in words.
    pub text: String,
}

/// Check every rule against every other session.
pub fn check(rules: &[FailIf], c: &Comparison) -> Vec<Verdict> {
    let mut out = Vec::new();
    for rule in rules {
        for (i, other) in c.others.iter().enumerate() {
            let (ok, text) = match c.row(&rule.key) {
                None => {
                    let mut known: Vec<&str> = c
                        .rows
                        .iter()
                        .filter(|r| r.key.starts_with(rule.key.split('[').next().unwrap_or("")))
                        .map(|r| r.key.as_str())
                        .collect();
                    known.truncate(12);
                    (
                        false,
                        format!(
                            "cannot check: no {} row in either session{}",
                            rule.key,
                            if known.is_empty() {
                                String::new()
                            } else {
                                format!(" (there are {})", known.join(", "))
                            }
                        ),
                    )
                }
                Some(row) => match (&row.baseline, &row.others[i]) {
                    (Cell::Value(b), Cell::Value(o)) => {
                        let d = delta(*b, *o);
                        let (x, bound) = match rule.bound {
                            Bound::Pct(p) => (d.pct(), p),
                            Bound::Diff(x) => (Some(d.diff), x),
                            Bound::Value(x) => (Some(*o), x),
                        };
                        let holds = match x {
                            Some(x) => rule.op.holds(x, bound),
                            // From 0 to something: an infinite rise, a fall of nothing.
                            None => rule.op.holds(d.diff.signum() * f64::INFINITY, bound),
                        };
                        (
                            !holds,
                            format!(
                                "{} {} against {} in {} ({}, {})",
                                rule.key,
                                fmt_value(row.unit, *o),
                                fmt_value(row.unit, *b),
                                c.baseline.name,
                                fmt_diff(row.unit, d.diff),
                                fmt_pct(&d)
                            ),
                        )
                    }
                    (Cell::Missing(w), _) => (
                        false,
                        format!("cannot check: {} in the baseline: {w}", rule.key),
                    ),
                    (_, Cell::Missing(w)) => (false, format!("cannot check: {}: {w}", rule.key)),
                },
            };
            out.push(Verdict {
                rule: rule.text.clone(),
                other: other.name.clone(),
                ok,
                text,
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use provetop_shared::units::GIB;

    fn rule(s: &str) -> FailIf {
        s.parse().unwrap()
    }

    #[test]
    fn rules_parse_in_the_alert_rules_words() {
        let r = rule("peak > +5%");
        assert_eq!(
            (r.key.as_str(), r.op, r.bound),
            ("peak", Op::Gt, Bound::Pct(5.0))
        );
        let r = rule("s_per_sector >= 3%");
        assert_eq!(r.bound, Bound::Pct(3.0));
        let r = rule("sectors_per_hour < -10%");
        assert_eq!((r.op, r.bound), (Op::Lt, Bound::Pct(-10.0)));
        let r = rule("above_floor > +512MiB");
        assert_eq!(r.bound, Bound::Diff(512.0 * 1024.0 * 1024.0));
        let r = rule("rss<=190GiB");
        assert_eq!(r.bound, Bound::Value((190 * GIB) as f64));
        let r = rule("phase_p90[synthesis] > +2s");
        assert_eq!(
            (r.key.as_str(), r.bound),
            ("phase_p90[synthesis]", Bound::Diff(2.0))
        );
        assert_eq!(rule("s_per_sector[ sps ] > 1%").key, "s_per_sector[sps]");
        assert_eq!(rule("proofs < 10").bound, Bound::Value(10.0));
    }

    #[test]
    fn the_shared_metrics_are_spelled_as_the_metric_table_spells_them() {
        for m in [Metric::Rss, Metric::Peak, Metric::Pinned, Metric::Gpu] {
            assert!(VOCABULARY
                .iter()
                .any(|(n, _, u)| *n == m.name() && *u == Unit::Bytes));
        }
    }

    #[test]
    fn bad_rules_name_what_is_wrong() {
        let e = |s: &str| s.parse::<FailIf>().unwrap_err();
        assert!(
            e("pek > +5%").contains("unknown metric \"pek\""),
            "{}",
            e("pek > +5%")
        );
        assert!(e("mem_available > 1%").contains("alert metric"));
        assert!(e("peak >> 5%").contains("unknown operator \">>\""));
        assert!(e("peak 5%").contains("expected an operator"));
        assert!(e("peak >").contains("missing value"));
        assert!(e("s_per_sector[warp] > 1%").contains("bad mode \"warp\""));
        assert!(e("peak[sps] > 1%").contains("takes no"));
        assert!(e("phase_p90 > 1s").contains("needs a mode or phase"));
        assert!(e("oom_window > 5 fortnights").contains("fortnights"));
        assert!(e("").contains("empty rule"));
    }
}
