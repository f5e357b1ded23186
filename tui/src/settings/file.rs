//! The TOML config file.
//!
//! ```toml
//! # $XDG_CONFIG_HOME/provetop/config.toml (or ~/.config/provetop/config.toml, or --config)
//! hz = 20                 # samples per second
//! gpu_hz = 2              # NVML readings per second (0 = off)
//! usage_hz = 2            # CPU / I/O / GPU-detail readings per second (0 = off)
//! smaps_duty = 0.005      # share of a core the pinned-memory (smaps) reader may use
//! rules = ["rss > 180GiB for 5s", "crit: shmem > 40GiB", "warn: phase_duration > 30m"]
//! thresholds = ["10GiB", "50GiB", "100GiB", "180GiB"]   # threshold lines on the chart
//! on_alert = ["/usr/local/bin/page-oncall", "--team", "provers"]   # argv, no shell
//! default_rule = true     # keep the built-in rules: RSS > 90 % of the limit, predicted_free < 0
//! metrics = "127.0.0.1:9464"   # serve /metrics there (a bare port: loopback); off when unset
//! theme = "light"         # the screen's colours: default, light, colorblind (NO_COLOR wins)
//! mouse = false           # the screen takes no mouse events (on by default)
//! rotate = "1d"           # the recording rotates: a part a day (or a size: "2GiB")
//! retain = "14d"          # finished parts older than this are removed
//! max_disk = "20GiB"      # and the oldest while all parts take more
//! ```
//! Unknown keys are errors (a typo must not silently disable an alert), and so is a value out
//! of its range ([`provetop_collect::sampler::HZ_BOUNDS`] and its neighbours, the same bounds as the
//! flags') or a thresholds list that is not four ascending sizes: one line naming the line,
//! the key and the value. A flag given on the command line wins over the file.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use anyhow::Context;
use provetop_shared::units::parse_bytes;
use serde::Deserialize;
use toml::Spanned;

use provetop_collect::sampler::{
    Bounds, GPU_HZ_BOUNDS, HZ_BOUNDS, SMAPS_DUTY_BOUNDS, USAGE_HZ_BOUNDS,
};
use provetop_shared::alerts::Rule;

use crate::cli::parse_listen_addr;

/// Everything the config file can set; `None`/empty means "not set, use the default".
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FileConfig {
    pub rules: Vec<Rule>,
    /// Program (argv, no shell) run on every alert change.
    pub on_alert: Option<Vec<String>>,
    /// Sample rate, Hz.
    pub hz: Option<f64>,
    /// GPU rate, Hz.
    pub gpu_hz: Option<f64>,
    /// Usage reading rate, Hz.
    pub usage_hz: Option<f64>,
    /// smaps duty (share of one core).
    pub smaps_duty: Option<f64>,
    /// Threshold lines for the chart and classifier, bytes: empty (not set) or exactly four,
    /// ascending (idle, gpu, synth, peak).
    pub thresholds: Vec<u64>,
    /// Whether the built-in default rules apply (default true).
    pub default_rule: Option<bool>,
    /// Where to serve `/metrics` ([`parse_listen_addr`]).
    pub metrics: Option<SocketAddr>,
    /// Line rules for provers provetop has no grammar for (`[[log_rule]]` tables, see
    /// [`provetop_collect::loglines::rules`]).
    pub log_rules: Vec<provetop_collect::loglines::Rule>,
    /// The screen's palette.
    pub theme: Option<crate::theme::Palette>,
    /// Whether the screen takes the mouse.
    pub mouse: Option<bool>,
    /// NVTX range names that are protocol phases (`[[nvtx_phase]]` tables: `name`, `phase`).
    pub nvtx_phases: provetop_collect::nvtx::PhaseMap,
    /// Rotation of the recording (`rotate`, `retain`, `max_disk`), checked.
    pub rotation: Option<provetop_shared::session::parts::Rotation>,
    /// The file it was read from (None when no file was found).
    pub source: Option<PathBuf>,
}

