//! The phase timeline (Gantt), on the chart's time axis.
//!
//! With prover events: one row per phase and partition (grouped per phase when the screen is
//! short), each interval a bar at half-cell resolution. Without events: one row per
//! threshold phase of the seed classifier (or one shaded row when even those do not fit).
//! With a baseline (`--baseline`), its phases follow as a second, dim row set when there is
//! room: one row per phase, else one lettered row, else none.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::Span;

use provetop_shared::classify::ThresholdPhase;
use provetop_shared::Phase;

use crate::app::App;
use crate::text::inert;
use crate::ui::{title_line, Item};

/// What a Gantt row shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RowKey {
    /// One phase of one partition (or of no partition).
    Part(Phase, Option<u32>),
    /// One phase, every partition.
    Phase(Phase),
    /// A threshold phase.
    Threshold(ThresholdPhase),
    /// A group of phases on one row, each cell lettered by its phase (short screens).
    Group(Group),
    /// The spans of a group that belong to no partition, lettered like [`RowKey::Group`]:
    /// beside one row per partition of the partitioned phases, when those fit and the rest
    /// does not.
    Rest(Group),
    /// One phase of the baseline, every partition (dim, under the shown session's rows).
    Base(Phase),
    /// Every phase of the baseline on one row, lettered (when a row per phase does not fit).
    BaseAll,
}

/// Phase groups of the compact timeline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Group {
    /// SRS generation or load.
    Srs,
    /// Synthesis (all partitions).
    Synth,
    /// The prove call and its steps (FFT, multiexps).
    Prove,
    /// Verification.
    Verify,
    /// Anything else.
    Other,
}

impl Group {
    /// The group of a phase.
    pub fn of(p: &Phase) -> Group {
        match p {
            Phase::SrsGenerate | Phase::SrsLoad => Group::Srs,
            Phase::Synthesis => Group::Synth,
            Phase::Prove
            | Phase::GpuSetup
            | Phase::FftH
            | Phase::MsmH
            | Phase::MsmL
            | Phase::MsmAB1
            | Phase::MsmB2 => Group::Prove,
            Phase::Verify => Group::Verify,
            Phase::Other(_) => Group::Other,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Group::Srs => "srs",
            Group::Synth => "synth",
            Group::Prove => "prove",
            Group::Verify => "verify",
            Group::Other => "other",
        }
    }
}

/// The letter a phase is drawn with on a compact row.
pub fn letter(p: &Phase) -> char {
    match p {
        Phase::SrsGenerate => 'G',
        Phase::SrsLoad => 'L',
        Phase::Synthesis => 's',
        Phase::Prove => 'p',
        Phase::GpuSetup => 'u',
        Phase::FftH => 'f',
        Phase::MsmH => 'h',
        Phase::MsmL => 'l',
        Phase::MsmAB1 => 'a',
        Phase::MsmB2 => 'b',
        Phase::Verify => 'v',
        Phase::Other(s) => s.chars().next().filter(|c| !c.is_control()).unwrap_or('?'),
    }
}

/// The legend of the lettered rows: every letter the phases in `phases` are drawn with,
/// in a fixed order ("G srs gen s synth h/l msm v verify").
/// `short`: shorter names for narrow screens ("G gen u gpu").
pub fn legend<'a>(phases: impl IntoIterator<Item = &'a Phase>, short: bool) -> String {
    const KNOWN: &[(&[Phase], &str, &str)] = &[
        (&[Phase::SrsGenerate], "srs gen", "gen"),
        (&[Phase::SrsLoad], "srs load", "load"),
        (&[Phase::Synthesis], "synth", "synth"),
        (&[Phase::Prove], "prove", "prove"),
        (&[Phase::GpuSetup], "gpu setup", "gpu"),
        (&[Phase::FftH], "fft", "fft"),
        (
            &[Phase::MsmH, Phase::MsmL, Phase::MsmAB1, Phase::MsmB2],
            "msm",
            "msm",
        ),
        (&[Phase::Verify], "verify", "verify"),
    ];
    let mut seen: Vec<&Phase> = Vec::new();
    for p in phases {
        if !seen.contains(&p) {
            seen.push(p);
        }
    }
    let mut parts: Vec<String> = Vec::new();
    for (group, long, brief) in KNOWN {
        let name = if short { brief } else { long };
        let letters: Vec<String> = group
            .iter()
            .filter(|p| seen.contains(p))
            .map(|p| letter(p).to_string())
            .collect();
        if !letters.is_empty() {
            parts.push(format!("{} {name}", letters.join("/")));
        }
    }
    let mut others: Vec<String> = seen
        .iter()
        .filter(|p| matches!(p, Phase::Other(_)))
        .map(|p| {
            let name: String = inert(p.as_str())
                .chars()
                .take(if short { 8 } else { 24 })
                .collect();
            format!("{} {name}", letter(p))
        })
        .collect();
    others.sort();
    others.dedup();
    parts.extend(others);
    parts.join(" ")
}

