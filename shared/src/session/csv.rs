//! The `timestamp,rss_kb` CSV of ad-hoc samplers (and of `provetop export --format csv`,
//! whose extra columns are ignored here).

use super::*;
use crate::record::{RecordBody, Sample};

/// Largest RSS a row may claim: 1 PiB in KiB. Anything above is a broken sampler.
pub const MAX_RSS_KB: u64 = 1 << 40;
/// Timestamps after this (year 5138) are not unix seconds; loading warns.
pub const MAX_UNIX_SECS: f64 = 1e11;
/// Rows may span at most this many seconds (about 500 years), so that nanoseconds since
/// the first row fit in a `u64`.
pub const MAX_SPAN_SECS: f64 = 1.5e10;

/// Parse CSV bytes into sample records (t = ns since the earliest row).
pub fn load_csv(path: &Path, data: &[u8]) -> Result<Loaded, LoadError> {
    let err = |line: u64, detail: String| LoadError::Csv {
        path: path.to_path_buf(),
        line,
        detail,
    };
    let ends_with_newline = data.ends_with(b"\n");
    let text = std::str::from_utf8(data).map_err(|e| {
        let line = data[..e.valid_up_to()]
            .iter()
            .filter(|b| **b == b'\n')
            .count() as u64
            + 1;
        err(line, format!("invalid UTF-8 at byte {}", e.valid_up_to()))
    })?;
    let lines = split_records(text).map_err(|at| {
        err(
            at,
            "a quoted field opened on this line is never closed".into(),
        )
    })?;
    let mut warnings = Vec::new();
    // (unix seconds, KiB, 1-based line number)
    let mut rows: Vec<(f64, u64, u64)> = Vec::with_capacity(lines.len());
    for (i, &(lineno, raw)) in lines.iter().enumerate().skip(1) {
        let line = raw.trim_end_matches('\r');
        if line.trim().is_empty() {
            continue;
        }
        let last = i + 1 == lines.len();
        match parse_row(line) {
            Ok((ts, kb)) => rows.push((ts, kb, lineno)),
            Err(e) if last && !ends_with_newline => {
                warnings.push(Warning {
                    offset: None,
                    line: Some(lineno),
                    message: format!("last line is cut off ({e}); skipped"),
                });
            }
            Err(e) => return Err(err(lineno, e)),
        }
    }
    let mut prev: Option<f64> = None;
    let mut reported = 0;
    for &(ts, _, lineno) in &rows {
        if let Some(p) = prev {
            if ts < p {
                reported += 1;
                if reported <= 5 {
                    warnings.push(Warning {
                        offset: None,
                        line: Some(lineno),
                        message: format!(
                            "timestamp {} goes back in time (previous row {}); kept in file order",
                            fmt_ts(ts),
                            fmt_ts(p)
                        ),
                    });
                }
            }
        }
        prev = Some(ts);
    }
    if reported > 5 {
        warnings.push(Warning {
            offset: None,
            line: None,
            message: format!(
                "{} more rows go back in time; kept in file order",
                reported - 5
            ),
        });
    }
    if let Some(&(ts, _, lineno)) = rows.iter().find(|r| r.0 > MAX_UNIX_SECS) {
        warnings.push(Warning {
            offset: None,
            line: Some(lineno),
            message: format!(
                "timestamp {} is after the year 5000: milliseconds instead of unix seconds? durations will be wrong",
                fmt_ts(ts)
            ),
        });
    }
    let (lo, hi) = rows
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), r| {
            (lo.min(r.0), hi.max(r.0))
        });
    if hi - lo > MAX_SPAN_SECS {
        let lineno = rows.iter().find(|r| r.0 == hi).map(|r| r.2).unwrap_or(0);
        return Err(err(
            lineno,
            format!(
                "absurd timestamp {}: the rows span more than {MAX_SPAN_SECS:e} seconds",
                fmt_ts(hi)
            ),
        ));
    }
    let rows: Vec<(f64, u64)> = rows.into_iter().map(|(ts, kb, _)| (ts, kb)).collect();
    let first = rows.iter().map(|r| r.0).fold(f64::INFINITY, f64::min);
    let first = if first.is_finite() { first } else { 0.0 };
    let records = rows
        .iter()
        .map(|&(ts, kb)| Record {
            t: ((ts - first) * 1e9).round() as u64,
            body: RecordBody::Sample(Sample {
                rss: kb * 1024,
                ..Sample::default()
            }),
        })
        .collect();
    let mut gaps: Vec<f64> = rows
        .windows(2)
        .map(|w| w[1].0 - w[0].0)
        .filter(|g| *g > 0.0)
        .collect();
    gaps.sort_by(f64::total_cmp);
    let hz = gaps.get(gaps.len() / 2).map(|g| 1.0 / g).unwrap_or(0.0);
    Ok(Loaded {
        header: SessionHeader {
            format: 1,
            provetop_version: env!("CARGO_PKG_VERSION").to_string(),
            wall_anchor: (first * 1e9) as u64,
            mono_anchor: 0,
            host: String::new(),
            command: vec![path.display().to_string()],
            sample_hz: hz,
        },
        records,
        warnings,
        kind: SourceKind::Csv,
    })
}

