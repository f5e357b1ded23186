//! The utilisation panel, between the memory chart and the phase timeline, on their time
//! axis (the same gutter, the same columns, the same cursor column).
//!
//! ```text
//!  ─ usage ─ cpu 11.3/16 host 14.0 │ gpu0 86% 3.00G/80.0G ─────   values now or at the cursor
//!   cpu 11.3│▁▁▃▇████▇▃▁▁▁▃▇███                                  compact: one line per
//!    gpu 86%│▁▁▁▁▁▁▁▁▃████▆▁▁▁▁▁▁                                resource (the busiest GPU,
//! gmem 3.00G│▁▁▁▁▂▂▂▂▂▂▂▂▂▂▂▂▂▂▂                                  the fullest GPU memory)
//! ```
//!
//! Pressure (PSI avg10, the tree's cgroup's where it has one, else the host's) gets a line
//! for memory (`pmem`, its `some` line); on a tall screen ([`Rows::Full`]) also memory's
//! `full` line (`pmemF`), CPU (`pcpu`) and I/O (`pio`), each over 100 %.
//!
//! On a tall screen ([`Rows::Full`]) the tree's cores and the host's get a line each (the
//! host's shows what else competes for the cores) and each GPU gets two: its utilisation and
//! its memory against its total. Each cell is the highest reading of its stretch of time
//! (a short burst is never lost), as a block of eight heights over the line's scale: cores
//! over the cores online, utilisation over 100 %, memory over the GPU's total. A blank cell
//! is unknown (no reading), never zero. Without any utilisation reading (an older session,
//! usage off, no GPU) the panel takes no room at all.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::Span;

use crate::app::{App, GpuScale};
use crate::model::usage::{
    gpu_lane, psi_lane, CPU_HOST, CPU_INTERVAL, CPU_LANES, CPU_NCPU, CPU_TREE, GPU_LANES, GPU_TOTAL,
};
use crate::series::{Bucket, Metric, Reading, Series};
use crate::ui::{short_bytes, title_line, Item};
use provetop_shared::metric::Limit;

/// How much of the panel is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rows {
    /// Nothing (no utilisation data, or no room).
    None,
    /// The title line alone, with the values.
    Title,
    /// The title and the first line of the compact form.
    One,
    /// One line per resource: cores, the busiest GPU, the fullest GPU memory.
    Compact,
    /// The tree's and the host's cores, and each GPU's utilisation and memory.
    Full,
}

/// What one strip line draws.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Line {
    TreeCores,
    HostCores,
    /// A per-GPU metric over every GPU (compact): the busiest GPU's utilisation, the fullest
    /// GPU memory as a share of its total.
    Gpus(Metric),
    /// A per-GPU metric of one GPU, by position in the model's GPU list.
    Gpu(Metric, usize),
    /// A pressure metric of the table.
    Pressure(Metric),
}

fn lines(app: &App, rows: Rows) -> Vec<Line> {
    let u = &app.model.usage;
    let cpu = u.has_readings();
    let mut v = Vec::new();
    match rows {
        Rows::None | Rows::Title => {}
        Rows::One => {
            let mut all = lines(app, Rows::Compact);
            all.truncate(1);
            v = all;
        }
        Rows::Compact => {
            if cpu {
                v.push(Line::TreeCores);
            }
            if !u.gpus.is_empty() {
                v.extend([Line::Gpus(Metric::GpuUtil), Line::Gpus(Metric::GpuMem)]);
            }
            if u.has_psi() {
                v.push(Line::Pressure(Metric::PsiMemorySome));
            }
        }
        Rows::Full => {
            if cpu {
                v.extend([Line::TreeCores, Line::HostCores]);
            }
            for i in 0..u.gpus.len() {
                v.extend([Line::Gpu(Metric::GpuUtil, i), Line::Gpu(Metric::GpuMem, i)]);
            }
            if u.has_psi() {
                v.extend(
                    [
                        Metric::PsiMemorySome,
                        Metric::PsiMemoryFull,
                        Metric::PsiCpuSome,
                        Metric::PsiIoSome,
                    ]
                    .map(Line::Pressure),
                );
            }
        }
    }
    v
}

