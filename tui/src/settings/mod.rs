//! One settings path for `run` and `watch`: the flags of [`MonitorOpts`], the TOML config
//! file ([`file::load_config`]) and the defaults become one [`Setup`].
//!
//! The rule, for every value both can set ([`layer`]): a flag given on the command line wins,
//! else the file's value, else the default. A flag is an `Option` (`None` = not given), so
//! an explicit `--hz 20` beats the file's `hz = 5` even though 20 is also the default. Each
//! default is one constant, the one [`SamplerConfig::default`] uses
//! ([`provetop_collect::sampler::DEFAULT_HZ`] and its neighbours); each range is one
//! [`Bounds`](provetop_collect::sampler::Bounds), checked by the flag's parser, by the file
//! reader (with the file's line) and by the sampler itself.
//!
//! Alert rules add up instead: the file's, then `--alert`'s, then the built-in ones unless
//! the file says `default_rule = false`.

pub mod file;
pub mod screen;

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use provetop_shared::alerts::{self, Rule, Threshold};

use file::FileConfig;
use provetop_collect::sampler::{
    SamplerConfig, DEFAULT_GPU_HZ, DEFAULT_HZ, DEFAULT_SMAPS_DUTY, DEFAULT_USAGE_HZ,
};
use provetop_shared::classify::Thresholds;
use provetop_shared::clock::civil_from_days;
use provetop_shared::units::GIB;

use crate::cli::{MonitorOpts, GRACE_BOUNDS};

/// Everything that was configured for a monitoring run.
pub struct Setup {
    /// Sampler settings.
    pub sampler: SamplerConfig,
    /// Alert rules.
    pub rules: Vec<Rule>,
    /// Alert hook argv.
    pub hook: Option<Vec<String>>,
    /// Threshold lines.
    pub thresholds: Thresholds,
    /// Session file, unless recording is off.
    pub record: Option<PathBuf>,
    /// How the recording rotates (`--rotate`, else the file's `rotate`).
    pub rotation: Option<provetop_shared::session::parts::Rotation>,
    /// Where to serve `/metrics` (`--metrics`, else the file's `metrics`; off by default).
    pub metrics: Option<std::net::SocketAddr>,
    /// The file's log-line rules, for every line engine of the session (the child's output,
    /// `watch --log`).
    pub log_rules: Vec<provetop_collect::loglines::Rule>,
    /// The file's NVTX range names that are protocol phases (`[[nvtx_phase]]`).
    pub nvtx_phases: provetop_collect::nvtx::PhaseMap,
}

/// The precedence rule: the flag when given, else the config file's value, else the default.
pub fn layer<T>(flag: Option<T>, file: Option<T>, default: T) -> T {
    flag.or(file).unwrap_or(default)
}

/// Read the config file (`--config`, else the XDG default when present) and the flags into
/// a [`Setup`]. A bad file is an error naming the file, the line and the key.
pub fn setup(opts: &MonitorOpts) -> anyhow::Result<Setup> {
    let file = file::load_config(opts.config.as_deref())?;
    let setup = resolve(opts, &file)?;
    if let Some(argv) = &setup.hook {
        let whence = if opts.on_alert.is_some() {
            "--on-alert"
        } else {
            "config on_alert"
        };
        check_hook(&argv[0]).map_err(|e| anyhow::anyhow!("{whence} {:?}: {e}", argv[0]))?;
    }
    Ok(setup)
}

/// Whether the hook `program` can run: a path (with a `/`) must be an executable file; a
/// bare name must be one in a directory of `PATH`. Checked at start, not when the first
/// alert fires. Returns the program's path.
pub fn check_hook(program: &str) -> Result<PathBuf, String> {
    use std::os::unix::fs::PermissionsExt;
    let usable = |p: &std::path::Path| -> Result<(), String> {
        let m = std::fs::metadata(p).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => "no such file".to_string(),
            _ => format!("cannot be read: {e}"),
        })?;
        if !m.is_file() {
            return Err("not a file".into());
        }
        if m.permissions().mode() & 0o111 == 0 {
            return Err("not executable".into());
        }
        Ok(())
    };
    if program.contains('/') {
        let p = PathBuf::from(program);
        return usable(&p).map(|()| p);
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|d| d.join(program))
        .find(|p| usable(p).is_ok())
        .ok_or_else(|| "not found on PATH (or not an executable file there)".to_string())
}

