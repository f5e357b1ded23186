//! The comparison: the baseline's figures and each other session's as value, difference and
//! ratio, row by row, in the four output formats (terminal table, markdown, JSON, CSV).
//!
//! Rows are the union of every session's figures, in the baseline's order with the others'
//! extra rows after; a session that lacks a row says why ("no sps proofs"). Threshold-phase
//! rows appear only when some session has no prover events (a CSV): with events on every
//! side, the prover's own phases say more.

use std::fmt::Write as _;

use provetop_shared::units::{fmt_bytes, fmt_secs};

use super::summary::{Figure, Section, Summary, Unit};
use crate::delta::{delta, fmt_pct, fmt_ratio, fmt_signed};

/// One side's cell of a row.
#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    Value(f64),
    /// No value, and why.
    Missing(String),
}

impl Cell {
    /// The value, if any.
    pub fn value(&self) -> Option<f64> {
        match self {
            Cell::Value(v) => Some(*v),
            Cell::Missing(_) => None,
        }
    }
}

/// One row: a figure in every session.
#[derive(Debug, Clone)]
pub struct Row {
    pub key: String,
    pub label: String,
    pub section: Section,
    pub unit: Unit,
    pub baseline: Cell,
    /// One per other session, in order.
    pub others: Vec<Cell>,
}

/// Every session's rows, and the notes.
#[derive(Debug, Clone)]
pub struct Comparison {
    pub baseline: Summary,
    pub others: Vec<Summary>,
    pub rows: Vec<Row>,
    /// Notes on the comparison itself (sample rates, machines), then each session's.
    pub notes: Vec<String>,
}

impl Comparison {
    /// Put `baseline` and `others` side by side.
    pub fn new(baseline: Summary, others: Vec<Summary>) -> Comparison {
        let any_without_events = !baseline.has_events || others.iter().any(|o| !o.has_events);
        let mut keys: Vec<&Figure> = Vec::new();
        for s in std::iter::once(&baseline).chain(&others) {
            for f in &s.figures {
                if f.threshold_row && !any_without_events {
                    continue;
                }
                if !keys.iter().any(|k| k.key == f.key) {
                    keys.push(f);
                }
            }
        }
        // Sections in order; within one, the order of first appearance.
        let mut order: Vec<(Section, usize, &Figure)> = keys
            .iter()
            .enumerate()
            .map(|(i, f)| (f.section, i, *f))
            .collect();
        order.sort_by_key(|o| (o.0, o.1));
        let cell = |s: &Summary, f: &Figure| match s.get(&f.key) {
            Some(g) => match &g.value {
                Ok(v) => Cell::Value(*v),
                Err(why) => Cell::Missing(why.clone()),
            },
            None => Cell::Missing(f.absent.clone()),
        };
        let rows = order
            .into_iter()
            .map(|(_, _, f)| Row {
                key: f.key.clone(),
                label: f.label.clone(),
                section: f.section,
                unit: f.unit,
                baseline: cell(&baseline, f),
                others: others.iter().map(|o| cell(o, f)).collect(),
            })
            .collect();
        let mut notes = Vec::new();
        for o in &others {
            if let (Some(a), Some(b)) = (baseline.interval_s, o.interval_s) {
                if a > 0.0 && b > 0.0 && (a / b > 1.5 || b / a > 1.5) {
                    notes.push(format!(
                        "{} is sampled every {} and {} every {}: peaks between samples are in the interval peak (peak) where VmHWM was read; times above 90 % are weighted by each sample's interval",
                        baseline.name,
                        fmt_secs(a),
                        o.name,
                        fmt_secs(b)
                    ));
                }
            }
            if !baseline.host.is_empty() && !o.host.is_empty() && baseline.host != o.host {
                notes.push(format!(
                    "{} was recorded on {} and {} on {}: two clocks, so only durations are compared (each from its own session's start), never instants",
                    baseline.name,
                    crate::text::inert(&baseline.host),
                    o.name,
                    crate::text::inert(&o.host)
                ));
            }
        }
        notes.extend(baseline.notes.iter().cloned());
        for o in &others {
            for n in &o.notes {
                if !notes.contains(n) {
                    notes.push(n.clone());
                }
            }
        }
        Comparison {
            baseline,
            others,
            rows,
            notes,
        }
    }

    /// The row with this key.
    pub fn row(&self, key: &str) -> Option<&Row> {
        self.rows.iter().find(|r| r.key == key)
    }
}

/// A value in its unit, for people: "3.2 GiB", "2.6s", "19", "1409/h".
pub fn fmt_value(unit: Unit, v: f64) -> String {
    match unit {
        Unit::Bytes => fmt_bytes(v.max(0.0) as u64),
        Unit::Seconds => fmt_secs(v),
        Unit::Count => format!("{v:.0}"),
        Unit::PerHour => format!("{v:.0}/h"),
        Unit::Percent => format!("{v:.1}%"),
    }
}

