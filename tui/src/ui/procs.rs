//! The `t` overlay: the process tree of one usage reading — the newest, or the one nearest
//! the cursor (in replay the cursor's time applies) — one row per process: pid, command
//! (inert text), RSS and its parts, pinned, GPU memory per GPU, cores busy, threads, major
//! faults and storage rates. Sorted by the column `s` picks (largest first; pid smallest
//! first; `tree` in the reading's order with children indented under their parent),
//! scrolled with ↑/↓ (PgUp/PgDn). Under it the tree's totals and each GPU's details. Columns
//! that would not fit are left out whole, the secondary first; unknown cells read "-",
//! never 0.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};

use provetop_shared::record::{GpuDetail, ProcUsage};
use provetop_shared::Usage;

use crate::app::{App, ProcSort, Screen, NS};
use crate::ui::{fit, fmt_clock, short_bytes, Item};

/// Most characters of a command shown (a kernel `comm` has at most 15; longer ones end "…").
const COMMAND_W: usize = 24;

/// A column: header, right-aligned or not, rank (higher goes first on a narrow screen).
struct Column {
    header: String,
    left: bool,
    rank: u8,
    cells: Vec<String>,
}

impl Column {
    fn width(&self) -> usize {
        crate::ui::column_width(&self.header, &self.cells)
    }
}

fn opt_bytes(b: Option<u64>) -> String {
    b.map_or("-".into(), short_bytes)
}

fn rate(v: Option<f64>) -> String {
    match v.filter(|v| v.is_finite()) {
        Some(v) => format!("{}/s", short_bytes(v.max(0.0) as u64)),
        None => "-".into(),
    }
}

fn num(v: Option<f64>, digits: usize) -> String {
    match v.filter(|v| v.is_finite()) {
        Some(v) => format!("{v:.digits$}"),
        None => "-".into(),
    }
}

/// The command, inert and at most [`COMMAND_W`] characters.
fn command(p: &ProcUsage, depth: usize) -> String {
    let text = crate::text::inert(&p.command);
    let indent = "  ".repeat(depth.min(4));
    let mut s: String = format!("{indent}{text}");
    if s.chars().count() > COMMAND_W {
        s = s.chars().take(COMMAND_W - 1).collect();
        s.push('…');
    }
    s
}

/// Rows in display order, each with its depth in the tree.
fn ordered(u: &Usage, sort: ProcSort) -> Vec<(&ProcUsage, usize)> {
    let depth = |p: &ProcUsage| -> usize {
        let mut d = 0;
        let mut ppid = p.ppid;
        // Bounded: a loop in damaged ppids ends.
        while d < 16 {
            match u.procs.iter().find(|q| q.pid == ppid && q.pid != p.pid) {
                Some(q) => {
                    d += 1;
                    ppid = q.ppid;
                }
                None => break,
            }
        }
        d
    };
    let mut v: Vec<(&ProcUsage, usize)> = u.procs.iter().map(|p| (p, depth(p))).collect();
    let gpu = |p: &ProcUsage| p.gpu_mem.iter().map(|g| g.1).sum::<u64>();
    let key = |c: Option<f64>| c.filter(|c| c.is_finite()).unwrap_or(f64::NEG_INFINITY);
    match sort {
        ProcSort::Rss => v.sort_by_key(|p| std::cmp::Reverse(p.0.rss)),
        ProcSort::Cores => v.sort_by(|a, b| key(b.0.cores).total_cmp(&key(a.0.cores))),
        ProcSort::Gpu => v.sort_by_key(|p| std::cmp::Reverse(gpu(p.0))),
        ProcSort::Threads => v.sort_by_key(|p| std::cmp::Reverse(p.0.threads)),
        ProcSort::Pid => v.sort_by_key(|p| p.0.pid),
        ProcSort::Tree => return v,
    }
    // Sorted by a column, the rows are not under their parents: no indent.
    v.into_iter().map(|(p, _)| (p, 0)).collect()
}

/// When the reading was taken, as the screen counts time.
fn when(app: &App, t: u64) -> String {
    if matches!(app.screen, Screen::Replay(_)) {
        format!("at {}", fmt_clock(t.saturating_sub(app.origin), true))
    } else {
        let back = app.clock.saturating_sub(t);
        if back < NS {
            "now".into()
        } else {
            format!("at -{:.1}s", back as f64 / NS as f64)
        }
    }
}