/// Rows the panel takes in each form (title included): `(compact, full)`; `(0, 0)` without
/// utilisation data.
pub fn heights(app: &App) -> (u16, u16) {
    if !app.model.usage.any() {
        return (0, 0);
    }
    let h = |r| 1 + lines(app, r).len().min(u16::MAX as usize - 1) as u16;
    (h(Rows::Compact), h(Rows::Full))
}

/// The form that goes with a height given by the layout.
pub fn rows_for(app: &App, height: u16) -> Rows {
    let (compact, full) = heights(app);
    match height {
        0 => Rows::None,
        h if h >= full => Rows::Full,
        h if h >= compact => Rows::Compact,
        h if h >= 2 => Rows::One,
        _ => Rows::Title,
    }
}

/// The max of a lane over a reading (a history range gives its top).
fn top<const N: usize>(r: &Reading<N>, lane: usize) -> Option<u64> {
    r.lane_range(lane).map(|r| r.1)
}

/// Cores: "11.3", "128".
fn cores(milli: u64) -> String {
    let c = milli as f64 / 1000.0;
    if c < 100.0 {
        format!("{c:.1}")
    } else {
        format!("{c:.0}")
    }
}

/// One GPU's values: utilisation (%), memory used, its total (bytes).
type GpuNow = (u64, u64, Option<u64>);

/// The values shown: at the cursor, or the newest.
struct Now {
    tree: Option<u64>,
    host: Option<u64>,
    ncpu: Option<u64>,
    /// Per GPU (model order): util, used, total; `None` where the GPU has no reading there.
    gpus: Vec<(u32, Option<GpuNow>)>,
    /// The pressure reading (hundredths of a percent, lanes of the pressure series).
    psi: Option<Reading<{ crate::model::usage::PSI_LANES }>>,
}

fn now(app: &App) -> Now {
    let u = &app.model.usage;
    let cursor = app.cursor();
    let cpu = match cursor {
        Some(c) => u.cpu_at(c),
        None => u.cpu.last().map(|p| Reading::Exact(*p)),
    };
    let lane = |l| cpu.as_ref().and_then(|r| top(r, l));
    let gpus = u
        .gpus
        .iter()
        .map(|g| {
            let r = match cursor {
                Some(c) => g.series.at(c),
                // A GPU the newest sample lacks (it disappeared, NVML failed) is unknown now.
                None => app
                    .model
                    .last_sample
                    .as_ref()
                    .filter(|s| s.gpus.iter().any(|x| x.index == g.index))
                    .and_then(|_| g.series.last().map(|p| Reading::Exact(*p))),
            };
            let v = r.and_then(|r| {
                let util = top(&r, gpu_lane(Metric::GpuUtil)?)?;
                let used = top(&r, gpu_lane(Metric::GpuMem)?)?;
                Some((util, used, top(&r, GPU_TOTAL)))
            });
            (g.index, v)
        })
        .collect();
    let psi = match cursor {
        Some(c) => u.psi.at(c),
        None => u.psi.last().map(|p| Reading::Exact(*p)),
    };
    Now {
        tree: lane(CPU_TREE),
        host: lane(CPU_HOST),
        ncpu: lane(CPU_NCPU),
        gpus,
        psi,
    }
}

/// A pressure reading in hundredths of a percent, as "2.1%" (under 10 %) or "42%".
fn pct(hundredths: u64) -> String {
    let v = hundredths as f64 / 100.0;
    if v < 10.0 {
        format!("{v:.1}%")
    } else {
        format!("{v:.0}%")
    }
}

/// The pressure line's label (short, for the gutter; the title spells it out): `pmem`
/// (memory, some), `pmemF` (memory, full), `pcpu`, `pio`, `pioF`.
fn psi_label(m: Metric) -> &'static str {
    match m {
        Metric::PsiMemoryFull => "pmemF",
        Metric::PsiCpuSome => "pcpu",
        Metric::PsiIoSome => "pio",
        Metric::PsiIoFull => "pioF",
        _ => "pmem",
    }
}