impl RowKey {
    /// Row label (fits the gutter).
    pub fn label(&self) -> String {
        match self {
            RowKey::Part(p, Some(i)) => format!("{} p{i}", short_phase(p)),
            RowKey::Part(p, None) | RowKey::Phase(p) => short_phase(p).to_string(),
            RowKey::Group(g) => g.name().to_string(),
            RowKey::Rest(g) => g.name().to_string(),
            RowKey::Base(p) => format!("b {}", short_phase(p)),
            RowKey::BaseAll => "baseline".into(),
            RowKey::Threshold(t) => match t {
                ThresholdPhase::GpuOrTransition => "gpu/trans".into(),
                other => other.name().into(),
            },
        }
    }
}

/// Phase names short enough for the gutter.
pub fn short_phase(p: &Phase) -> &str {
    match p {
        Phase::SrsGenerate => "srs gen",
        Phase::SrsLoad => "srs load",
        Phase::Synthesis => "synth",
        Phase::GpuSetup => "gpu setup",
        // rust-fil-proofs' sealing steps (read from its log lines) as the field names them.
        Phase::Other(name) => match name.as_str() {
            "seal_pre_commit_phase1" => "PC1",
            "seal_pre_commit_phase2" => "PC2",
            "seal_commit_phase1" => "C1",
            "seal_commit_phase2" => "C2",
            "seal_commit_phase2_circuit_proofs" => "C2 proofs",
            "validate_cache_for_precommit_phase2" => "PC2 check",
            "validate_cache_for_commit" => "C check",
            "params_load" => "params",
            "clear_cache" => "clear",
            other => other,
        },
        other => other.as_str(),
    }
}

/// The rows the data in `[t0, t1]` would like, most detailed first (at most `max`), then
/// the baseline's ([`RowKey::Base`]) when one is drawn in.
pub fn rows(app: &App, t0: u64, t1: u64, max: usize) -> Vec<RowKey> {
    let mut out = own_rows(app, t0, t1, max);
    if let Some(b) = &app.baseline {
        let mut phases: Vec<Phase> = Vec::new();
        for s in b.spans_in(&app.model, t0, t1) {
            if !phases.contains(&s.phase) {
                phases.push(s.phase);
            }
        }
        phases.sort();
        out.extend(phases.into_iter().map(RowKey::Base));
    }
    out
}

/// Whether the timeline draws the prover's phases (sent, or read from its log lines) rather
/// than the RSS threshold bands.
fn prover_phases(m: &crate::model::Model) -> bool {
    m.has_events() || m.has_derived()
}

fn own_rows(app: &App, t0: u64, t1: u64, max: usize) -> Vec<RowKey> {
    let m = &app.model;
    if prover_phases(m) {
        let mut keys = m.phase_rows(t0, t1);
        keys.sort();
        let detailed: Vec<RowKey> = keys
            .iter()
            .map(|(p, i)| RowKey::Part(p.clone(), *i))
            .collect();
        if detailed.len() <= max {
            return detailed;
        }
        return grouped(&detailed);
    }
    let mut phases: Vec<ThresholdPhase> = m
        .runs_in(t0, t1)
        .iter()
        .filter(|r| r.end >= t0)
        .map(|r| r.phase)
        .collect();
    phases.sort();
    phases.dedup();
    phases.into_iter().map(RowKey::Threshold).collect()
}