fn columns(u: &Usage, rows: &[(&ProcUsage, usize)]) -> Vec<Column> {
    let col = |header: &str, left, rank, f: &dyn Fn(&ProcUsage, usize) -> String| Column {
        header: header.into(),
        left,
        rank,
        cells: rows.iter().map(|(p, d)| f(p, *d)).collect(),
    };
    let mut gpus: Vec<u32> = u.gpus.iter().map(|g| g.index).collect();
    for (p, _) in rows {
        for (i, _) in &p.gpu_mem {
            if !gpus.contains(i) {
                gpus.push(*i);
            }
        }
    }
    gpus.sort_unstable();
    let mut cols = vec![
        col("pid", false, 0, &|p, _| p.pid.to_string()),
        col("command", true, 0, &|p, d| command(p, d)),
        col("rss", false, 0, &|p, _| short_bytes(p.rss)),
        col("anon", false, 5, &|p, _| short_bytes(p.anon)),
        col("file", false, 6, &|p, _| short_bytes(p.file)),
        col("shmem", false, 5, &|p, _| short_bytes(p.shmem)),
        col("pinned", false, 3, &|p, _| opt_bytes(p.pinned)),
    ];
    for g in gpus {
        cols.push(col(&format!("gpu{g}"), false, 2, &move |p, _| {
            // A process NVML does not list on a GPU holds none of its memory there.
            short_bytes(
                p.gpu_mem
                    .iter()
                    .find(|(i, _)| *i == g)
                    .map_or(0, |(_, b)| *b),
            )
        }));
    }
    cols.extend([
        col("cores", false, 0, &|p, _| num(p.cores, 1)),
        col("thr", false, 1, &|p, _| p.threads.to_string()),
        col("majflt/s", false, 7, &|p, _| num(p.major_faults, 0)),
        col("read", false, 8, &|p, _| rate(p.read_bps)),
        col("write", false, 8, &|p, _| rate(p.write_bps)),
    ]);
    cols
}

/// The lines under the table: the tree's totals, its memory cgroup as the kernel charged it
/// then, each GPU's details; items whole.
fn notes(app: &App, u: &Usage) -> Vec<Vec<Item<'static>>> {
    let t = &app.theme;
    let dim = t.dim();
    let kv = |k: &str, v: String, rank: u8| {
        Item::new(
            rank,
            vec![Span::styled(format!(" {k} "), dim), Span::raw(v)],
        )
    };
    let mut out = vec![vec![
        Item::new(0, vec![Span::styled(" tree", t.bold())]),
        kv("cores", num(u.cores, 1), 0),
        kv("threads", u.threads.to_string(), 1),
        kv(
            "host",
            format!(
                "{}/{}",
                num(u.host_cores, 1),
                if u.host_ncpu > 0 {
                    u.host_ncpu.to_string()
                } else {
                    "-".into()
                }
            ),
            2,
        ),
        kv("ctx/s", num(u.ctx_switches, 0), 5),
        kv("majflt/s", num(u.major_faults, 0), 3),
        kv("read", rate(u.read_bps), 4),
        kv("write", rate(u.write_bps), 4),
    ]];
    let kernel = match app.cursor() {
        Some(c) => app.model.kernel_at(c).map(|(_, k)| k),
        None => app.model.kernel(),
    };
    if let Some(cg) = kernel.and_then(|k| k.cgroup.as_ref()) {
        out.push(cgroup_note(app, cg));
    }
    for g in &u.gpus {
        out.push(gpu_note(app, g));
    }
    out
}

