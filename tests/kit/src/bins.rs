//! The workspace's binaries under test: where they are, building those the calling test's
//! own package does not build (the bundled prover, `provetop-memhog`, `provetop-burn`), and
//! running `provetop` to completion.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use crate::tmux::sh_quote;

/// `target/<profile>`, where cargo puts the binaries of this build: the directory above the
/// `deps/` that holds the running test or bench executable.
pub fn bin_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("path of the test executable");
    let dir = exe.parent().expect("directory of the test executable");
    match dir.file_name() {
        Some(n) if n == "deps" => dir.parent().expect("target/<profile>").to_path_buf(),
        _ => dir.to_path_buf(),
    }
}

/// The `provetop` binary, which cargo builds for the provetop package's own tests.
pub fn provetop() -> PathBuf {
    let p = bin_dir().join("provetop");
    assert!(
        p.is_file(),
        "{} missing: only the provetop package's tests have it built",
        p.display()
    );
    p
}

/// `provetop-prover`, built next to `provetop` (where `provetop` looks for it).
pub fn prover() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT
        .get_or_init(|| cargo_build("provetop-prover", "provetop-prover"))
        .clone()
}

/// `provetop-memhog` (a bin of this kit): holds known amounts of anonymous, shared and
/// mlocked memory on command; `--help` says how.
pub fn memhog() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT
        .get_or_init(|| cargo_build("provetop-testkit", "provetop-memhog"))
        .clone()
}

/// `provetop-burn` (a bin of this kit): spins a known number of threads and writes and reads
/// back a known number of bytes, printing each step's bounds; `--help` says how.
pub fn burn() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT
        .get_or_init(|| cargo_build("provetop-testkit", "provetop-burn"))
        .clone()
}

/// `provetop-cost` (a bin of this kit): runs a program and says its own peak RSS and CPU
/// time ([`crate::procs::cost_of`]).
pub fn cost() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT
        .get_or_init(|| cargo_build("provetop-testkit", "provetop-cost"))
        .clone()
}

/// `libprovetop_nvtx.so`, the NVTX injection library, built next to `provetop` (where
/// `provetop run` looks for it).
pub fn nvtx_library() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT
        .get_or_init(|| cargo_build_as("provetop-nvtx", "--lib", "libprovetop_nvtx.so"))
        .clone()
}

/// A `sh -c` script for a child that joins the memory cgroup `cg`, stays there 1.5 s (long
/// enough for a supervisor's 1 s cgroup poll to see it), then becomes `provetop-memhog`
/// allocating `anon_mib` MiB (against the cgroup's limit: an OOM kill where that is lower).
pub fn oom_script(cg: &Path, anon_mib: u64) -> String {
    format!(
        "echo $$ > {}/cgroup.procs && sleep 1.5 && exec {} --anon {anon_mib}",
        sh_quote(&cg.display().to_string()),
        sh_quote(&memhog().display().to_string())
    )
}

/// `cargo build -q -p PACKAGE --bin BIN` in this build's profile; the binary's path.
/// `panicking_screen`, the provetop package's example whose live screen panics on purpose
/// (the panic path's end-to-end test).
pub fn panicking_screen() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT
        .get_or_init(|| cargo_build_as("provetop", "--example", "panicking_screen"))
        .clone()
}

fn cargo_build(package: &str, bin: &str) -> PathBuf {
    cargo_build_as(package, "--bin", bin)
}

/// Build one binary (`--bin`) or example (`--example`) of `package` in this build's profile.
fn cargo_build_as(package: &str, kind: &str, bin: &str) -> PathBuf {
    let dir = bin_dir();
    // A machine without cargo (the lent GPU machine) runs test executables carried there
    // with the binaries they need beside them.
    if std::env::var_os("PROVETOP_PREBUILT_BINS").is_some() {
        let p = dir.join(bin);
        assert!(
            p.is_file(),
            "{} missing (PROVETOP_PREBUILT_BINS is set)",
            p.display()
        );
        return p;
    }
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.args(["build", "-q", "-p", package, kind]);
    // `--lib` names no target: `bin` is then the library's file name.
    if kind != "--lib" {
        cmd.arg(bin);
    }
    // Same profile as this build (the bin dir is target/<profile>; benches use release).
    match dir.file_name().and_then(|n| n.to_str()) {
        Some("debug") | None => {}
        Some("release") => {
            cmd.arg("--release");
        }
        Some(profile) => {
            cmd.args(["--profile", profile]);
        }
    }
    let st = cmd
        .status()
        .unwrap_or_else(|e| panic!("run cargo build -p {package}: {e}"));
    assert!(st.success(), "cargo build -p {package} {kind} {bin} failed");
    let p = match kind {
        "--example" => dir.join("examples").join(bin),
        _ => dir.join(bin),
    };
    assert!(p.is_file(), "{} missing after the build", p.display());
    p
}

/// What a run of the `provetop` binary printed and returned.
pub struct Out {
    /// Exit code (-1 when killed by a signal).
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Out {
    /// Assert that the run exited `code` and that its stderr says every one of `says`.
    #[track_caller]
    pub fn assert_fails(&self, code: i32, says: &[&str]) {
        assert_eq!(self.code, code, "{}", self.stderr);
        for s in says {
            assert!(self.stderr.contains(s), "no {s:?} in: {}", self.stderr);
        }
    }

    /// Assert that the run exited 0 and that its stdout says every one of `says`.
    #[track_caller]
    pub fn assert_says(&self, says: &[&str]) {
        assert_eq!(self.code, 0, "{}", self.stderr);
        for s in says {
            assert!(self.stdout.contains(s), "no {s:?} in: {}", self.stdout);
        }
    }
}

/// Run the `provetop` binary with `args` to completion.
pub fn run_provetop(args: &[&str]) -> Out {
    let o = Command::new(provetop())
        .args(args)
        .output()
        .expect("run provetop");
    Out {
        code: o.status.code().unwrap_or(-1),
        stdout: String::from_utf8(o.stdout).expect("utf-8 stdout"),
        stderr: String::from_utf8(o.stderr).expect("utf-8 stderr"),
    }
}