/// One row per partition of the phases that have partitions, the other phases lettered on
/// a row per group.
fn per_partition(rows: &[RowKey]) -> Vec<RowKey> {
    let mut out: Vec<RowKey> = rows
        .iter()
        .filter(|r| matches!(r, RowKey::Part(_, Some(_))))
        .cloned()
        .collect();
    let mut rest: Vec<Group> = rows
        .iter()
        .filter_map(|r| match r {
            RowKey::Part(p, None) => Some(Group::of(p)),
            _ => None,
        })
        .collect();
    rest.sort();
    rest.dedup();
    out.extend(rest.into_iter().map(RowKey::Rest));
    out
}

fn compact(rows: &[RowKey]) -> Vec<RowKey> {
    let mut groups: Vec<Group> = rows
        .iter()
        .filter_map(|r| match r {
            RowKey::Part(p, _) | RowKey::Phase(p) => Some(Group::of(p)),
            _ => None,
        })
        .collect();
    groups.sort();
    groups.dedup();
    groups.into_iter().map(RowKey::Group).collect()
}

fn grouped(rows: &[RowKey]) -> Vec<RowKey> {
    let mut out: Vec<RowKey> = Vec::new();
    for r in rows {
        let k = match r {
            RowKey::Part(p, _) => RowKey::Phase(p.clone()),
            other => other.clone(),
        };
        if !out.contains(&k) {
            out.push(k);
        }
    }
    out
}

/// Glyph of a threshold phase in the single-row view (readable without colour).
fn shade(p: ThresholdPhase) -> char {
    match p {
        ThresholdPhase::IdlePre => '·',
        ThresholdPhase::IdlePost => '░',
        ThresholdPhase::GpuOrTransition => '▒',
        ThresholdPhase::Synth => '▓',
        ThresholdPhase::PeakSynth => '█',
    }
}