fn title_items(app: &App, n: &Now) -> Vec<Item<'static>> {
    let t = &app.theme;
    let u = &app.model.usage;
    let mut items = Vec::new();
    if u.has_readings() {
        let tree = n.tree.map_or("-".into(), cores);
        let of = n.ncpu.map_or(String::new(), |c| format!("/{c}"));
        items.push(
            Item::new(
                2,
                vec![
                    Span::styled("cpu ", t.dim()),
                    Span::styled(format!("{tree}{of}"), t.bold()),
                    Span::styled(" cores", t.dim()),
                ],
            )
            .or(
                0,
                vec![
                    Span::styled("cpu ", t.dim()),
                    Span::styled(format!("{tree}{of}"), t.bold()),
                ],
            ),
        );
        items.push(Item::new(
            3,
            vec![
                Span::styled(" host ", t.dim()),
                Span::raw(n.host.map_or("-".into(), cores)),
            ],
        ));
    } else {
        items.push(Item::new(5, vec![Span::styled("cpu not sampled", t.dim())]));
    }
    for (i, (index, v)) in n.gpus.iter().enumerate() {
        let lead = if items.is_empty() { "" } else { " │ " };
        let (util, mem) = match v {
            Some((util, used, total)) => (
                format!("{util}%"),
                match total {
                    Some(total) => format!("{}/{}", short_bytes(*used), short_bytes(*total)),
                    None => short_bytes(*used),
                },
            ),
            None => ("-".into(), "-".into()),
        };
        let rank = 1 + i.min(200) as u8;
        items.push(
            Item::new(
                rank + 3,
                vec![
                    Span::styled(format!("{lead}gpu{index} "), t.dim()),
                    Span::styled(util.clone(), t.bold()),
                    Span::raw(format!(" {mem}")),
                ],
            )
            .or(
                rank,
                vec![
                    Span::styled(format!("{lead}gpu{index} "), t.dim()),
                    Span::styled(util, t.bold()),
                ],
            ),
        );
    }
    if app.view.gpu_scale == GpuScale::Seen && !n.gpus.is_empty() {
        // The rows' scale is said: a full block is the most seen, not the card.
        let lead = if items.is_empty() { "" } else { " │ " };
        items.push(Item::new(
            1,
            vec![
                Span::styled(format!("{lead}gmem scale: most seen "), t.dim()),
                Span::styled(short_bytes(u.gpu_mem_seen), t.bold()),
            ],
        ));
    }
    if let Some(r) = &n.psi {
        let lead = if items.is_empty() { "" } else { " │ " };
        let v = |m: Metric| psi_lane(m).and_then(|l| top(r, l)).map_or("-".into(), pct);
        items.push(Item::new(
            6,
            vec![
                Span::styled(format!("{lead}psi mem "), t.dim()),
                Span::styled(v(Metric::PsiMemorySome), t.bold()),
                Span::styled(" cpu ", t.dim()),
                Span::raw(v(Metric::PsiCpuSome)),
                Span::styled(" io ", t.dim()),
                Span::raw(v(Metric::PsiIoSome)),
            ],
        ));
    }
    items
}

