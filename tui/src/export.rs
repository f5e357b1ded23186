//! `provetop export` (owned by the offline work).

use crate::cli::ExportArgs;

/// Run `provetop export`; returns the process exit code.
pub fn main(args: &ExportArgs) -> anyhow::Result<i32> {
    anyhow::bail!("export {}: not built yet", args.file.display())
}