/// Draw the title row and the Gantt rows into `area`.
pub fn draw(buf: &mut Buffer, area: Rect, gutter: u16, app: &App, wanted: &[RowKey]) {
    if area.height == 0 || area.width <= gutter + 1 {
        return;
    }
    let t = &app.theme;
    let m = &app.model;
    let (t0, t1) = app.window();
    let h = (area.height - 1) as usize;
    let is_base = |r: &&RowKey| matches!(r, RowKey::Base(_) | RowKey::BaseAll);
    let base_rows: Vec<RowKey> = wanted.iter().filter(is_base).cloned().collect();
    let mut rows: Vec<RowKey> = wanted.iter().filter(|r| !is_base(r)).cloned().collect();
    // The most detailed form that fits: every phase and partition; one row per partition
    // with the other phases lettered by group; one row per phase; one lettered row per group.
    if rows.len() > h {
        let parts = per_partition(&rows);
        let partitioned = parts.iter().any(|r| matches!(r, RowKey::Part(..)));
        rows = if partitioned && parts.len() <= h {
            parts
        } else {
            let g = grouped(&rows);
            if prover_phases(m) && g.len() > h {
                compact(&rows)
            } else {
                g
            }
        };
    }
    let lettered = rows
        .iter()
        .any(|r| matches!(r, RowKey::Group(_) | RowKey::Rest(_)));
    let hidden = rows.len().saturating_sub(h);
    let single_threshold_row = !prover_phases(m) && rows.len() > h;
    rows.truncate(h);
    // The baseline's rows in the room left: one per phase, else one lettered row.
    let room = h - rows.len();
    let base_rows: Vec<RowKey> = if base_rows.len() <= room {
        base_rows
    } else if room >= 1 && !base_rows.is_empty() {
        vec![RowKey::BaseAll]
    } else {
        Vec::new()
    };

    let mut items: Vec<Item> = Vec::new();
    if prover_phases(m) {
        if let Some(p) = m.running.last() {
            items.push(Item::new(
                2,
                vec![
                    Span::styled(format!("proof {} ", p.proof_id), t.dim()),
                    Span::styled(inert(&m.current_phase_text()).into_owned(), t.bold()),
                ],
            ));
        } else if let Some(p) = m.proofs.back() {
            items.push(Item::new(
                2,
                vec![Span::styled(format!("last proof {} ", p.proof_id), t.dim())],
            ));
        }
        if !m.has_events() {
            items.push(Item::new(
                2,
                vec![Span::styled("from its log lines ".to_string(), t.dim())],
            ));
        }
        if lettered {
            // Every letter a lettered row draws in this window.
            let drawn: Vec<&Phase> = m
                .spans_in(t0, t1)
                .filter(|s| {
                    rows.iter().any(|r| match r {
                        RowKey::Group(g) => Group::of(&s.phase) == *g,
                        RowKey::Rest(g) => Group::of(&s.phase) == *g && s.partition.is_none(),
                        _ => false,
                    })
                })
                .map(|s| &s.phase)
                .collect();
            // It stays longer than the proof's name: without it the letters say nothing.
            let text = |short| format!("  {}", legend(drawn.iter().copied(), short));
            items.push(
                Item::new(1, vec![Span::styled(text(false), t.dim())])
                    .or(0, vec![Span::styled(text(true), t.dim())]),
            );
        }
        if hidden > 0 {
            items.push(Item::new(
                1,
                vec![Span::styled(format!("  +{hidden} rows"), t.dim())],
            ));
        }
    } else {
        let th = m.thresholds();
        items.push(Item::new(
            0,
            vec![Span::styled(
                format!(
                    "by RSS thresholds {}/{}/{}/{} GiB",
                    th.idle, th.gpu, th.synth, th.peak
                ),
                t.dim(),
            )],
        ));
    }
    title_line(
        buf,
        Rect::new(area.x, area.y, area.width, 1),
        app,
        "phases",
        items,
    );

    let plot_x = area.x + gutter;
    let pw = area.width - gutter;
    let halves = pw as u64 * 2;
    let span = t1.saturating_sub(t0).max(1);
    let hc = |x: u64| -> u64 {
        ((x.saturating_sub(t0)) as u128 * halves as u128 / span as u128).min(halves as u128 - 1)
            as u64
    };
    let dim = t.dim();

    if rows.is_empty() || single_threshold_row {
        let y = area.y + 1;
        if area.height < 2 {
            return;
        }
        if single_threshold_row {
            buf.set_stringn(
                area.x,
                y,
                format!("{:>w$}│", "threshold", w = (gutter - 1) as usize),
                gutter as usize,
                dim,
            );
            for r in m.runs_in(t0, t1) {
                if r.end < t0 || r.start > t1 {
                    continue;
                }
                let (a, b) = (hc(r.start) / 2, hc(r.end) / 2);
                for x in a..=b {
                    if let Some(cell) = buf.cell_mut((plot_x + x as u16, y)) {
                        cell.set_char(shade(r.phase))
                            .set_style(t.threshold_phase(r.phase));
                    }
                }
            }
        } else {
            let msg = if prover_phases(m) {
                "no phase in this window"
            } else {
                "waiting for samples"
            };
            buf.set_stringn(plot_x, y, msg, pw as usize, dim);
        }
        cursor_column(buf, area, gutter, app);
        return;
    }

    let shown_rows = rows.len();
    for (i, key) in rows.iter().enumerate() {
        let y = area.y + 1 + i as u16;
        let label = inert(&key.label()).into_owned();
        let w = (gutter - 1) as usize;
        let label: String = label.chars().take(w).collect();
        buf.set_stringn(area.x, y, format!("{label:>w$}│"), gutter as usize, dim);
        if let RowKey::Group(g) | RowKey::Rest(g) = key {
            // Each cell shows the innermost (latest started) phase of the group over it.
            let rest = matches!(key, RowKey::Rest(_));
            let mut best: Vec<Option<(u64, &Phase)>> = vec![None; pw as usize];
            for s in m.spans_in(t0, t1) {
                if Group::of(&s.phase) != *g || (rest && s.partition.is_some()) {
                    continue;
                }
                let end = s.end_or(app.clock.max(m.now()));
                if end < t0 {
                    continue;
                }
                for c in hc(s.start) / 2..=hc(end) / 2 {
                    let slot = &mut best[c as usize];
                    if slot.is_none_or(|(st, _)| s.start >= st) {
                        *slot = Some((s.start, &s.phase));
                    }
                }
            }
            for (x, b) in best.iter().enumerate() {
                if let Some((_, p)) = b {
                    if let Some(cell) = buf.cell_mut((plot_x + x as u16, y)) {
                        cell.set_char(letter(p))
                            .set_style(t.phase(p).add_modifier(ratatui::style::Modifier::REVERSED));
                    }
                }
            }
            continue;
        }
        let mut cover = vec![false; halves as usize];
        let style: Style = match key {
            RowKey::Part(p, _) | RowKey::Phase(p) => {
                for s in m.spans_in(t0, t1) {
                    let hit = match key {
                        RowKey::Part(p2, part) => &s.phase == p2 && s.partition == *part,
                        _ => &s.phase == p,
                    };
                    if hit {
                        let end = s.end_or(app.clock.max(m.now()));
                        if end >= t0 {
                            for c in hc(s.start)..=hc(end) {
                                cover[c as usize] = true;
                            }
                        }
                    }
                }
                t.phase(p)
            }
            RowKey::Group(_) | RowKey::Rest(_) | RowKey::Base(_) | RowKey::BaseAll => {
                unreachable!("drawn above or below")
            }
            RowKey::Threshold(ph) => {
                for r in m.runs_in(t0, t1) {
                    if r.phase == *ph && r.end >= t0 && r.start <= t1 {
                        for c in hc(r.start)..=hc(r.end) {
                            cover[c as usize] = true;
                        }
                    }
                }
                t.threshold_phase(*ph)
            }
        };
        for x in 0..pw as usize {
            let ch = match (cover[2 * x], cover[2 * x + 1]) {
                (true, true) => '█',
                (true, false) => '▌',
                (false, true) => '▐',
                (false, false) => continue,
            };
            if let Some(cell) = buf.cell_mut((plot_x + x as u16, y)) {
                cell.set_char(ch).set_style(style);
            }
        }
    }
    baseline_rows(buf, area, gutter, app, &base_rows, shown_rows);
    mode_marks(buf, area, gutter, app);
    warning_marks(buf, area, gutter, app);
    cursor_column(buf, area, gutter, app);
}

