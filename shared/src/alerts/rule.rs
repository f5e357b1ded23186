//! Alert rules: `[LEVEL:] METRIC OP VALUE [for DURATION]`.
//!
//! ```text
//! rss > 180GiB for 5s
//! crit: shmem > 40GiB
//! warn: phase_duration > 30s
//! info: mem_available < 2GiB for 10s
//! crit: event_age > 5m    (no event from the prover for 5 minutes: hung?)
//! rss > 90%              (of what it can reach before the limit that binds)
//! psi_memory_full > 10%  (the tree's cgroup, or the host, stalled on memory 10 % of the time)
//! predicted_free < 2GiB  (the running proof is expected to leave less than 2 GiB free)
//! cpu > 12 for 10s       (cores busy in the tree; cpu > 75% is of the host's cores online)
//! gpu_util < 10 for 30s  (percent; the busiest GPU, so: every GPU below 10 %)
//! gpu_temp > 85          (°C, the hottest GPU; gpu_temp[1] > 85 is GPU 1's)
//! gpu_mem > 75GiB        (memory used on a GPU by every process; gpu_mem > 90% of its total)
//! major_faults > 100/s   (the tree's major page faults per second: swapping)
//! ```
//!
//! Values are in the metric's unit (`shared/src/metric.rs`): bytes, durations, cores, percent,
//! °C, per second; the unit may be left out. `N%` is a percent of the metric's limit (memory:
//! what the tree can reach, its RSS plus the room before the limit that binds, judged at each
//! sample: `crate::limit`; `cpu`: the host's cores; `gpu_mem`: each GPU's total); for
//! `gpu_util` and the pressure metrics it is the unit itself. The per-GPU metrics (`gpu_util`, `gpu_mem`,
//! `gpu_temp`) take a device index, `gpu_mem[1]`; without one they are the highest value over
//! the GPUs (for `gpu_mem > 90%`, the GPU fullest for its size).
//!
//! `event_age` counts only while the prover should be working (its last `state` is
//! `proving`, or a proof it started has not finished): an idle or paused prover is not hung.
//!
//! A rule's changes are recorded and shown every time; the alert hook (`--on-alert`) is rate
//! limited per rule: at most one hook runs for a rule at a time, and it starts at most once
//! every 5 s (`HookLimits::min_interval`). A change that arrives meanwhile waits; when the
//! hook may run again it is told the latest state (a flip and back is not repeated). At most
//! 4 hooks run at once overall. Changes that never reached the hook are counted in a warning
//! (at most one every 10 s, and one at the end).

use std::fmt;
use std::str::FromStr;

use crate::metric::{Limit, Unit};
use crate::units::parse_duration_s;
use crate::AlertLevel;

pub use crate::metric::{Metric, TABLE as METRICS};

/// Comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// `>`
    Gt,
    /// `>=`
    Ge,
    /// `<`
    Lt,
    /// `<=`
    Le,
}

impl Op {
    /// Whether `v OP t` holds.
    pub fn holds(self, v: f64, t: f64) -> bool {
        match self {
            Op::Gt => v > t,
            Op::Ge => v >= t,
            Op::Lt => v < t,
            Op::Le => v <= t,
        }
    }

    /// The operator as written.
    pub fn as_str(self) -> &'static str {
        match self {
            Op::Gt => ">",
            Op::Ge => ">=",
            Op::Lt => "<",
            Op::Le => "<=",
        }
    }

    /// The operator `s` starts with and the text after it, for every rule grammar that
    /// writes `METRIC OP VALUE` (these rules, `compare --fail-if`). `after` is the metric as
    /// the error names it; the error is the detail, without the rule.
    pub fn parse_leading<'a>(s: &'a str, after: &str) -> Result<(Op, &'a str), String> {
        let end = s
            .find(|c: char| !matches!(c, '<' | '>' | '=' | '!'))
            .unwrap_or(s.len());
        let op = match &s[..end] {
            ">" => Op::Gt,
            ">=" => Op::Ge,
            "<" => Op::Lt,
            "<=" => Op::Le,
            "" => {
                let tok = s.split_whitespace().next().unwrap_or("end of rule");
                return Err(format!(
                    "expected an operator after {after:?}, found {tok:?} (want >, >=, < or <=)"
                ));
            }
            o => return Err(format!("unknown operator {o:?} (want >, >=, < or <=)")),
        };
        Ok((op, &s[end..]))
    }
}

/// The value a metric is compared with.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Threshold {
    /// In the metric's unit (bytes, seconds, cores, percent, °C, per second).
    Abs(f64),
    /// Percent of the metric's [`Limit`] (the memory limit of each sample, the host's cores,
    /// each GPU's memory).
    PctOfLimit(f64),
}

