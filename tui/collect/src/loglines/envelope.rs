//! The envelope of a log line: its own time, level and target around the message, in the
//! formats provers' loggers write. Tried in order, the first that fits wins; a line that
//! fits none is all message ([`Format::Plain`]).
//!
//! * journald's prefix (`journalctl` short, short-precise, short-iso): stripped, and what
//!   follows is read again (curio's and lotus' lines inside it);
//! * JSON: GOLOG (`GOLOG_LOG_FMT=json`, fil_logger's `RUST_LOG_JSON`) and tracing-subscriber's
//!   JSON ([`super::tracing`] reads its spans);
//! * `env_logger` (`[2026-03-14T17:52:44Z INFO  target] msg`, with or without a time, and
//!   with a program's prefix such as `provetop-prover: [debug target] msg`);
//! * `fil_logger` (`2026-02-25T23:02:14.971 INFO target > msg`, local time);
//! * tracing-subscriber's fmt (`2026-03-14T17:52:44.123456Z  INFO span{a=1}: target: msg`);
//! * a bare `LEVEL target: msg`.

use std::borrow::Cow;

use super::stamp::{parse_iso, Stamp};

/// Which format a line was read in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    EnvLogger,
    FilLogger,
    Golog,
    TracingFmt,
    TracingJson,
    Bare,
    Plain,
}

/// A log level.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    Error,
    Warn,
    Info,
    Debug,
    Trace,
}

impl Level {
    /// `ERROR`, `warn`, `Info`, …; also GOLOG's `dpanic`/`panic`/`fatal` (errors).
    pub fn parse(s: &str) -> Option<Level> {
        Some(match s.to_ascii_lowercase().as_str() {
            "error" | "err" | "fatal" | "panic" | "dpanic" | "crit" => Level::Error,
            "warn" | "warning" => Level::Warn,
            "info" => Level::Info,
            "debug" => Level::Debug,
            "trace" => Level::Trace,
            _ => return None,
        })
    }

    /// The protocol's spelling of a level.
    pub fn name(self) -> &'static str {
        match self {
            Level::Error => "error",
            Level::Warn => "warn",
            Level::Info => "info",
            Level::Debug => "debug",
            Level::Trace => "trace",
        }
    }
}

/// A line taken apart.
#[derive(Debug, Clone, PartialEq)]
pub struct Envelope<'a> {
    pub format: Format,
    pub stamp: Option<Stamp>,
    pub level: Option<Level>,
    /// The logger's target (module path), where the format has one.
    pub target: Option<Cow<'a, str>>,
    pub msg: Cow<'a, str>,
    /// tracing: the innermost span the event is in (a `close` event's own span).
    pub span: Option<Cow<'a, str>>,
    /// tracing: `time.busy` and `time.idle` of a close event, or other fields as text.
    pub fields: Vec<(Cow<'a, str>, Cow<'a, str>)>,
}

impl<'a> Envelope<'a> {
    fn plain(msg: &'a str) -> Self {
        Envelope {
            format: Format::Plain,
            stamp: None,
            level: None,
            target: None,
            msg: Cow::Borrowed(msg),
            span: None,
            fields: Vec::new(),
        }
    }

    /// The value of a field.
    pub fn field(&self, name: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_ref())
    }

    /// Whether the target starts with one of `prefixes` (or the line has no target).
    pub fn target_is(&self, prefixes: &[&str]) -> bool {
        match &self.target {
            Some(t) => prefixes.iter().any(|p| t.starts_with(p)),
            None => true,
        }
    }
}

/// Take `line` (escape sequences already stripped) apart.
pub fn read(line: &str) -> Envelope<'_> {
    let line = line.trim_end_matches(['\r', '\n']);
    if let Some((stamp, rest)) = journald(line) {
        let mut e = read_inner(rest);
        if e.stamp.is_none() {
            e.stamp = stamp;
        }
        return e;
    }
    read_inner(line)
}

