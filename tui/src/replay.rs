//! `provetop replay FILE`: the live screen fed by a recorded session (or a `timestamp,rss_kb`
//! CSV) on a playback clock, with a position bar.
//!
//! The [`Store`] holds every record and an index of model snapshots, so a seek anywhere is
//! one snapshot clone plus a bounded number of records; playing forward applies the records
//! whose time the clock has passed.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::app::{Action, App, Playback, Screen, View, NS};
use crate::cli::ReplayArgs;
use crate::event_loop::{self, Driver};
use crate::store::Store;
use crate::theme::Theme;
use crate::timeline::marks::Marks;
use crate::timeline::{Cursor, Seeking, Timeline};
use provetop_shared::session::SourceKind;
use provetop_shared::{Mark, Record, RecordBody};

/// Playback speeds `+`/`-` step through.
pub const SPEEDS: &[f64] = &[0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0];

/// Feeds the app from a store on a playback clock.
pub struct ReplayDriver {
    src: Source,
    last: Instant,
    /// The recording ends without provetop's stop ([`ends_abruptly`]).
    abrupt: bool,
    /// The model has been told so (at the end; a seek back forgets it).
    told_abrupt: bool,
    /// Marks added on this screen (`M`): in the view only (the file is not written), applied
    /// again after each seek back rebuilds the model.
    marks: Vec<Record>,
}

/// Where the records come from (one per replay: the sizes' difference costs nothing).
#[allow(clippy::large_enum_variant)]
enum Source {
    /// A whole file in memory: records `0..applied` are in the model.
    Whole { store: Store, applied: usize },
    /// A compact session read chunk by chunk; `waiting`: a seek the background pass has not
    /// reached yet (the screen stays where it was and says so).
    Chunked {
        tl: Timeline,
        cursor: Cursor,
        waiting: Option<u64>,
        told: usize,
        /// A seek under way, a few chunks a frame.
        seeking: Option<Seeking>,
    },
}

/// How long a seek applies chunks before a frame is drawn (the screen answers meanwhile): a
/// seek that fits in it lands without frames between.
const SEEK_FRAME: Duration = Duration::from_millis(40);

/// A seek under way, applied chunk by chunk for at most [`SEEK_FRAME`]: whether it got there.
fn seek_for_a_frame(tl: &mut Timeline, s: &mut Seeking) -> bool {
    let until = Instant::now() + SEEK_FRAME;
    loop {
        if tl.step_seek(s, 1) {
            return true;
        }
        if Instant::now() >= until {
            return false;
        }
    }
}

/// Whether a session file ends without provetop's stop: its last lifecycle mark is a start
/// (of the child, a restart, or watching a pid) with neither the child's exit nor provetop's
/// "provetop stopping" note after it. A CSV, or a file without lifecycle marks, says
/// nothing either way.
pub fn ends_abruptly(store: &Store) -> bool {
    if store.kind() != SourceKind::Session {
        return false;
    }
    store
        .records()
        .iter()
        .rev()
        .find_map(|r| match &r.body {
            RecordBody::Mark(m) => crate::model::abrupt_after(m),
            _ => None,
        })
        .unwrap_or(false)
}

impl ReplayDriver {
    /// A driver over an opened store.
    pub fn new(store: Store) -> Self {
        let abrupt = ends_abruptly(&store);
        Self::over(Source::Whole { store, applied: 0 }, abrupt)
    }

    /// A driver over a compact session read chunk by chunk (whether it ends abruptly is
    /// known when its background pass is over).
    pub fn chunked(tl: Timeline) -> Self {
        let src = Source::Chunked {
            tl,
            cursor: Cursor::default(),
            waiting: None,
            told: 0,
            seeking: None,
        };
        Self::over(src, false)
    }

    fn over(src: Source, abrupt: bool) -> Self {
        ReplayDriver {
            src,
            last: Instant::now(),
            abrupt,
            told_abrupt: false,
            marks: Vec::new(),
        }
    }

