//! The application's state: the model, what the screen looks at, and the actions that only
//! concern the view. The loop that feeds it and draws it is [`crate::event_loop`]; drawing
//! is [`crate::ui`].

use provetop_shared::classify::Thresholds;

pub use crate::keymap::Action;
use crate::keymap::{self, Section};
use crate::model::Model;
use crate::theme::Theme;
pub use crate::view_options::{GpuScale, LogFilter, MemAxis, ProcSort};

/// Time-window zoom levels, seconds.
pub const ZOOMS: &[u64] = &[
    5,
    10,
    20,
    30,
    60,
    120,
    300,
    600,
    1800,
    3600,
    2 * 3600,
    6 * 3600,
    12 * 3600,
    24 * 3600,
];

/// Nanoseconds per second.
pub const NS: u64 = 1_000_000_000;

/// Which screen this is.
#[derive(Debug, Clone, PartialEq)]
pub enum Screen {
    /// Supervising a child we started.
    Run,
    /// Watching an existing process or a cgroup.
    Watch {
        /// What is watched, named ("pid 1234", "cgroup /system.slice/x", "unit x.service").
        what: String,
    },
    /// Replaying a file.
    Replay(Playback),
    /// Attached to a running supervisor (`provetop attach`): its session file followed, its
    /// prover's controls through its socket.
    Attach {
        /// Controls are refused (`--read-only`).
        read_only: bool,
    },
    /// Following a growing session file (`provetop replay --follow`): no prover to command.
    Follow,
}

/// Replay position and speed, shown in the position bar.
#[derive(Debug, Clone, PartialEq)]
pub struct Playback {
    /// Playing (else paused).
    pub playing: bool,
    /// Speed factor.
    pub speed: f64,
    /// First record time.
    pub start: u64,
    /// Last record time.
    pub end: u64,
    /// Times of alerts (firing), for marks on the bar: thinned ([`crate::timeline::marks`]).
    pub alerts: Vec<u64>,
    /// File name shown.
    pub file: String,
    /// The recording ends without provetop's stop (provetop was killed, or the machine went
    /// down): said at the end rather than leaving the child "running".
    pub abrupt_end: bool,
}

/// What the screen looks at: window, freeze, cursor, help, log scroll.
#[derive(Debug, Clone)]
pub struct View {
    /// Index into [`ZOOMS`].
    pub zoom: usize,
    /// End of the window while frozen.
    pub frozen: Option<u64>,
    /// Cursor time.
    pub cursor: Option<u64>,
    /// Help shown.
    pub help: bool,
    /// The batch modes compared, shown.
    pub modes: bool,
    /// The process table, shown.
    pub procs: bool,
    /// The process table's sort column (`s` cycles).
    pub procs_sort: ProcSort,
    /// Rows the process table is scrolled down.
    pub procs_scroll: usize,
    /// Log lines scrolled back from the newest.
    pub log_back: usize,
    /// The newest shown log line is shown whole, wrapped, over the screen.
    pub log_line: bool,
    /// Which log entries the pane shows.
    pub log_filter: LogFilter,
    /// The log pane's search (`/`): lines holding it are shown; `Some` while typed too.
    pub log_query: Option<String>,
    /// The search is being typed (keys go to it).
    pub searching: bool,
    /// Rows the help is scrolled down (on a screen too small for all of it).
    pub help_scroll: usize,
    /// A mark being typed (`M`): where it goes and its text so far; keys go to it.
    pub mark: Option<(u64, String)>,
    /// A mark typed in full, for the driver to add ([`Action::MarkDone`]).
    pub mark_done: Option<(u64, String)>,
    /// The memory chart's vertical axis (`y`).
    pub mem_axis: MemAxis,
    /// What the per-GPU memory rows are drawn against (`Y`).
    pub gpu_scale: GpuScale,
    /// What the last frame was drawn with (the event loop keeps it).
    pub drawn: Drawn,
}

impl View {
    /// Window length, ns.
    pub fn window_ns(&self) -> u64 {
        ZOOMS[self.zoom.min(ZOOMS.len() - 1)] * NS
    }

