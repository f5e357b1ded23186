//! The `provetop` binary: parse the command line and dispatch.

use clap::Parser;
use provetop::cli::{Cli, Command};

fn main() {
    let cli = Cli::parse();
    let result = match &cli.command {
        Some(Command::Classify(a)) => provetop::classify::main(a),
        Some(Command::Export(a)) => provetop::export::main(a),
        Some(other) => Err(anyhow::anyhow!("{other:?}: not built yet")),
        None => Err(anyhow::anyhow!("live monitor not built yet")),
    };
    match result {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            eprintln!("provetop: {e:#}");
            std::process::exit(1);
        }
    }
}
