//! `provetop replay FILE`: the live screen fed by a recorded session (or a `timestamp,rss_kb`
//! CSV) on a playback clock, with a position bar.
//!
//! The [`Store`] holds every record and an index of model snapshots, so a seek anywhere is
//! one snapshot clone plus a bounded number of records; playing forward applies the records
//! whose time the clock has passed.

use std::path::Path;
use std::time::Instant;

use crate::app::{Action, App, Playback, Screen, View, NS};
use crate::cli::ReplayArgs;
use crate::event_loop::{self, Driver};
use crate::store::Store;
use crate::theme::Theme;
use provetop_shared::session::SourceKind;
use provetop_shared::{Mark, Record, RecordBody};

/// Playback speeds `+`/`-` step through.
pub const SPEEDS: &[f64] = &[0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0];

/// Feeds the app from a store on a playback clock.
pub struct ReplayDriver {
    store: Store,
    applied: usize,
    last: Instant,
    /// The recording ends without provetop's stop ([`ends_abruptly`]).
    abrupt: bool,
    /// The model has been told so (at the end; a seek back forgets it).
    told_abrupt: bool,
    /// Marks added on this screen (`M`): in the view only (the file is not written), applied
    /// again after each seek back rebuilds the model.
    marks: Vec<Record>,
}

/// Whether a session file ends without provetop's stop: its last lifecycle mark is a start
/// (of the child, a restart, or watching a pid) with neither the child's exit nor provetop's
/// "provetop stopping" note after it. A CSV, or a file without lifecycle marks, says
/// nothing either way.
pub fn ends_abruptly(store: &Store) -> bool {
    if store.kind() != SourceKind::Session {
        return false;
    }
    for r in store.records().iter().rev() {
        if let RecordBody::Mark(m) = &r.body {
            match m {
                Mark::Note { text } if text.starts_with(crate::model::STOPPING_NOTE) => {
                    return false
                }
                Mark::ChildExited { .. } => return false,
                Mark::Note { text } if text.starts_with("watching pid") => return true,
                Mark::ChildStarted { .. } | Mark::Restart { .. } => return true,
                _ => {}
            }
        }
    }
    false
}

impl ReplayDriver {
    /// A driver over an opened store.
    pub fn new(store: Store) -> Self {
        let abrupt = ends_abruptly(&store);
        ReplayDriver {
            store,
            applied: 0,
            last: Instant::now(),
            abrupt,
            told_abrupt: false,
            marks: Vec::new(),
        }
    }

    /// The store.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// An app showing this store at its start.
    pub fn app(&self, speed: f64, theme: Theme) -> App {
        let s = &self.store;
        let file = s
            .path()
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let mut app = App::new(
            Screen::Replay(Playback {
                playing: true,
                speed,
                start: s.start(),
                end: s.end(),
                alerts: s.alert_times().to_vec(),
                file,
                abrupt_end: self.abrupt,
            }),
            s.thresholds(),
            theme,
            s.start(),
        );
        let span_s = s.end().saturating_sub(s.start()) as f64 / NS as f64;
        // The whole file when it is up to an hour long, else the last hour before the position.
        app.view.zoom = View::zoom_for(span_s.clamp(10.0, 3600.0));
        app.model = s.model_at_index(0);
        app
    }

    /// Move the position to `t` (clamped to the file).
    pub fn seek(&mut self, app: &mut App, t: u64) {
        let t = t.clamp(self.store.start(), self.store.end());
        if t >= app.clock {
            self.advance_to(app, t);
        } else {
            app.model = self.store.model_at(t);
            self.applied = self.store.index_at(t);
            app.clock = t;
            self.told_abrupt = false;
            for m in &self.marks {
                app.model.apply(m);
            }
            self.tell_abrupt_end(app);
        }
        // A cursor placed earlier stays put; the window follows the position.
        app.view.frozen = None;
    }

    fn advance_to(&mut self, app: &mut App, t: u64) -> bool {
        app.clock = t;
        let upto = self.store.index_at(t);
        let changed = upto > self.applied;
        for r in &self.store.records()[self.applied..upto] {
            app.model.apply(r);
        }
        self.applied = self.applied.max(upto);
        self.tell_abrupt_end(app) || changed
    }

    /// At the end of a recording that provetop did not stop, the log says so (once).
    fn tell_abrupt_end(&mut self, app: &mut App) -> bool {
        let end = self.store.end();
        if !self.abrupt || self.told_abrupt || app.clock < end {
            return false;
        }
        self.told_abrupt = true;
        let text = crate::text::ABRUPT_END.to_string();
        app.model
            .apply(&Record::new(end, RecordBody::Mark(Mark::Warning { text })));
        true
    }

    fn playback(app: &mut App) -> Option<&mut Playback> {
        match &mut app.screen {
            Screen::Replay(p) => Some(p),
            _ => None,
        }
    }
}

impl Driver for ReplayDriver {
    fn poll(&mut self, app: &mut App) -> bool {
        let now = Instant::now();
        let dt = now.duration_since(self.last);
        self.last = now;
        let Some(p) = Self::playback(app) else {
            return false;
        };
        if !p.playing {
            return false;
        }
        let step = (dt.as_secs_f64() * p.speed * NS as f64) as u64;
        let end = p.end;
        let t = app.clock.saturating_add(step).min(end);
        if t == app.clock {
            return false;
        }
        self.advance_to(app, t);
        true
    }