    /// The store, when the whole file is in memory.
    pub fn store(&self) -> Option<&Store> {
        match &self.src {
            Source::Whole { store, .. } => Some(store),
            Source::Chunked { .. } => None,
        }
    }

    /// The timeline, when the session is read chunk by chunk.
    pub fn timeline(&self) -> Option<&Timeline> {
        match &self.src {
            Source::Chunked { tl, .. } => Some(tl),
            Source::Whole { .. } => None,
        }
    }

    /// Earliest record time.
    pub fn start(&self) -> u64 {
        match &self.src {
            Source::Whole { store, .. } => store.start(),
            Source::Chunked { tl, .. } => tl.start(),
        }
    }

    /// Latest record time.
    pub fn end(&self) -> u64 {
        match &self.src {
            Source::Whole { store, .. } => store.end(),
            Source::Chunked { tl, .. } => tl.end(),
        }
    }

    /// An app showing this store at its start.
    pub fn app(&self, speed: f64, theme: Theme) -> App {
        let (path, thresholds, alerts) = match &self.src {
            Source::Whole { store, .. } => (
                store.path(),
                store.thresholds(),
                Marks::of(store.alert_times()).times().to_vec(),
            ),
            Source::Chunked { tl, .. } => (
                tl.path(),
                tl.thresholds(),
                tl.indexed().alert_marks.times().to_vec(),
            ),
        };
        let file = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let (start, end) = (self.start(), self.end());
        let mut app = App::new(
            Screen::Replay(Playback {
                playing: true,
                speed,
                start,
                end,
                alerts,
                file,
                abrupt_end: self.abrupt,
            }),
            thresholds,
            theme,
            start,
        );
        let span_s = end.saturating_sub(start) as f64 / NS as f64;
        // The whole file when it is up to an hour long, else the last hour before the position.
        app.view.zoom = View::zoom_for(span_s.clamp(10.0, 3600.0));
        app.model = match &self.src {
            Source::Whole { store, .. } => store.model_at_index(0),
            // The state before any record: the empty model.
            Source::Chunked { .. } => crate::model::Model::new(thresholds),
        };
        app
    }

    /// Move the position to `t` (clamped to the file). A compact session's background pass
    /// may not have reached `t` yet: the position then waits for it ([`Self::waiting`]).
    pub fn seek(&mut self, app: &mut App, t: u64) {
        let t = t.clamp(self.start(), self.end());
        let back = match &mut self.src {
            Source::Whole { store, applied } if t < app.clock => {
                app.model = store.model_at(t);
                *applied = store.index_at(t);
                true
            }
            Source::Whole { .. } => false,
            Source::Chunked {
                tl,
                cursor,
                waiting,
                seeking,
                ..
            } => {
                // Forward within reach of the cursor: play on; else from a snapshot.
                let near = {
                    let ix = tl.indexed();
                    let k = ix.snaps.partition_point(|s| s.hi <= t);
                    // Nearer than any snapshot, and where the pass has been (playing on
                    // costs the records between; past the pass they could be many).
                    t >= app.clock
                        && waiting.is_none()
                        && seeking.is_none()
                        && ix.late.is_some()
                        && (ix.done || t < ix.hi)
                        && ix.snaps[..k].last().is_none_or(|s| s.hi <= cursor.hi())
                };
                *waiting = None;
                *seeking = None;
                if near {
                    false
                } else {
                    match tl.begin_seek(t) {
                        Some(mut s) => {
                            if seek_for_a_frame(tl, &mut s) {
                                (app.model, *cursor) = s.into_parts();
                                true
                            } else {
                                // Goes on at the next polls; the screen stays where it is
                                // known meanwhile.
                                *seeking = Some(s);
                                app.view.frozen = None;
                                return;
                            }
                        }
                        None => {
                            *waiting = Some(t);
                            app.view.frozen = None;
                            return;
                        }
                    }
                }
            }
        };
        if back {
            self.landed(app, t);
        } else {
            self.advance_to(app, t);
        }
        // A cursor placed earlier stays put; the window follows the position.
        app.view.frozen = None;
        self.prepare(app);
    }

