//! What a session monitors: the bundled prover, a command, an existing process, or a
//! service (a cgroup, or a systemd unit's cgroup and journal: [`super::service`]).

use std::path::PathBuf;

use provetop_collect::supervisor::{self, ChildSpec, Restart};

use crate::cli::{LogSource, RestartPolicy, RunArgs};

/// The process tree a session watches.
pub enum Target {
    /// A command provetop starts and supervises.
    Command(ChildSpec),
    /// A process provetop did not start, and the log it writes when one is followed
    /// (`watch --log`).
    Pid { pid: u32, log: Option<LogSource> },
    /// Every process of a cgroup (`watch --cgroup`, `watch --unit`), and the log followed:
    /// `--log`'s, else a unit's journal where journald runs.
    Cgroup {
        cgroup: super::service::Cgroup,
        /// The unit it was resolved from (`--unit`).
        unit: Option<String>,
        log: Option<LogSource>,
    },
}

impl Target {
    /// `provetop run`'s target: the bundled prover or the command after `--`, with the
    /// restart policy and grace period of the flags; its output goes next to the recording.
    /// `log_rules`: the config file's line rules, for the phases in the child's output.
    pub fn run(
        args: &RunArgs,
        record: Option<&std::path::Path>,
        log_rules: &[provetop_collect::loglines::Rule],
        nvtx_phases: &provetop_collect::nvtx::PhaseMap,
    ) -> anyhow::Result<Target> {
        let restart = match args.restart {
            RestartPolicy::Never => Restart::Never,
            RestartPolicy::OnFailure => Restart::OnFailure {
                max: args.max_restarts,
            },
        };
        Ok(Target::Command(ChildSpec {
            argv: child_argv(args)?,
            env: Vec::new(),
            log_path: record.map(|p| {
                let mut l = p.to_path_buf().into_os_string();
                l.push(".child.log");
                PathBuf::from(l)
            }),
            restart,
            grace: crate::settings::grace(args.grace)?,
            log_rules: log_rules.to_vec(),
            nvtx: nvtx_injection(args, nvtx_phases),
        }))
    }

    /// `provetop watch PID`'s target, checked, following `log` when given.
    pub fn pid(pid: u32, log: Option<LogSource>) -> anyhow::Result<Target> {
        check_watch_pid(pid)?;
        Ok(Target::Pid { pid, log })
    }

    /// `provetop watch`'s target, resolved and checked: a pid, a cgroup, or a unit's cgroup
    /// and journal (`log`, when given, replaces the journal; where journald does not run a
    /// unit has no log, said when the session starts).
    pub fn watch(watched: crate::cli::Watched, log: Option<LogSource>) -> anyhow::Result<Target> {
        use super::service;
        use crate::cli::Watched;
        Ok(match watched {
            Watched::Pid(pid) => Target::pid(pid, log)?,
            Watched::Cgroup(arg) => Target::Cgroup {
                cgroup: service::cgroup(&arg)?,
                unit: None,
                log,
            },
            Watched::Unit(name) => {
                let unit = service::unit_name(&name);
                let cgroup = service::unit_cgroup(&unit)?;
                let log = log.or_else(|| service::journal_command(&unit).map(LogSource::Command));
                Target::Cgroup {
                    cgroup,
                    unit: Some(unit),
                    log,
                }
            }
        })
    }

    /// What the session watches, as its screen and its messages name it ("pid 1234",
    /// "cgroup /system.slice/x", "unit curio.service"); `None` for a supervised command.
    pub fn watched_name(&self) -> Option<String> {
        match self {
            Target::Command(_) => None,
            Target::Pid { pid, .. } => Some(format!("pid {pid}")),
            Target::Cgroup { unit: Some(u), .. } => Some(format!("unit {u}")),
            Target::Cgroup { cgroup, .. } => Some(format!("cgroup {}", cgroup.name)),
        }
    }

    /// Whether the session reads a log on standard input (`watch --log -`): the screen then
    /// takes its keys from the terminal.
    pub fn reads_stdin(&self) -> bool {
        matches!(
            self,
            Target::Pid {
                log: Some(LogSource::Stdin),
                ..
            } | Target::Cgroup {
                log: Some(LogSource::Stdin),
                ..
            }
        )
    }