fn read_inner(line: &str) -> Envelope<'_> {
    let trimmed = line.trim_start();
    if trimmed.starts_with('{') {
        if let Some(e) = json(trimmed) {
            return e;
        }
    }
    if let Some(e) = env_logger(line) {
        return e;
    }
    if let Some((stamp, used)) = parse_iso(line) {
        let rest = &line[used..];
        if let Some(e) = fil_logger(stamp, rest) {
            return e;
        }
        if let Some(e) = tracing_fmt(stamp, rest) {
            return e;
        }
    }
    if let Some(e) = bare(line) {
        return e;
    }
    Envelope::plain(line)
}

fn is_target(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | ':' | '-' | '.' | '/'))
}

/// `[TIME LEVEL target] msg`, `[LEVEL target] msg`, `[LEVEL] msg`, after an optional
/// `program: ` prefix.
fn env_logger(line: &str) -> Option<Envelope<'_>> {
    let open = line.find('[')?;
    let prefix = &line[..open];
    if !(prefix.is_empty() || prefix.ends_with(": ")) || prefix.len() > 64 {
        return None;
    }
    let close = open + line[open..].find(']')?;
    let inside = &line[open + 1..close];
    let msg = line[close + 1..]
        .strip_prefix(' ')
        .unwrap_or(&line[close + 1..]);
    let mut words = inside.split_whitespace();
    let mut first = words.next()?;
    let mut stamp = None;
    if let Some((s, used)) = parse_iso(first) {
        if used == first.len() {
            stamp = Some(s);
            first = words.next()?;
        }
    }
    let level = Level::parse(first)?;
    let target = words.next();
    if words.next().is_some() || target.is_some_and(|t| !is_target(t)) {
        return None;
    }
    Some(Envelope {
        format: Format::EnvLogger,
        stamp,
        level: Some(level),
        target: target.map(Cow::Borrowed),
        msg: Cow::Borrowed(msg),
        span: None,
        fields: Vec::new(),
    })
}

/// After fil_logger's time: ` LEVEL target > msg`.
fn fil_logger(stamp: Stamp, rest: &str) -> Option<Envelope<'_>> {
    let rest = rest.strip_prefix(' ')?;
    let (lvl, rest) = rest.split_once(' ')?;
    let level = Level::parse(lvl)?;
    let (target, msg) = rest.split_once(" > ").or_else(|| {
        // An empty message: "target >".
        rest.strip_suffix(" >").map(|t| (t, ""))
    })?;
    if !is_target(target) {
        return None;
    }
    Some(Envelope {
        format: Format::FilLogger,
        stamp: Some(stamp),
        level: Some(level),
        target: Some(Cow::Borrowed(target)),
        msg: Cow::Borrowed(msg),
        span: None,
        fields: Vec::new(),
    })
}

/// After tracing's time: `  LEVEL [spans: ]target: msg fields`.
fn tracing_fmt(stamp: Stamp, rest: &str) -> Option<Envelope<'_>> {
    let rest = rest.trim_start();
    let (lvl, rest) = rest.split_once(' ')?;
    let level = Level::parse(lvl)?;
    let rest = rest.trim_start();
    let (head, tail) = rest.split_once(": ")?;
    // `outer{a=1}:inner: target: msg` or `target: msg`.
    let (span, target, msg) = match tail.split_once(": ") {
        Some((t, m)) if is_target(t) && (head.ends_with('}') || !head.contains("::")) => {
            (Some(innermost_span(head)), t, m)
        }
        _ => (None, head, tail),
    };
    if !is_target(target) {
        return None;
    }
    // The event's fields, then the innermost span's own (`synthesize{partition=0}`).
    let mut fields: Vec<(Cow<'_, str>, Cow<'_, str>)> = msg
        .split(' ')
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (Cow::Borrowed(k), Cow::Borrowed(v)))
        .collect();
    if let Some((name, inner)) = span {
        fields.extend(
            inner
                .split(' ')
                .filter_map(|kv| kv.split_once('='))
                .map(|(k, v)| (Cow::Borrowed(k), Cow::Borrowed(v))),
        );
        return Some(Envelope {
            format: Format::TracingFmt,
            stamp: Some(stamp),
            level: Some(level),
            target: Some(Cow::Borrowed(target)),
            msg: Cow::Borrowed(msg),
            span: Some(Cow::Borrowed(name)),
            fields,
        });
    }
    Some(Envelope {
        format: Format::TracingFmt,
        stamp: Some(stamp),
        level: Some(level),
        target: Some(Cow::Borrowed(target)),
        msg: Cow::Borrowed(msg),
        span: None,
        fields,
    })
}