    /// Zoom level whose window is the smallest that holds `secs` (capped at the largest).
    pub fn zoom_for(secs: f64) -> usize {
        ZOOMS
            .iter()
            .position(|z| *z as f64 >= secs)
            .unwrap_or(ZOOMS.len() - 1)
    }
}

/// What a frame was drawn with, that the next key reads (cursor steps are plot columns; the
/// help scrolls as far as it overflowed; a click lands where things were drawn).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Drawn {
    /// Width of the plot in columns.
    pub plot_cols: u16,
    /// How far the help can scroll (0: it fits).
    pub help_scroll_max: usize,
    /// How far the process table can scroll (0: it fits).
    pub procs_scroll_max: usize,
    /// Where the parts of the screen were drawn, for the mouse.
    pub areas: crate::areas::Areas,
}

impl Default for Drawn {
    fn default() -> Self {
        Drawn {
            plot_cols: 60,
            help_scroll_max: 0,
            procs_scroll_max: 0,
            areas: crate::areas::Areas::default(),
        }
    }
}

/// A transient message for the footer ("sent: pause").
#[derive(Debug, Clone, PartialEq)]
pub struct Flash {
    pub text: String,
    /// Whether it is bad news.
    pub error: bool,
    /// When it was set (it fades after a few seconds of wall time).
    pub at: std::time::Instant,
}

/// Everything the screen draws.
#[derive(Debug, Clone)]
pub struct App {
    /// The reduced records.
    pub model: Model,
    /// View state.
    pub view: View,
    /// Which screen.
    pub screen: Screen,
    /// Colours.
    pub theme: Theme,
    /// "Now" on the record time axis (live: the monotonic clock; replay: the position).
    pub clock: u64,
    /// Time 0 for labels (session start).
    pub origin: u64,
    /// Session file being recorded (live).
    pub recording: Option<String>,
    /// Writing the recording fails now (disk full): shown in the header.
    pub recording_failing: bool,
    /// Extra horizontal lines on the chart (alert rule thresholds): label, bytes.
    pub rule_lines: Vec<(String, u64)>,
    /// A baseline recording drawn in dim beside the data (`--baseline`).
    pub baseline: Option<crate::baseline::Baseline>,
    /// Footer message.
    pub flash: Option<Flash>,
    /// Set when the loop should end.
    pub quit: bool,
    /// Set when the loop should end by detaching (the supervisor goes on).
    pub detach: bool,
    /// `q` asks before quitting (an attached screen: quitting stops the prover); while
    /// `asking`, the next key answers.
    pub ask_quit: bool,
    pub asking: bool,
    /// Mouse events are asked of the terminal (`--no-mouse`, the config's `mouse`).
    pub mouse: bool,
}

impl App {
    /// The control a prover key sends (the same on the live and the attached screen).
    pub fn control_for(&self, a: Action) -> Option<provetop_shared::protocol::Control> {
        use provetop_shared::protocol::{Control, ProverState};
        Some(match a {
            Action::PauseResume => {
                if self.model.prover.state == Some(ProverState::Paused) {
                    Control::Resume
                } else {
                    Control::Pause
                }
            }
            // One more proof of the current mode's size (batch:N: N sectors).
            Action::ProveNow => Control::Prove {
                count: self.model.prover.mode.map_or(1, |m| m.sectors_per_proof()),
            },
            Action::SetMode(mode) => Control::SetMode { mode },
            _ => return None,
        })
    }

    /// A new app over an empty model.
    pub fn new(screen: Screen, thresholds: Thresholds, theme: Theme, clock: u64) -> Self {
        let zoom = View::zoom_for(60.0);
        let ask_quit = matches!(screen, Screen::Attach { read_only: false });
        App {
            model: Model::new(thresholds),
            view: View {
                zoom,
                frozen: None,
                cursor: None,
                help: false,
                modes: false,
                procs: false,
                procs_sort: ProcSort::Rss,
                procs_scroll: 0,
                log_back: 0,
                log_line: false,
                log_filter: LogFilter::All,
                log_query: None,
                searching: false,
                help_scroll: 0,
                mark: None,
                mark_done: None,
                mem_axis: MemAxis::Linear,
                gpu_scale: GpuScale::Card,
                drawn: Drawn::default(),
            },
            screen,
            theme,
            clock,
            origin: clock,
            recording: None,
            recording_failing: false,
            rule_lines: Vec::new(),
            baseline: None,
            flash: None,
            quit: false,
            detach: false,
            ask_quit,
            asking: false,
            mouse: true,
        }
    }

