//! A session built from a prover's log file alone (`classify --log`, `replay --log`,
//! `compare --logs`): the morning-after question, "what did the prover do last night?".
//!
//! Contract:
//! * Every line goes through the same grammars as a supervised child's output, the user's
//!   `[[log_rule]]`s first ([`provetop_collect::loglines::Engine`]); every line is also an
//!   output record (source `file`), so replay's log pane shows it.
//! * Time is the log's own: each line is placed at its timestamp (read by the envelope
//!   parsers: env_logger, fil_logger, GOLOG JSON, journald, tracing). A line without one
//!   takes the time of the last line that had one (lines before the first stamped line, that
//!   of the first). The axis starts [`LEAD_NS`] before the earliest stamp (room for spans
//!   that lines state by their duration), and the header's anchors map it back to
//!   wall-clock time, so replay and classify say the log's own dates.
//!   No arrival time enters: a line stamped to the second is placed at that second.
//! * A stamp without a zone (fil_logger: lotus, curio, rust-fil-proofs; journald's `short`)
//!   is local time *of this machine* (`TZ` decides), at that date (daylight saving
//!   included); journald's `short` has no year and is read as this year. The session notes
//!   both when they happen, so a reader knows how the times were read.
//! * No memory, no usage: the session has no samples, so `classify` prints the phases and
//!   proofs only. Phases still open at the end of the log stay open (the log may have been
//!   cut while the prover ran): nothing is failed that the log does not say failed.
//! * A file without a single stamped line is an error (durations would be made up), as is
//!   one that is not a regular file or cannot be read. Lines longer than
//!   [`MAX_OUTPUT_LINE`] are kept cut, unread by the grammars, as a live child's are.

use std::io::BufRead;
use std::path::Path;

use anyhow::Context;
use provetop_collect::loglines::{ansi, envelope, Engine, Rule, MAX_SECS};
use provetop_collect::supervisor::MAX_OUTPUT_LINE;
use provetop_shared::session::{Loaded, SessionHeader, SourceKind};
use provetop_shared::{Mark, OutputLine, OutputSource, Record, RecordBody};

/// Where the axis starts: this long before the earliest stamp, so that a span a line states
/// by its duration alone (`synthesis time: 79.4s` as the log's first line) keeps its start
/// (the grammars believe durations up to [`MAX_SECS`] and a day more is room).
const LEAD_NS: i128 = (MAX_SECS as i128 + 86_400) * 1_000_000_000;

/// One line of the file, with the wall time it carries.
struct Line {
    text: String,
    cut: Option<u64>,
    /// Unix ns of its own stamp.
    wall: Option<i128>,
}

/// What the stamps of a file were like, for the notes.
#[derive(Default)]
struct Seen {
    stamped: usize,
    local: usize,
    no_year: usize,
}

/// Read `path` into lines with their stamps.
fn read_lines(path: &Path) -> anyhow::Result<(Vec<Line>, Seen)> {
    let f = provetop_shared::session::open_regular(path)
        .with_context(|| format!("--log {}", path.display()))?;
    let mut r = std::io::BufReader::new(f);
    let mut lines = Vec::new();
    let mut seen = Seen::default();
    let mut buf = Vec::new();
    loop {
        buf.clear();
        let n = r
            .read_until(b'\n', &mut buf)
            .with_context(|| format!("--log {}: read error", path.display()))?;
        if n == 0 {
            break;
        }
        while matches!(buf.last(), Some(b'\n' | b'\r')) {
            buf.pop();
        }
        let cut = (buf.len() > MAX_OUTPUT_LINE).then_some(buf.len() as u64);
        let head = &buf[..buf.len().min(MAX_OUTPUT_LINE)];
        let text = String::from_utf8_lossy(head).into_owned();
        let wall = if cut.is_none() {
            let clean = ansi::strip(&text);
            let env = envelope::read(&clean);
            env.stamp.map(|s| {
                seen.stamped += 1;
                if s.offset_s.is_none() {
                    seen.local += 1;
                }
                if clean.starts_with(|c: char| c.is_ascii_uppercase())
                    && clean.get(3..4) == Some(" ")
                {
                    // journald `short`: `Mon DD HH:MM:SS`, read as this year.
                    seen.no_year += 1;
                }
                s.unix_ns()
            })
        } else {
            None
        };
        lines.push(Line { text, cut, wall });
    }
    Ok((lines, seen))
}

/// The session of the log file `path`, read with the user's `rules` and the built-in
/// grammars (see the module's contract).
pub fn load(path: &Path, rules: Vec<Rule>) -> anyhow::Result<Loaded> {
    let (lines, seen) = read_lines(path)?;
    let Some(first) = lines.iter().find_map(|l| l.wall) else {
        anyhow::bail!(
            "--log {}: no line carries a timestamp provetop reads ({} lines; formats: \
             env_logger, fil_logger, GOLOG JSON, journald, tracing): its phases cannot be timed",
            path.display(),
            lines.len()
        );
    };
    let min = lines.iter().filter_map(|l| l.wall).min().unwrap_or(first);
    let origin = min - LEAD_NS;
    let axis = |wall: i128| (wall - origin) as u64;
    // No floor: a log has no child start, and what its lines say of the time before their
    // first stamp is the log's own.
    let mut engine = Engine::new(rules);
    let n_lines = lines.len();
    let mut records = Vec::with_capacity(n_lines * 2);
    let mut derived = Vec::new();
    let mut wall = first;
    for l in lines {
        wall = l.wall.unwrap_or(wall);
        let t = axis(wall);
        if l.cut.is_none() {
            // The arrival is the stamp itself: the grammars place the line at its own time.
            engine.line_at(&l.text, t, Some(wall), &mut derived);
        }
        records.push(Record::new(
            t,
            RecordBody::Output(OutputLine {
                source: OutputSource::File,
                text: l.text,
                cut: l.cut,
            }),
        ));
        records.append(&mut derived);
    }
    let mut notes = vec![format!(
        "session built from the log {} ({n_lines} lines, {} with a timestamp): no memory readings",
        path.display(),
        seen.stamped
    )];
    if seen.local > 0 {
        notes.push(format!(
            "{} timestamps carry no zone: read as local time of this machine (TZ={})",
            seen.local,
            std::env::var("TZ").unwrap_or_else(|_| "unset: /etc/localtime".into())
        ));
    }
    if seen.no_year > 0 {
        notes.push(format!(
            "{} timestamps carry no year (journald short): read as this year",
            seen.no_year
        ));
    }
    let t0 = axis(min);
    let mut all: Vec<Record> = notes
        .into_iter()
        .map(|text| Record::new(t0, RecordBody::Mark(Mark::Note { text })))
        .collect();
    all.append(&mut records);
    let mut header = SessionHeader::now(vec!["log".into(), path.display().to_string()], 0.0);
    header.host = String::new();
    // Record time t is wall time origin + t.
    header.wall_anchor = origin.max(0) as u64;
    header.mono_anchor = 0;
    Ok(Loaded {
        header,
        records: all,
        warnings: Vec::new(),
        kind: SourceKind::Session,
    })
}

/// The config file's `[[log_rule]]`s (`--config FILE`, else the default file when present).
pub fn rules(config: Option<&Path>) -> anyhow::Result<Vec<Rule>> {
    Ok(crate::settings::file::load_config(config)?.log_rules)
}