/// The tree's memory cgroup: its path, usage against its limits, and memory.stat's breakdown
/// (what the kernel charges it: page cache, kernel memory and sockets too).
fn cgroup_note(app: &App, cg: &provetop_shared::CgroupReading) -> Vec<Item<'static>> {
    let t = &app.theme;
    let dim = t.dim();
    let kv = |k: &str, v: Option<u64>, rank: u8| {
        v.map(|v| {
            Item::new(
                rank,
                vec![
                    Span::styled(format!(" {k} "), dim),
                    Span::raw(short_bytes(v)),
                ],
            )
        })
    };
    let limit = match (cg.max, cg.high) {
        (Some(m), Some(h)) if h < m => format!("/{} high", short_bytes(h)),
        (Some(m), _) => format!("/{} max", short_bytes(m)),
        (None, Some(h)) => format!("/{} high", short_bytes(h)),
        (None, None) => String::new(),
    };
    let mut items = vec![
        Item::new(0, vec![Span::styled(" cgroup", t.bold())]),
        Item::new(
            0,
            vec![Span::raw(format!(
                " {}{limit}",
                cg.current.map_or("-".into(), short_bytes)
            ))],
        ),
        Item::new(
            2,
            vec![Span::styled(
                format!(" {}", crate::text::inert(&cg.path)),
                dim,
            )],
        ),
    ];
    let st = &cg.stat;
    items.extend(
        [
            kv("anon", st.anon, 1),
            kv("file", st.file, 1),
            kv("shmem", st.shmem, 3),
            kv("kernel", st.kernel, 3),
            kv("sock", st.sock, 5),
            kv("ptables", st.pagetables, 4),
            kv("swap", cg.swap, 4),
        ]
        .into_iter()
        .flatten(),
    );
    items
}

/// A GPU's health, labelled, where NVML gives it: the power limit, ECC errors (corrected,
/// uncorrected), PCIe replays, the last XID (in the warning colour once there is trouble).
fn health_items(app: &App, g: &GpuDetail) -> Vec<Item<'static>> {
    let t = &app.theme;
    let (dim, warn) = (t.dim(), t.warn());
    let mut items = Vec::new();
    if let Some(l) = g.power_limit_w {
        items.push(Item::new(
            7,
            vec![Span::styled(" limit ", dim), Span::raw(format!("{l:.0} W"))],
        ));
    }
    if let (Some(c), Some(u)) = (g.ecc_corrected, g.ecc_uncorrected) {
        let style = if u > 0 { warn } else { Style::default() };
        items.push(Item::new(
            6,
            vec![
                Span::styled(" ecc corr ", dim),
                Span::raw(c.to_string()),
                Span::styled(" uncorr ", dim),
                Span::styled(u.to_string(), style),
            ],
        ));
    }
    if let Some(r) = g.pcie_replays {
        items.push(Item::new(
            6,
            vec![Span::styled(" replays ", dim), Span::raw(r.to_string())],
        ));
    }
    if let Some(x) = g.xid {
        items.push(Item::new(1, vec![Span::styled(format!(" xid {x}"), warn)]));
    }
    items
}

fn gpu_note(app: &App, g: &GpuDetail) -> Vec<Item<'static>> {
    let t = &app.theme;
    let dim = t.dim();
    let name = crate::text::inert(&g.name).into_owned();
    let uuid = crate::text::inert(&g.uuid).into_owned();
    let mut items = vec![
        Item::new(0, vec![Span::styled(format!(" gpu{}", g.index), t.bold())]),
        Item::new(3, vec![Span::raw(format!(" {name}"))]),
        Item::new(6, vec![Span::styled(format!(" {uuid}"), dim)]),
        Item::new(
            1,
            vec![Span::raw(format!(
                " {}",
                g.temp_c.map_or("-°C".into(), |c| format!("{c}°C"))
            ))],
        ),
        Item::new(2, vec![Span::raw(format!(" {} W", num(g.power_w, 0)))]),
        Item::new(
            4,
            vec![Span::raw(format!(
                " {} MHz",
                g.sm_clock_mhz.map_or("-".into(), |c| c.to_string())
            ))],
        ),
        Item::new(
            5,
            vec![
                Span::styled(" pcie rx ", dim),
                Span::raw(rate(g.pcie_rx_bps)),
                Span::styled(" tx ", dim),
                Span::raw(rate(g.pcie_tx_bps)),
            ],
        ),
    ];
    items.extend(health_items(app, g));
    if !g.throttle.is_empty() {
        let list: Vec<String> = g
            .throttle
            .iter()
            .map(|r| crate::text::inert(r).into_owned())
            .collect();
        items.insert(
            1,
            Item::new(
                0,
                vec![Span::styled(
                    format!(" throttle {}", list.join(",")),
                    t.warn(),
                )],
            ),
        );
    }
    items
}