    /// Key sections of this screen (also what help lists).
    pub fn sections(&self) -> &'static [Section] {
        match self.screen {
            Screen::Run => keymap::LIVE,
            Screen::Watch { .. } => keymap::WATCH,
            Screen::Replay(_) if self.baseline.is_some() => keymap::REPLAY_BASELINE,
            Screen::Replay(_) => keymap::REPLAY,
            Screen::Attach { read_only: false } => keymap::ATTACH,
            Screen::Attach { read_only: true } => keymap::ATTACH_READ_ONLY,
            Screen::Follow => keymap::FOLLOW,
        }
    }

    /// End of the time window.
    pub fn window_end(&self) -> u64 {
        self.view.frozen.unwrap_or(self.clock)
    }

    /// `(start, end)` of the time window.
    pub fn window(&self) -> (u64, u64) {
        let end = self.window_end();
        let w = self.view.window_ns();
        if matches!(self.screen, Screen::Replay(_)) && end < self.origin.saturating_add(w) {
            // Early in a replay the window starts at the beginning and fills up to the right.
            return (self.origin, self.origin.saturating_add(w));
        }
        (end.saturating_sub(w), end)
    }

    /// The zoom's footer message: the window the axis shows, which is shorter than the zoom
    /// level when the clock it runs on does not reach back that far (the monotonic clock
    /// starts at boot): "window 1h", "window 3h12m (24h asked; the clock starts at boot)".
    pub fn window_text(&self) -> String {
        let asked = self.view.window_ns();
        let (t0, t1) = self.window();
        let shown = t1.saturating_sub(t0);
        if shown < asked {
            format!(
                "window {} ({} asked; the clock starts at boot)",
                fmt_window(shown),
                fmt_window(asked)
            )
        } else {
            format!("window {}", fmt_window(asked))
        }
    }

    /// Set a footer message.
    pub fn flash(&mut self, text: impl Into<String>, error: bool) {
        self.flash = Some(Flash {
            text: text.into(),
            error,
            at: std::time::Instant::now(),
        });
    }

    /// A key while the log search is typed: characters add to it, Backspace takes one off,
    /// Enter keeps it (the pane shows the lines holding it), Esc drops it.
    pub fn search_key(&mut self, k: &crossterm::event::KeyEvent) {
        use crossterm::event::KeyCode;
        let q = self.view.log_query.get_or_insert_with(String::new);
        match k.code {
            KeyCode::Char(c) if q.chars().count() < 200 => q.push(c),
            KeyCode::Backspace => {
                q.pop();
            }
            KeyCode::Enter => {
                self.view.searching = false;
                if q.is_empty() {
                    self.view.log_query = None;
                }
            }
            KeyCode::Esc => {
                self.view.searching = false;
                self.view.log_query = None;
            }
            _ => {}
        }
        self.view.log_back = 0;
    }

    /// A key while a mark is typed (`M`): characters add to it, Backspace takes one off,
    /// Enter completes it (returns [`Action::MarkDone`] for the driver; an empty text is
    /// "mark"), Esc drops it.
    pub fn mark_key(&mut self, k: &crossterm::event::KeyEvent) -> Option<Action> {
        use crossterm::event::KeyCode;
        let (at, text) = self.view.mark.as_mut()?;
        match k.code {
            KeyCode::Char(c) if text.chars().count() < 200 => text.push(c),
            KeyCode::Backspace => {
                text.pop();
            }
            KeyCode::Enter => {
                let text = match text.trim() {
                    "" => "mark".to_string(),
                    t => t.to_string(),
                };
                self.view.mark_done = Some((*at, text));
                self.view.mark = None;
                return Some(Action::MarkDone);
            }
            KeyCode::Esc => {
                self.view.mark = None;
                self.flash("mark dropped", false);
            }
            _ => {}
        }
        None
    }

    /// Handle the actions that only concern the view; returns the ones the driver must handle.
    pub fn act(&mut self, a: Action) -> Option<Action> {
        match a {
            Action::Quit if self.ask_quit => {
                self.asking = true;
                self.flash(
                    "stop the prover? y: stop it · d: detach instead · any other key: stay",
                    true,
                );
            }
            Action::Quit => self.quit = true,
            Action::Help => {
                self.view.help = !self.view.help;
                self.view.help_scroll = 0;
            }
            Action::Modes => self.view.modes = !self.view.modes,
            Action::Procs => {
                self.view.procs = !self.view.procs;
                self.view.procs_scroll = 0;
            }
            Action::ProcSort => {
                self.view.procs = true;
                self.view.procs_sort = self.view.procs_sort.next();
                self.view.procs_scroll = 0;
                let text = format!("processes sorted by {}", self.view.procs_sort.name());
                self.flash(text, false);
            }
            Action::LogLine => self.view.log_line = !self.view.log_line,
            Action::LogFilter => {
                self.view.log_filter = self.view.log_filter.next();
                self.view.log_back = 0;
                let text = format!("log: {}", self.view.log_filter.name());
                self.flash(text, false);
            }
            Action::LogSearch => {
                self.view.searching = true;
                self.view.log_query = Some(String::new());
                self.view.log_back = 0;
            }
            Action::BaselineAlign => {
                if let Some(text) = self.baseline.as_mut().map(|b| b.cycle()) {
                    self.flash(text, false);
                }
            }
            Action::Escape => {
                if self.view.help || self.view.modes || self.view.procs || self.view.log_line {
                    self.view.help = false;
                    self.view.modes = false;
                    self.view.procs = false;
                    self.view.log_line = false;
                } else if self.view.log_query.is_some() {
                    self.view.log_query = None;
                } else {
                    self.view.cursor = None;
                }
            }
            Action::Mark => {
                // At the cursor, else at the newest data.
                let at = self.cursor().unwrap_or(self.clock);
                self.view.mark = Some((at, String::new()));
            }
            Action::CursorAt(t) => {
                let (t0, t1) = self.window();
                self.view.cursor = Some(t.clamp(t0, t1));
            }
            Action::MemAxis => {
                self.view.mem_axis = self.view.mem_axis.next();
                let text = match self.view.mem_axis {
                    MemAxis::Linear => "memory axis: linear from 0",
                    MemAxis::Log => "memory axis: logarithmic",
                    MemAxis::Split => "memory axis: split (small values below, large above)",
                };
                self.flash(text, false);
            }
            Action::GpuMemScale => {
                self.view.gpu_scale = match self.view.gpu_scale {
                    GpuScale::Card => GpuScale::Seen,
                    GpuScale::Seen => GpuScale::Card,
                };
                let text = match self.view.gpu_scale {
                    GpuScale::Card => "GPU memory rows: of the card's memory",
                    GpuScale::Seen => "GPU memory rows: of the most seen",
                };
                self.flash(text, false);
            }
            Action::ZoomIn => {
                self.view.zoom = self.view.zoom.saturating_sub(1);
                let text = self.window_text();
                self.flash(text, false);
            }
            Action::ZoomOut => {
                self.view.zoom = (self.view.zoom + 1).min(ZOOMS.len() - 1);
                let text = self.window_text();
                self.flash(text, false);
            }
            Action::Freeze => {
                self.view.frozen = match self.view.frozen {
                    Some(_) => None,
                    None => Some(self.clock),
                };
            }
            Action::Cursor(d) => {
                let (t0, t1) = self.window();
                let cols = self.view.drawn.plot_cols.max(1) as u64;
                let step = t1.saturating_sub(t0) / cols;
                let cur = self.view.cursor.unwrap_or(t1).clamp(t0, t1);
                let next = if self.view.cursor.is_none() {
                    // Appear at the newest data (the replay position may be left of the edge).
                    t1.min(self.clock.max(t0))
                } else if d < 0 {
                    cur.saturating_sub(step.saturating_mul(d.unsigned_abs() as u64))
                } else {
                    cur.saturating_add(step.saturating_mul(d as u64))
                };
                self.view.cursor = Some(next.clamp(t0, t1));
            }
            // While the help is open, the scroll keys move it (on a small screen it may not
            // show every key at once).
            Action::LogOlder if self.view.help => {
                self.view.help_scroll = self.view.help_scroll.saturating_sub(3)
            }
            Action::LogNewer if self.view.help => {
                self.view.help_scroll =
                    (self.view.help_scroll + 3).min(self.view.drawn.help_scroll_max)
            }
            // The open process table scrolls the same way.
            Action::LogOlder if self.view.procs => {
                self.view.procs_scroll = self.view.procs_scroll.saturating_sub(3)
            }
            Action::LogNewer if self.view.procs => {
                self.view.procs_scroll =
                    (self.view.procs_scroll + 3).min(self.view.drawn.procs_scroll_max)
            }
            Action::LogOlder => {
                self.view.log_back =
                    (self.view.log_back + 3).min(self.model.log.len().saturating_sub(1))
            }
            Action::LogNewer => self.view.log_back = self.view.log_back.saturating_sub(3),
            other => return Some(other),
        }
        None
    }

    /// The answer to "stop the prover?" (`asking`): `y` quits (the driver stops the prover),
    /// `d` detaches, anything else stays.
    pub fn answer(&mut self, key: &crossterm::event::KeyEvent) {
        use crossterm::event::KeyCode;
        self.asking = false;
        match key.code {
            KeyCode::Char('y') | KeyCode::Char('Y') => self.quit = true,
            KeyCode::Char('d') => self.detach = true,
            _ => self.flash("staying (the prover goes on)", false),
        }
    }

    /// The cursor, kept inside the window (None when hidden).
    pub fn cursor(&self) -> Option<u64> {
        let (t0, t1) = self.window();
        self.view.cursor.map(|c| c.clamp(t0, t1))
    }
}

