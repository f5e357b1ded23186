//! The fleet screen: the rows of the latest reading under a header that says how Prometheus
//! answered. A thread reads every `--refresh` seconds (or at `r`); the screen never waits
//! for Prometheus. Keys: ↑/↓ (j/k) move, Enter opens the row's history, a attaches to the
//! row's session over ssh (read-only: `provetop attach HOST:SESSION`), s cycles the sort, /
//! types a filter (Enter keeps it, Esc clears it), r refreshes now, q quits.

use std::sync::mpsc as std_mpsc;
use std::time::{Duration, Instant};

use clap::Parser;
use crossterm::event::{Event as TermEvent, EventStream, KeyCode, KeyEventKind, KeyModifiers};
use futures::StreamExt;
use ratatui::layout::{Constraint, Layout};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Row as TRow, Table};
use ratatui::Frame;

use super::cells::{cells, COLUMNS};
use super::prom::Prom;
use super::rows::{self, Reading, Row, SortKey};
use super::FleetArgs;
use crate::theme::Theme;

/// What the screen holds between frames.
pub struct FleetView {
    pub url: String,
    /// The latest reading that had rows (kept while Prometheus is down), and when it came.
    pub good: Option<(Reading, Instant)>,
    /// The latest reading's health lines (empty: ok).
    pub health: Vec<String>,
    pub sort: SortKey,
    pub filter: String,
    pub typing: bool,
    pub selected: usize,
    pub refreshed: Option<Instant>,
    pub theme: Theme,
    /// What the last history or attach said (an error), for the footer.
    pub note: Option<String>,
}

impl FleetView {
    /// The rows shown, filtered and sorted.
    pub fn shown(&self) -> Vec<Row> {
        self.good.as_ref().map_or_else(Vec::new, |(r, _)| {
            super::shown(Some(&self.filter), self.sort, r)
        })
    }

    /// Take a reading in; Prometheus down keeps the rows of the last good one.
    pub fn take(&mut self, r: Reading, stale: Duration, slow: Duration) {
        self.health = rows::health(&r, stale, slow);
        self.refreshed = Some(Instant::now());
        if r.failed.len() < r.queries {
            self.good = Some((r, Instant::now()));
        }
    }
}

/// Draw the screen.
pub fn draw(f: &mut Frame<'_>, v: &FleetView) {
    let area = f.area();
    let [head, health, table, foot] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Length(1),
        Constraint::Min(1),
        Constraint::Length(1),
    ])
    .areas(area);
    let shown = v.shown();
    let total = v.good.as_ref().map_or(0, |(r, _)| r.rows.len());
    let red = shown.iter().filter(|r| !r.red.is_empty()).count();
    let age = v.refreshed.map_or("never".into(), |t| {
        format!("{} s ago", t.elapsed().as_secs())
    });
    let title = format!(
        "provetop fleet · {} · {} shown of {total} · {red} red · read {age} · sort {}{}",
        crate::text::inert(&v.url),
        shown.len(),
        v.sort.name(),
        if v.filter.is_empty() {
            String::new()
        } else {
            format!(" · filter {:?}", v.filter)
        }
    );
    f.render_widget(Paragraph::new(title).style(v.theme.bold()), head);
    let health_line = if v.health.is_empty() {
        Line::from(Span::styled("Prometheus ok", v.theme.ok()))
    } else {
        let mut text = v.health.join(" · ");
        if let (true, Some((_, at))) = (v.health[0].starts_with("Prometheus DOWN"), &v.good) {
            // Said first: the error may be cut at the screen's edge.
            text = format!("rows from {} s ago · {text}", at.elapsed().as_secs());
        }
        Line::from(Span::styled(
            text,
            v.theme.bad().add_modifier(Modifier::BOLD),
        ))
    };
    f.render_widget(Paragraph::new(health_line), health);
    let keep: Vec<usize> = COLUMNS
        .iter()
        .enumerate()
        .filter(|(_, (_, narrow))| area.width >= 140 || *narrow)
        .map(|(i, _)| i)
        .collect();
    let all: Vec<Vec<String>> = shown.iter().map(cells).collect();
    let widths: Vec<Constraint> = keep
        .iter()
        .map(|&i| {
            let w = all
                .iter()
                .map(|c| c[i].chars().count())
                .chain(std::iter::once(COLUMNS[i].0.len()))
                .max()
                .unwrap_or(4);
            Constraint::Max(w.min(48) as u16)
        })
        .collect();
    let header = TRow::new(keep.iter().map(|&i| COLUMNS[i].0)).style(v.theme.bold());
    let body: Vec<TRow<'_>> = all
        .iter()
        .zip(&shown)
        .enumerate()
        .map(|(n, (c, r))| {
            let mut style = if r.red.is_empty() {
                v.theme.text()
            } else {
                v.theme.bad()
            };
            if n == v.selected {
                style = style.add_modifier(Modifier::REVERSED);
            }
            TRow::new(keep.iter().map(|&i| c[i].clone())).style(style)
        })
        .collect();
    f.render_widget(
        Table::new(body, widths).header(header).column_spacing(1),
        table,
    );
    let keys = if v.typing {
        format!("filter: {}▏ (Enter keeps, Esc clears)", v.filter)
    } else if let Some(n) = &v.note {
        n.clone()
    } else {
        "↑↓ move · Enter history · a attach · s sort · / filter · r refresh · q quit".into()
    };
    f.render_widget(
        Paragraph::new(keys).style(Style::default().add_modifier(Modifier::DIM)),
        foot,
    );
}