    /// The command line the session header names.
    pub fn command(&self) -> Vec<String> {
        match self {
            Target::Command(spec) => spec.argv.clone(),
            Target::Pid { pid, .. } => vec!["watch".to_string(), pid.to_string()],
            Target::Cgroup { unit: Some(u), .. } => {
                vec!["watch".into(), "--unit".into(), u.clone()]
            }
            Target::Cgroup { cgroup, .. } => {
                vec!["watch".into(), "--cgroup".into(), cgroup.name.clone()]
            }
        }
    }
}

/// What `provetop run` does about NVTX: hand the child the injection library next to this
/// binary unless `--no-nvtx`; a missing library is said in the session, not an error.
fn nvtx_injection(
    args: &RunArgs,
    phases: &provetop_collect::nvtx::PhaseMap,
) -> provetop_collect::nvtx::Injection {
    use provetop_collect::nvtx::{find_library, Injection};
    if args.no_nvtx {
        return Injection::Off { why: None };
    }
    match find_library() {
        Ok(path) => Injection::Library {
            path,
            phases: phases.clone(),
        },
        Err(why) => Injection::Off { why: Some(why) },
    }
}

/// The bundled prover: `provetop-prover` next to this binary, else on PATH.
pub fn bundled_prover() -> anyhow::Result<PathBuf> {
    let name = "provetop-prover";
    if let Ok(exe) = std::env::current_exe() {
        if let Some(dir) = exe.parent() {
            let p = dir.join(name);
            if p.is_file() {
                return Ok(p);
            }
        }
    }
    if let Some(path) = std::env::var_os("PATH") {
        for dir in std::env::split_paths(&path) {
            let p = dir.join(name);
            if p.is_file() {
                return Ok(p);
            }
        }
    }
    let here = std::env::current_exe()
        .ok()
        .and_then(|e| e.parent().map(|d| d.display().to_string()))
        .unwrap_or_else(|| "?".into());
    anyhow::bail!(
        "the bundled prover `{name}` is neither next to provetop ({here}) nor on PATH; build it (`cargo build -p provetop-prover`) or give a command: provetop run -- CMD ARGS"
    )
}

/// The command line `provetop run` supervises.
pub fn child_argv(args: &RunArgs) -> anyhow::Result<Vec<String>> {
    if !args.command.is_empty() {
        if args.partitions.is_some()
            || args.constraints.is_some()
            || args.mode.is_some()
            || args.proofs.is_some()
            || args.mem_budget.is_some()
            || args.gpus.is_some()
        {
            anyhow::bail!("--partitions/--constraints/--mode/--proofs/--mem-budget/--gpus configure the bundled prover; pass them to your own command after -- instead");
        }
        return Ok(args.command.clone());
    }
    let mut v = vec![
        bundled_prover()?.display().to_string(),
        "--events-fd".into(),
        supervisor::EVENTS_FD.to_string(),
        // Quitting provetop should not wait for a proof to finish.
        "--on-sigterm".into(),
        "abort".into(),
    ];
    if args.proofs.is_none() {
        // The demo: a daemon proving one after another (and whatever the keys ask for)
        // until quit. With `--proofs N` the prover runs standalone: it proves N and exits,
        // and the session ends with it.
        v.extend(["--daemon".into(), "--repeat-every".into(), "2".into()]);
    }
    if let Some(p) = args.partitions {
        v.extend(["--partitions".into(), p.to_string()]);
    }
    if let Some(c) = args.constraints {
        v.extend(["--constraints".into(), c.to_string()]);
    }
    if let Some(m) = args.mode {
        v.extend(["--mode".into(), m.to_string()]);
    }
    if let Some(n) = args.proofs {
        v.extend(["--proofs".into(), n.to_string()]);
    }
    if let Some(b) = &args.mem_budget {
        provetop_shared::units::parse_bytes(b).map_err(|e| anyhow::anyhow!("--mem-budget: {e}"))?;
        v.extend(["--mem-budget".into(), b.clone()]);
    }
    if let Some(g) = &args.gpus {
        // The prover checks the list against the GPUs it finds and says what is wrong.
        v.extend(["--gpus".into(), g.clone()]);
    }
    Ok(v)
}

/// Check that `pid` exists and is ours (we need to reset its peak counter).
pub fn check_watch_pid(pid: u32) -> anyhow::Result<()> {
    use std::os::unix::fs::MetadataExt;
    if pid == 0 || pid > i32::MAX as u32 {
        anyhow::bail!("pid {pid}: not a process id");
    }
    let meta = match std::fs::metadata(format!("/proc/{pid}")) {
        Ok(m) => m,
        Err(_) => anyhow::bail!("no process with pid {pid}"),
    };
    let me = nix::unistd::geteuid().as_raw();
    if me != 0 && meta.uid() != me {
        anyhow::bail!(
            "pid {pid} belongs to another user (uid {}); provetop can only watch your own processes (run it as that user or as root)",
            meta.uid()
        );
    }
    unsampleable(pid).map_or(Ok(()), |why| Err(anyhow::anyhow!(why)))
}