/// "30s", "5m", "1h".
pub fn fmt_window(ns: u64) -> String {
    let s = ns / NS;
    match (s / 3600, (s / 60) % 60, s % 60) {
        (0, 0, sec) => format!("{sec}s"),
        (0, m, 0) => format!("{m}m"),
        (0, m, sec) => format!("{m}m{sec:02}s"),
        (h, 0, _) => format!("{h}h"),
        (h, m, _) => format!("{h}h{m:02}m"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zoom_and_cursor() {
        let mut app = App::new(Screen::Run, Thresholds::default(), Theme::mono(), 1000 * NS);
        assert_eq!(app.view.window_ns(), 60 * NS);
        app.act(Action::ZoomIn);
        assert_eq!(app.view.window_ns(), 30 * NS);
        for _ in 0..50 {
            app.act(Action::ZoomOut);
        }
        assert_eq!(app.view.window_ns(), 24 * 3600 * NS);
        app.act(Action::ZoomIn);
        app.view.zoom = View::zoom_for(60.0);
        app.view.drawn.plot_cols = 60;
        app.act(Action::Cursor(-1));
        assert_eq!(app.cursor(), Some(1000 * NS));
        app.act(Action::Cursor(-10));
        assert_eq!(app.cursor(), Some(990 * NS));
        app.act(Action::Freeze);
        app.clock += 100 * NS;
        assert_eq!(app.window_end(), 1000 * NS);
        app.act(Action::Escape);
        assert_eq!(app.cursor(), None);
        assert_eq!(app.act(Action::ProveNow), Some(Action::ProveNow));
        app.act(Action::LogLine);
        assert!(app.view.log_line);
        app.act(Action::Escape);
        assert!(!app.view.log_line);
        app.act(Action::Quit);
        assert!(app.quit);
    }

    #[test]
    fn the_zoom_message_names_the_window_shown() {
        // 3 hours after boot: a 24 h window shows those 3 hours.
        let mut app = App::new(
            Screen::Run,
            Thresholds::default(),
            Theme::mono(),
            3 * 3600 * NS,
        );
        app.act(Action::ZoomIn);
        assert_eq!(app.flash.as_ref().unwrap().text, "window 30s");
        for _ in 0..20 {
            app.act(Action::ZoomOut);
        }
        assert_eq!(
            app.flash.as_ref().unwrap().text,
            "window 3h (24h asked; the clock starts at boot)"
        );
    }
}