/// Merge flags and an already read config file ([`layer`] for each value).
pub fn resolve(opts: &MonitorOpts, file: &FileConfig) -> anyhow::Result<Setup> {
    let sampler = SamplerConfig {
        hz: layer(opts.hz, file.hz, DEFAULT_HZ),
        smaps_duty: layer(opts.smaps_duty, file.smaps_duty, DEFAULT_SMAPS_DUTY),
        gpu_hz: layer(opts.gpu_hz, file.gpu_hz, DEFAULT_GPU_HZ),
        usage_hz: layer(opts.usage_hz, file.usage_hz, DEFAULT_USAGE_HZ),
        reset_peak: true,
    };
    // The flags' parsers and the file reader check the same bounds; this catches options
    // built in code, before anything starts.
    sampler.validate()?;
    let mut rules = file.rules.clone();
    for r in &opts.alerts {
        rules.push(
            r.parse::<Rule>()
                .map_err(|e| anyhow::anyhow!("--alert {r:?}: {e}"))?,
        );
    }
    if file.default_rule != Some(false) {
        rules.extend(alerts::default_rules());
    }
    let hook_flag = match &opts.on_alert {
        Some(cmd) => {
            let argv: Vec<String> = cmd.split_whitespace().map(String::from).collect();
            if argv.is_empty() {
                anyhow::bail!("--on-alert: empty command");
            }
            Some(Some(argv))
        }
        None => None,
    };
    let hook = layer(hook_flag, file.on_alert.clone().map(Some), None);
    let thresholds = layer(
        opts.thresholds,
        file_thresholds(file)?,
        Thresholds::default(),
    );
    let record = if opts.no_record {
        None
    } else {
        Some(match &opts.record {
            Some(p) => {
                // Checked before anything starts; creating the file (O_EXCL) is what makes
                // it sure.
                if let Some(what) = provetop_shared::session::taken(p) {
                    anyhow::bail!(
                        "--record {}: {what}; provetop records only to a new file (choose another name, or remove it)",
                        p.display()
                    );
                }
                p.clone()
            }
            None => default_session_path()?,
        })
    };
    let rotation = match &opts.rotate {
        Some(r) => Some(
            provetop_shared::session::parts::Rotation::parse(
                r,
                opts.retain.as_deref(),
                opts.max_disk.as_deref(),
            )
            .map_err(|e| anyhow::anyhow!("--{e}"))?,
        ),
        None if opts.retain.is_some() || opts.max_disk.is_some() => {
            anyhow::bail!(
                "--retain and --max-disk need --rotate (retention removes finished parts)"
            )
        }
        None => file.rotation,
    };
    Ok(Setup {
        sampler,
        rules,
        hook,
        thresholds,
        rotation: rotation.filter(|_| record.is_some()),
        record,
        metrics: layer(opts.metrics.map(|m| m.0), file.metrics.map(Some), None),
        log_rules: file.log_rules.clone(),
        nvtx_phases: file.nvtx_phases.clone(),
    })
}

/// The file's threshold lines (bytes) as GiB [`Thresholds`]; the reader already holds them to
/// four ascending sizes, and a list of any other length is never dropped silently.
fn file_thresholds(file: &FileConfig) -> anyhow::Result<Option<Thresholds>> {
    let gib = |b: u64| b as f64 / GIB as f64;
    match file.thresholds[..] {
        [] => Ok(None),
        [idle, gpu, synth, peak] if idle <= gpu && gpu <= synth && synth <= peak => {
            Ok(Some(Thresholds {
                idle: gib(idle),
                gpu: gib(gpu),
                synth: gib(synth),
                peak: gib(peak),
            }))
        }
        _ => anyhow::bail!(
            "config thresholds {:?}: expected 4 ascending sizes (idle, gpu, synth, peak)",
            file.thresholds
        ),
    }
}

/// `--grace` as a `Duration` (the flag's parser checks the same bounds).
pub fn grace(secs: f64) -> anyhow::Result<Duration> {
    GRACE_BOUNDS
        .check(secs)
        .map(Duration::from_secs_f64)
        .map_err(|e| anyhow::anyhow!("--grace {secs:?}: {e}"))
}