    fn act(&mut self, app: &mut App, a: Action) {
        let clock = app.clock;
        let target = match a {
            Action::MarkDone => {
                if let Some((at, text)) = app.view.mark_done.take() {
                    let note = crate::text::mark_note(&text);
                    let rec = Record::new(at, RecordBody::Mark(Mark::Note { text: note }));
                    app.model.apply(&rec);
                    self.marks.push(rec);
                    let when = crate::ui::fmt_clock(at.saturating_sub(app.origin), true);
                    app.flash(
                        format!("marked at {when}: {text} (this view only: replay does not write the file)"),
                        false,
                    );
                }
                return;
            }
            Action::PlayPause => {
                let at_end = clock >= self.store.end();
                if let Some(p) = Self::playback(app) {
                    p.playing = !p.playing;
                    if p.playing && at_end {
                        // Playing at the end starts over.
                        let start = p.start;
                        self.seek(app, start);
                    }
                }
                return;
            }
            Action::SpeedUp | Action::SpeedDown => {
                if let Some(p) = Self::playback(app) {
                    let i = SPEEDS
                        .iter()
                        .position(|s| *s >= p.speed)
                        .unwrap_or(SPEEDS.len() - 1);
                    let i = if a == Action::SpeedUp {
                        (i + 1).min(SPEEDS.len() - 1)
                    } else {
                        i.saturating_sub(1)
                    };
                    p.speed = SPEEDS[i];
                    let text = format!("speed {}", crate::ui::posbar::fmt_speed(p.speed));
                    app.flash(text, false);
                }
                return;
            }
            Action::Seek(s) => {
                if s < 0 {
                    clock.saturating_sub((s.unsigned_abs() as u64).saturating_mul(NS))
                } else {
                    clock.saturating_add((s as u64).saturating_mul(NS))
                }
            }
            Action::NextPhase => match self.store.next_phase_start(clock) {
                Some(t) => t,
                None => return app.flash("no later phase start", true),
            },
            Action::PrevPhase => match self.store.prev_phase_start(clock) {
                Some(t) => t,
                None => return app.flash("no earlier phase start", true),
            },
            Action::NextAlert => match self.store.next_alert(clock) {
                Some(t) => t,
                None => return app.flash("no later alert", true),
            },
            Action::PrevAlert => match self.store.prev_alert(clock) {
                Some(t) => t,
                None => return app.flash("no earlier alert", true),
            },
            Action::Start => self.store.start(),
            Action::End => self.store.end(),
            _ => return,
        };
        self.seek(app, target);
    }
}

/// Parse `--start`: seconds from the beginning ("90", "2m", "1h").
pub fn parse_start(s: &str) -> anyhow::Result<u64> {
    let secs =
        provetop_shared::units::parse_duration_s(s).map_err(|e| anyhow::anyhow!("--start: {e}"))?;
    if !(secs.is_finite() && secs >= 0.0) {
        anyhow::bail!("--start {s:?}: must be a non-negative time");
    }
    Ok((secs * NS as f64) as u64)
}

/// `provetop replay FILE`.
pub fn main(args: &ReplayArgs) -> anyhow::Result<i32> {
    // Clap requires FILE or --log.
    let file = args
        .file
        .as_deref()
        .or(args.log.as_deref())
        .unwrap_or(Path::new("-"));
    if args.follow {
        let look = crate::settings::screen::load(&args.screen, None)?;
        return crate::attach::follow_main(file, args.thresholds, look);
    }
    if !(args.speed.is_finite() && (0.25..=64.0).contains(&args.speed)) {
        anyhow::bail!("--speed {}: must be between 0.25 and 64", args.speed);
    }
    let start = args.start.as_deref().map(parse_start).transpose()?;
    let look = crate::settings::screen::load(&args.screen, None)?;
    let store = match &args.log {
        Some(log) => {
            let rules = crate::logsession::rules(args.config.as_deref())?;
            Store::from_loaded(log, crate::logsession::load(log, rules)?, args.thresholds)
        }
        None => open(file, args)?,
    };
    let warnings: Vec<String> = store.warnings().iter().map(|w| w.to_string()).collect();
    let mut driver = ReplayDriver::new(store);
    let mut app = driver.app(args.speed, look.theme);
    app.mouse = look.mouse;
    if let Some(b) = &args.baseline {
        let b = crate::baseline::Baseline::open(b, args.thresholds)?;
        app.baseline = Some(b.for_replay(driver.store(), crate::baseline::Align::Start));
    }
    if let Some(off) = start {
        let t = driver.store().start().saturating_add(off);
        if t > driver.store().end() {
            anyhow::bail!(
                "--start {}: the recording is only {} long",
                args.start.as_deref().unwrap_or(""),
                provetop_shared::units::fmt_secs(
                    driver.store().end().saturating_sub(driver.store().start()) as f64 / NS as f64
                )
            );
        }
        driver.seek(&mut app, t);
    }
    if let Some(w) = warnings.first() {
        let more = if warnings.len() > 1 {
            format!(" (+{} more, printed on exit)", warnings.len() - 1)
        } else {
            String::new()
        };
        app.flash(format!("warning: {w}{more}"), true);
    }
    crate::terminal::install_panic_hook(|| {});
    let rt = crate::monitor::runtime()?;
    let result = rt.block_on(async {
        let stop = crate::monitor::signals::stop_signal();
        event_loop::run_on_terminal(&mut app, &mut driver, stop, false).await
    });
    crate::terminal::restore();
    for w in &warnings {
        crate::say!("provetop: {}: {w}", file.display());
    }
    result.map(|e| e.status())
}

fn open(path: &Path, args: &ReplayArgs) -> anyhow::Result<Store> {
    // The load error already names the file and the cause: one line, no repeated chain.
    Store::open_with(path, args.thresholds).map_err(|e| anyhow::anyhow!("{e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn start_flag() {
        assert_eq!(parse_start("90").unwrap(), 90 * NS);
        assert_eq!(parse_start("2m").unwrap(), 120 * NS);
        assert!(parse_start("soon").is_err());
    }
}
