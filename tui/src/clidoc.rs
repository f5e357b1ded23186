//! `provetop completions SHELL` and `provetop man`: shell completion scripts and man pages
//! made from the clap definitions ([`crate::cli::Cli`]), so they never drift from `--help`.
//!
//! `man` prints provetop.1 (roff; `provetop man | man -l -` reads it); `man --dir DIR`
//! writes provetop.1 and one page per subcommand (`provetop-run.1`, …) for installing
//! under a `man1` folder. The prover's own pages come from `provetop-prover --completions
//! SHELL` and `--man` (prover/src/cli.rs).

use std::io::Write;
use std::path::Path;

use anyhow::Context;
use clap::CommandFactory;

use crate::cli::{Cli, CompletionsArgs, ManArgs};

/// The name completions are registered for (the binary's).
const BIN: &str = "provetop";

/// `provetop completions SHELL`.
pub fn completions(args: &CompletionsArgs) -> anyhow::Result<i32> {
    let mut out = Vec::new();
    clap_complete::generate(args.shell, &mut Cli::command(), BIN, &mut out);
    crate::export::write_stdout(&out)?;
    Ok(0)
}

/// `provetop man [--dir DIR]`.
pub fn man(args: &ManArgs) -> anyhow::Result<i32> {
    match &args.dir {
        None => {
            let mut out = Vec::new();
            clap_mangen::Man::new(Cli::command()).render(&mut out)?;
            crate::export::write_stdout(&out)?;
        }
        Some(dir) => {
            let written = write_pages(dir)?;
            let mut out = std::io::stdout().lock();
            for p in written {
                let _ = writeln!(out, "{}", p.display());
            }
        }
    }
    Ok(0)
}

/// Write provetop.1 and a page per visible subcommand into `dir`; the paths written.
pub fn write_pages(dir: &Path) -> anyhow::Result<Vec<std::path::PathBuf>> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot make {}", dir.display()))?;
    let mut cmd = Cli::command();
    // Built, each subcommand knows its display name (`provetop-run`) and its usage line
    // (`provetop run`).
    cmd.build();
    let mut pages: Vec<clap_mangen::Man> = cmd
        .get_subcommands()
        .filter(|s| !s.is_hide_set() && s.get_name() != "help")
        .map(|s| clap_mangen::Man::new(s.clone()))
        .collect();
    pages.insert(0, clap_mangen::Man::new(cmd));
    let mut written = Vec::new();
    for man in pages {
        let path = dir.join(man.get_filename());
        let mut text = Vec::new();
        man.render(&mut text)?;
        std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))?;
        written.push(path);
    }
    Ok(written)
}