/// `$XDG_STATE_HOME/provetop/sessions/provetop-<UTC date>-<pid>.ptop` (directory created
/// private: [`private_dir`]).
pub fn default_session_path() -> anyhow::Result<PathBuf> {
    let base =
        provetop_collect::xdg::base_dir("XDG_STATE_HOME", ".local/state").ok_or_else(|| {
            anyhow::anyhow!(
                "neither XDG_STATE_HOME nor HOME is set: pass --record FILE or --no-record"
            )
        })?;
    let dir = base.join("provetop").join("sessions");
    private_dir(&dir)
        .with_context(|| format!("cannot create the session directory {}", dir.display()))?;
    let secs = provetop_shared::clock::wall_ns() / 1_000_000_000;
    Ok(dir.join(format!(
        "provetop-{}-{}.ptop",
        utc_stamp(secs),
        std::process::id()
    )))
}

/// Create `dir` and its missing parents with mode 0700 whatever the umask; `provetop/` and
/// `provetop/sessions/` that already exist and are ours are made 0700 too (an older provetop
/// created them under the umask).
pub fn private_dir(dir: &std::path::Path) -> std::io::Result<()> {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let private =
        |d: &std::path::Path| std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o700));
    provetop_collect::xdg::create_private(dir)?;
    let me = nix::unistd::geteuid().as_raw();
    for d in [Some(dir), dir.parent()].into_iter().flatten() {
        if let Ok(m) = std::fs::symlink_metadata(d) {
            if m.is_dir() && m.uid() == me && m.mode() & 0o077 != 0 {
                private(d)?;
            }
        }
    }
    if !dir.is_dir() {
        return Err(std::io::Error::other("not a directory"));
    }
    Ok(())
}

/// "20250101-120000" (UTC) from unix seconds.
pub fn utc_stamp(secs: u64) -> String {
    let (y, m, d) = civil_from_days((secs / 86_400) as i64);
    let rem = secs % 86_400;
    format!(
        "{y:04}{m:02}{d:02}-{:02}{:02}{:02}",
        rem / 3600,
        (rem / 60) % 60,
        rem % 60
    )
}

/// Lines for the chart from rules on memory metrics with absolute thresholds (not on what is
/// free: MemAvailable and `predicted_free` are no level of the tree's memory).
pub fn rule_lines(rules: &[Rule]) -> Vec<(String, u64)> {
    use provetop_shared::alerts::Metric;
    rules
        .iter()
        .filter(|r| {
            // Only the tree's own memory is drawn on the memory chart: not time, cores or
            // percent, not what is free, not a GPU's device memory (its own panel shows it).
            r.metric.unit() == provetop_shared::metric::Unit::Bytes
                && !matches!(
                    r.metric,
                    Metric::MemAvailable | Metric::PredictedFree | Metric::GpuMem
                )
        })
        .filter_map(|r| match r.threshold {
            Threshold::Abs(v) if v > 0.0 => Some((r.level.name().to_string(), v as u64)),
            _ => None,
        })
        .collect()
}

/// The alert rule behind `--watchdog DURATION`: no protocol event for that long.
pub fn watchdog_rule(text: &str) -> anyhow::Result<Rule> {
    let secs = provetop_shared::units::parse_duration_s(text)
        .map_err(|e| anyhow::anyhow!("--watchdog {text:?}: {e}"))?;
    if !(secs.is_finite() && secs > 0.0) {
        anyhow::bail!("--watchdog {text:?}: must be a positive duration");
    }
    format!("warn: event_age > {secs}s")
        .parse()
        .map_err(|e| anyhow::anyhow!("--watchdog {text:?}: {e}"))
}

#[cfg(test)]
mod tests {

    use super::file::parse_config;
    use clap::Parser;

    use super::*;
    use crate::cli::{Cli, Command};