/// Each value keeps its place in the text, so a value that parses but is wrong is still
/// reported with its line.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Raw {
    rules: Option<Spanned<Vec<Spanned<String>>>>,
    on_alert: Option<Spanned<OneOrMany>>,
    hz: Option<Spanned<f64>>,
    gpu_hz: Option<Spanned<f64>>,
    usage_hz: Option<Spanned<f64>>,
    smaps_duty: Option<Spanned<f64>>,
    thresholds: Option<Spanned<Vec<Spanned<SizeValue>>>>,
    default_rule: Option<bool>,
    metrics: Option<Spanned<String>>,
    log_rule: Option<Vec<Spanned<RawLogRule>>>,
    theme: Option<Spanned<String>>,
    mouse: Option<bool>,
    nvtx_phase: Option<Vec<Spanned<RawNvtxPhase>>>,
    rotate: Option<Spanned<String>>,
    retain: Option<Spanned<String>>,
    max_disk: Option<Spanned<String>>,
}

/// One `[[nvtx_phase]]` table as written: the NVTX range `name` is the protocol phase `phase`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawNvtxPhase {
    name: String,
    phase: String,
}

/// One `[[log_rule]]` table as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLogRule {
    name: String,
    regex: String,
    action: String,
    phase: Option<String>,
}

#[derive(Deserialize)]
#[serde(untagged, expecting = "a command: a string or a list of strings")]
enum OneOrMany {
    One(String),
    Many(Vec<String>),
}

#[derive(Deserialize)]
#[serde(untagged, expecting = "a size: bytes, or a string such as \"10GiB\"")]
enum SizeValue {
    Bytes(i64),
    Text(String),
}

/// `$XDG_CONFIG_HOME/provetop/config.toml`, else `$HOME/.config/provetop/config.toml`.
fn default_config_path() -> Option<PathBuf> {
    let base = provetop_collect::xdg::base_dir("XDG_CONFIG_HOME", ".config")?;
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
    let text = match read_config_text(&path) {
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

/// Largest config file read: a config is a few lines; anything larger is not one.
pub const CONFIG_MAX_BYTES: u64 = 1 << 20;

/// The config's text: a regular file (a FIFO, a device, a directory is refused without
/// waiting or reading), at most [`CONFIG_MAX_BYTES`], UTF-8.
fn read_config_text(path: &Path) -> std::io::Result<String> {
    use std::io::Read;
    let file = provetop_shared::session::open_regular(path)?;
    let mut bytes = Vec::new();
    file.take(CONFIG_MAX_BYTES + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > CONFIG_MAX_BYTES {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!(
                "larger than {} KiB: not a provetop config",
                CONFIG_MAX_BYTES >> 10
            ),
        ));
    }
    String::from_utf8(bytes).map_err(|e| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!(
                "not UTF-8 text (byte {}): not a provetop config",
                e.utf8_error().valid_up_to()
            ),
        )
    })
}

