//! The `provetop` binary: parse the command line and dispatch.

use clap::Parser;
use provetop::cli::{Cli, Command, RunArgs};

fn default_run() -> RunArgs {
    // `provetop` alone is `provetop run` with every default.
    match Cli::parse_from(["provetop", "run"]).command {
        Some(Command::Run(a)) => a,
        _ => unreachable!("`run` parses to Command::Run"),
    }
}

/// Does nothing: being a handler (not SIG_IGN) is the point.
extern "C" fn on_sigxfsz(_: nix::libc::c_int) {}

fn ignore_sigxfsz() {
    use nix::sys::signal::{sigaction, SaFlags, SigAction, SigHandler, SigSet, Signal};
    let act = SigAction::new(
        SigHandler::Handler(on_sigxfsz),
        SaFlags::SA_RESTART,
        SigSet::empty(),
    );
    // SAFETY: the handler is an empty function, so it is async-signal-safe, and it replaces
    // SIGXFSZ's default action before any other thread exists.
    let _ = unsafe { sigaction(Signal::SIGXFSZ, &act) };
}

/// Raise the soft limit of open files to the hard one, for the readers: a rotated set kept
/// long has more parts (each held open by replay, with its chunk heads' temporary file) than
/// the usual soft limit of 1024. Only the readers: `run`, `serve` and `watch` leave the
/// limits their supervised prover inherits as they found them.
fn raise_open_files() {
    use nix::sys::resource::{getrlimit, setrlimit, Resource};
    if let Ok((soft, hard)) = getrlimit(Resource::RLIMIT_NOFILE) {
        if soft < hard {
            // Where it cannot be raised, the parts open as far as the limit lets them, and the
            // one that cannot says so.
            let _ = setrlimit(Resource::RLIMIT_NOFILE, hard, hard);
        }
    }
}

fn main() {
    // A file-size limit (`ulimit -f`) must become a write error the recorder reports, not
    // kill provetop: SIGXFSZ's default action terminates. A handler rather than SIG_IGN, so
    // supervised children start with the default disposition again (exec resets handlers).
    ignore_sigxfsz();
    // The guard (a hidden subcommand, not on the command line's --help): kills the
    // supervised trees if this provetop dies without stopping them (supervisor/guard.rs).
    if std::env::args_os().nth(1).as_deref()
        == Some(std::ffi::OsStr::new(
            provetop_collect::supervisor::GUARD_ARG,
        ))
    {
        std::process::exit(provetop_collect::supervisor::guard_main());
    }
    if let Ok(exe) = std::env::current_exe() {
        provetop_collect::supervisor::enable_guard(exe);
    }
    let cli = Cli::parse();
    if matches!(
        cli.command,
        Some(
            Command::Classify(_)
                | Command::Compare(_)
                | Command::Export(_)
                | Command::Replay(_)
                | Command::Attach(_)
                | Command::Ls(_)
        )
    ) {
        raise_open_files();
    }
    let result = match &cli.command {
        Some(Command::Classify(a)) => provetop::classify::main(a),
        Some(Command::Compare(a)) => provetop::compare::main(a),
        Some(Command::Export(a)) => provetop::export::main(a),
        Some(Command::Import(a)) => provetop::import::main(a),
        Some(Command::Run(a)) => provetop::live::main_run(a),
        Some(Command::Watch(a)) => provetop::live::main_watch(a),
        Some(Command::Replay(a)) => provetop::replay::main(a),
        Some(Command::Serve(a)) => provetop::live::main_serve(a),
        // `HOST:SESSION` and `ls HOST`: another machine's, over ssh.
        Some(Command::Attach(a)) => match a
            .session
            .as_deref()
            .and_then(provetop::remote::Target::parse)
        {
            Some(t) => t.and_then(|t| provetop::remote::attach::main(a, &t)),
            None => provetop::attach::main(a),
        },
        Some(Command::Ls(a)) => match &a.host {
            Some(h) => provetop::remote::ls::main(h, a.remote_provetop.as_deref()),
            None => provetop::sessions::main(a),
        },
        Some(Command::Fleet(a)) => provetop::fleet::main(a),
        Some(Command::RemoteBridge(a)) => provetop::remote::bridge::main(a),
        Some(Command::Status(a)) => provetop::control_cli::status(a),
        Some(Command::Mark(a)) => provetop::control_cli::mark(a),
        Some(Command::Completions(a)) => provetop::clidoc::completions(a),
        Some(Command::Man(a)) => provetop::clidoc::man(a),
        None => provetop::live::main_run(&default_run()),
    };
    match result {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            provetop::say!("provetop: {e:#}");
            std::process::exit(1);
        }
    }
}