/// The RSS column (KiB) of a plain seed CSV, row by row in one pass over a small buffer: what
/// [`load_csv`] would read, with its warnings and errors, at the cost of the seed's awk.
/// `Ok(None)`, possibly after some rows were given, when the file is not plain (a quote, a
/// byte that is not ASCII, not a `timestamp,rss_kb` CSV, a rotated set): the caller starts
/// over and loads it whole.
pub fn stream_rss(
    path: &Path,
    each: &mut dyn FnMut(u64),
) -> Result<Option<Vec<Warning>>, LoadError> {
    use std::io::Read;
    if parts::set_of(path).len() != 1 {
        return Ok(None);
    }
    let io = |error| LoadError::Io {
        path: path.to_path_buf(),
        error,
    };
    let err = |line: u64, detail: String| LoadError::Csv {
        path: path.to_path_buf(),
        line,
        detail,
    };
    let mut file = open_regular(path).map_err(io)?;
    let mut rows = RowStats::default();
    // A row that did not parse: fatal unless it is the last record of a file without a
    // final newline.
    let mut failed: Option<(u64, String)> = None;
    let mut buf = vec![0u8; 1 << 20];
    let (mut have, mut line, mut first) = (0usize, 0u64, true);
    let mut ends_nl = false;
    loop {
        let n = file.read(&mut buf[have..]).map_err(io)?;
        let eof = n == 0;
        let fresh = &buf[have..have + n];
        if fresh.iter().any(|&b| b == b'"' || b >= 0x80) {
            return Ok(None);
        }
        have += n;
        if first {
            if have < 64 && !eof {
                continue;
            }
            if !looks_like_csv(&buf[..have]) {
                return Ok(None);
            }
        }
        let mut start = 0;
        let mut take = |rec: &[u8], line: u64, first: &mut bool| -> Result<(), LoadError> {
            if let Some((l, e)) = failed.take() {
                return Err(err(l, e));
            }
            if std::mem::take(first) {
                return Ok(());
            }
            let mut rec = rec;
            while let [r @ .., b'\r'] = rec {
                rec = r;
            }
            // ASCII throughout (checked above).
            let text = std::str::from_utf8(rec).unwrap_or_default();
            if text.trim().is_empty() {
                return Ok(());
            }
            match fast_row(rec).map_or_else(|| parse_row(text), Ok) {
                Ok((ts, kb)) => {
                    rows.push(ts, line);
                    each(kb);
                }
                Err(e) => failed = Some((line, e)),
            }
            Ok(())
        };
        while let Some(i) = buf[start..have].iter().position(|&b| b == b'\n') {
            line += 1;
            take(&buf[start..start + i], line, &mut first)?;
            start += i + 1;
            ends_nl = true;
        }
        if eof {
            if start < have {
                line += 1;
                ends_nl = false;
                take(&buf[start..have], line, &mut first)?;
            }
            break;
        }
        buf.copy_within(start..have, 0);
        have -= start;
        if have == buf.len() {
            // A line longer than the buffer: not the seed's.
            return Ok(None);
        }
    }
    let mut warnings = Vec::new();
    if let Some((l, e)) = failed {
        if ends_nl {
            return Err(err(l, e));
        }
        warnings.push(Warning {
            offset: None,
            line: Some(l),
            message: format!("last line is cut off ({e}); skipped"),
        });
    }
    rows.finish(&mut warnings).map_err(|(l, e)| err(l, e))?;
    Ok(Some(warnings))
}