/// One alert rule.
#[derive(Debug, Clone, PartialEq)]
pub struct Rule {
    /// Level (default warn).
    pub level: AlertLevel,
    pub metric: Metric,
    /// The GPU a per-GPU metric names (`gpu_mem[1]`); None: the highest over the GPUs.
    pub gpu: Option<u32>,
    pub op: Op,
    pub threshold: Threshold,
    /// How long the condition must hold before the alert fires, seconds.
    pub hold_s: f64,
    /// The rule as written (trimmed).
    pub text: String,
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// A rule that does not parse: the rule text and what is wrong, naming the bad token.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("bad alert rule {rule:?}: {detail}")]
pub struct RuleError {
    pub rule: String,
    /// What is wrong.
    pub detail: String,
}

const GRAMMAR: &str = "[info:|warn:|crit:] METRIC[[GPU]] OP VALUE [for DURATION]";

impl FromStr for Rule {
    type Err = RuleError;

    fn from_str(s: &str) -> Result<Rule, RuleError> {
        let text = s.trim();
        let err = |detail: String| RuleError {
            rule: text.to_string(),
            detail,
        };
        if text.is_empty() {
            return Err(err(format!("empty rule (want {GRAMMAR})")));
        }
        let mut rest = text;
        let mut level = AlertLevel::Warn;
        // Level prefix: "crit:" etc. (a metric never contains ':').
        if let Some((head, tail)) = rest.split_once(':') {
            let head_t = head.trim();
            if head_t.chars().all(|c| c.is_ascii_alphabetic()) && !head_t.is_empty() {
                level = match head_t.to_ascii_lowercase().as_str() {
                    "info" => AlertLevel::Info,
                    "warn" | "warning" => AlertLevel::Warn,
                    "crit" | "critical" => AlertLevel::Crit,
                    _ => {
                        return Err(err(format!(
                            "unknown level {head_t:?} (want info, warn or crit)"
                        )))
                    }
                };
                rest = tail.trim_start();
            }
        }
        // Metric: a run of [a-z_].
        let mend = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        let mname = &rest[..mend];
        if mname.is_empty() {
            let tok = rest.split_whitespace().next().unwrap_or("");
            return Err(err(format!(
                "expected a metric, found {tok:?} (want {GRAMMAR})"
            )));
        }
        let metric = Metric::parse(&mname.to_ascii_lowercase()).ok_or_else(|| {
            err(format!(
                "unknown metric {mname:?} (want one of {})",
                METRICS
                    .iter()
                    .map(|d| d.name)
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        })?;
        rest = &rest[mend..];
        // A GPU index: `gpu_mem[1]`, for the per-GPU metrics only.
        let mut gpu = None;
        if let Some(after) = rest.strip_prefix('[') {
            let close = after
                .find(']')
                .ok_or_else(|| err(format!("missing \"]\" after {mname}[")))?;
            let idx = after[..close].trim();
            if !metric.per_gpu() {
                return Err(err(format!(
                    "{mname} is not per GPU (a GPU index takes gpu_util, gpu_mem or gpu_temp)"
                )));
            }
            gpu = Some(idx.parse::<u32>().map_err(|_| {
                err(format!(
                    "bad GPU index {idx:?} (want a device index such as 0)"
                ))
            })?);
            rest = &after[close + 1..];
        }
        rest = rest.trim_start();
        let (op, after_op) = Op::parse_leading(rest, mname).map_err(err)?;
        rest = after_op.trim_start();
        // Value, then an optional "for DURATION".
        let (vtok, hold) = match find_word(rest, "for") {
            Some(i) => (rest[..i].trim(), Some(rest[i + 3..].trim())),
            None => (rest.trim(), None),
        };
        if vtok.is_empty() {
            return Err(err(format!("missing value after {:?}", op.as_str())));
        }
        let unit = metric.unit();
        let threshold = match vtok.strip_suffix('%') {
            // A percent metric's own unit.
            Some(_) if unit == Unit::Percent => Threshold::Abs(unit.parse(vtok).map_err(err)?),
            Some(p) => {
                if metric.def().limit.is_none() {
                    return Err(err(format!(
                        "percent value {vtok:?} makes no sense for {mname} (want {})",
                        unit.example()
                    )));
                }
                let v: f64 = p
                    .trim()
                    .parse()
                    .map_err(|_| err(format!("bad percent {vtok:?}")))?;
                if !(v.is_finite() && v >= 0.0) {
                    return Err(err(format!("bad percent {vtok:?}")));
                }
                Threshold::PctOfLimit(v)
            }
            None => Threshold::Abs(unit.parse(vtok).map_err(err)?),
        };
        let hold_s = match hold {
            None => 0.0,
            Some("") => return Err(err("missing duration after \"for\"".into())),
            Some(d) => {
                let v = parse_duration_s(d).map_err(err)?;
                if !(v.is_finite() && v >= 0.0) {
                    return Err(err(format!("bad duration {d:?}")));
                }
                v
            }
        };
        Ok(Rule {
            level,
            metric,
            gpu,
            op,
            threshold,
            hold_s,
            text: text.to_string(),
        })
    }
}

/// Byte index of `word` standing alone (surrounded by whitespace or the ends) in `s`.
fn find_word(s: &str, word: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(i) = s[from..].find(word) {
        let at = from + i;
        let before = s[..at]
            .chars()
            .next_back()
            .is_none_or(|c| c.is_whitespace());
        let after = s[at + word.len()..]
            .chars()
            .next()
            .is_none_or(|c| c.is_whitespace());
        if before && after {
            return Some(at);
        }
        from = at + word.len();
    }
    None
}

impl Rule {
    /// The metric as the rule names it: `rss`, `gpu_mem[1]`.
    pub fn metric_label(&self) -> String {
        match self.gpu {
            Some(i) => format!("{}[{i}]", self.metric.name()),
            None => self.metric.name().to_string(),
        }
    }

    /// Whether its threshold is a percent of a limit.
    pub fn is_relative(&self) -> bool {
        matches!(self.threshold, Threshold::PctOfLimit(_))
    }

    /// What a percent threshold of this rule is a percent of.
    pub fn limit(&self) -> Option<Limit> {
        self.metric.def().limit
    }

    /// The threshold against the given limit (the metric's [`Limit`]: bytes, cores); `None`
    /// when the rule is relative and no limit is known.
    pub fn threshold_for(&self, limit: Option<u64>) -> Option<f64> {
        match self.threshold {
            Threshold::Abs(v) => Some(v),
            Threshold::PctOfLimit(p) => limit.map(|l| l as f64 * p / 100.0),
        }
    }
}

/// The default rules: RSS above 90 % of what it can reach before the limit that binds (the
/// tree's cgroup limits up the hierarchy, the host's MemAvailable: judged at every sample,
/// against the limits then); and the proof running is predicted to run out of memory
/// (`predicted_free < 0`).
pub fn default_rules() -> Vec<Rule> {
    vec![
        Rule {
            level: AlertLevel::Warn,
            metric: Metric::Rss,
            gpu: None,
            op: Op::Gt,
            threshold: Threshold::PctOfLimit(90.0),
            hold_s: 0.0,
            text: "rss > 90% (of what it can reach before the limit that binds)".into(),
        },
        Rule {
            level: AlertLevel::Warn,
            metric: Metric::PredictedFree,
            gpu: None,
            op: Op::Lt,
            threshold: Threshold::Abs(0.0),
            hold_s: 0.0,
            text: "predicted_free < 0 (the proof running is expected to run out of memory)".into(),
        },
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::GIB;

    #[test]
    fn parses_examples() {
        let r: Rule = "rss > 180GiB for 5s".parse().unwrap();
        assert_eq!(r.metric, Metric::Rss);
        assert_eq!(r.op, Op::Gt);
        assert_eq!(r.threshold, Threshold::Abs((180 * GIB) as f64));
        assert_eq!(r.hold_s, 5.0);
        assert_eq!(r.level, AlertLevel::Warn);

        let r: Rule = "crit: shmem > 40GiB".parse().unwrap();
        assert_eq!(r.level, AlertLevel::Crit);
        assert_eq!(r.hold_s, 0.0);

        let r: Rule = "warn: phase_duration > 30s".parse().unwrap();
        assert_eq!(r.metric, Metric::PhaseDuration);
        assert_eq!(r.threshold, Threshold::Abs(30.0));

        let r: Rule = "info:mem_available<=1.5 GiB for 250ms".parse().unwrap();
        assert_eq!(r.op, Op::Le);
        assert_eq!(r.level, AlertLevel::Info);
        assert_eq!(r.threshold, Threshold::Abs(1.5 * GIB as f64));
        assert_eq!(r.hold_s, 0.25);

        let r: Rule = "rss >= 90%".parse().unwrap();
        assert_eq!(r.threshold, Threshold::PctOfLimit(90.0));
        assert_eq!(r.threshold_for(Some(1000)), Some(900.0));
        assert_eq!(r.to_string(), "rss >= 90%");
    }

    #[test]
    fn errors_name_the_bad_token() {
        let e = |s: &str| s.parse::<Rule>().unwrap_err().to_string();
        assert!(
            e("rsss > 1GiB").contains("unknown metric \"rsss\""),
            "{}",
            e("rsss > 1GiB")
        );
        assert!(e("rss >> 1GiB").contains("unknown operator \">>\""));
        assert!(e("rss = 1GiB").contains("unknown operator \"=\""));
        assert!(e("rss 1GiB").contains("expected an operator after \"rss\", found \"1GiB\""));
        assert!(e("rss > 1GB for").contains("missing duration after \"for\""));
        assert!(e("rss > 12 parsecs").contains("unknown unit \"parsecs\""));
        assert!(e("rss > 1GiB for 5 fortnights").contains("\"fortnights\""));
        assert!(e("fatal: rss > 1GiB").contains("unknown level \"fatal\""));
        assert!(e("rss >").contains("missing value"));
        assert!(e("").contains("empty rule"));
        assert!(e("phase_duration > 50%").contains("percent"));
        assert!(e("> 5").contains("expected a metric, found \">\""));
    }

    #[test]
    fn the_default_rss_rule_is_a_percent_of_the_limit_that_binds_judged_per_sample() {
        let r = &default_rules()[0];
        assert_eq!(r.metric, Metric::Rss);
        assert_eq!(r.threshold, Threshold::PctOfLimit(90.0));
        assert_eq!(r.limit(), Some(Limit::Memory));
        assert_eq!(r.threshold_for(Some(10 * GIB)), Some(9.0 * GIB as f64));
    }

    #[test]
    fn the_utilisation_metrics_parse_in_their_own_units() {
        let r: Rule = "cpu > 12 for 10s".parse().unwrap();
        assert_eq!(
            (r.metric, r.threshold, r.hold_s),
            (Metric::Cpu, Threshold::Abs(12.0), 10.0)
        );
        let r: Rule = "cpu > 12.5 cores".parse().unwrap();
        assert_eq!(r.threshold, Threshold::Abs(12.5));
        let r: Rule = "cpu > 75%".parse().unwrap();
        assert_eq!(r.threshold, Threshold::PctOfLimit(75.0));
        assert_eq!(r.limit(), Some(Limit::HostCores));
        let r: Rule = "gpu_util < 10 for 30s".parse().unwrap();
        assert_eq!((r.metric, r.op, r.gpu), (Metric::GpuUtil, Op::Lt, None));
        assert_eq!(r.threshold, Threshold::Abs(10.0));
        // For a percent metric, % is its unit, not a percent of a limit.
        let r: Rule = "gpu_util < 10%".parse().unwrap();
        assert_eq!(r.threshold, Threshold::Abs(10.0));
        let r: Rule = "crit: gpu_temp > 85".parse().unwrap();
        assert_eq!(
            (r.metric, r.threshold),
            (Metric::GpuTemp, Threshold::Abs(85.0))
        );
        let r: Rule = "gpu_temp[1] > 85C".parse().unwrap();
        assert_eq!(r.gpu, Some(1));
        assert_eq!(r.metric_label(), "gpu_temp[1]");
        let r: Rule = "gpu_mem > 75GiB".parse().unwrap();
        assert_eq!(r.threshold, Threshold::Abs((75 * GIB) as f64));
        let r: Rule = "gpu_mem[0] >= 90%".parse().unwrap();
        assert_eq!((r.gpu, r.threshold), (Some(0), Threshold::PctOfLimit(90.0)));
        assert_eq!(r.limit(), Some(Limit::GpuTotal));
        let r: Rule = "major_faults > 100/s for 5s".parse().unwrap();
        assert_eq!(r.threshold, Threshold::Abs(100.0));
        let r: Rule = "read_bps > 1GiB/s".parse().unwrap();
        assert_eq!(r.threshold, Threshold::Abs(GIB as f64));
        let r: Rule = "swap > 1GiB".parse().unwrap();
        assert_eq!(r.metric, Metric::Swap);
    }

    #[test]
    fn utilisation_rules_with_a_wrong_unit_or_index_name_the_bad_token() {
        let e = |s: &str| s.parse::<Rule>().unwrap_err().to_string();
        assert!(
            e("cpu > 12GiB").contains("unknown unit \"GiB\""),
            "{}",
            e("cpu > 12GiB")
        );
        assert!(e("gpu_temp > 50%").contains("makes no sense for gpu_temp"));
        assert!(e("gpu_util > 150").contains("above 100"));
        assert!(e("rss[0] > 1GiB").contains("rss is not per GPU"));
        assert!(e("gpu_mem[x] > 1GiB").contains("bad GPU index \"x\""));
        assert!(e("gpu_mem[0 > 1GiB").contains("missing \"]\""));
        assert!(e("threads > 1.5").contains("whole number"));
        assert!(e("major_faults > 5/h").contains("unknown unit \"/h\""));
    }
}