/// Warnings read from the child's log lines (bellperson's "GPU … failed! Falling back to
/// CPU"): a `!` in the warning colour on the top row at their time, over an empty cell or a
/// bar alike (the log pane has the words).
fn warning_marks(buf: &mut Buffer, area: Rect, gutter: u16, app: &App) {
    let (t0, t1) = app.window();
    let pw = area.width.saturating_sub(gutter);
    if pw < 2 || area.height < 2 {
        return;
    }
    let span = t1.saturating_sub(t0).max(1);
    let style = app.theme.warn();
    for (t, _) in app.model.log_warnings.iter() {
        if *t < t0 || *t > t1 {
            continue;
        }
        let x = area.x
            + gutter
            + (t.saturating_sub(t0) as u128 * (pw as u128 - 1) / span as u128) as u16;
        if let Some(cell) = buf.cell_mut((x, area.y + 1)) {
            cell.set_char('!').set_style(style);
        }
    }
}

/// The baseline's rows under the shown session's (from row `below` on), dim: a bar per
/// phase row, the innermost phase's letter on the lettered row.
fn baseline_rows(
    buf: &mut Buffer,
    area: Rect,
    gutter: u16,
    app: &App,
    rows: &[RowKey],
    below: usize,
) {
    let Some(b) = &app.baseline else { return };
    if rows.is_empty() {
        return;
    }
    let (t0, t1) = app.window();
    let pw = area.width - gutter;
    let halves = pw as u64 * 2;
    let span = t1.saturating_sub(t0).max(1);
    let hc = |x: u64| -> u64 {
        ((x.saturating_sub(t0)) as u128 * halves as u128 / span as u128).min(halves as u128 - 1)
            as u64
    };
    let dim = app.theme.dim();
    let spans = b.spans_in(&app.model, t0, t1);
    let w = (gutter - 1) as usize;
    for (i, key) in rows.iter().enumerate() {
        let y = area.y + 1 + (below + i) as u16;
        if y >= area.y + area.height {
            break;
        }
        let label: String = inert(&key.label()).chars().take(w).collect();
        buf.set_stringn(area.x, y, format!("{label:>w$}│"), gutter as usize, dim);
        if *key == RowKey::BaseAll {
            let mut best: Vec<Option<(u64, &Phase)>> = vec![None; pw as usize];
            for s in &spans {
                let end = s.end_or(s.start);
                for c in hc(s.start) / 2..=hc(end) / 2 {
                    let slot = &mut best[c as usize];
                    if slot.is_none_or(|(st, _)| s.start >= st) {
                        *slot = Some((s.start, &s.phase));
                    }
                }
            }
            for (x, cell) in best.iter().enumerate() {
                if let Some((_, p)) = cell {
                    if let Some(c) = buf.cell_mut((area.x + gutter + x as u16, y)) {
                        c.set_char(letter(p)).set_style(dim);
                    }
                }
            }
            continue;
        }
        let RowKey::Base(phase) = key else { continue };
        let mut cover = vec![false; halves as usize];
        for s in spans.iter().filter(|s| &s.phase == phase) {
            for c in hc(s.start)..=hc(s.end_or(s.start)) {
                cover[c as usize] = true;
            }
        }
        for x in 0..pw as usize {
            // Lighter shades than the shown session's bars: a second set, not more of it.
            let ch = match (cover[2 * x], cover[2 * x + 1]) {
                (true, true) => '▒',
                (true, false) => '▌',
                (false, true) => '▐',
                (false, false) => continue,
            };
            if let Some(c) = buf.cell_mut((area.x + gutter + x as u16, y)) {
                c.set_char(ch).set_style(dim);
            }
        }
    }
}

