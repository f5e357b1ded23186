//! The alert a rule's transition makes: its value and threshold in the metric's unit (or
//! "unknown"), which GPU or proof it was of, and the one-line message (a cleared alert whose
//! reading is gone says "no longer measured", never a value of 0).

use crate::metric::Unit;
use crate::{Alert, AlertState};

use super::super::rule::{Op, Rule};

pub(super) fn alert(
    rule: &Rule,
    state: AlertState,
    value: f64,
    threshold: f64,
    what: Option<String>,
) -> Alert {
    let m = rule.metric;
    let fmt = |v: f64| {
        if v.is_finite() {
            m.fmt_value(v)
        } else {
            "unknown".to_string()
        }
    };
    let subject = match &what {
        Some(w) => format!("{} ({w})", rule.metric_label()),
        None => rule.metric_label(),
    };
    let message = match state {
        AlertState::Firing => {
            let (v, t) = apart(m.def().unit, value, threshold, rule.op)
                .unwrap_or_else(|| (fmt(value), fmt(threshold)));
            let mut s = format!("{subject} {v} {} {t}", rule.op.as_str());
            if rule.hold_s > 0.0 {
                s.push_str(&format!(" for {}", crate::units::fmt_secs(rule.hold_s)));
            }
            s
        }
        // Unknown when what it measured is gone: the child exited, or no proof with a
        // forecast is running any more.
        AlertState::Cleared if !value.is_finite() => {
            format!("cleared: {subject}: no longer measured")
        }
        AlertState::Cleared => format!("cleared: {subject} {}", fmt(value)),
    };
    Alert {
        rule: rule.text.clone(),
        level: rule.level,
        state,
        metric: rule.metric_label(),
        value,
        threshold,
        message,
    }
}

/// A firing alert's value and threshold written so that the comparison reads true, for a
/// strict one whose usual rendering shows them equal ("2.0s > 2.0s"): both plainly in the
/// unit's base, with the fewest decimals that tell them apart ("2.013s > 2.000s"). `None`
/// when the usual rendering already does, or when nothing readable would.
fn apart(unit: Unit, value: f64, threshold: f64, op: Op) -> Option<(String, String)> {
    if !matches!(op, Op::Gt | Op::Lt) || !value.is_finite() || !threshold.is_finite() {
        return None;
    }
    if unit.fmt(value) != unit.fmt(threshold) {
        return None;
    }
    let suffix = match unit {
        Unit::Bytes => " B",
        Unit::Seconds => "s",
        Unit::Cores => " cores",
        Unit::Percent => "%",
        Unit::Celsius => " °C",
        Unit::PerSecond => "/s",
        Unit::BytesPerSecond => " B/s",
        Unit::Count => "",
    };
    (0..=9).find_map(|d| {
        let (v, t) = (format!("{value:.d$}"), format!("{threshold:.d$}"));
        (v != t).then(|| (format!("{v}{suffix}"), format!("{t}{suffix}")))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn firing(rule: &str, value: f64) -> String {
        let r: Rule = rule.parse().unwrap();
        let super::super::super::rule::Threshold::Abs(t) = r.threshold else {
            panic!("{rule}: not an absolute threshold")
        };
        alert(&r, AlertState::Firing, value, t, None).message
    }

    #[test]
    fn a_strict_comparison_is_shown_with_the_digits_that_make_it_true() {
        assert_eq!(firing("event_age > 2s", 2.004), "event_age 2.004s > 2.000s");
        assert_eq!(firing("event_age > 2s", 2.04), "event_age 2.04s > 2.00s");
        assert_eq!(
            firing("rss > 1GiB", 1_073_741_825.0),
            "rss 1073741825 B > 1073741824 B"
        );
        assert_eq!(
            firing("gpu_util[0] < 50%", 49.8),
            "gpu_util[0] 49.8% < 50.0%"
        );
        assert_eq!(
            firing("cpu > 12 cores for 10s", 12.04),
            "cpu 12.04 cores > 12.00 cores for 10.0s"
        );
    }

    #[test]
    fn values_that_already_read_apart_or_may_be_equal_keep_their_usual_form() {
        assert_eq!(firing("event_age > 2s", 3.5), "event_age 3.5s > 2.0s");
        assert_eq!(firing("event_age >= 2s", 2.0), "event_age 2.0s >= 2.0s");
        assert_eq!(firing("gpu_util[1] > 50%", 86.0), "gpu_util[1] 86% > 50%");
    }
}
