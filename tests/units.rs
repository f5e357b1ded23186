//! The shipped systemd units (assets/systemd/): `systemd-analyze verify` passes on them
//! without a word (with provetop's own man pages on MANPATH, which it checks too), and,
//! whether or not systemd is here, every section and key is one systemd knows and each
//! ExecStart is a command line provetop's own clap definitions accept.

use std::path::{Path, PathBuf};
use std::process::Command;

use clap::Parser;
use provetop::cli::{Cli, Command as Sub};
use provetop_testkit::bins::provetop;
use provetop_testkit::fixtures::repo;

const UNITS: [&str; 2] = ["provetop@.service", "provetop-watch@.service"];

fn unit(name: &str) -> PathBuf {
    repo().join("assets/systemd").join(name)
}

/// The unit's `(section, key, value)` lines (comments and blank lines left out; no
/// continuation lines are used in the shipped units, and one would fail here).
fn entries(path: &Path) -> Vec<(String, String, String)> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut section = String::new();
    let mut v = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let l = line.trim();
        if l.is_empty() || l.starts_with('#') || l.starts_with(';') {
            continue;
        }
        if let Some(s) = l.strip_prefix('[').and_then(|s| s.strip_suffix(']')) {
            section = s.to_string();
            continue;
        }
        assert!(
            !l.ends_with('\\'),
            "{}:{}: continuation line",
            path.display(),
            i + 1
        );
        let (k, val) = l
            .split_once('=')
            .unwrap_or_else(|| panic!("{}:{}: not KEY=VALUE: {l}", path.display(), i + 1));
        v.push((
            section.clone(),
            k.trim().to_string(),
            val.trim().to_string(),
        ));
    }
    v
}

/// The keys systemd 252 knows that the units may use, by section.
fn known(section: &str) -> &'static [&'static str] {
    match section {
        "Unit" => &[
            "Description",
            "Documentation",
            "After",
            "Before",
            "Wants",
            "Requires",
            "BindsTo",
            "PartOf",
            "Conflicts",
            "ConditionPathExists",
        ],
        "Service" => &[
            "Type",
            "User",
            "Group",
            "EnvironmentFile",
            "Environment",
            "StateDirectory",
            "StateDirectoryMode",
            "RuntimeDirectory",
            "RuntimeDirectoryMode",
            "ExecStart",
            "KillMode",
            "TimeoutStopSec",
            "Restart",
            "RestartSec",
            "LimitMEMLOCK",
            "LimitNOFILE",
            "NoNewPrivileges",
            "ProtectSystem",
            "ProtectHome",
            "PrivateTmp",
            "PrivateDevices",
            "ProtectKernelTunables",
            "ProtectKernelModules",
            "ProtectKernelLogs",
            "ProtectControlGroups",
            "ProtectClock",
            "ProtectHostname",
            "RestrictRealtime",
            "RestrictSUIDSGID",
            "RestrictNamespaces",
            "LockPersonality",
            "MemoryDenyWriteExecute",
            "SystemCallArchitectures",
            "SystemCallFilter",
            "RestrictAddressFamilies",
            "CapabilityBoundingSet",
            "AmbientCapabilities",
            "UMask",
            "ReadWritePaths",
        ],
        "Install" => &["WantedBy", "RequiredBy", "Alias"],
        _ => &[],
    }
}

/// ExecStart's words with the instance `demo` and the example environment file's values
/// (systemd splits an unbraced `$VAR` into words; an unset one is no word).
fn exec_start(path: &Path, env_file: &str) -> Vec<String> {
    let env_text = std::fs::read_to_string(unit(env_file)).unwrap();
    let env: Vec<(&str, &str)> = env_text
        .lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .filter_map(|l| l.split_once('='))
        .collect();
    let line = entries(path)
        .into_iter()
        .find(|(s, k, _)| s == "Service" && k == "ExecStart")
        .expect("an ExecStart")
        .2;
    line.split_whitespace()
        .flat_map(|w| match w.strip_prefix('$') {
            Some(var) => env
                .iter()
                .find(|(k, _)| *k == var)
                .map(|(_, v)| v.split_whitespace().map(str::to_string).collect())
                .unwrap_or_default(),
            None => vec![w.replace("%i", "demo")],
        })
        .collect()
}

#[test]
fn every_section_and_key_of_the_shipped_units_is_one_systemd_knows() {
    for u in UNITS {
        let e = entries(&unit(u));
        assert!(!e.is_empty(), "{u}");
        for (section, key, _) in e {
            assert!(
                known(&section).contains(&key.as_str()),
                "{u}: [{section}] {key} is not a key the units may use"
            );
        }
    }
}

#[test]
fn each_units_exec_start_is_a_command_line_provetop_accepts() {
    let serve = exec_start(&unit("provetop@.service"), "provetop.env.example");
    assert_eq!(serve[0], "/usr/local/bin/provetop");
    match Cli::try_parse_from(&serve)
        .unwrap_or_else(|e| panic!("{serve:?}: {e}"))
        .command
    {
        Some(Sub::Serve(a)) => {
            assert_eq!(a.command[0], "/usr/local/bin/provetop-prover", "{serve:?}");
            assert!(a.monitor.metrics.is_some());
        }
        other => panic!("{serve:?}: not serve: {other:?}"),
    }
    let watch = exec_start(
        &unit("provetop-watch@.service"),
        "provetop-watch.env.example",
    );
    match Cli::try_parse_from(&watch)
        .unwrap_or_else(|e| panic!("{watch:?}: {e}"))
        .command
    {
        Some(Sub::Watch(a)) => {
            assert_eq!(a.unit.as_deref(), Some("demo"));
            assert!(a.monitor.headless);
            assert!(a.monitor.metrics.is_some());
        }
        other => panic!("{watch:?}: not watch: {other:?}"),
    }
    // Without the environment file: serve runs the bundled prover.
    let bare: Vec<&str> = vec!["/usr/local/bin/provetop", "serve", "--"];
    assert!(matches!(
        Cli::try_parse_from(bare).unwrap().command,
        Some(Sub::Serve(_))
    ));
}

#[test]
fn systemd_analyze_verify_passes_on_the_shipped_units_without_a_word() {
    let Some(analyze) = provetop_testkit::system::need("systemd-analyze", "systemd") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // Its man pages where verify looks for them (Documentation=man:…).
    let o = Command::new(provetop())
        .args(["man", "--dir"])
        .arg(d.join("man/man1"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let mut files = Vec::new();
    for u in UNITS {
        // An instance of the template, with the binary where this build has it.
        let text = std::fs::read_to_string(unit(u))
            .unwrap()
            .replace("/usr/local/bin/provetop", &provetop().display().to_string());
        let f = d.join(u.replace('@', "@demo"));
        std::fs::write(&f, text).unwrap();
        files.push(f);
    }
    let mut verify = Command::new(analyze);
    verify.arg("verify");
    // Its Documentation=man: check runs man-db's `man`; without man-db (the man page test
    // says SKIPPED for it) that check alone is left out.
    if provetop_testkit::system::find("man").is_none() {
        verify.arg("--man=no");
    }
    let o = verify
        .args(&files)
        .env("MANPATH", d.join("man"))
        .env("SYSTEMD_LOG_COLOR", "0")
        .output()
        .unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(o.status.success() && said.trim().is_empty(), "{said}");
}
