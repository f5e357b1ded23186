//! `provetop classify`: the seed's threshold table, then a summary (owned by the offline work).

use crate::cli::ClassifyArgs;

/// Run `provetop classify`; returns the process exit code.
pub fn main(args: &ClassifyArgs) -> anyhow::Result<i32> {
    anyhow::bail!("classify {}: not built yet", args.file.display())
}