/// A signed difference in its unit: "+1.2 GiB", "-300ms", "+0 B".
pub fn fmt_diff(unit: Unit, d: f64) -> String {
    fmt_signed(d, |mag| match unit {
        Unit::Count => format!("{mag:.0}"),
        Unit::PerHour => format!("{mag:.0}/h"),
        Unit::Percent => format!("{mag:.1} pts"),
        Unit::Bytes => fmt_bytes(mag as u64),
        Unit::Seconds if mag == 0.0 => "0s".into(),
        Unit::Seconds => fmt_secs(mag),
    })
}

/// The cells of one other session in one row: value, change, ratio.
fn other_cells(row: &Row, cell: &Cell) -> [String; 3] {
    match (row.baseline.value(), cell) {
        (Some(b), Cell::Value(o)) => {
            let d = delta(b, *o);
            [
                fmt_value(row.unit, *o),
                format!("{} ({})", fmt_diff(row.unit, d.diff), fmt_pct(&d)),
                fmt_ratio(&d),
            ]
        }
        (None, Cell::Value(o)) => [fmt_value(row.unit, *o), "-".into(), "-".into()],
        (_, Cell::Missing(why)) => [why.clone(), String::new(), String::new()],
    }
}

fn base_cell(row: &Row) -> String {
    match &row.baseline {
        Cell::Value(v) => fmt_value(row.unit, *v),
        Cell::Missing(why) => why.clone(),
    }
}

/// Who is who: "baseline: a.ptop (all proofs)", "1: b.ptop (mode sps)".
fn legend(c: &Comparison) -> Vec<String> {
    let mut v = vec![format!(
        "baseline: {} ({})",
        crate::text::inert(&c.baseline.path),
        c.baseline.selection.describe()
    )];
    for (i, o) in c.others.iter().enumerate() {
        v.push(format!(
            "{}: {} ({})",
            i + 1,
            crate::text::inert(&o.path),
            o.selection.describe()
        ));
    }
    v
}

/// The terminal table.
pub fn render_text(c: &Comparison) -> String {
    let mut out = String::new();
    for l in legend(c) {
        let _ = writeln!(out, "{l}");
    }
    out.push('\n');
    let mut header = vec!["metric".to_string(), "baseline".to_string()];
    for i in 0..c.others.len() {
        header.push(format!("{}", i + 1));
        header.push(format!("{} change", i + 1));
        header.push(format!("{} ratio", i + 1));
    }
    let mut lines: Vec<Option<Vec<String>>> = Vec::new();
    let mut section = None;
    for row in &c.rows {
        if section != Some(row.section) {
            section = Some(row.section);
            lines.push(None);
            lines.push(Some(vec![format!("{}:", row.section.title())]));
        }
        let mut cells = vec![format!("  {}", row.key), base_cell(row)];
        for cell in &row.others {
            cells.extend(other_cells(row, cell));
        }
        lines.push(Some(cells));
    }
    let cols = header.len();
    let mut width = vec![0usize; cols];
    for cells in std::iter::once(&header).chain(lines.iter().flatten()) {
        if cells.len() == 1 {
            continue;
        }
        for (i, s) in cells.iter().enumerate() {
            width[i] = width[i].max(s.chars().count());
        }
    }
    let line = |cells: &[String]| -> String {
        let mut s = String::new();
        for (i, cell) in cells.iter().enumerate() {
            let pad = width[i].saturating_sub(cell.chars().count());
            if i == 0 {
                s.push_str(cell);
                s.push_str(&" ".repeat(pad));
            } else {
                s.push_str("  ");
                s.push_str(&" ".repeat(pad));
                s.push_str(cell);
            }
        }
        s.trim_end().to_string()
    };
    let _ = writeln!(out, "{}", line(&header));
    for l in &lines {
        match l {
            None => out.push('\n'),
            Some(cells) if cells.len() == 1 => {
                let _ = writeln!(out, "{}", cells[0]);
            }
            Some(cells) => {
                let _ = writeln!(out, "{}", line(cells));
            }
        }
    }
    if !c.notes.is_empty() {
        out.push('\n');
        for n in &c.notes {
            let _ = writeln!(out, "note: {n}");
        }
    }
    out
}

/// A markdown cell: pipes escaped, no line breaks.
fn md(s: &str) -> String {
    crate::text::inert(s).replace('|', "\\|")
}

/// The table as GitHub markdown (for a pull request).
pub fn render_markdown(c: &Comparison) -> String {
    let mut out = String::new();
    for l in legend(c) {
        let _ = writeln!(out, "- {}", md(&l));
    }
    out.push('\n');
    let mut head = String::from("| metric | what | baseline |");
    let mut rule = String::from("|---|---|---:|");
    for i in 0..c.others.len() {
        let _ = write!(head, " {0} | {0} change | {0} ratio |", i + 1);
        rule.push_str("---:|---:|---:|");
    }
    let _ = writeln!(out, "{head}\n{rule}");
    for row in &c.rows {
        let _ = write!(
            out,
            "| `{}` | {} | {} |",
            md(&row.key),
            md(&row.label),
            md(&base_cell(row))
        );
        for cell in &row.others {
            for s in other_cells(row, cell) {
                let _ = write!(out, " {} |", md(&s));
            }
        }
        out.push('\n');
    }
    if !c.notes.is_empty() {
        out.push('\n');
        for n in &c.notes {
            let _ = writeln!(out, "> {}", md(n));
        }
    }
    out
}