/// Draw the table over the middle of `area`; returns how far it can scroll.
pub fn draw(buf: &mut Buffer, area: Rect, app: &App) -> usize {
    let t = &app.theme;
    let reading = app.model.usage_at(app.cursor());
    let sort = app.view.procs_sort;
    let Some((at, u)) = reading else {
        // The longest form that fits: words are never cut.
        let text = [
            "  no usage readings (usage off, or an older session)",
            "  no usage readings",
        ]
        .into_iter()
        .find(|l| l.chars().count() + 4 <= area.width as usize)
        .unwrap_or("");
        let title = [" processes (t or Esc closes) ", " processes "]
            .into_iter()
            .find(|l| l.chars().count() + 4 <= area.width as usize)
            .unwrap_or("");
        let w = (text.chars().count().max(title.chars().count()) + 4) as u16;
        let rect = super::overlay(buf, area, w, 3, title, app);
        buf.set_stringn(
            rect.x + 1,
            rect.y + 1,
            text,
            rect.width.saturating_sub(2) as usize,
            t.dim(),
        );
        return 0;
    };
    let rows = ordered(u, sort);
    let mut cols = columns(u, &rows);
    let table_w = |cols: &[Column]| cols.iter().map(|c| 1 + c.width()).sum::<usize>() + 1;
    crate::ui::drop_columns(
        &mut cols,
        |c| c.rank,
        |cols| table_w(cols) + 4 <= area.width as usize,
    );
    let line = |cells: &mut dyn Iterator<Item = (&str, usize, bool)>| {
        let mut s = String::new();
        for (cell, w, left) in cells {
            if left {
                s.push_str(&format!(" {cell:<w$}"));
            } else {
                s.push_str(&format!(" {cell:>w$}"));
            }
        }
        s
    };
    let head = line(&mut cols.iter().map(|c| (c.header.as_str(), c.width(), c.left)));
    let body: Vec<String> = (0..rows.len())
        .map(|r| {
            line(
                &mut cols
                    .iter()
                    .map(|c| (c.cells[r].as_str(), c.width(), c.left)),
            )
        })
        .collect();
    let notes = notes(app, u);
    let title = [
        format!(
            " processes {} · by {} (s sorts) · t or Esc closes ",
            when(app, at),
            sort.name()
        ),
        format!(" processes {} · by {} ", when(app, at), sort.name()),
        " processes ".to_string(),
    ];
    let inner_w = head.chars().count().max(title[1].chars().count()).max(36) + 1;
    let w = (inner_w as u16 + 2).min(area.width);
    let title = title
        .iter()
        .find(|s| s.chars().count() + 4 <= w as usize)
        .cloned()
        .unwrap_or_default();
    let empty = rows.is_empty();
    let want_h = 2 + 1 + body.len().max(1) + notes.len();
    let h = (want_h.min(u16::MAX as usize) as u16).min(area.height.saturating_sub(2).max(3));
    let rect = super::overlay(buf, area, w, h, &title, app);
    let room = rect.width.saturating_sub(2) as usize;
    let inner = rect.height.saturating_sub(2) as usize;
    // The header, the notes, then as many rows as are left.
    let note_rows = notes.len().min(inner.saturating_sub(2));
    let body_rows = inner.saturating_sub(1 + note_rows).max(1);
    let scroll_max = body.len().saturating_sub(body_rows);
    let scroll = app.view.procs_scroll.min(scroll_max);
    let mut y = rect.y + 1;
    let bottom = rect.y + rect.height - 1;
    let put = |buf: &mut Buffer, y: u16, text: &str, style: Style| {
        if y < bottom {
            buf.set_stringn(rect.x + 1, y, text, room, style);
        }
    };
    put(buf, y, &head, t.dim());
    y += 1;
    if empty {
        put(buf, y, "  no process in this reading", t.dim());
        y += 1;
    }
    let shown: Vec<&String> = body.iter().skip(scroll).take(body_rows).collect();
    for (k, text) in shown.iter().enumerate() {
        // The last visible row says what is hidden when the table scrolls.
        let more_below = k + 1 == body_rows && scroll + body_rows < body.len();
        if more_below {
            let more = body.len() - scroll - body_rows + 1;
            put(buf, y, &format!("  … {more} more below (↓)"), t.dim());
        } else {
            put(buf, y, text, Style::default());
        }
        y += 1;
    }
    for items in notes.into_iter().take(note_rows) {
        if y >= bottom {
            break;
        }
        let spans = fit(items, room);
        buf.set_line(rect.x + 1, y, &Line::from(spans), room as u16);
        y += 1;
    }
    scroll_max
}
