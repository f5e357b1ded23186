//! The `m` overlay: what each batch mode did so far, side by side (the finished proofs the
//! model keeps): proofs, sectors, seconds per sector and sectors per hour over busy time, the
//! rate against `single`'s, peak RSS per proof, and the overlap: the share of busy time
//! the CPU and a GPU were both busy (see [`crate::model::usage`]; "–" while unknown). The live counterpart of `classify`'s per-mode
//! table, for an engineer who switches modes and wants the comparison without leaving.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;

use provetop_shared::units::fmt_bytes;
use provetop_shared::BatchMode;

use crate::app::App;

/// A column of the table: its header, its cells (one per mode row), and its rank (higher
/// ranks are left out first on a narrow screen).
struct Column {
    header: &'static str,
    cells: Vec<String>,
    rank: u8,
}

impl Column {
    fn width(&self) -> usize {
        crate::ui::column_width(self.header, &self.cells)
    }
}

/// Draw the table over the middle of `area`. Columns that would not fit are left out whole,
/// the redundant and the secondary first (sectors/h restates s/sector), never mode and
/// s/sector.
pub fn draw(buf: &mut Buffer, area: Rect, app: &App) {
    let t = &app.theme;
    let rows = app.model.mode_rows();
    let single = rows
        .iter()
        .find(|r| r.mode == BatchMode::Single)
        .map(|r| r.s_per_sector());
    let current = app.model.prover.mode;
    let col = |header, rank, cell: &dyn Fn(&crate::model::ModeRow) -> String| Column {
        header,
        rank,
        cells: rows.iter().map(cell).collect(),
    };
    let mut columns = vec![
        col("proofs", 3, &|r| r.proofs.to_string()),
        col("sectors", 2, &|r| r.sectors.to_string()),
        col("s/sector", 0, &|r| format!("{:.2}", r.s_per_sector())),
        col("sectors/h", 5, &|r| format!("{:.0}", r.sectors_per_hour())),
        col("vs single", 1, &|r| match single {
            Some(s) if r.sectors > 0 => format!("{:.2}×", s / r.s_per_sector()),
            _ => "–".into(),
        }),
        col(
            "overlap",
            1,
            &|r| match app.model.usage.overlap_of(r.mode) {
                Some(o) => format!("{:.0}%", o * 100.0),
                None => "–".into(),
            },
        ),
        col("peak median", 1, &|r| fmt_bytes(r.peak_median)),
        col("peak max", 4, &|r| fmt_bytes(r.peak_max)),
    ];
    let mode_w = rows
        .iter()
        .map(|r| r.mode.to_string().chars().count())
        .chain(["mode".len()])
        .max()
        .unwrap_or(4);
    // What "busy time" means, as long as the screen allows.
    let note = [
        "  busy time: overlapping proofs count once, idle not at all",
        "  busy time: overlaps count once",
    ]
    .into_iter()
    .find(|n| n.chars().count() + 4 <= area.width as usize);
    // Border and padding: "│ " … " │".
    let table_w = |cols: &[Column]| 2 + mode_w + cols.iter().map(|c| 1 + c.width()).sum::<usize>();
    crate::ui::drop_columns(
        &mut columns,
        |c| c.rank,
        |cols| 4 + table_w(cols) <= area.width as usize,
    );

    let line = |mark: &str, mode: &str, cells: &mut dyn Iterator<Item = (&str, usize)>| {
        let mut text = format!("{mark} {mode:<mode_w$}");
        for (cell, w) in cells {
            text.push_str(&format!(" {cell:>w$}"));
        }
        text
    };
    let mut lines: Vec<(String, Style)> = vec![(
        line(
            " ",
            "mode",
            &mut columns.iter().map(|c| (c.header, c.width())),
        ),
        t.dim(),
    )];
    for (i, r) in rows.iter().enumerate() {
        let now = Some(r.mode) == current;
        lines.push((
            line(
                if now { "▸" } else { " " },
                &r.mode.to_string(),
                &mut columns.iter().map(|c| (c.cells[i].as_str(), c.width())),
            ),
            if now { t.bold() } else { Style::default() },
        ));
    }
    if rows.is_empty() {
        lines.push(("  no proof has finished yet".into(), t.dim()));
    }
    if let Some(note) = note {
        lines.push((note.into(), t.dim()));
    }
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