/// Parse config text. Errors are one line: `line N: KEY = VALUE: what is wrong` (or toml's
/// own message for a syntax or type error, with its line and key).
pub fn parse_config(text: &str) -> Result<FileConfig, String> {
    let raw: Raw = toml::from_str(text).map_err(|e| {
        // toml's messages span several lines (source excerpt); keep the summary and place.
        let msg = e.message().trim().replace('\n', " ");
        match e.span() {
            Some(sp) => {
                let at = Place::new(text, sp);
                match at.key() {
                    Some(k) if !msg.contains(&format!("`{k}`")) => {
                        format!("line {}: {k}: {msg}", at.line)
                    }
                    _ => format!("line {}: {msg}", at.line),
                }
            }
            None => msg,
        }
    })?;
    let mut rules = Vec::new();
    if let Some(list) = raw.rules {
        for (i, r) in list.into_inner().into_iter().enumerate() {
            let at = Place::new(text, r.span());
            rules.push(
                r.get_ref()
                    .parse::<Rule>()
                    .map_err(|e| at.error(&format!("rules[{i}]"), &e.to_string()))?,
            );
        }
    }
    let on_alert = match raw.on_alert {
        None => None,
        Some(v) => {
            let at = Place::new(text, v.span());
            let argv: Vec<String> = match v.into_inner() {
                // A single string is split on whitespace, never given to a shell.
                OneOrMany::One(s) => s.split_whitespace().map(str::to_string).collect(),
                OneOrMany::Many(v) => v,
            };
            if argv.first().is_none_or(|a| a.is_empty()) {
                return Err(at.error("on_alert", "empty command"));
            }
            Some(argv)
        }
    };
    let rate = |name: &str, v: Option<Spanned<f64>>, b: Bounds| -> Result<Option<f64>, String> {
        v.map(|v| {
            b.check(*v.get_ref())
                .map_err(|e| Place::new(text, v.span()).error(name, &e))
        })
        .transpose()
    };
    let hz = rate("hz", raw.hz, HZ_BOUNDS)?;
    let gpu_hz = rate("gpu_hz", raw.gpu_hz, GPU_HZ_BOUNDS)?;
    let usage_hz = rate("usage_hz", raw.usage_hz, USAGE_HZ_BOUNDS)?;
    let smaps_duty = rate("smaps_duty", raw.smaps_duty, SMAPS_DUTY_BOUNDS)?;
    let thresholds = match raw.thresholds {
        None => Vec::new(),
        Some(list) => thresholds(text, list)?,
    };
    let metrics = raw
        .metrics
        .map(|v| {
            parse_listen_addr(v.get_ref())
                .map_err(|e| Place::new(text, v.span()).error("metrics", &e))
        })
        .transpose()?;
    let mut log_rules = Vec::new();
    let raw_rules = raw.log_rule.unwrap_or_default();
    let most = provetop_collect::loglines::MAX_RULES;
    if raw_rules.len() > most {
        let at = Place::new(text, raw_rules[most].span());
        return Err(format!(
            "line {}: {} [[log_rule]] tables, more than the {most} provetop reads \
             (each is matched against every output line)",
            at.line,
            raw_rules.len()
        ));
    }
    for r in raw_rules {
        let at = Place::new(text, r.span());
        let r = r.into_inner();
        let key = format!("log_rule {:?}", r.name);
        let action = r.action.parse().map_err(|e: String| at.error(&key, &e))?;
        log_rules.push(
            provetop_collect::loglines::Rule::new(&r.name, &r.regex, action, r.phase.as_deref())
                .map_err(|e| at.error(&key, &e))?,
        );
    }
    provetop_collect::loglines::Rules::check(&log_rules)?;
    let theme = raw
        .theme
        .map(|v| {
            v.get_ref()
                .parse()
                .map_err(|e: String| Place::new(text, v.span()).error("theme", &e))
        })
        .transpose()?;
    let mut nvtx_phases = Vec::new();
    for r in raw.nvtx_phase.unwrap_or_default() {
        let at = Place::new(text, r.span());
        let r = r.into_inner();
        if r.name.is_empty() || r.phase.trim().is_empty() {
            return Err(at.error("nvtx_phase", "`name` and `phase` must not be empty"));
        }
        nvtx_phases.push((
            r.name,
            provetop_shared::Phase::from(r.phase.trim().to_string()),
        ));
    }
    let rotation = match (&raw.rotate, raw.retain.as_ref().or(raw.max_disk.as_ref())) {
        (Some(r), _) => Some(
            provetop_shared::session::parts::Rotation::parse(
                r.get_ref(),
                raw.retain.as_ref().map(|v| v.get_ref().as_str()),
                raw.max_disk.as_ref().map(|v| v.get_ref().as_str()),
            )
            .map_err(|e| Place::new(text, r.span()).error("rotate", &e))?,
        ),
        (None, Some(v)) => {
            return Err(Place::new(text, v.span())
                .error("retain", "needs rotate (retention removes finished parts)"))
        }
        (None, None) => None,
    };
    Ok(FileConfig {
        theme,
        mouse: raw.mouse,
        rotation,
        rules,
        log_rules,
        nvtx_phases: provetop_collect::nvtx::PhaseMap::new(nvtx_phases),
        on_alert,
        hz,
        gpu_hz,
        usage_hz,
        smaps_duty,
        thresholds,
        default_rule: raw.default_rule,
        metrics,
        source: None,
    })
}

