//! `provetop completions SHELL`, `provetop man`, and the prover's `--completions`/`--man`:
//! the bash script is valid bash, registers itself in a real bash and completes a
//! subcommand there; every shell gets a script; man-db's `man -l` renders the pages.

use std::io::Write;
use std::process::{Command, Stdio};

use provetop_testkit::bins::{prover, provetop};
use provetop_testkit::system::need;

fn out(program: &std::path::Path, args: &[&str]) -> String {
    let o = Command::new(program).args(args).output().unwrap();
    assert!(
        o.status.success(),
        "{} {args:?}: {}",
        program.display(),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).unwrap()
}

/// What bash's completion of `line` (the cursor at its end) offers, with `script` loaded.
fn complete_in_bash(bash: &std::path::Path, script: &str, func: &str, line: &str) -> Vec<String> {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("completion.bash");
    std::fs::write(&f, script).unwrap();
    let words: Vec<&str> = line.split(' ').collect();
    let prog = format!(
        "source {f}\n\
         complete -p {cmd} >&2 || exit 3\n\
         COMP_LINE={line:?}; COMP_POINT=${{#COMP_LINE}}\n\
         COMP_WORDS=({words}); COMP_CWORD={cword}\n\
         {func} {cmd} {cur:?} {prev:?}\n\
         printf '%s\\n' \"${{COMPREPLY[@]}}\"\n",
        f = f.display(),
        cmd = words[0],
        words = words
            .iter()
            .map(|w| format!("{w:?}"))
            .collect::<Vec<_>>()
            .join(" "),
        cword = words.len() - 1,
        cur = words[words.len() - 1],
        prev = words[words.len() - 2],
    );
    let mut child = Command::new(bash)
        .arg("--norc")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(prog.as_bytes())
        .unwrap();
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let registered = String::from_utf8_lossy(&o.stderr);
    assert!(
        registered.contains(&format!("-F {func} {}", words[0])),
        "{registered}"
    );
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn the_bash_completion_is_valid_bash_and_completes_subcommands_and_flags_in_a_real_bash() {
    let Some(bash) = need("bash", "bash") else {
        return;
    };
    let script = out(&provetop(), &["completions", "bash"]);
    let check = Command::new(&bash)
        .args(["-n", "-c", &script])
        .output()
        .unwrap();
    assert!(
        check.status.success(),
        "{}",
        String::from_utf8_lossy(&check.stderr)
    );
    assert_eq!(
        complete_in_bash(&bash, &script, "_provetop", "provetop cl"),
        ["classify"]
    );
    let subs = complete_in_bash(&bash, &script, "_provetop", "provetop s");
    for want in ["serve", "status"] {
        assert!(subs.iter().any(|s| s == want), "{subs:?}");
    }
    let flags = complete_in_bash(&bash, &script, "_provetop", "provetop run --stop-on");
    assert_eq!(flags, ["--stop-on-hangup"]);
    // The prover's, from its own definitions.
    let script = out(&prover(), &["--completions", "bash"]);
    let flags = complete_in_bash(
        &bash,
        &script,
        "_provetop__prover",
        "provetop-prover --parti",
    );
    assert_eq!(flags, ["--partitions"]);
}

#[test]
fn every_shell_gets_a_completion_script_naming_the_subcommands() {
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let s = out(&provetop(), &["completions", shell]);
        assert!(
            s.contains("classify") && s.contains("attach"),
            "{shell}: {s}"
        );
        let p = out(&prover(), &["--completions", shell]);
        assert!(p.contains("partitions"), "{shell}: {p}");
    }
    let o = Command::new(provetop())
        .args(["completions", "tcsh"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn man_renders_the_pages_of_provetop_its_subcommands_and_the_prover() {
    let Some(man) = need("man", "man-db") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let pages = out(&provetop(), &["man", "--dir", dir.path().to_str().unwrap()]);
    let pages: Vec<&str> = pages.lines().collect();
    assert!(pages.len() >= 12, "{pages:?}");
    let top = dir.path().join("provetop.1");
    assert_eq!(
        std::fs::read(&top).unwrap(),
        out(&provetop(), &["man"]).into_bytes()
    );
    let prover_page = dir.path().join("provetop-prover.1");
    std::fs::write(&prover_page, out(&prover(), &["--man"])).unwrap();
    for (page, want) in [
        (top, "supervise a Groth16 prover"),
        (dir.path().join("provetop-run.1"), "--stop-on-hangup"),
        (dir.path().join("provetop-classify.1"), "--log"),
        (prover_page, "--partitions"),
    ] {
        let o = Command::new(&man)
            .arg("-l")
            .arg(&page)
            .env("MANPAGER", "cat")
            .env("PAGER", "cat")
            .env("MANWIDTH", "100")
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&o.stdout);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            o.status.success() && err.trim().is_empty(),
            "{}: {err}",
            page.display()
        );
        // man-db hyphenates and justifies; the flag names stay whole.
        assert!(text.contains(want), "{}: {text}", page.display());
        assert!(text.contains("SYNOPSIS"), "{}: {text}", page.display());
    }
}
