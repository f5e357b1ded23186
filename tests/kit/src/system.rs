//! The system programs some tests need (tmux, Prometheus, man-db, bash, systemd-analyze…):
//! found on `PATH`, or the test is skipped with one line naming the Debian package that has
//! it — unless `PROVETOP_REQUIRE_SYSTEM_TOOLS=1` (which `.ci/run` sets), where a missing
//! program fails the test instead, so CI never skips silently.
//!
//! Every test that needs a package goes through [`need`] (or [`have`]); the skip line is
//! always `SKIPPED <test>: needs <package> (<program> not found; apt-get install <package>)`.

use std::path::PathBuf;

/// The variable that turns a skip for a missing package into a failure.
pub const REQUIRE_VAR: &str = "PROVETOP_REQUIRE_SYSTEM_TOOLS";

/// Whether missing packages fail the tests (`PROVETOP_REQUIRE_SYSTEM_TOOLS` set, not `0`).
pub fn required() -> bool {
    std::env::var_os(REQUIRE_VAR).is_some_and(|v| !v.is_empty() && v != "0")
}

/// `program` on `PATH` or in the system folders a user's `PATH` may leave out (`sshd` is in
/// `/usr/sbin`), an executable file, if any.
pub fn find(program: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin", "/sbin"].map(PathBuf::from))
        .map(|d| d.join(program))
        .find(|p| {
            std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

/// The name of the running test (libtest names each test's thread after it).
fn test_name() -> String {
    std::thread::current()
        .name()
        .map_or_else(|| "this test".to_string(), str::to_string)
}

/// `program` (from Debian's `package`), or `None` after one SKIPPED line; with
/// [`REQUIRE_VAR`] set, a missing program panics instead.
pub fn need(program: &str, package: &str) -> Option<PathBuf> {
    if let Some(p) = find(program) {
        return Some(p);
    }
    missing(package, &format!("{program} not found"));
    None
}

/// The running test cannot go on without Debian's `package` (`why`: what was missing): one
/// SKIPPED line, or, with [`REQUIRE_VAR`] set, a panic.
pub fn missing(package: &str, why: &str) {
    let line = format!(
        "{}: needs {package} ({why}; apt-get install {package})",
        test_name()
    );
    if required() {
        panic!("{line}, and {REQUIRE_VAR} is set: CI must not skip");
    }
    say_skipped(&line);
}

/// Print `SKIPPED <what>` on the real standard error: not through `eprintln!`, which the
/// test harness captures (and shows only for failures), so that `cargo test` shows it.
pub fn say_skipped(what: &str) {
    use std::io::Write;
    // One write: stderr is unbuffered, and a line written in parts mixes with the harness'.
    let _ = std::io::stderr().write_all(format!("SKIPPED {what}\n").as_bytes());
}

/// Whether `program` is there ([`need`] without the path).
pub fn have(program: &str, package: &str) -> bool {
    need(program, package).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_program_on_the_path_is_found_and_a_missing_one_is_not() {
        assert!(find("sh").is_some());
        assert!(find("provetop-no-such-program").is_none());
    }
}