    #[test]
    fn only_rules_on_the_trees_memory_draw_a_line_on_the_memory_chart() {
        let rules: Vec<Rule> = [
            "rss > 20GiB",
            "crit: pinned > 4GiB for 2s",
            "cpu > 12 for 10s",
            "gpu_util < 10 for 30s",
            "gpu_mem > 75GiB",
            "gpu_temp > 85",
            "read_bps > 1GiB",
            "phase_duration > 30s",
            "mem_available < 8GiB",
        ]
        .iter()
        .map(|r| r.parse().unwrap())
        .collect();
        let lines = rule_lines(&rules);
        assert_eq!(
            lines,
            vec![
                ("warn".to_string(), 20 << 30),
                ("crit".to_string(), 4 << 30)
            ]
        );
    }

    /// `provetop watch 1 --no-record ARGS` parsed, as the binary would.
    fn try_opts(args: &[&str]) -> Result<MonitorOpts, clap::Error> {
        let argv = ["provetop", "watch", "1", "--no-record"];
        let cli = Cli::try_parse_from(argv.iter().chain(args))?;
        match cli.command {
            Some(Command::Watch(w)) => Ok(w.monitor),
            other => panic!("parsed to {other:?}"),
        }
    }

    fn opts(args: &[&str]) -> MonitorOpts {
        try_opts(args).unwrap_or_else(|e| panic!("{args:?}: {e}"))
    }

    fn file(text: &str) -> FileConfig {
        parse_config(text).unwrap_or_else(|e| panic!("{text:?}: {e}"))
    }

    /// The error `setup` gives for a config file holding `text`, and the file's path.
    fn config_error(text: &str) -> (String, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("config.toml");
        std::fs::write(&p, text).unwrap();
        let e = match setup(&opts(&["--config", p.to_str().unwrap()])) {
            Ok(_) => panic!("{text:?} was accepted"),
            Err(e) => format!("{e:#}"),
        };
        (e, p)
    }

    #[test]
    fn the_rule_is_flag_then_file_then_default() {
        assert_eq!(layer(Some(1), Some(2), 3), 1);
        assert_eq!(layer(None, Some(2), 3), 2);
        assert_eq!(layer(None, None, 3), 3);
    }

    #[test]
    fn a_flag_wins_even_at_the_default_value() {
        let f = file("hz = 5\ngpu_hz = 1\nsmaps_duty = 0.2\nthresholds = [1, 2, 3, 4]\n");
        let s = resolve(
            &opts(&[
                "--hz",
                "20",
                "--gpu-hz",
                "2",
                "--smaps-duty",
                "0.001",
                "--thresholds",
                "10,50,100,180",
            ]),
            &f,
        )
        .unwrap();
        assert_eq!(s.sampler, SamplerConfig::default());
        assert_eq!(s.thresholds, Thresholds::default());
    }

    #[test]
    fn the_file_wins_over_the_default() {
        let f = file(
            "hz = 5\ngpu_hz = 0\nsmaps_duty = 0.2\n\
             thresholds = [\"1GiB\", \"2GiB\", \"3GiB\", \"4GiB\"]\n\
             on_alert = \"notify --urgent\"\n",
        );
        let s = resolve(&opts(&[]), &f).unwrap();
        assert_eq!(s.sampler.hz, 5.0);
        assert_eq!(s.sampler.gpu_hz, 0.0);
        // The file's smaps_duty is applied (it never was: a hand-typed default disagreed).
        assert_eq!(s.sampler.smaps_duty, 0.2);
        assert_eq!(
            s.thresholds,
            Thresholds {
                idle: 1.0,
                gpu: 2.0,
                synth: 3.0,
                peak: 4.0
            }
        );
        assert_eq!(s.hook.unwrap(), ["notify", "--urgent"]);
        // A flag still wins over each of them.
        let s = resolve(&opts(&["--smaps-duty", "0.01", "--on-alert", "x y"]), &f).unwrap();
        assert_eq!((s.sampler.hz, s.sampler.smaps_duty), (5.0, 0.01));
        assert_eq!(s.hook.unwrap(), ["x", "y"]);
    }