/// The last span of `outer{a=1}:inner{b=2}`: its name ("inner") and fields ("b=2").
fn innermost_span(path: &str) -> (&str, &str) {
    // Split at ':' outside braces.
    let mut depth = 0;
    let mut last_start = 0;
    for (i, c) in path.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ':' if depth == 0 => last_start = i + 1,
            _ => {}
        }
    }
    let last = &path[last_start..];
    match last.split_once('{') {
        Some((name, rest)) => (name, rest.strip_suffix('}').unwrap_or(rest)),
        None => (last, ""),
    }
}

/// `LEVEL target: msg` (what a shell script that imitates a logger prints).
fn bare(line: &str) -> Option<Envelope<'_>> {
    let (lvl, rest) = line.split_once(' ')?;
    let level = Level::parse(lvl)?;
    let rest = rest.trim_start();
    let (target, msg) = rest.split_once(": ")?;
    if !is_target(target) {
        return None;
    }
    Some(Envelope {
        format: Format::Bare,
        stamp: None,
        level: Some(level),
        target: Some(Cow::Borrowed(target)),
        msg: Cow::Borrowed(msg),
        span: None,
        fields: Vec::new(),
    })
}

/// GOLOG (`{"level":…,"ts":…,"logger":…,"msg":…}`) or tracing's JSON
/// (`{"timestamp":…,"level":…,"fields":{"message":…},"target":…,"span":{"name":…}}`).
fn json(line: &str) -> Option<Envelope<'static>> {
    let v: serde_json::Value = serde_json::from_str(line).ok()?;
    let o = v.as_object()?;
    let s = |k: &str| o.get(k).and_then(|x| x.as_str());
    let stamp = s("ts")
        .or_else(|| s("timestamp"))
        .and_then(parse_iso)
        .map(|(st, _)| st);
    let level = s("level").and_then(Level::parse);
    if let Some(fields) = o.get("fields").and_then(|f| f.as_object()) {
        let msg = fields
            .get("message")
            .and_then(|m| m.as_str())
            .unwrap_or("")
            .to_string();
        let span = o
            .get("span")
            .and_then(|sp| sp.get("name"))
            .and_then(|n| n.as_str())
            .map(|n| Cow::Owned(n.to_string()));
        let fields = fields
            .iter()
            .filter(|(k, _)| *k != "message")
            .map(|(k, v)| {
                let v = match v {
                    serde_json::Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                (Cow::Owned(k.clone()), Cow::Owned(v))
            })
            .collect();
        return Some(Envelope {
            format: Format::TracingJson,
            stamp,
            level,
            target: s("target").map(|t| Cow::Owned(t.to_string())),
            msg: Cow::Owned(msg),
            span,
            fields,
        });
    }
    let msg = s("msg")?;
    Some(Envelope {
        format: Format::Golog,
        stamp,
        level,
        target: s("logger").map(|t| Cow::Owned(t.to_string())),
        msg: Cow::Owned(msg.to_string()),
        span: None,
        fields: Vec::new(),
    })
}

const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

