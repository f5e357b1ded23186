//! `provetop compare BASELINE OTHER [OTHER...]`: sessions side by side.
//!
//! Each file (session or `timestamp,rss_kb` CSV, mixed) is opened by the [`Store`] (the one
//! reader and the one reducer pass that `classify` and `export` use) and summarized over the
//! proofs selected for it ([`summary`]); the [`table`] puts the figures side by side and
//! renders them; [`rules`] is the `--fail-if` gate (the baseline the replay and live screens
//! draw is [`crate::baseline`]). Nothing here reads a file or folds a record another way
//! than the store does.
//!
//! Exit status: 0; [`REGRESSION_EXIT`] when a `--fail-if` rule fails; 1 on an error (a file
//! that cannot be read, a bad rule: before anything is loaded).

pub mod rules;
pub mod summary;
pub mod table;

use std::path::PathBuf;

use provetop_shared::classify::Thresholds;

use crate::store::Store;
use rules::FailIf;
use summary::{parse_range, Selection};
use table::Comparison;

/// Exit status when the other session is worse than a `--fail-if` rule allows.
pub const REGRESSION_EXIT: i32 = 3;

pub use crate::cli::{CompareArgs, CompareFormat};

/// The per-file selections: one flag for all, or one per file.
fn selections(args: &CompareArgs) -> anyhow::Result<Vec<Selection>> {
    let n = 1 + args.others.len();
    let pick = |len: usize, flag: &str| -> anyhow::Result<()> {
        if len > 1 && len != n {
            anyhow::bail!(
                "{flag} given {len} times for {n} files: give it once (every file) or once per file, the baseline first"
            );
        }
        Ok(())
    };
    pick(args.mode.len(), "--mode")?;
    pick(args.proofs.len(), "--proofs")?;
    let ranges: Vec<(usize, Option<usize>)> = args
        .proofs
        .iter()
        .map(|s| parse_range(s).map_err(|e| anyhow::anyhow!("--proofs: {e}")))
        .collect::<anyhow::Result<_>>()?;
    Ok((0..n)
        .map(|i| Selection {
            mode: args.mode.get(i).or(args.mode.first()).copied(),
            range: ranges.get(i).or(ranges.first()).copied(),
        })
        .collect())
}

/// Open every file (one after the other, each streamed) and compare.
pub fn compare(
    paths: &[PathBuf],
    sels: &[Selection],
    thresholds: Thresholds,
) -> anyhow::Result<Comparison> {
    compare_with(paths, sels, thresholds, false)
}

/// A file as a store: a session or CSV, else (with `logs`) a prover's log read into a
/// session ([`crate::logsession`]); a log that cannot be read says both why.
fn open(p: &std::path::Path, thresholds: Thresholds, logs: bool) -> anyhow::Result<Store> {
    match Store::scan(p, thresholds) {
        Ok(s) => Ok(s),
        Err(e @ provetop_shared::session::LoadError::Format { .. }) if logs => {
            let rules = crate::logsession::rules(None)?;
            let loaded = crate::logsession::load(p, rules)
                .map_err(|l| anyhow::anyhow!("{e}; as a log: {l:#}"))?;
            Ok(Store::scan_loaded(p, loaded, thresholds))
        }
        // LoadError already names the file and the cause.
        Err(e) => Err(anyhow::anyhow!("{e}")),
    }
}

/// [`compare`], reading files that are neither sessions nor CSVs as logs when `logs`.
pub fn compare_with(
    paths: &[PathBuf],
    sels: &[Selection],
    thresholds: Thresholds,
    logs: bool,
) -> anyhow::Result<Comparison> {
    // Each file is read, reduced and summarized in turn, its records never held: the memory
    // of a comparison is that of its largest file, not of all of them at once.
    let mut sums: Vec<summary::Summary> = paths
        .iter()
        .zip(sels)
        .map(|(p, sel)| {
            // A session streams in bounded memory; a CSV or a log is loaded whole.
            let stream = provetop_shared::session::stream::Stream::open(p)
                .map_err(|e| anyhow::anyhow!("{e}"))?;
            if let Some(src) = stream {
                return summary::summarize_stream(p, &src, sel, thresholds);
            }
            let store = open(p, thresholds, logs)?;
            summary::summarize_store(&store, sel)
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    let baseline = sums.remove(0);
    Ok(Comparison::new(baseline, sums))
}

/// Run `provetop compare`; returns the process exit code.
pub fn main(args: &CompareArgs) -> anyhow::Result<i32> {
    // Rules first: a typo in a CI gate is an error before any file is read.
    let rules: Vec<FailIf> = args
        .fail_if
        .iter()
        .map(|r| r.parse::<FailIf>().map_err(anyhow::Error::msg))
        .collect::<anyhow::Result<_>>()?;
    let sels = selections(args)?;
    let mut paths = vec![args.baseline.clone()];
    paths.extend(args.others.iter().cloned());
    let c = compare_with(&paths, &sels, args.thresholds, args.logs)?;
    let verdicts = rules::check(&rules, &c);
    let text = match args.format {
        CompareFormat::Table => {
            let mut t = table::render_text(&c);
            if !verdicts.is_empty() {
                t.push('\n');
                for v in &verdicts {
                    t.push_str(&format!(
                        "rule {}: {}: {}: {}\n",
                        v.rule,
                        crate::text::inert(&v.other),
                        if v.ok { "ok" } else { "FAILED" },
                        v.text
                    ));
                }
            }
            t
        }
        CompareFormat::Markdown => table::render_markdown(&c),
        CompareFormat::Json => {
            let mut j = table::to_json(&c);
            j["rules"] = serde_json::json!(verdicts
                .iter()
                .map(|v| serde_json::json!({
                    "rule": v.rule, "other": v.other, "ok": v.ok, "text": v.text,
                }))
                .collect::<Vec<_>>());
            let mut s = serde_json::to_string_pretty(&j)?;
            s.push('\n');
            s
        }
        CompareFormat::Csv => table::render_csv(&c),
    };
    crate::export::write_stdout(text.as_bytes())?;
    let failed: Vec<_> = verdicts.iter().filter(|v| !v.ok).collect();
    for v in &failed {
        crate::say!(
            "provetop: compare: {} fails --fail-if '{}': {}",
            crate::text::inert(&v.other),
            v.rule,
            v.text
        );
    }
    Ok(if failed.is_empty() {
        0
    } else {
        REGRESSION_EXIT
    })
}
