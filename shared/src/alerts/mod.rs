//! Alerts as a pure fold over [`Record`](crate::Record)s: the threshold [`rule`]s and the
//! [`engine`] that turns a record stream into firing/cleared [`Alert`](crate::Alert)s (with
//! its memory [`Forecast`](crate::forecast::Forecast)).
//!
//! Nothing here reads a file or runs a process: the config file is the screen crate's
//! settings, the alert hook is `provetop-collect`'s, and the same engine runs live (on the
//! records the collectors produce) and could run over a recorded session.

mod engine;
mod rule;

pub use engine::AlertEngine;
pub use rule::{default_rules, Metric, Op, Rule, RuleError, Threshold, METRICS};