    #[test]
    fn usage_hz_is_the_flag_then_the_file_then_the_default_and_zero_turns_it_off() {
        assert_eq!(
            resolve(&opts(&[]), &FileConfig::default())
                .unwrap()
                .sampler
                .usage_hz,
            DEFAULT_USAGE_HZ
        );
        let f = file("usage_hz = 0\n");
        assert_eq!(resolve(&opts(&[]), &f).unwrap().sampler.usage_hz, 0.0);
        let s = resolve(&opts(&["--usage-hz", "5"]), &f).unwrap();
        assert_eq!(s.sampler.usage_hz, 5.0);
        assert!(try_opts(&["--usage-hz", "-1"]).is_err());
        let e = parse_config("usage_hz = 1e-9").unwrap_err();
        assert!(e.contains("usage_hz") && e.contains("out of range"), "{e}");
    }

    #[test]
    fn defaults_when_neither_says() {
        let s = resolve(&opts(&[]), &FileConfig::default()).unwrap();
        assert_eq!(
            (s.sampler.hz, s.sampler.smaps_duty, s.sampler.gpu_hz),
            (DEFAULT_HZ, DEFAULT_SMAPS_DUTY, DEFAULT_GPU_HZ)
        );
        assert_eq!(s.sampler, SamplerConfig::default());
        assert_eq!(s.thresholds, Thresholds::default());
        assert_eq!(s.hook, None);
        assert_eq!(s.record, None);
        // No flag is set when none is given: a hidden default would beat the file.
        let o = opts(&[]);
        assert_eq!((o.hz, o.smaps_duty, o.gpu_hz), (None, None, None));
        assert_eq!(o.thresholds, None);
    }

    #[test]
    fn the_metrics_address_is_the_flag_then_the_file_and_off_by_default() {
        let f = file("metrics = \"9100\"\n");
        let s = resolve(&opts(&["--metrics", "[::1]:9464"]), &f).unwrap();
        assert_eq!(s.metrics, Some("[::1]:9464".parse().unwrap()));
        let s = resolve(&opts(&[]), &f).unwrap();
        assert_eq!(s.metrics, Some("127.0.0.1:9100".parse().unwrap()));
        let s = resolve(&opts(&[]), &FileConfig::default()).unwrap();
        assert_eq!(s.metrics, None);
        // `off` beats the file.
        let s = resolve(&opts(&["--metrics", "off"]), &f).unwrap();
        assert_eq!(s.metrics, None);
        let e = try_opts(&["--metrics", "somewhere:9464"]).unwrap_err();
        assert!(
            e.to_string().contains("bad address \"somewhere:9464\""),
            "{e}"
        );
    }

    #[test]
    fn rules_add_up() {
        let f = file("rules = [\"rss > 1GiB\"]\ndefault_rule = false\n");
        let s = resolve(&opts(&["--alert", "crit: shmem > 2GiB"]), &f).unwrap();
        let texts: Vec<&str> = s.rules.iter().map(|r| r.text.as_str()).collect();
        assert_eq!(texts.len(), 2, "{texts:?}");
        let s = resolve(&opts(&[]), &FileConfig::default()).unwrap();
        assert!(!s.rules.is_empty(), "the built-in rules apply by default");
    }

    #[test]
    fn each_config_error_names_file_key_and_line() {
        for (text, want) in [
            (
                "# rates\ngpu_hz = 1\nhz = 0\n",
                "line 3: hz = 0: out of range (0.01 to 1000)",
            ),
            (
                "hz = 1e-300",
                "line 1: hz = 1e-300: out of range (0.01 to 1000)",
            ),
            (
                "\ngpu_hz = 1e-300",
                "line 2: gpu_hz = 1e-300: out of range (0 = off, or 0.01 to 100)",
            ),
            (
                "hz = 1\n\nsmaps_duty = -0.5",
                "line 3: smaps_duty = -0.5: out of range (0 to 1)",
            ),
            (
                "thresholds = [\"10GiB\", \"50GiB\", \"100GiB\"]",
                "line 1: thresholds = [\"10GiB\", \"50GiB\", \"100GiB\"]: \
                 expected 4 sizes (idle, gpu, synth, peak), got 3",
            ),
            (
                "hz = 2\nthresholds = [\"50GiB\", \"10GiB\", \"100GiB\", \"180GiB\"]",
                "line 2: thresholds = [\"50GiB\", \"10GiB\", \"100GiB\", \"180GiB\"]: \
                 must be ascending (idle ≤ gpu ≤ synth ≤ peak)",
            ),
            ("hz = 2\nhz_ = 3", "line 2: unknown field `hz_`"),
            ("\n\nhz = \"fast\"", "line 3: hz: invalid type"),
        ] {
            let (e, p) = config_error(text);
            let want = format!("{}: {want}", p.display());
            assert!(e.starts_with(&want), "{text:?}\n got: {e}\nwant: {want}");
            assert!(!e.contains('\n'), "{e}");
        }
    }