/// The threshold lines: exactly four sizes, ascending (idle ≤ gpu ≤ synth ≤ peak), the rule
/// of the `--thresholds` flag ([`Thresholds`](provetop_shared::classify::Thresholds)).
fn thresholds(text: &str, list: Spanned<Vec<Spanned<SizeValue>>>) -> Result<Vec<u64>, String> {
    let whole = Place::new(text, list.span());
    let mut out = Vec::with_capacity(4);
    for (i, t) in list.into_inner().into_iter().enumerate() {
        let at = Place::new(text, t.span());
        let key = format!("thresholds[{i}]");
        out.push(match t.into_inner() {
            SizeValue::Bytes(b) => {
                u64::try_from(b).map_err(|_| at.error(&key, "a size cannot be negative"))?
            }
            SizeValue::Text(s) => parse_bytes(&s).map_err(|e| at.error(&key, &e.to_string()))?,
        });
    }
    if out.len() != 4 {
        return Err(whole.error(
            "thresholds",
            &format!(
                "expected 4 sizes (idle, gpu, synth, peak), got {}",
                out.len()
            ),
        ));
    }
    if !out.windows(2).all(|w| w[0] <= w[1]) {
        return Err(whole.error(
            "thresholds",
            "must be ascending (idle ≤ gpu ≤ synth ≤ peak)",
        ));
    }
    Ok(out)
}

/// Where a value sits in the config text: its line and (one line of) its text.
struct Place<'a> {
    line: usize,
    /// The text from the start of the value's line on.
    rest: &'a str,
    value: &'a str,
}

impl<'a> Place<'a> {
    fn new(text: &'a str, span: std::ops::Range<usize>) -> Self {
        let start = span.start.min(text.len());
        let end = span.end.clamp(start, text.len());
        Place {
            line: text[..start].matches('\n').count() + 1,
            rest: &text[text[..start].rfind('\n').map_or(0, |i| i + 1)..],
            value: text.get(start..end).unwrap_or(""),
        }
    }

