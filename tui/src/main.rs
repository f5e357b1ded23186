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

fn main() {
    // A file-size limit (`ulimit -f`) must become a write error the recorder reports, not
    // kill provetop: SIGXFSZ's default action terminates. A handler rather than SIG_IGN, so
    // supervised children start with the default disposition again (exec resets handlers).
    let _ = signal_hook::flag::register(
        signal_hook::consts::SIGXFSZ,
        std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false)),
    );
    let cli = Cli::parse();
    let result = match &cli.command {
        Some(Command::Classify(a)) => provetop::classify::main(a),
        Some(Command::Export(a)) => provetop::export::main(a),
        Some(Command::Run(a)) => provetop::live::main_run(a),
        Some(Command::Watch(a)) => provetop::live::main_watch(a),
        Some(Command::Replay(a)) => provetop::replay::main(a),
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
