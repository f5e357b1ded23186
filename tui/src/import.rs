//! `provetop import FILE.jsonl -o OUT.ptop`: a session written from JSON lines, one
//! [`Record`] per line as `provetop export --format jsonl` writes them (edited with `jq`, or
//! made by another tool), so that an export records again: exporting the imported session
//! gives the same lines back.
//!
//! The header (host, command, clock anchors, rate) is not in JSON lines: `--like SESSION`
//! takes it from a session (the one exported, so that a CSV export has the same times);
//! without it the clock anchors are those of the first record (times read from 1970) and the
//! rate is the median sampling interval's. The session is compact (format 2), written as the
//! recorder writes one, in bounded memory; a line that is not a record is an error naming its
//! line, and the half-written output is removed.

use std::io::{BufRead, BufReader};
use std::path::Path;

use anyhow::Context as _;
use provetop_shared::session::{SessionHeader, SessionWriter};
use provetop_shared::{Record, RecordBody};

use crate::cli::ImportArgs;

/// Records between two flushes of the writer (a recorder flushes about once a second).
const FLUSH_EVERY: u64 = 4096;

/// Run `provetop import`; returns the process exit code.
pub fn main(args: &ImportArgs) -> anyhow::Result<i32> {
    let header = match &args.like {
        Some(s) => like(s)?,
        None => plain(&args.file)?,
    };
    let mut w = SessionWriter::create_compact(&args.output, &header)
        .with_context(|| format!("cannot create {}", args.output.display()))?;
    match copy(&args.file, &mut w) {
        Ok(n) => {
            w.sync()
                .with_context(|| format!("writing {}", args.output.display()))?;
            crate::say!(
                "provetop: import: {n} records into {}",
                args.output.display()
            );
            Ok(0)
        }
        Err(e) => {
            drop(w);
            let _ = std::fs::remove_file(&args.output);
            Err(e)
        }
    }
}

/// The header of the session `s`.
fn like(s: &Path) -> anyhow::Result<SessionHeader> {
    match provetop_shared::session::stream::Stream::open(s).map_err(|e| anyhow::anyhow!("{e}"))? {
        Some(src) => Ok(src.header),
        None => Ok(provetop_shared::session::load(s)
            .map_err(|e| anyhow::anyhow!("--like: {e}"))?
            .header),
    }
}

/// A header for records with no session beside them: anchored at the first record's time,
/// the rate from the median gap between samples.
fn plain(file: &Path) -> anyhow::Result<SessionHeader> {
    let mut first: Option<u64> = None;
    let mut gaps = provetop_shared::nth::Nth::new(provetop_shared::nth::upper_median);
    let mut prev: Option<u64> = None;
    let mut each = |r: &Record| {
        first.get_or_insert(r.t);
        if let RecordBody::Sample(_) = r.body {
            if let Some(p) = prev {
                gaps.feed(r.t.saturating_sub(p));
            }
            prev = Some(r.t);
        }
    };
    lines(file, &mut each)?;
    let mut gap = gaps.end_pass();
    while gap.is_none() {
        prev = None;
        lines(file, &mut |r| {
            if let RecordBody::Sample(_) = r.body {
                if let Some(p) = prev {
                    gaps.feed(r.t.saturating_sub(p));
                }
                prev = Some(r.t);
            }
        })?;
        gap = gaps.end_pass();
    }
    let hz = match gap.flatten() {
        Some(g) if g > 0 => 1e9 / g as f64,
        _ => 0.0,
    };
    let mut h = SessionHeader::now(vec!["import".into(), file.display().to_string()], hz);
    h.host = String::new();
    h.wall_anchor = 0;
    h.mono_anchor = 0;
    Ok(h)
}

/// Every record of `file` to the writer; how many.
fn copy(file: &Path, w: &mut SessionWriter) -> anyhow::Result<u64> {
    let mut n = 0u64;
    let mut failed: Option<std::io::Error> = None;
    lines(file, &mut |r| {
        if failed.is_none() {
            failed = w.append(r).err();
            n += 1;
            if n % FLUSH_EVERY == 0 && failed.is_none() {
                failed = w.flush().err();
            }
        }
    })?;
    if let Some(e) = failed {
        return Err(e).context("writing the session");
    }
    Ok(n)
}

/// Each line of `file` as a record (blank lines skipped); the first that is not one is an
/// error naming its line.
fn lines(file: &Path, each: &mut dyn FnMut(&Record)) -> anyhow::Result<()> {
    let f = provetop_shared::session::open_regular(file)
        .with_context(|| format!("cannot read {}", file.display()))?;
    let mut r = BufReader::with_capacity(1 << 20, f);
    let mut line = String::new();
    let mut no = 0u64;
    loop {
        line.clear();
        let got = r
            .read_line(&mut line)
            .with_context(|| format!("{}: line {}", file.display(), no + 1))?;
        if got == 0 {
            return Ok(());
        }
        no += 1;
        if line.trim().is_empty() {
            continue;
        }
        let rec: Record = serde_json::from_str(&line).map_err(|e| {
            anyhow::anyhow!(
                "{}: line {no}: not a provetop record ({e}); JSON lines as `provetop export --format jsonl` writes them",
                file.display()
            )
        })?;
        each(&rec);
    }
}