    /// A model rebuilt for `t` is in the app: the position moves there, the marks of this
    /// screen apply again.
    fn landed(&mut self, app: &mut App, t: u64) {
        app.clock = t;
        self.told_abrupt = false;
        for m in &self.marks {
            app.model.apply(m);
        }
        self.tell_abrupt_end(app);
    }

    /// Where a seek under way goes, and how far it has got (per cent).
    pub fn seeking(&self) -> Option<(u64, u32)> {
        match &self.src {
            Source::Chunked {
                seeking: Some(s), ..
            } => Some((s.t, s.percent())),
            _ => None,
        }
    }

    /// The seek under way, a few chunks further: whether it is still under way.
    fn seek_on(&mut self, app: &mut App) -> bool {
        let Source::Chunked {
            tl,
            cursor,
            seeking,
            ..
        } = &mut self.src
        else {
            return false;
        };
        let Some(s) = seeking.as_mut() else {
            return false;
        };
        if !seek_for_a_frame(tl, s) {
            let text = format!("seeking {}%", s.percent());
            app.flash(text, false);
            return true;
        }
        let Some(s) = seeking.take() else {
            return false;
        };
        let t = s.t;
        (app.model, *cursor) = s.into_parts();
        self.landed(app, t);
        app.view.frozen = None;
        self.prepare(app);
        false
    }

    /// The position a seek waits for (the background pass has not reached it yet).
    pub fn waiting(&self) -> Option<u64> {
        match &self.src {
            Source::Chunked { waiting, .. } => *waiting,
            Source::Whole { .. } => None,
        }
    }

    fn advance_to(&mut self, app: &mut App, t: u64) -> bool {
        app.clock = t;
        let changed = match &mut self.src {
            Source::Whole { store, applied } => {
                let upto = store.index_at(t);
                let changed = upto > *applied;
                for r in &store.records()[*applied..upto] {
                    app.model.apply(r);
                }
                *applied = (*applied).max(upto);
                changed
            }
            Source::Chunked { tl, cursor, .. } => tl.advance(cursor, t, &mut app.model),
        };
        self.tell_abrupt_end(app) || changed
    }

    /// A compact session's background pass, caught up with: a seek waiting for it, the
    /// alerts and the end's abruptness it found, its progress and damage told. Returns
    /// whether the screen changed and whether playing may go on.
    fn catch_up(&mut self, app: &mut App) -> (bool, bool) {
        let Source::Chunked { tl, told, .. } = &mut self.src else {
            return (false, true);
        };
        let (late, done, pct, alerts, abrupt, damage) = {
            let ix = tl.indexed();
            let alerts = match &app.screen {
                Screen::Replay(p) if p.alerts != ix.alert_marks.times() => {
                    Some(ix.alert_marks.times().to_vec())
                }
                _ => None,
            };
            let damage: Vec<String> = ix.warnings[(*told).min(ix.warnings.len())..].to_vec();
            *told = ix.warnings.len();
            (
                ix.late.is_some(),
                ix.done,
                ix.percent(),
                alerts,
                ix.abrupt,
                damage,
            )
        };
        let mut changed = false;
        if let Some(w) = damage.first() {
            app.flash(format!("warning: {w}"), true);
            changed = true;
        }
        if let (Some(a), Some(p)) = (alerts, Self::playback(app)) {
            p.alerts = a;
            changed = true;
        }
        if done && abrupt && !self.abrupt {
            self.abrupt = true;
            if let Some(p) = Self::playback(app) {
                p.abrupt_end = true;
            }
        }
        if self.seeking().is_some() {
            self.seek_on(app);
            return (true, false);
        }
        if let Some(t) = self.waiting() {
            self.seek(app, t);
            if self.waiting().is_some() {
                app.flash(format!("indexing {pct}%: the position waits for it"), false);
            }
            return (true, false);
        }
        if !late {
            app.flash(format!("indexing {pct}%"), false);
            return (true, false);
        }
        (changed, true)
    }

