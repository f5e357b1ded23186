//! Alerts: rules, the config file, the engine (with its memory forecast), and the alert hook.

mod config;
mod engine;
mod hook;
mod rule;

pub use config::{default_config_path, load_config, parse_config, AlertConfig, FileConfig};
pub use engine::AlertEngine;
pub use hook::{run_hook, spawn_hook, HOOK_TIMEOUT};
pub use provetop_shared::forecast::Forecast;
pub use rule::{default_rules, Metric, Op, Rule, RuleError, Threshold, METRICS};