/// One strip: its label (gutter) and the height of each cell (0..=8; `None` unknown).
fn strip(app: &App, rows: Rows, line: Line, n: &Now, cols: usize) -> (String, Vec<Option<u8>>) {
    let u = &app.model.usage;
    let (t0, t1) = app.window();
    let cpu_cols = || u.cpu_columns(t0, t1, cols);
    let cpu_strip = |lane: usize| -> Vec<Option<u8>> {
        let cols_v = cpu_cols();
        let mut cells: Vec<Option<u8>> = cols_v
            .iter()
            .map(|c: &Bucket<CPU_LANES>| {
                let v = c.lane_range(lane)?.1;
                // Scale: the cores online (else the highest known reading).
                let full = c
                    .lane_range(CPU_NCPU)
                    .map(|r| r.1 * 1000)
                    .or(n.ncpu.map(|c| c * 1000))
                    .unwrap_or(v);
                Some(level(v, full))
            })
            .collect();
        // A reading speaks for the interval before it: the columns it covers that hold no
        // reading of their own (the usage cadence is lower than a column's time) show it.
        let col_ns = t1.saturating_sub(t0) / cols.max(1) as u64;
        let mut carry: Option<(u8, u64)> = None;
        for x in (0..cols).rev() {
            let start = t0 + col_ns * x as u64;
            match (cells[x], cols_v[x].lane_range(CPU_INTERVAL)) {
                (Some(v), Some((_, iv))) => carry = Some((v, cols_v[x].t0.saturating_sub(iv))),
                (Some(_), None) => carry = None,
                (None, _) => match carry {
                    Some((v, from)) if start + col_ns > from => cells[x] = Some(v),
                    _ => carry = None,
                },
            }
        }
        cells
    };
    let gpu_cols = |s: &Series<GPU_LANES>| s.columns(t0, t1, cols);
    let gpu_now = |i: usize| n.gpus.get(i).and_then(|g| g.1);
    match line {
        Line::TreeCores | Line::HostCores => {
            // Beside the host's line the tree's says "tree"; alone, "cpu".
            let (lane, name, v) = match (line, rows) {
                (Line::TreeCores, Rows::Full) => (CPU_TREE, "tree", n.tree),
                (Line::TreeCores, _) => (CPU_TREE, "cpu", n.tree),
                _ => (CPU_HOST, "host", n.host),
            };
            (
                format!("{name} {}", v.map_or("-".into(), cores)),
                cpu_strip(lane),
            )
        }
        Line::Gpus(m) => {
            let per: Vec<Vec<Bucket<GPU_LANES>>> =
                u.gpus.iter().map(|g| gpu_cols(&g.series)).collect();
            let cells = (0..cols)
                .map(|x| per.iter().filter_map(|c| gpu_level(app, &c[x], m)).max())
                .collect();
            let label = match m {
                Metric::GpuUtil => {
                    let best = n.gpus.iter().filter_map(|g| g.1.map(|v| v.0)).max();
                    let name = if u.gpus.len() > 1 { "gpus" } else { "gpu" };
                    format!("{name} {}", best.map_or("-".into(), |v| format!("{v}%")))
                }
                _ => {
                    let v = if u.gpus.len() == 1 {
                        gpu_now(0).map_or("-".into(), |v| short_bytes(v.1))
                    } else {
                        n.gpus
                            .iter()
                            .filter_map(|g| g.1)
                            .filter_map(|(_, used, total)| Some(used * 100 / total?.max(1)))
                            .max()
                            .map_or("-".into(), |p| format!("{p}%"))
                    };
                    format!("gmem {v}")
                }
            };
            (label, cells)
        }
        Line::Pressure(m) => {
            let Some(lane) = psi_lane(m) else {
                return (String::new(), vec![None; cols]);
            };
            let mut cells: Vec<Option<u8>> = u
                .psi
                .columns(t0, t1, cols)
                .iter()
                .map(|c| Some(level(c.lane_range(lane)?.1, 100 * 100)))
                .collect();
            // A reading (an average over the last 10 s) stands until the next, due within
            // [`PSI_STANDS_NS`]: the columns between two readings show the one before.
            let col_ns = (t1.saturating_sub(t0) / cols.max(1) as u64).max(1);
            let reach = (PSI_STANDS_NS / col_ns) as usize;
            let mut last: Option<(u8, usize)> = None;
            for (x, c) in cells.iter_mut().enumerate() {
                match (*c, last) {
                    (Some(v), _) => last = Some((v, x)),
                    (None, Some((v, at))) if x - at <= reach => *c = Some(v),
                    _ => {}
                }
            }
            let v = n
                .psi
                .as_ref()
                .and_then(|r| top(r, lane))
                .map_or("-".into(), pct);
            (format!("{} {v}", psi_label(m)), cells)
        }
        Line::Gpu(m, i) => {
            let g = &u.gpus[i];
            let cells = gpu_cols(&g.series)
                .iter()
                .map(|c| gpu_level(app, c, m))
                .collect();
            let label = match m {
                Metric::GpuUtil => {
                    let v = gpu_now(i).map_or("-".into(), |v| format!("{}%", v.0));
                    format!("gpu{} {v}", g.index)
                }
                _ => {
                    let v = gpu_now(i).map_or("-".into(), |v| short_bytes(v.1));
                    format!("mem{} {v}", g.index)
                }
            };
            (label, cells)
        }
    }
}

