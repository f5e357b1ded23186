//! The `m` overlay: what each batch mode did so far, side by side (the finished proofs the
//! model keeps): proofs, sectors, seconds per sector and sectors per hour over busy time, the
//! rate against `single`'s, peak RSS per proof. The live counterpart of `classify`'s per-mode
//! table, for an engineer who switches modes and wants the comparison without leaving.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;

use provetop_shared::units::fmt_bytes;
use provetop_shared::BatchMode;

use crate::app::App;

/// Draw the table over the middle of `area`.
pub fn draw(buf: &mut Buffer, area: Rect, app: &App) {
    let t = &app.theme;
    let rows = app.model.mode_rows();
    let single = rows
        .iter()
        .find(|r| r.mode == BatchMode::Single)
        .map(|r| r.s_per_sector());
    let current = app.model.prover.mode;
    let mut lines: Vec<(String, Style)> = vec![(
        format!(
            "  {:<12} {:>6} {:>7} {:>8} {:>9} {:>9} {:>11} {:>10}",
            "mode",
            "proofs",
            "sectors",
            "s/sector",
            "sectors/h",
            "vs single",
            "peak median",
            "peak max"
        ),
        t.dim(),
    )];
    for r in &rows {
        let vs = match single {
            Some(s) if r.sectors > 0 => format!("{:.2}×", s / r.s_per_sector()),
            _ => "–".into(),
        };
        let now = Some(r.mode) == current;
        lines.push((
            format!(
                "{} {:<12} {:>6} {:>7} {:>8.2} {:>9.0} {:>9} {:>11} {:>10}",
                if now { "▸" } else { " " },
                r.mode.to_string(),
                r.proofs,
                r.sectors,
                r.s_per_sector(),
                r.sectors_per_hour(),
                vs,
                fmt_bytes(r.peak_median),
                fmt_bytes(r.peak_max)
            ),
            if now { t.bold() } else { Style::default() },
        ));
    }
    if rows.is_empty() {
        lines.push(("  no proof has finished yet".into(), t.dim()));
    }
    lines.push((
        "  busy time: overlapping proofs count once, idle not at all".into(),
        t.dim(),
    ));
    let w = lines.iter().map(|l| l.0.chars().count()).max().unwrap_or(0) as u16 + 4;
    let h = lines.len() as u16 + 2;
    let rect = super::overlay(buf, area, w, h, " batch modes (m or Esc closes) ", app);
    let room = rect.width.saturating_sub(3) as usize;
    for (i, (text, style)) in lines.iter().enumerate() {
        let y = rect.y + 1 + i as u16;
        if y + 1 >= rect.y + rect.height {
            break;
        }
        buf.set_stringn(rect.x + 1, y, text, room, *style);
    }
}