/// A row of digits (`1700000000` or `1700000000.25`, a comma, KiB in digits) read without
/// [`parse_row`]'s allocations; None for anything else, which [`parse_row`] reads.
fn fast_row(rec: &[u8]) -> Option<(f64, u64)> {
    let comma = rec.iter().position(|&b| b == b',')?;
    let (ts, kb) = (&rec[..comma], &rec[comma + 1..]);
    let digits = |b: &[u8]| !b.is_empty() && b.len() <= 15 && b.iter().all(u8::is_ascii_digit);
    let ts_ok = match ts.iter().position(|&b| b == b'.') {
        Some(d) => digits(&ts[..d]) && digits(&ts[d + 1..]),
        None => digits(ts),
    };
    if !ts_ok || !digits(kb) {
        return None;
    }
    let kb = kb.iter().fold(0u64, |a, &d| a * 10 + u64::from(d - b'0'));
    let ts: f64 = std::str::from_utf8(ts).ok()?.parse().ok()?;
    (kb <= MAX_RSS_KB).then_some((ts, kb))
}

/// What [`load_csv`] checks of the rows' timestamps, one row at a time.
#[derive(Default)]
struct RowStats {
    prev: Option<f64>,
    back: Vec<Warning>,
    reported: u64,
    future: Option<Warning>,
    lo: f64,
    hi: Option<(f64, u64)>,
}

impl RowStats {
    fn push(&mut self, ts: f64, line: u64) {
        if let Some(p) = self.prev.filter(|p| ts < *p) {
            self.reported += 1;
            if self.reported <= 5 {
                self.back.push(Warning {
                    offset: None,
                    line: Some(line),
                    message: format!(
                        "timestamp {} goes back in time (previous row {}); kept in file order",
                        fmt_ts(ts),
                        fmt_ts(p)
                    ),
                });
            }
        }
        self.prev = Some(ts);
        if ts > MAX_UNIX_SECS && self.future.is_none() {
            self.future = Some(Warning {
                offset: None,
                line: Some(line),
                message: format!(
                    "timestamp {} is after the year 5000: milliseconds instead of unix seconds? durations will be wrong",
                    fmt_ts(ts)
                ),
            });
        }
        self.lo = if self.hi.is_none() {
            ts
        } else {
            self.lo.min(ts)
        };
        if self.hi.is_none_or(|(h, _)| ts > h) {
            self.hi = Some((ts, line));
        }
    }

    fn finish(self, warnings: &mut Vec<Warning>) -> Result<(), (u64, String)> {
        warnings.extend(self.back);
        if self.reported > 5 {
            warnings.push(Warning {
                offset: None,
                line: None,
                message: format!(
                    "{} more rows go back in time; kept in file order",
                    self.reported - 5
                ),
            });
        }
        warnings.extend(self.future);
        match self.hi {
            Some((hi, line)) if hi - self.lo > MAX_SPAN_SECS => Err((
                line,
                format!(
                    "absurd timestamp {}: the rows span more than {MAX_SPAN_SECS:e} seconds",
                    fmt_ts(hi)
                ),
            )),
            _ => Ok(()),
        }
    }
}