    #[test]
    fn threshold_flags_follow_the_same_rule() {
        let e = try_opts(&["--thresholds", "10,50,100"]).unwrap_err();
        assert!(e.to_string().contains("expected 4"), "{e}");
        let e = try_opts(&["--thresholds", "50,10,100,180"]).unwrap_err();
        assert!(e.to_string().contains("ascending"), "{e}");
        let o = opts(&["--thresholds", "1,2,3,4"]);
        let s = resolve(&o, &FileConfig::default()).unwrap();
        assert_eq!(s.thresholds.peak, 4.0);
        // A list the reader would never produce is refused, not dropped.
        let f = FileConfig {
            thresholds: vec![GIB, 2 * GIB, 3 * GIB],
            ..FileConfig::default()
        };
        let e = resolve(&opts(&[]), &f).err().unwrap().to_string();
        assert!(e.contains("expected 4 ascending"), "{e}");
    }

    #[test]
    fn float_flags_out_of_range_are_refused_by_the_parser() {
        for (flag, v) in [
            ("--hz", "1e-300"),
            ("--hz", "0"),
            ("--hz", "1001"),
            ("--hz", "inf"),
            ("--hz", "NaN"),
            ("--gpu-hz", "1e-300"),
            ("--gpu-hz", "-1"),
            ("--smaps-duty", "1.5"),
            ("--smaps-duty", "x"),
        ] {
            let e = try_opts(&[&format!("{flag}={v}")])
                .err()
                .unwrap_or_else(|| panic!("{flag} {v}"));
            assert_eq!(e.kind(), clap::error::ErrorKind::ValueValidation, "{e}");
            assert_eq!(e.exit_code(), 2);
        }
        assert_eq!(opts(&["--gpu-hz", "0"]).gpu_hz, Some(0.0));
        assert_eq!(opts(&["--smaps-duty", "0"]).smaps_duty, Some(0.0));
        let run = |args: &[&str]| {
            Cli::try_parse_from(["provetop", "run"].iter().chain(args)).map(|c| match c.command {
                Some(Command::Run(r)) => r.grace,
                other => panic!("{other:?}"),
            })
        };
        assert_eq!(run(&[]).unwrap(), crate::cli::DEFAULT_GRACE_S);
        for v in ["1e300", "-1", "inf"] {
            let e = run(&[&format!("--grace={v}")]).unwrap_err();
            assert_eq!(e.kind(), clap::error::ErrorKind::ValueValidation, "{e}");
        }
        assert!(grace(1e300).is_err());
        assert_eq!(grace(0.5).unwrap(), Duration::from_millis(500));
    }

    #[test]
    fn options_built_in_code_are_checked_too() {
        let mut o = opts(&[]);
        o.hz = Some(1e-300);
        let e = resolve(&o, &FileConfig::default())
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("out of range"), "{e}");
    }

    #[test]
    fn help_says_each_default() {
        use clap::CommandFactory;
        let mut cmd = Cli::command();
        let help = cmd
            .find_subcommand_mut("run")
            .unwrap()
            .render_help()
            .to_string();
        for want in [
            format!("[default: {DEFAULT_HZ}]"),
            format!("[default: {DEFAULT_SMAPS_DUTY}]"),
            format!("[default: {DEFAULT_GPU_HZ}]"),
            "[default: 10,50,100,180]".to_string(),
            format!("[default: {}]", crate::cli::DEFAULT_GRACE_S),
        ] {
            assert!(help.contains(&want), "{want} missing from\n{help}");
        }
    }

    #[test]
    fn stamps() {
        assert_eq!(utc_stamp(0), "19700101-000000");
        assert_eq!(utc_stamp(1_700_000_000), "20231114-221320");
        assert_eq!(utc_stamp(951_782_400), "20000229-000000");
    }
}