    /// At the end of a recording that provetop did not stop, the log says so (once).
    fn tell_abrupt_end(&mut self, app: &mut App) -> bool {
        let end = self.end();
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
        let (changed, go) = self.catch_up(app);
        if !go {
            return changed;
        }
        let Some(p) = Self::playback(app) else {
            return changed;
        };
        if !p.playing {
            return changed;
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
                let at_end = clock >= self.end();
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
            Action::NextPhase | Action::PrevPhase | Action::NextAlert | Action::PrevAlert => {
                match self.jump(a, clock) {
                    Ok(t) => t,
                    Err(why) => return app.flash(why, true),
                }
            }
            Action::Start => self.start(),
            Action::End => self.end(),
            _ => return,
        };
        self.seek(app, target);
    }

    /// A model from a light snapshot takes back the closed phase spans the window shows.
    fn prepare(&mut self, app: &mut App) {
        if let Source::Chunked { tl, .. } = &self.src {
            let t0 = app.window().0;
            tl.fill_spans(&mut app.model, t0);
        }
    }
}

impl ReplayDriver {
    /// Where `]`, `[`, `a` or `A` goes from `clock`; else what to tell.
    fn jump(&self, a: Action, clock: u64) -> Result<u64, String> {
        let phase = matches!(a, Action::NextPhase | Action::PrevPhase);
        let next = matches!(a, Action::NextPhase | Action::NextAlert);
        let what = format!(
            "no {} {}",
            ["earlier", "later"][next as usize],
            ["alert", "phase start"][phase as usize]
        );
        let (found, partial) = match &self.src {
            Source::Whole { store, .. } => match (next, phase) {
                (true, true) => (store.next_phase_start(clock), None),
                (false, true) => (store.prev_phase_start(clock), None),
                (true, false) => (store.next_alert(clock), None),
                (false, false) => (store.prev_alert(clock), None),
            },
            Source::Chunked { tl, .. } => {
                let ix = tl.indexed();
                let t = ix.jump(phase, next, clock);
                let times = ["the alert times", "the phase starts"][phase as usize];
                let t = t.map_err(|e| format!("{times} could not be read back ({e})"))?;
                (t, (!ix.done).then(|| ix.percent()))
            }
        };
        match (found, partial) {
            (Some(t), _) => Ok(t),
            (None, Some(pct)) => Err(format!("{what} yet (indexing {pct}%)")),
            (None, None) => Err(what),
        }
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
    let mut driver = match &args.log {
        Some(log) => {
            let rules = crate::logsession::rules(args.config.as_deref())?;
            let loaded = crate::logsession::load(log, rules)?;
            ReplayDriver::new(Store::from_loaded(log, loaded, args.thresholds))
        }
        // A compact session is read chunk by chunk: its length costs no memory.
        None if crate::timeline::is_compact(file) => {
            ReplayDriver::chunked(Timeline::open(file, args.thresholds)?)
        }
        None => ReplayDriver::new(open(file, args)?),
    };
    let warnings: Vec<String> = match &driver.src {
        Source::Whole { store, .. } => store.warnings().iter().map(|w| w.to_string()).collect(),
        Source::Chunked { tl, .. } => tl.warnings().iter().map(|w| w.to_string()).collect(),
    };
    let mut app = driver.app(args.speed, look.theme);
    app.mouse = look.mouse;
    if let Some(b) = &args.baseline {
        let b = crate::baseline::Baseline::open(b, args.thresholds)?;
        app.baseline = Some(match driver.store() {
            Some(s) => b.for_replay(s, crate::baseline::Align::Start),
            None => b.for_replay_from(driver.start()),
        });
    }
    if let Some(off) = start {
        let t = driver.start().saturating_add(off);
        if t > driver.end() {
            anyhow::bail!(
                "--start {}: the recording is only {} long",
                args.start.as_deref().unwrap_or(""),
                provetop_shared::units::fmt_secs(
                    driver.end().saturating_sub(driver.start()) as f64 / NS as f64
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
    if let Some(tl) = driver.timeline() {
        for w in &tl.indexed().warnings {
            crate::say!("provetop: warning: {w}");
        }
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
