//! The settings path end to end, through the real `provetop` binary: a bad config file is a
//! one-line error naming the file, line and key; float flags out of range are refused before
//! anything starts, without a panic; an explicit flag beats the file, and the file the default.
//!
//! Self-contained on purpose (no shared test helpers).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use provetop_shared::session::load;

/// `provetop ARGS` with the user's config and state directories out of the way.
fn provetop(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_provetop"))
        .args(args)
        .env("XDG_CONFIG_HOME", dir.join("config"))
        .env("XDG_STATE_HOME", dir.join("state"))
        .env("RUST_BACKTRACE", "1")
        .output()
        .expect("run provetop")
}

fn config(dir: &Path, text: &str) -> PathBuf {
    let p = dir.join("config.toml");
    std::fs::write(&p, text).unwrap();
    p
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// No panic message, no backtrace.
fn assert_clean(err: &str) {
    for bad in ["panicked", "backtrace", "RUST_BACKTRACE", "stack backtrace"] {
        assert!(!err.contains(bad), "{bad:?} in:\n{err}");
    }
}

#[test]
fn a_bad_config_is_one_line_naming_file_line_and_key() {
    // The whole table of config errors is the settings unit tests'; here, end to end, one
    // error of each kind: a value out of range, a thresholds list of the wrong length.
    let cases = [
        (
            "# sampling\ngpu_hz = 1\nhz = 0\n",
            "line 3: hz = 0: out of range (0.01 to 1000)",
        ),
        (
            "hz = 10\nthresholds = [\"10GiB\", \"50GiB\", \"100GiB\"]\n",
            "line 2: thresholds = [\"10GiB\", \"50GiB\", \"100GiB\"]: \
             expected 4 sizes (idle, gpu, synth, peak), got 3",
        ),
    ];
    for (text, want) in cases {
        let dir = tempfile::tempdir().unwrap();
        let cfg = config(dir.path(), text);
        let out = provetop(
            dir.path(),
            &[
                "run",
                "--headless",
                "--config",
                cfg.to_str().unwrap(),
                "--",
                "true",
            ],
        );
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{text:?}: {err}");
        assert_eq!(
            err,
            format!("provetop: {}: {want}\n", cfg.display()),
            "{text:?}"
        );
        assert_clean(&err);
        // Nothing started: no session file (not even its directory) was made.
        assert!(!dir.path().join("state").exists(), "{text:?}");
    }
}

#[test]
fn the_default_config_file_is_held_to_the_same_rules() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("config/provetop/config.toml");
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(&p, "hz = 20\ngpu_hz = 1e-300\n").unwrap();
    let out = provetop(dir.path(), &["run", "--headless", "--", "true"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_eq!(
        err,
        format!(
            "provetop: {}: line 2: gpu_hz = 1e-300: out of range (0 = off, or 0.01 to 100)\n",
            p.display()
        )
    );
}

#[test]
fn float_flags_out_of_range_are_refused_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    for args in [
        &["run", "--hz", "1e-300"][..],
        &["run", "--gpu-hz", "1e-300"],
        &["run", "--grace", "1e300"],
        &["run", "--smaps-duty", "2"],
        &["run", "--hz", "nan"],
        &["watch", "1", "--hz", "1e-300"],
        &["watch", "1", "--gpu-hz", "1e-300"],
    ] {
        let mut argv = args.to_vec();
        argv.extend(["--headless", "--no-record"]);
        if args[0] == "run" {
            argv.extend(["--", "true"]);
        }
        let out = provetop(dir.path(), &argv);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        let flag = args[args.len() - 2];
        assert!(
            err.starts_with("error: invalid value") && err.contains(flag),
            "{args:?}: {err}"
        );
        assert!(err.contains("out of range"), "{args:?}: {err}");
        assert_clean(&err);
    }
    assert!(!dir.path().join("state").exists());
}

/// The sample rate a headless `run -- true` recorded, given these flags and config text.
fn recorded_hz(flags: &[&str], config_text: Option<&str>) -> f64 {
    let dir = tempfile::tempdir().unwrap();
    let session = dir.path().join("s.ptop");
    let mut argv = vec!["run", "--headless", "--record", session.to_str().unwrap()];
    let cfg;
    if let Some(text) = config_text {
        cfg = config(dir.path(), text);
        argv.extend(["--config", cfg.to_str().unwrap()]);
    }
    argv.extend(flags);
    argv.extend(["--", "true"]);
    let out = provetop(dir.path(), &argv);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    load(&session).unwrap().header.sample_hz
}

#[test]
fn a_flag_beats_the_file_and_the_file_beats_the_default() {
    // An explicit `--hz 20` (also the default) still wins: it used to lose to the file.
    assert_eq!(recorded_hz(&["--hz", "20"], Some("hz = 5\n")), 20.0);
    assert_eq!(recorded_hz(&[], Some("hz = 5\n")), 5.0);
    assert_eq!(recorded_hz(&[], None), 20.0);
}