/// The records of CSV text with the 1-based line each starts on, without their line break.
/// RFC 4180: a field that starts with `"` runs to its closing quote (`""` is a quote in it),
/// across commas and line breaks, so a text column (`export`'s phase) may hold anything.
/// One pass over the bytes. A quoted field still open at the end is the cut-off last record
/// when it opened on the last line; otherwise `Err` with the line it opened on (the rest of
/// the file would be one field: damage, not data).
fn split_records(text: &str) -> Result<Vec<(u64, &str)>, u64> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let (mut start, mut line, mut rec_line) = (0, 1u64, 1u64);
    let (mut quoted, mut field_start, mut opened_on) = (false, true, 0u64);
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        i += 1;
        if quoted {
            match c {
                b'"' if b.get(i) == Some(&b'"') => i += 1,
                b'"' => quoted = false,
                b'\n' => line += 1,
                _ => {}
            }
            continue;
        }
        field_start = match c {
            b'"' if field_start => {
                quoted = true;
                opened_on = line;
                false
            }
            b',' => true,
            b'\n' => {
                out.push((rec_line, &text[start..i - 1]));
                line += 1;
                start = i;
                rec_line = line;
                true
            }
            _ => false,
        };
    }
    if quoted && opened_on != line {
        return Err(opened_on);
    }
    if start < b.len() {
        out.push((rec_line, &text[start..]));
    }
    Ok(out)
}

/// One row: unix seconds (may be fractional), KiB (integer); further columns are ignored.
pub fn parse_row(line: &str) -> Result<(f64, u64), String> {
    // A number may come quoted ("1700000000"): RFC 4180 allows any field to be.
    let unquote = |f: &str| {
        let f = f.trim();
        f.strip_prefix('"')
            .and_then(|f| f.strip_suffix('"'))
            .unwrap_or(f)
            .trim()
            .to_string()
    };
    let mut cols = line.split(',');
    let ts = unquote(cols.next().unwrap_or(""));
    let kb = unquote(
        cols.next()
            .ok_or_else(|| format!("expected \"timestamp,rss_kb\", got {:?}", excerpt(line)))?,
    );
    let (ts, kb) = (ts.as_str(), kb.as_str());
    let ts: f64 = ts
        .parse()
        .map_err(|_| format!("bad timestamp {:?}", excerpt(ts)))?;
    if !ts.is_finite() || ts < 0.0 {
        return Err(format!("bad timestamp {ts}"));
    }
    let kb: u64 = kb.parse().map_err(|_| {
        if kb.starts_with('-') {
            format!("negative rss_kb {:?}", excerpt(kb))
        } else {
            format!(
                "bad rss_kb {:?} (want an integer number of KiB)",
                excerpt(kb)
            )
        }
    })?;
    if kb > MAX_RSS_KB {
        return Err(format!("absurd rss_kb {kb} (more than 1 PiB)"));
    }
    Ok((ts, kb))
}

/// A timestamp as written: plain for ordinary ones, scientific for huge ones.
fn fmt_ts(ts: f64) -> String {
    if ts.abs() < 1e15 {
        format!("{ts}")
    } else {
        format!("{ts:e}")
    }
}

fn excerpt(s: &str) -> String {
    s.chars().take(40).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_follow_rfc_4180_quotes() {
        let r = split_records("a,b\n1,\"x,\ny\"\"z\"\r\n2,\"\"\n3,q\"q\n").unwrap();
        assert_eq!(
            r,
            vec![
                (1, "a,b"),
                (2, "1,\"x,\ny\"\"z\"\r"),
                (4, "2,\"\""),
                (5, "3,q\"q"),
            ]
        );
        // Cut off inside a quote on the last line: the last record, as far as it goes.
        assert_eq!(
            split_records("a\n1,\"ab").unwrap(),
            vec![(1, "a"), (2, "1,\"ab")]
        );
        // Never closed, over several lines: the line it opened on.
        assert_eq!(split_records("a\n1,\"ab\n2,3\n"), Err(2));
    }

    #[test]
    fn a_quoted_field_with_a_line_break_is_one_row() {
        let csv =
            "timestamp,rss_kb,phase\n1700000000,1024,\"a\nb\"\n1700000001,2048,\"=c,\"\"d\"\"\"\n";
        let l = load_csv(Path::new("x.csv"), csv.as_bytes()).unwrap();
        assert_eq!(l.records.len(), 2);
        assert!(l.warnings.is_empty(), "{:?}", l.warnings);
        let e = load_csv(Path::new("x.csv"), b"timestamp,rss_kb\n1,2,\"open\n3,4\n").unwrap_err();
        assert!(e.to_string().contains("never closed"), "{e}");
    }
}