/// Why the memory of `pid` cannot be sampled at all, when it cannot: a kernel thread (no user
/// memory map), or a process that has exited (a zombie) or is exiting. `/proc/PID/status` has
/// no `VmRSS` line in each case.
fn unsampleable(pid: u32) -> Option<String> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    if status.lines().any(|l| l.starts_with("VmRSS:")) {
        return None;
    }
    let field = |key: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(key))
            .map_or("", str::trim)
    };
    let name = crate::text::inert(field("Name:")).into_owned();
    // PF_KTHREAD, in the flags field (the 9th) of /proc/PID/stat, after the parenthesized name.
    const PF_KTHREAD: u64 = 0x0020_0000;
    let kthread = std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            let rest = &s[s.rfind(')')? + 1..];
            rest.split_whitespace().nth(6)?.parse::<u64>().ok()
        })
        .is_some_and(|flags| flags & PF_KTHREAD != 0);
    let state = field("State:");
    Some(if kthread {
        format!(
            "pid {pid} ({name}) is a kernel thread: it has no user memory (no VmRSS in /proc/{pid}/status), so provetop has nothing to sample; watch a user process"
        )
    } else if state.starts_with('Z') || state.starts_with('X') {
        format!(
            "pid {pid} ({name}) has exited (a zombie its parent has not reaped): it holds no memory to sample"
        )
    } else {
        format!(
            "pid {pid} ({name}) has no memory map (no VmRSS in /proc/{pid}/status: it is exiting): nothing to sample"
        )
    })
}

/// The command line of a process, for notes ("?" when unreadable).
pub fn cmdline(pid: u32) -> String {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .ok()
        .map(|b| {
            b.split(|c| *c == 0)
                .filter(|s| !s.is_empty())
                .map(|s| String::from_utf8_lossy(s).into_owned())
                .collect::<Vec<_>>()
                .join(" ")
        })
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "?".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn watch_pid_errors() {
        assert!(check_watch_pid(std::process::id()).is_ok());
        let e = check_watch_pid(0).unwrap_err().to_string();
        assert!(e.contains("not a process id"), "{e}");
        let e = check_watch_pid(i32::MAX as u32 - 1)
            .unwrap_err()
            .to_string();
        assert!(e.contains("no process with pid"), "{e}");
        if nix::unistd::geteuid().as_raw() != 0 {
            let e = check_watch_pid(1).unwrap_err().to_string();
            assert!(e.contains("another user"), "{e}");
        }
    }

    #[test]
    fn own_command_refuses_prover_flags() {
        use clap::Parser;
        let cli = crate::cli::Cli::try_parse_from([
            "provetop",
            "run",
            "--partitions",
            "2",
            "--",
            "sleep",
            "1",
        ])
        .unwrap();
        let Some(crate::cli::Command::Run(a)) = cli.command else {
            panic!()
        };
        assert!(child_argv(&a).is_err());
        let cli = crate::cli::Cli::try_parse_from(["provetop", "run", "--", "sleep", "1"]).unwrap();
        let Some(crate::cli::Command::Run(a)) = cli.command else {
            panic!()
        };
        assert_eq!(child_argv(&a).unwrap(), vec!["sleep", "1"]);
    }

    #[test]
    fn proofs_n_runs_the_bundled_prover_standalone() {
        use clap::Parser;
        let argv = |args: &[&str]| {
            let cli = crate::cli::Cli::try_parse_from(args).unwrap();
            let Some(crate::cli::Command::Run(a)) = cli.command else {
                panic!()
            };
            child_argv(&a).map(|v| v[1..].join(" "))
        };
        // Only where the bundled prover can be found (next to the test binary's provetop).
        let Ok(demo) = argv(&["provetop", "run"]) else {
            return;
        };
        assert!(demo.contains("--daemon --repeat-every 2"), "{demo}");
        let n = argv(&["provetop", "run", "--proofs", "3"]).unwrap();
        assert!(
            !n.contains("--daemon") && !n.contains("--repeat-every"),
            "{n}"
        );
        assert!(n.contains("--proofs 3"), "{n}");
    }
}
