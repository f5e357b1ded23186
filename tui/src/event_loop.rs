//! The screen's event loop, apart from the state it drives ([`crate::app`]) and the drawing
//! ([`crate::ui`]): the only place that draws.
//!
//! Generic over ratatui's [`Backend`] (a real terminal, or `TestBackend` in tests), over the
//! input stream (crossterm's, or scripted keys) and over a [`Driver`] that feeds records
//! (live: the monitor's pipeline; replay: a file on a playback clock). One tokio task
//! `select!`s the tick, the input and the stop signal, and redraws when something changed.

use std::time::Duration;

use crossterm::event::{Event as TermEvent, KeyEventKind};
use futures::{Stream, StreamExt};
use ratatui::backend::Backend;
use ratatui::Terminal;

use crate::app::{Action, App};
use crate::keymap;

/// What feeds the app: records in, actions out.
pub trait Driver {
    /// How often [`Driver::poll`] runs.
    fn tick(&self) -> Duration {
        Duration::from_millis(50)
    }

    /// Bring new records into the model and advance the clock; returns whether anything
    /// changed that the screen shows.
    fn poll(&mut self, app: &mut App) -> bool;

    /// Handle an action the view did not (controls to the prover, replay seeks).
    fn act(&mut self, app: &mut App, a: Action);

    /// A frame is about to be drawn: bring in what it shows that the model holds only when
    /// asked (a replay's phase spans for a window zoomed out).
    fn prepare(&mut self, _app: &mut App) {}

    /// The loop is ending: whether to draw one last frame (e.g. a "stopping…" message while
    /// the prover is stopped, which may take its grace period).
    fn farewell(&mut self, _app: &mut App, _exit: Exit) -> bool {
        false
    }
}

impl Exit {
    /// Exit status of provetop for this ending: 0, or 128 + the signal.
    pub fn status(self) -> i32 {
        match self {
            Exit::Signal(sig) => 128 + sig,
            _ => 0,
        }
    }
}

/// How the loop ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// The user quit.
    Quit,
    /// A signal (SIGINT/SIGTERM/SIGHUP, its number) asked us to stop.
    Signal(i32),
    /// The terminal input ended.
    InputClosed,
    /// The user detached: the supervisor goes on without this screen.
    Detach,
}

/// Shortest time between two frames (the screen never redraws faster than this): 5 Hz, so
/// drawing stays a small share of a core under a busy prover. The sample rate, not the frame
/// rate, is what catches a spike; a key is answered at once, not at the next frame.
pub const FRAME: Duration = Duration::from_millis(200);
/// Longest time between two frames (the clock moves even when nothing arrives).
pub const IDLE_FRAME: Duration = Duration::from_millis(500);

/// The main loop: draw, then wait for a tick, a key, or the stop signal.
pub async fn run<B, D, I, S>(
    terminal: &mut Terminal<B>,
    app: &mut App,
    driver: &mut D,
    mut input: I,
    stop: S,
) -> anyhow::Result<Exit>
where
    B: Backend,
    D: Driver,
    I: Stream<Item = std::io::Result<TermEvent>> + Unpin,
    S: std::future::Future<Output = i32>,
{
    tokio::pin!(stop);
    let mut tick = tokio::time::interval(driver.tick());
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let mut dirty = true;
    let mut drawn = app.view.drawn;
    let mut last_draw = tokio::time::Instant::now() - IDLE_FRAME;
    driver.poll(app);
    loop {
        let since = last_draw.elapsed();
        if (dirty && since >= FRAME) || since >= IDLE_FRAME {
            driver.prepare(app);
            terminal.draw(|f| drawn = crate::ui::draw(f, app))?;
            app.view.drawn = drawn;
            last_draw = tokio::time::Instant::now();
            dirty = false;
        }
        let exit = tokio::select! {
            _ = tick.tick() => {
                dirty |= driver.poll(app);
                None
            }
            ev = input.next() => match ev {
                Some(Ok(TermEvent::Key(k))) if k.kind == KeyEventKind::Press && app.asking => {
                    // The key answers "stop the prover?".
                    app.answer(&k);
                    last_draw = tokio::time::Instant::now() - FRAME;
                    dirty = true;
                    None
                }
                Some(Ok(TermEvent::Key(k))) if k.kind == KeyEventKind::Press && app.view.mark.is_some() => {
                    // The key is part of the mark being typed.
                    if let Some(done) = app.mark_key(&k) {
                        driver.act(app, done);
                    }
                    last_draw = tokio::time::Instant::now() - FRAME;
                    dirty = true;
                    None
                }
                Some(Ok(TermEvent::Mouse(m))) if app.mouse && !app.asking && !app.view.searching && app.view.mark.is_none() => {
                    if let Some(a) = crate::mouse::action(app, &m) {
                        if let Some(rest) = app.act(a) {
                            driver.act(app, rest);
                        }
                        last_draw = tokio::time::Instant::now() - FRAME;
                        dirty = true;
                    }
                    app.quit.then_some(Exit::Quit)
                }
                Some(Ok(TermEvent::Key(k))) if k.kind == KeyEventKind::Press && app.view.searching => {
                    // The key is part of the log search being typed.
                    app.search_key(&k);
                    last_draw = tokio::time::Instant::now() - FRAME;
                    dirty = true;
                    None
                }
                Some(Ok(TermEvent::Key(k))) if k.kind != KeyEventKind::Release => {
                    if let Some(a) = keymap::lookup(app.sections(), &k) {
                        if let Some(rest) = app.act(a) {
                            driver.act(app, rest);
                        }
                        // Answer a key at once, not at the next frame slot.
                        last_draw = tokio::time::Instant::now() - FRAME;
                        dirty = true;
                    }
                    app.quit.then_some(Exit::Quit)
                }
                Some(Ok(TermEvent::Resize(..))) => {
                    terminal.autoresize()?;
                    dirty = true;
                    None
                }
                Some(Ok(_)) => None,
                Some(Err(e)) => return Err(anyhow::anyhow!("reading the terminal: {e}")),
                None => Some(Exit::InputClosed),
            },
            sig = &mut stop => Some(Exit::Signal(sig)),
        };
        let asked = (app.detach.then_some(Exit::Detach)).or(app.quit.then_some(Exit::Quit));
        if let Some(exit) = exit.or(asked) {
            if driver.farewell(app, exit) {
                driver.prepare(app);
                terminal.draw(|f| drawn = crate::ui::draw(f, app))?;
                app.view.drawn = drawn;
            }
            return Ok(exit);
        }
    }
}

/// [`run`] on the real terminal (raw mode and the alternate screen for as long as it runs),
/// with crossterm's keys and `stop`, the signals that stop provetop
/// ([`crate::monitor::signals::stop_signal`], made before the session started).
/// `stdin_taken`: standard input is data, not keys ([`crate::terminal::Tui::enter`]).
pub async fn run_on_terminal<D: Driver>(
    app: &mut App,
    driver: &mut D,
    stop: impl std::future::Future<Output = i32>,
    stdin_taken: bool,
) -> anyhow::Result<Exit> {
    let mut tui = crate::terminal::Tui::enter(stdin_taken, &app.screen, app.mouse)?;
    let input = crossterm::event::EventStream::new();
    run(&mut tui.terminal, app, driver, input, stop).await
}