/// journald's `Mon DD HH:MM:SS[.ffffff] host ident[pid]: ` or `ISO host ident[pid]: `:
/// the time (local, this year, when the format has no year) and the rest.
fn journald(line: &str) -> Option<(Option<Stamp>, &str)> {
    let (stamp, rest) = if let Some(m) = MONTHS.iter().position(|m| line.starts_with(m)) {
        let b = line.as_bytes();
        // `Mon DD HH:MM:SS` is ASCII: checked first, so the fixed offsets below are char
        // boundaries (a multibyte character there panicked the slicing).
        if b.len() < 16 || b[3] != b' ' || !b[..15].is_ascii() {
            return None;
        }
        let day: i64 = line[4..6].trim().parse().ok()?;
        let hms = &line[7..];
        let hb = hms.as_bytes();
        if hb.len() < 8 || hb[2] != b':' || hb[5] != b':' {
            return None;
        }
        let (h, mi, s): (i64, i64, i64) = (
            hms[0..2].parse().ok()?,
            hms[3..5].parse().ok()?,
            hms[6..8].parse().ok()?,
        );
        let mut end = 8;
        let mut frac = String::new();
        if hb.get(8) == Some(&b'.') {
            end = 9;
            while end < hb.len() && hb[end].is_ascii_digit() {
                end += 1;
            }
            frac = hms[9..end].to_string();
        }
        let year = this_year();
        let iso = format!(
            "{year:04}-{:02}-{day:02}T{h:02}:{mi:02}:{s:02}{}",
            m + 1,
            if frac.is_empty() {
                String::new()
            } else {
                format!(".{frac}")
            }
        );
        let (st, _) = parse_iso(&iso)?;
        (Some(st), &hms[end..])
    } else {
        let (st, used) = parse_iso(line)?;
        // short-iso always has a zone; fil_logger's own lines have none and are not this.
        let z = &line[19..used];
        if !(z.contains('+') || z.contains('-') || z.contains('Z')) {
            return None;
        }
        (Some(st), &line[used..])
    };
    let rest = rest.strip_prefix(' ')?;
    let (host, rest) = rest.split_once(' ')?;
    if host.is_empty() || host.contains(['[', ':']) {
        return None;
    }
    let (ident, msg) = rest.split_once(": ")?;
    let name = ident.split('[').next().unwrap_or(ident);
    if name.is_empty() || name.contains(' ') || (ident.contains('[') && !ident.ends_with(']')) {
        return None;
    }
    Some((stamp, msg))
}

fn this_year() -> i64 {
    let now = provetop_shared::clock::wall_ns() as i64 / 1_000_000_000;
    // Civil year of a day count (inverse of days_from_civil, year only).
    let z = now.div_euclid(86_400) + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    yoe + era * 400 + i64::from(m <= 2)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_format_is_taken_apart() {
        let e = read(
            "[2026-03-14T17:52:44Z INFO  bellperson::groth16::prover::native] prover time: 1.2s",
        );
        assert_eq!(e.format, Format::EnvLogger);
        assert_eq!(
            e.target.as_deref(),
            Some("bellperson::groth16::prover::native")
        );
        assert_eq!(e.msg, "prover time: 1.2s");
        assert!(e.stamp.is_some());

        let e = read("provetop-prover: [debug bellperson::groth16::prover::native] multiexp h");
        assert_eq!(e.format, Format::EnvLogger);
        assert_eq!(e.level, Some(Level::Debug));
        assert_eq!(e.msg, "multiexp h");

        let e = read("2026-02-25T23:02:14.971 INFO bellperson::groth16::prover::supraseal > synthesis time: 79.44350428s");
        assert_eq!(e.format, Format::FilLogger);
        assert_eq!(e.msg, "synthesis time: 79.44350428s");

        let e = read(
            r#"{"level":"info","ts":"2019-11-11T21:06:45.401+0100","logger":"simple","caller":"examples/simple.rs:38","msg":"normal information"}"#,
        );
        assert_eq!(e.format, Format::Golog);
        assert_eq!(e.msg, "normal information");

        let e = read("2026-03-14T17:52:44.123456Z  INFO prove{proof=3}:synthesize: my_prover::circuit: close time.busy=1.21s time.idle=25.1µs");
        assert_eq!(e.format, Format::TracingFmt);
        assert_eq!(e.span.as_deref(), Some("synthesize"));
        assert_eq!(e.target.as_deref(), Some("my_prover::circuit"));
        assert_eq!(e.field("time.busy"), Some("1.21s"));

        let e = read("INFO bellperson: starting proof timer");
        assert_eq!(e.format, Format::Bare);
        assert_eq!(e.msg, "starting proof timer");

        let e = read("Feb 25 23:02:14 node1 curio[4242]: 2026-02-25T23:02:14.971 INFO bellperson::groth16::prover::supraseal > prover time: 1s");
        assert_eq!(e.format, Format::FilLogger);
        assert_eq!(e.msg, "prover time: 1s");

        let e = read("TIMELINE,12,SYNTH_START,job,partition=1");
        assert_eq!(e.format, Format::Plain);
    }
}