    /// The key a line sets (`hz` of `hz = 0`), when the place is on such a line.
    fn key(&self) -> Option<&'a str> {
        let line = self.rest.lines().next()?;
        let (k, _) = line.split_once('=')?;
        let k = k.trim();
        let bare = !k.is_empty()
            && k.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
        bare.then_some(k)
    }

    /// `line N: KEY = VALUE: what`, the value on one line and cut short when long.
    fn error(&self, key: &str, what: &str) -> String {
        let mut v = self
            .value
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .collect::<Vec<_>>()
            .join(" ");
        if v.chars().count() > 60 {
            v = v.chars().take(57).collect::<String>() + "...";
        }
        format!("line {}: {key} = {v}: {what}", self.line)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn semantic_errors_name_line_key_and_value() {
        let e = parse_config("# rates\ngpu_hz = 1\nhz = 0\n").unwrap_err();
        assert_eq!(e, "line 3: hz = 0: out of range (0.01 to 1000)");
        let e = parse_config("\n\ngpu_hz = 1e-300").unwrap_err();
        assert_eq!(
            e,
            "line 3: gpu_hz = 1e-300: out of range (0 = off, or 0.01 to 100)"
        );
        let e = parse_config("smaps_duty = 2.5").unwrap_err();
        assert_eq!(e, "line 1: smaps_duty = 2.5: out of range (0 to 1)");
        let e = parse_config("hz = nan").unwrap_err();
        assert!(e.starts_with("line 1: hz = nan: out of range"), "{e}");
        let e = parse_config("rules = [\n  \"rss > 1GiB\",\n  \"rss >> 2GiB\",\n]").unwrap_err();
        assert!(e.starts_with("line 3: rules[1] = \"rss >> 2GiB\": "), "{e}");
        let e = parse_config("hz = 1\non_alert = \"  \"").unwrap_err();
        assert_eq!(e, "line 2: on_alert = \"  \": empty command");
        // A type error is toml's, with the key added.
        let e = parse_config("hz = 1\ngpu_hz = \"fast\"").unwrap_err();
        assert!(e.starts_with("line 2: gpu_hz: "), "{e}");
        assert!(!e.contains('\n'), "{e}");
        let e = parse_config("on_alert = 5").unwrap_err();
        assert_eq!(
            e,
            "line 1: on_alert: a command: a string or a list of strings"
        );
        let e = parse_config("thresholds = [1, 2, true, 4]").unwrap_err();
        assert_eq!(
            e,
            "line 1: thresholds: a size: bytes, or a string such as \"10GiB\""
        );
    }

    #[test]
    fn the_screen_keys_are_a_theme_by_name_and_mouse_on_or_off() {
        let c = parse_config("theme = \"colorblind\"\nmouse = false").unwrap();
        assert_eq!(c.theme, Some(crate::theme::Palette::ColorBlind));
        assert_eq!(c.mouse, Some(false));
        let e = parse_config("hz = 1\ntheme = \"solarized\"").unwrap_err();
        assert!(
            e.starts_with("line 2: theme = \"solarized\": unknown theme"),
            "{e}"
        );
        assert!(parse_config("mouse = \"no\"").is_err());
    }

    #[test]
    fn rotation_keys_read_as_a_rotation_and_retention_without_rotate_is_refused_by_line() {
        let c = parse_config("rotate = \"1d\"\nretain = \"14d\"\nmax_disk = \"20GiB\"").unwrap();
        let r = c.rotation.unwrap();
        assert_eq!(r.every_ns, Some(86_400_000_000_000));
        assert_eq!(
            r.keep.retain,
            Some(std::time::Duration::from_secs(14 * 86_400))
        );
        assert_eq!(r.keep.max_bytes, Some(20 << 30));
        let c = parse_config("rotate = \"2GiB\"").unwrap();
        assert_eq!(c.rotation.unwrap().bytes, Some(2 << 30));
        let e = parse_config("hz = 1\nretain = \"14d\"").unwrap_err();
        assert!(
            e.starts_with("line 2: retain") && e.contains("needs rotate"),
            "{e}"
        );
        let e = parse_config("rotate = \"soon\"").unwrap_err();
        assert!(e.starts_with("line 1: rotate"), "{e}");
    }

    #[test]
    fn the_metrics_address_is_an_ip_and_port_and_a_bare_port_is_loopback() {
        let c = parse_config("metrics = \"9464\"").unwrap();
        assert_eq!(c.metrics, Some("127.0.0.1:9464".parse().unwrap()));
        assert_eq!(
            parse_listen_addr("[::1]:80"),
            Ok("[::1]:80".parse().unwrap())
        );
        assert_eq!(
            parse_listen_addr("localhost:1"),
            Ok("127.0.0.1:1".parse().unwrap())
        );
        assert_eq!(parse_listen_addr(":0"), Ok("127.0.0.1:0".parse().unwrap()));
        let e = parse_config("hz = 1\nmetrics = \"example.org:9464\"").unwrap_err();
        assert!(
            e.starts_with("line 2: metrics = \"example.org:9464\": bad address"),
            "{e}"
        );
        assert!(parse_listen_addr("99999").unwrap_err().contains("bad port"));
    }

    #[test]
    fn thresholds_are_four_ascending_sizes() {
        let c =
            parse_config("thresholds = [\"10GiB\", \"50GiB\", \"100GiB\", 193273528320]").unwrap();
        let g = provetop_shared::units::GIB;
        assert_eq!(c.thresholds, [10 * g, 50 * g, 100 * g, 180 * g]);
        let e =
            parse_config("hz = 5\nthresholds = [\"10GiB\", \"50GiB\", \"100GiB\"]").unwrap_err();
        assert_eq!(
            e,
            "line 2: thresholds = [\"10GiB\", \"50GiB\", \"100GiB\"]: expected 4 sizes \
             (idle, gpu, synth, peak), got 3"
        );
        let e = parse_config("thresholds = [\"50GiB\", \"10GiB\", \"100GiB\", \"180GiB\"]")
            .unwrap_err();
        assert!(e.starts_with("line 1: thresholds = ["), "{e}");
        assert!(
            e.ends_with("must be ascending (idle ≤ gpu ≤ synth ≤ peak)"),
            "{e}"
        );
        let e = parse_config("thresholds = [\n  1,\n  -2,\n]").unwrap_err();
        assert_eq!(e, "line 3: thresholds[1] = -2: a size cannot be negative");
        // A long list is shown on one line, cut short.
        let long = format!("thresholds = [\n{}]", "\"1GiB\",\n".repeat(30));
        let e = parse_config(&long).unwrap_err();
        assert!(
            !e.contains('\n') && e.contains("...: expected 4 sizes"),
            "{e}"
        );
        assert!(parse_config("thresholds = []").is_err());
    }
}