/// How one stretch of the screen ended.
enum Outcome {
    Quit(i32),
    History(Box<Row>),
    Attach(Box<Row>),
}

/// `HOST:SESSION` of a row: its `host` label (the shipped scrape config's: the target
/// without its port), else its instance without the port.
pub fn attach_target(r: &Row) -> Option<String> {
    let session = r.session.as_ref()?;
    let host = match r.host.rsplit_once(':') {
        Some((h, port)) if port.bytes().all(|b| b.is_ascii_digit()) => h,
        _ => r.host.as_str(),
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    Some(format!("{host}:{session}"))
}

/// `provetop attach HOST:SESSION` for the row, read-only; what went wrong, if anything.
fn attach(r: &Row) -> Option<String> {
    let Some(target) = attach_target(r) else {
        return Some(
            "this row has no session id (provetop_session_info): nothing to attach".into(),
        );
    };
    let t = match crate::remote::Target::parse(&target)? {
        Ok(t) => t,
        Err(e) => return Some(format!("{e:#}")),
    };
    let cli = crate::cli::Cli::try_parse_from(["provetop", "attach", target.as_str()]);
    let Ok(crate::cli::Cli {
        command: Some(crate::cli::Command::Attach(args)),
    }) = cli
    else {
        return Some(format!("cannot attach to {}", crate::text::inert(&target)));
    };
    crate::remote::attach::main(&args, &t)
        .err()
        .map(|e| crate::text::inert(&format!("attach: {e:#}")).into_owned())
}

/// `provetop fleet` on the terminal.
pub fn main(args: &FleetArgs, prom: Prom, window: f64) -> anyhow::Result<i32> {
    use std::io::IsTerminal;
    if !std::io::stdout().is_terminal() || !std::io::stdin().is_terminal() {
        anyhow::bail!(
            "standard input/output is not a terminal: `provetop fleet --once --format table|json` \
             reads the fleet without one"
        );
    }
    let prom = std::sync::Arc::new(prom);
    let (tx, rx) = tokio::sync::mpsc::channel::<Reading>(4);
    let (poke, poked) = std_mpsc::channel::<()>();
    let refresh = Duration::from_secs_f64(args.refresh);
    let jobs = args.jobs();
    let reader = std::sync::Arc::clone(&prom);
    std::thread::spawn(move || loop {
        let r = rows::read(&reader, &jobs);
        if tx.blocking_send(r).is_err() {
            return;
        }
        match poked.recv_timeout(refresh) {
            Ok(()) | Err(std_mpsc::RecvTimeoutError::Timeout) => {}
            Err(std_mpsc::RecvTimeoutError::Disconnected) => return,
        }
    });
    let mut view = FleetView {
        url: prom.url().to_string(),
        good: None,
        health: vec!["reading Prometheus…".into()],
        sort: args.sort,
        filter: args.filter.clone().unwrap_or_default(),
        typing: false,
        selected: 0,
        refreshed: None,
        theme: Theme::from_env(),
        note: None,
    };
    crate::terminal::install_panic_hook(|| {});
    let rt = crate::monitor::runtime()?;
    let mut rx = rx;
    let stale = Duration::from_secs_f64(args.stale);
    let slow = args.slow();
    loop {
        let outcome = {
            let mut tui = crate::terminal::Tui::enter(false, &crate::app::Screen::Follow, false)?;
            let r = rt.block_on(run(&mut tui, &mut view, &mut rx, &poke, stale, slow));
            drop(tui);
            r?
        };
        match outcome {
            Outcome::Quit(code) => return Ok(code),
            Outcome::History(row) => {
                let now = view.good.as_ref().map_or(0.0, |(r, _)| r.at);
                view.note = history::show(&prom, &row, now, window)
                    .err()
                    .map(|e| format!("history: {e:#}"));
            }
            Outcome::Attach(row) => view.note = attach(&row),
        }
    }
}

use super::history;

async fn run(
    tui: &mut crate::terminal::Tui,
    v: &mut FleetView,
    rx: &mut tokio::sync::mpsc::Receiver<Reading>,
    poke: &std_mpsc::Sender<()>,
    stale: Duration,
    slow: Duration,
) -> anyhow::Result<Outcome> {
    let stop = crate::monitor::signals::stop_signal();
    tokio::pin!(stop);
    let mut input = EventStream::new();
    let mut tick = tokio::time::interval(Duration::from_millis(500));
    loop {
        tui.terminal.draw(|f| draw(f, v))?;
        tokio::select! {
            _ = tick.tick() => {}
            r = rx.recv() => match r {
                Some(r) => v.take(r, stale, slow),
                None => anyhow::bail!("the Prometheus reader stopped"),
            },
            sig = &mut stop => return Ok(Outcome::Quit(128 + sig)),
            ev = input.next() => match ev {
                Some(Ok(TermEvent::Key(k))) if k.kind != KeyEventKind::Release => {
                    if let Some(o) = key(v, k.code, k.modifiers, poke) {
                        return Ok(o);
                    }
                }
                Some(Ok(TermEvent::Resize(..))) => tui.terminal.autoresize()?,
                Some(Ok(_)) => {}
                Some(Err(e)) => anyhow::bail!("reading the terminal: {e}"),
                None => return Ok(Outcome::Quit(0)),
            },
        }
    }
}

fn key(
    v: &mut FleetView,
    code: KeyCode,
    mods: KeyModifiers,
    poke: &std_mpsc::Sender<()>,
) -> Option<Outcome> {
    let n = v.shown().len();
    if v.typing {
        match code {
            KeyCode::Enter => v.typing = false,
            KeyCode::Esc => {
                v.typing = false;
                v.filter.clear();
            }
            KeyCode::Backspace => {
                v.filter.pop();
            }
            KeyCode::Char(c) if !c.is_control() && v.filter.len() < 64 => v.filter.push(c),
            _ => {}
        }
        v.selected = 0;
        return None;
    }
    v.note = None;
    match code {
        KeyCode::Char('q') => return Some(Outcome::Quit(0)),
        KeyCode::Char('a') => {
            return v
                .shown()
                .get(v.selected)
                .cloned()
                .map(|r| Outcome::Attach(Box::new(r)))
        }
        KeyCode::Char('c') if mods.contains(KeyModifiers::CONTROL) => {
            return Some(Outcome::Quit(0))
        }
        KeyCode::Down | KeyCode::Char('j') => {
            v.selected = (v.selected + 1).min(n.saturating_sub(1))
        }
        KeyCode::Up | KeyCode::Char('k') => v.selected = v.selected.saturating_sub(1),
        KeyCode::Char('s') => {
            let i = SortKey::ALL.iter().position(|k| *k == v.sort).unwrap_or(0);
            v.sort = SortKey::ALL[(i + 1) % SortKey::ALL.len()];
        }
        KeyCode::Char('/') => v.typing = true,
        KeyCode::Char('r') => {
            let _ = poke.send(());
        }
        KeyCode::Enter => {
            return v
                .shown()
                .get(v.selected)
                .cloned()
                .map(|r| Outcome::History(Box::new(r)))
        }
        _ => {}
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_row_attaches_to_its_host_without_the_port() {
        let mut r = Row {
            host: "127.0.0.1:9464".into(),
            session: Some("run1-42".into()),
            ..Row::default()
        };
        assert_eq!(attach_target(&r).as_deref(), Some("127.0.0.1:run1-42"));
        r.host = "prover-01".into();
        assert_eq!(attach_target(&r).as_deref(), Some("prover-01:run1-42"));
        r.host = "[::1]:9464".into();
        assert_eq!(attach_target(&r).as_deref(), Some("::1:run1-42"));
        r.session = None;
        assert_eq!(attach_target(&r), None);
    }
}