/// The height (0..=8) of `v` on a line whose scale is `full`.
fn level(v: u64, full: u64) -> u8 {
    if full == 0 {
        return 0;
    }
    ((v as f64 / full as f64 * 8.0).ceil() as i64).clamp(1, 8) as u8
}

/// The height of per-GPU metric `m` in one column of a GPU's series, over its scale: memory
/// over the GPU's total (the table's limit for it; its own value without a total), or over
/// the most any GPU was seen using (`Y`: a prover using a few GiB of a large card reads as
/// a shape, not a flat `▁`); a percent over 100 %.
fn gpu_level(app: &App, c: &Bucket<GPU_LANES>, m: Metric) -> Option<u8> {
    let v = c.lane_range(gpu_lane(m)?)?.1;
    let seen = app.model.usage.gpu_mem_seen;
    let full = match m.def().limit {
        Some(Limit::GpuTotal) if app.view.gpu_scale == GpuScale::Seen && seen > 0 => seen,
        Some(Limit::GpuTotal) => c.lane_range(GPU_TOTAL).map_or(v, |r| r.1),
        _ => 100,
    };
    Some(level(v, full))
}

/// How long a pressure reading stands on the strip: two of the kernel readings' intervals.
const PSI_STANDS_NS: u64 = 1_000_000_000;

const BLOCKS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];

/// Draw the panel into `area` (its title line and its strips).
pub fn draw(buf: &mut Buffer, area: Rect, gutter: u16, app: &App, rows: Rows) {
    if area.height == 0 || rows == Rows::None || area.width <= gutter + 1 {
        return;
    }
    let t = &app.theme;
    let n = now(app);
    title_line(buf, area, app, "usage", title_items(app, &n));
    let plot_x = area.x + gutter;
    let cols = (area.width - gutter) as usize;
    let (t0, t1) = app.window();
    let span = t1.saturating_sub(t0).max(1);
    let cursor_x = app.cursor().map(|c| {
        plot_x + (c.saturating_sub(t0) as u128 * (cols as u128 - 1) / span as u128) as u16
    });
    let dim = t.dim();
    for (k, line) in lines(app, rows).into_iter().enumerate() {
        let y = area.y + 1 + k as u16;
        if y >= area.y + area.height {
            break;
        }
        let (label, cells) = strip(app, rows, line, &n, cols);
        let w = (gutter - 1) as usize;
        // A label too long for the gutter keeps its name (the title line has the value).
        let label = if label.chars().count() > w {
            label.split(' ').next().unwrap_or("").to_string()
        } else {
            label
        };
        buf.set_stringn(area.x, y, format!("{label:>w$}│"), gutter as usize, dim);
        let style = match line {
            Line::TreeCores | Line::HostCores => t.metric(Metric::Anon),
            Line::Gpus(Metric::GpuUtil) | Line::Gpu(Metric::GpuUtil, _) => t.metric(Metric::Pinned),
            Line::Gpus(_) | Line::Gpu(..) => t.metric(Metric::Gpu),
            Line::Pressure(_) => t.metric(Metric::Swap),
        };
        for (x, c) in cells.iter().enumerate() {
            if let Some(l) = c {
                let ch = BLOCKS[(*l).clamp(1, 8) as usize - 1];
                if let Some(cell) = buf.cell_mut((plot_x + x as u16, y)) {
                    cell.set_char(ch).set_style(style);
                }
            }
        }
        if let Some(cx) = cursor_x {
            if let Some(cell) = buf.cell_mut((cx, y)) {
                cell.set_style(t.cursor());
            }
        }
    }
}
