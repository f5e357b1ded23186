//! The TOML config file.
//!
//! ```toml
//! # $XDG_CONFIG_HOME/provetop/config.toml (or ~/.config/provetop/config.toml, or --config)
//! hz = 20                 # samples per second
//! gpu_hz = 2              # NVML readings per second (0 = off)
//! smaps_duty = 0.005      # share of a core the pinned-memory (smaps) reader may use
//! rules = ["rss > 180GiB for 5s", "crit: shmem > 40GiB", "warn: phase_duration > 30m"]
//! thresholds = ["10GiB", "50GiB", "100GiB", "180GiB"]   # threshold lines on the chart
//! on_alert = ["/usr/local/bin/page-oncall", "--team", "provers"]   # argv, no shell
//! default_rule = true     # keep the built-in rules: RSS > 90 % of the limit, predicted_free < 0
//! ```
//! Unknown keys are errors (a typo must not silently disable an alert).

use std::path::{Path, PathBuf};

use anyhow::Context;
use provetop_shared::units::parse_bytes;
use serde::Deserialize;

use super::rule::Rule;

/// The alerting part of the configuration.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AlertConfig {
    /// Rules.
    pub rules: Vec<Rule>,
    /// Program (argv, no shell) run on every alert change.
    pub on_alert: Option<Vec<String>>,
}

/// Everything the config file can set; `None`/empty means "not set, use the default".
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FileConfig {
    /// Alert rules.
    pub rules: Vec<Rule>,
    /// Alert hook argv.
    pub on_alert: Option<Vec<String>>,
    /// Sample rate, Hz.
    pub hz: Option<f64>,
    /// GPU rate, Hz.
    pub gpu_hz: Option<f64>,
    /// smaps duty (share of one core).
    pub smaps_duty: Option<f64>,
    /// Threshold lines for the chart and classifier, bytes.
    pub thresholds: Vec<u64>,
    /// Whether the built-in default rules apply (default true).
    pub default_rule: Option<bool>,
    /// The file it was read from (None when no file was found).
    pub source: Option<PathBuf>,
}

impl FileConfig {
    /// The alerting part.
    pub fn alert_config(&self) -> AlertConfig {
        AlertConfig {
            rules: self.rules.clone(),
            on_alert: self.on_alert.clone(),
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Raw {
    #[serde(default)]
    rules: Vec<String>,
    #[serde(default)]
    on_alert: Option<OneOrMany>,
    hz: Option<f64>,
    gpu_hz: Option<f64>,
    smaps_duty: Option<f64>,
    #[serde(default)]
    thresholds: Vec<SizeValue>,
    default_rule: Option<bool>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum OneOrMany {
    One(String),
    Many(Vec<String>),
}

#[derive(Deserialize)]
#[serde(untagged)]
enum SizeValue {
    Bytes(u64),
    Text(String),
}

/// `$XDG_CONFIG_HOME/provetop/config.toml`, else `$HOME/.config/provetop/config.toml`.
pub fn default_config_path() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CONFIG_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|v| !v.is_empty())
                .map(|h| PathBuf::from(h).join(".config"))
        })?;
    Some(base.join("provetop").join("config.toml"))
}

/// Load the config: `path` when given (it must exist), else the XDG default when present,
/// else an empty config.
pub fn load_config(path: Option<&Path>) -> anyhow::Result<FileConfig> {
    let (path, must_exist) = match path {
        Some(p) => (p.to_path_buf(), true),
        None => match default_config_path() {
            Some(p) => (p, false),
            None => return Ok(FileConfig::default()),
        },
    };
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if !must_exist && e.kind() == std::io::ErrorKind::NotFound => {
            return Ok(FileConfig::default())
        }
        Err(e) => return Err(e).with_context(|| format!("cannot read config {}", path.display())),
    };
    let mut cfg = parse_config(&text).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    cfg.source = Some(path);
    Ok(cfg)
}

/// Parse config text. Errors are one line and name the key or rule at fault.
pub fn parse_config(text: &str) -> Result<FileConfig, String> {
    let raw: Raw = toml::from_str(text).map_err(|e| {
        // toml's messages span several lines (source excerpt); keep the summary and place.
        let msg = e.message().to_string();
        match e.span() {
            Some(sp) => {
                let line = text[..sp.start.min(text.len())].matches('\n').count() + 1;
                format!("line {line}: {msg}")
            }
            None => msg,
        }
    })?;
    let mut rules = Vec::with_capacity(raw.rules.len());
    for (i, r) in raw.rules.iter().enumerate() {
        rules.push(r.parse::<Rule>().map_err(|e| format!("rules[{i}]: {e}"))?);
    }
    let on_alert = match raw.on_alert {
        None => None,
        // A single string is split on whitespace, never given to a shell.
        Some(OneOrMany::One(s)) => Some(s.split_whitespace().map(str::to_string).collect()),
        Some(OneOrMany::Many(v)) => Some(v),
    };
    if let Some(a) = &on_alert {
        if a.is_empty() || a[0].is_empty() {
            return Err("on_alert: empty command".into());
        }
    }
    let rate = |name: &str, v: Option<f64>, lo: f64, hi: f64| -> Result<Option<f64>, String> {
        match v {
            Some(x) if !(x.is_finite() && x >= lo && x <= hi) => {
                Err(format!("{name} = {x} is out of range ({lo} to {hi})"))
            }
            _ => Ok(v),
        }
    };
    let hz = rate("hz", raw.hz, 0.01, 1000.0)?;
    let gpu_hz = rate("gpu_hz", raw.gpu_hz, 0.0, 100.0)?;
    let smaps_duty = rate("smaps_duty", raw.smaps_duty, 0.0, 1.0)?;
    let mut thresholds = Vec::with_capacity(raw.thresholds.len());
    for (i, t) in raw.thresholds.into_iter().enumerate() {
        thresholds.push(match t {
            SizeValue::Bytes(b) => b,
            SizeValue::Text(s) => parse_bytes(&s).map_err(|e| format!("thresholds[{i}]: {e}"))?,
        });
    }
    Ok(FileConfig {
        rules,
        on_alert,
        hz,
        gpu_hz,
        smaps_duty,
        thresholds,
        default_rule: raw.default_rule,
        source: None,
    })
}
