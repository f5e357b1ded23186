//! The alert a rule's transition makes: its value and threshold in the metric's unit (or
//! "unknown"), which GPU or proof it was of, and the one-line message (a cleared alert whose
//! reading is gone says "no longer measured", never a value of 0).

use crate::{Alert, AlertState};

use super::super::rule::Rule;

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
            let mut s = format!(
                "{subject} {} {} {}",
                fmt(value),
                rule.op.as_str(),
                fmt(threshold)
            );
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