fn json_cell(cell: &Cell) -> serde_json::Value {
    match cell {
        Cell::Value(v) => serde_json::json!(v),
        Cell::Missing(_) => serde_json::Value::Null,
    }
}

fn json_session(s: &Summary) -> serde_json::Value {
    serde_json::json!({
        "file": s.path,
        "selection": s.selection.describe(),
        "notes": s.notes,
    })
}

/// The comparison as one JSON document: sessions, rows (values in bytes, seconds, counts;
/// `null` with a `missing` reason where a session lacks the row), notes.
pub fn to_json(c: &Comparison) -> serde_json::Value {
    let rows: Vec<serde_json::Value> = c
        .rows
        .iter()
        .map(|row| {
            let others: Vec<serde_json::Value> = row
                .others
                .iter()
                .map(|cell| {
                    let mut o = serde_json::json!({ "value": json_cell(cell) });
                    if let Cell::Missing(why) = cell {
                        o["missing"] = serde_json::json!(why);
                    }
                    if let (Some(b), Some(v)) = (row.baseline.value(), cell.value()) {
                        let d = delta(b, v);
                        o["diff"] = serde_json::json!(d.diff);
                        o["ratio"] = serde_json::json!(d.ratio);
                        o["pct"] = serde_json::json!(d.pct());
                    }
                    o
                })
                .collect();
            let mut r = serde_json::json!({
                "metric": row.key,
                "label": row.label,
                "section": row.section.title(),
                "unit": row.unit.name(),
                "baseline": json_cell(&row.baseline),
                "others": others,
            });
            if let Cell::Missing(why) = &row.baseline {
                r["baseline_missing"] = serde_json::json!(why);
            }
            r
        })
        .collect();
    serde_json::json!({
        "baseline": json_session(&c.baseline),
        "others": c.others.iter().map(json_session).collect::<Vec<_>>(),
        "rows": rows,
        "notes": c.notes,
    })
}

fn csv_num(v: Option<f64>) -> String {
    match v {
        Some(v) if v.is_finite() => {
            let s = format!("{v:.6}");
            let s = s.trim_end_matches('0').trim_end_matches('.');
            if s == "-0" {
                "0".into()
            } else {
                s.into()
            }
        }
        _ => String::new(),
    }
}

/// The comparison as CSV, one line per row and other session:
/// `metric,unit,baseline_file,baseline,other_file,other,diff,ratio,missing`.
pub fn render_csv(c: &Comparison) -> String {
    let mut out =
        String::from("metric,unit,baseline_file,baseline,other_file,other,diff,ratio,missing\n");
    let cell = |out: &mut String, s: &str| crate::export::csv_text(out, s);
    for row in &c.rows {
        for (o, other) in row.others.iter().zip(&c.others) {
            let (b, v) = (row.baseline.value(), o.value());
            let d = b.zip(v).map(|(b, v)| delta(b, v));
            cell(&mut out, &row.key);
            out.push(',');
            out.push_str(row.unit.name());
            out.push(',');
            cell(&mut out, &c.baseline.path);
            out.push(',');
            out.push_str(&csv_num(b));
            out.push(',');
            cell(&mut out, &other.path);
            out.push(',');
            out.push_str(&csv_num(v));
            out.push(',');
            out.push_str(&csv_num(d.map(|d| d.diff)));
            out.push(',');
            out.push_str(&csv_num(d.and_then(|d| d.ratio)));
            out.push(',');
            let missing = match (&row.baseline, o) {
                (Cell::Missing(w), _) => format!("baseline: {w}"),
                (_, Cell::Missing(w)) => w.clone(),
                _ => String::new(),
            };
            cell(&mut out, &missing);
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_values_are_no_change_even_at_zero() {
        let d = delta(0.0, 0.0);
        assert_eq!((d.diff, d.ratio, d.pct()), (0.0, Some(1.0), Some(0.0)));
        let d = delta(200.0, 100.0);
        assert_eq!(fmt_pct(&d), "-50.0%");
        assert_eq!(fmt_ratio(&d), "0.50×");
        assert_eq!(fmt_pct(&delta(0.0, 3.0)), "new");
    }

    #[test]
    fn differences_carry_their_sign_and_unit() {
        assert_eq!(fmt_diff(Unit::Bytes, -1024.0), "-1.0 KiB");
        assert_eq!(fmt_diff(Unit::Seconds, 0.0), "+0s");
        assert_eq!(fmt_diff(Unit::Count, 2.0), "+2");
        assert_eq!(csv_num(Some(-0.0)), "0");
        assert_eq!(csv_num(Some(2.5)), "2.5");
    }
}
