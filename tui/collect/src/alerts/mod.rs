//! Alerts: rules, the config file, the engine (with its memory forecast), and the alert hook.

mod config;
mod engine;
mod hook;
mod rule;

pub use config::{load_config, parse_config, parse_listen_addr, FileConfig};
pub use engine::AlertEngine;
pub use hook::{inert, spawn_hook, HookLimits, HookRunner, CUT_MARKER, ENV_MAX, HOOK_TIMEOUT};
pub use provetop_shared::forecast::Forecast;
pub use rule::{default_rules, Metric, Op, Rule, RuleError, Threshold, METRICS};