/// Batch-mode switches: a dotted line down the Gantt rows at the switch and the new mode's
/// name on the bottom row where there is room, so live and replay show which proofs ran in
/// which mode. Drawn into empty cells only: phases stay readable.
fn mode_marks(buf: &mut Buffer, area: Rect, gutter: u16, app: &App) {
    let (t0, t1) = app.window();
    let pw = area.width.saturating_sub(gutter);
    if pw < 2 || area.height < 2 {
        return;
    }
    let span = t1.saturating_sub(t0).max(1);
    let style = app.theme.bold();
    let right = area.x + area.width;
    let bottom = area.y + area.height - 1;
    for (t, _from, to) in app.model.mode_changes.iter() {
        if *t < t0 || *t > t1 {
            continue;
        }
        let x = area.x
            + gutter
            + (t.saturating_sub(t0) as u128 * (pw as u128 - 1) / span as u128) as u16;
        for y in area.y + 1..=bottom {
            if let Some(cell) = buf.cell_mut((x, y)) {
                if cell.symbol() == " " {
                    cell.set_char('┆').set_style(style);
                }
            }
        }
        for (i, ch) in format!("▸{to}").chars().enumerate() {
            let cx = x + i as u16;
            if cx >= right {
                break;
            }
            match buf.cell_mut((cx, bottom)) {
                Some(cell) if cell.symbol() == " " || cell.symbol() == "┆" => {
                    cell.set_char(ch).set_style(style);
                }
                _ => break,
            }
        }
    }
}

fn cursor_column(buf: &mut Buffer, area: Rect, gutter: u16, app: &App) {
    let Some(c) = app.cursor() else { return };
    let (t0, t1) = app.window();
    let pw = area.width - gutter;
    let span = t1.saturating_sub(t0).max(1);
    let cx =
        area.x + gutter + (c.saturating_sub(t0) as u128 * (pw as u128 - 1) / span as u128) as u16;
    for r in 1..area.height {
        if let Some(cell) = buf.cell_mut((cx, area.y + r)) {
            cell.set_style(app.theme.cursor());
        }
    }
}
