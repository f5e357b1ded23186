//! The live screen: `provetop` (the bundled prover), `provetop run [-- CMD]` and
//! `provetop watch PID`, on a [`Monitor`] session, with keys that reach the prover.
//!
//! The session serves its control socket while the screen is up (others may attach), and
//! `d` detaches `run`'s screen ([`crate::detach`]): the terminal is given back, and the same
//! session goes on headless ([`crate::headless::serve`]) until a `stop` or a signal.

use provetop_shared::clock::mono_ns;

use crate::app::{Action, App, Screen};
use crate::cli::{RunArgs, WatchArgs};
use crate::detach::Host;
use crate::event_loop::{self, Driver, Exit};
use crate::model::ChildStatus;
use crate::monitor::control::{self, ControlServer};
use crate::monitor::signals::signal_name;
use crate::monitor::{self, Monitor, Target};
use crate::settings::screen::Look;
use crate::settings::{rule_lines, setup, watchdog_rule, Setup};
use crate::text::control_text;

/// The live screen's driver: a monitoring session, and the prover's controls.
pub struct LiveDriver {
    pub monitor: Monitor,
    told_exit: bool,
    /// Why the sampler thread died, once it has.
    sampler_died: Option<String>,
    /// The session's control socket.
    pub control: Option<ControlServer>,
    /// What detaching needs (None: this screen cannot detach).
    host: Option<Host>,
    /// A control client asked to stop: why.
    stop_asked: Option<String>,
}

impl LiveDriver {
    pub fn new(monitor: Monitor) -> Self {
        LiveDriver {
            monitor,
            told_exit: false,
            sampler_died: None,
            control: None,
            host: None,
            stop_asked: None,
        }
    }
}

impl Driver for LiveDriver {
    fn poll(&mut self, app: &mut App) -> bool {
        app.clock = mono_ns();
        let n = self.monitor.pump(&mut app.model);
        app.recording_failing = self.monitor.pipeline.recording_failing();
        // A dead sampler is fatal: say it and end the screen (the child is stopped).
        if let Some(d) = self.monitor.pipeline.sampler_died() {
            if self.sampler_died.is_none() {
                app.flash(format!("{d}: stopping"), true);
                self.sampler_died = Some(d.to_string());
                app.quit = true;
            }
        }
        if let Some(c) = self.control.as_mut() {
            if let Some(why) = control::answer(c, &mut self.monitor, &mut app.model) {
                app.flash(format!("{why}: stopping"), true);
                self.stop_asked = Some(why);
                app.quit = true;
            }
        }
        if let (false, Some(text)) = (self.told_exit, self.monitor.pipeline.watched_end_text()) {
            if !matches!(app.model.child, ChildStatus::Exited { .. }) {
                // A cgroup removed: no process exit says it.
                self.told_exit = true;
                app.flash(format!("{text}; q quits"), true);
            }
        }
        if let ChildStatus::Exited { reason, .. } = &app.model.child {
            if !self.told_exit {
                self.told_exit = true;
                let who = if self.monitor.supervisor.is_some() {
                    "child"
                } else {
                    "process"
                };
                app.flash(format!("{who} {reason}; q quits"), true);
            }
        }
        n > 0
    }

    fn act(&mut self, app: &mut App, a: Action) {
        if a == Action::MarkDone {
            // Into the session now, as the control socket's `mark` does; a cursor placed back
            // in time is named in the text (the recording's times only go forward).
            if let Some((at, text)) = app.view.mark_done.take() {
                let text = crate::ui::mark_text(app, at, &text);
                let note = crate::text::mark_note(&text);
                self.monitor.pipeline.note(&mut app.model, note);
                app.flash(format!("marked: {text}"), false);
            }
            return;
        }
        if a == Action::Detach {
            match (&self.host, &self.control) {
                // The file is what an attached screen shows: without one, attach has nothing.
                (Some(_), Some(_)) if app.recording.is_none() => app.flash(
                    "cannot detach: with --no-record there is no file to attach to",
                    true,
                ),
                (Some(_), Some(_)) => app.detach = true,
                (None, _) => app.flash(
                    "this screen cannot detach (watch, or no separate supervisor)",
                    true,
                ),
                (_, None) => app.flash(
                    "cannot detach: the session has no control socket to attach to",
                    true,
                ),
            }
            return;
        }
        let Some(control) = app.control_for(a) else {
            return;
        };
        let Some(sup) = &self.monitor.supervisor else {
            return;
        };
        let text = control_text(&control);
        if !app.model.has_events() {
            app.flash(
                format!("{text}: the child does not speak the provetop protocol"),
                true,
            );
            return;
        }
        // Said sent only when written: a child that closed its stdin, or does not read
        // it, gets nothing, and the flash says so.
        match sup.try_send(control) {
            Ok(()) => app.flash(format!("sent: {text}"), false),
            Err(e) => app.flash(format!("{text}: not sent: {e}"), true),
        }
    }

    fn farewell(&mut self, app: &mut App, exit: Exit) -> bool {
        if exit == Exit::Detach {
            return false;
        }
        // Stopping the child may take its grace period: say so.
        match &self.sampler_died {
            Some(d) => app.flash(format!("{d}: stopping…"), true),
            None => app.flash("stopping…", false),
        }
        self.monitor.supervisor.is_some()
    }
}

/// `provetop` / `provetop run`.
pub fn main_run(args: &RunArgs) -> anyhow::Result<i32> {
    let mut s = setup(&args.monitor)?;
    if let Some(w) = &args.watchdog {
        s.rules.push(watchdog_rule(w)?);
    }
    // Read before the prover starts: a bad file is an error with nothing to stop.
    let baseline = match &args.baseline {
        Some(_) if args.monitor.headless => {
            anyhow::bail!("--baseline draws on the live screen; --headless has none")
        }
        Some(p) => Some(crate::baseline::Baseline::open(p, s.thresholds)?),
        None => None,
    };
    let target = Target::run(args, s.record.as_deref(), &s.log_rules, &s.nvtx_phases)?;
    if args.monitor.headless {
        return crate::headless::main(s, target);
    }
    // Split before any thread exists, so that `d` can leave the supervisor running.
    let host = crate::detach::split().map(|mut h| {
        // Detach on a hangup unless told to stop. `--detach-on-hangup`, the old opt-in, is
        // the default now; given, it wins over PROVETOP_STOP_ON_HANGUP (clap's overrides do
        // not reach a value from the environment).
        h.on_hangup = args.detach_on_hangup || !args.stop_on_hangup;
        h
    });
    let look = look_of(&args.monitor)?;
    screen(s, look, target, Screen::Run, host, baseline)
}

/// `provetop serve`: `run --headless` by another name, for a service manager's unit.
pub fn main_serve(args: &RunArgs) -> anyhow::Result<i32> {
    let mut args = args.clone();
    args.monitor.headless = true;
    main_run(&args)
}

/// The live session that supervises `pid` (its child, or its supervisor), if any: `watch`
/// of it would see memory only, where `attach` has everything.
fn supervised_by(pid: u32) -> Option<String> {
    let dir = control::socket_dir().ok()?;
    let (live, _) = crate::sessions::live_sessions(&dir);
    live.into_iter().find_map(|l| {
        let mut c = control::Client::connect(&l.socket, std::time::Duration::from_secs(1)).ok()?;
        let s = c.status().ok()?;
        (s.child_pid == Some(pid) || s.pid == pid).then_some(s.id)
    })
}

/// `provetop watch PID`, `watch --cgroup DIR`, `watch --unit NAME`.
pub fn main_watch(args: &WatchArgs) -> anyhow::Result<i32> {
    let watched = args.watched();
    let target = Target::watch(watched.clone(), args.log.clone())?;
    if let crate::cli::Watched::Pid(pid) = watched {
        if let Some(id) = supervised_by(pid) {
            crate::say!(
                "provetop: pid {pid} is supervised by provetop session {id}: `provetop attach {id}` \
                 shows its phases and sends its controls (watch shows memory only)"
            );
        }
    }
    let mut s = setup(&args.monitor)?;
    // Not ours to reset unless asked (`--reset-peak`'s help says why).
    s.sampler.reset_peak = args.reset_peak;
    if args.monitor.headless {
        return crate::headless::main(s, target);
    }
    let what = target.watched_name().unwrap_or_default();
    let look = look_of(&args.monitor)?;
    screen(s, look, target, Screen::Watch { what }, None, None)
}

/// The screen's palette and mouse: its flags over the same config file [`setup`] read.
fn look_of(opts: &crate::cli::MonitorOpts) -> anyhow::Result<Look> {
    crate::settings::screen::load(&opts.screen, opts.config.as_deref())
}

/// Why the screen ended, for the recording.
fn why(exit: &anyhow::Result<Exit>) -> String {
    match exit {
        Ok(Exit::Quit) => "quit by the user".to_string(),
        Ok(Exit::Signal(sig)) => format!("got {}", signal_name(*sig)),
        Ok(Exit::InputClosed) => "terminal input closed".to_string(),
        Ok(Exit::Detach) => "detached".to_string(),
        Err(e) => format!("terminal lost: {e:#}"),
    }
}

fn screen(
    s: Setup,
    look: Look,
    target: Target,
    kind: Screen,
    host: Option<Host>,
    baseline: Option<crate::baseline::Baseline>,
) -> anyhow::Result<i32> {
    let rt = monitor::runtime()?;
    let child_log = crate::headless::child_log(&target);
    let stdin_taken = target.reads_stdin();
    let served = crate::headless::Served::new(&target);
    // The child's last lines, taken from the screen's model for a failure said after it.
    let mut tail: Vec<String> = Vec::new();
    let (result, recorded, failed) = rt.block_on(async {
        let mut app = App::new(kind, s.thresholds, look.theme, mono_ns());
        app.mouse = look.mouse;
        app.baseline = baseline.map(|b| b.for_live(app.origin));
        app.rule_lines = rule_lines(&s.rules);
        app.recording = s.record.as_ref().map(|p| p.display().to_string());
        // Caught from before the child starts: a signal during start-up stops it cleanly.
        let stop = crate::monitor::signals::stop_signal();
        let mut monitor = match Monitor::start(&s, target, &mut app.model).await {
            Ok(m) => m,
            Err(e) => return (Err(e), None, None),
        };
        crate::terminal::install_panic_hook(monitor.panic_cleanup());
        let control = served.control(&s, &mut monitor, &mut app.model);
        let mut driver = LiveDriver::new(monitor);
        driver.control = control;
        driver.host = host;
        let exit = event_loop::run_on_terminal(&mut app, &mut driver, stop, stdin_taken).await;
        // A hangup: the terminal closed (SIGHUP, or its input ended or failed).
        let hung_up = matches!(
            exit,
            Ok(Exit::Signal(nix::libc::SIGHUP)) | Ok(Exit::InputClosed) | Err(_)
        );
        let detach_now = matches!(exit, Ok(Exit::Detach))
            || (hung_up
                && driver.host.as_ref().is_some_and(|h| h.on_hangup)
                && driver.control.is_some()
                && app.recording.is_some());
        if detach_now {
            // The terminal is restored (the loop's terminal is gone): leave it, go on headless.
            let why = if hung_up {
                "the screen's terminal hung up (detached; --stop-on-hangup stops instead)"
            } else {
                "the screen detached"
            };
            return detached(driver, app, served, why).await;
        }
        let by_itself = matches!(app.model.child, crate::model::ChildStatus::Exited { .. });
        let dead = driver.sampler_died.take();
        let why = dead
            .clone()
            .or(driver.stop_asked.take())
            .unwrap_or_else(|| why(&exit));
        let (ended, recorded) = driver.monitor.stop(&mut app.model, &why).await;
        tail = crate::headless::output_tail(&app.model);
        let exit = match dead {
            Some(d) => Err(anyhow::anyhow!("{d}: the session was stopped")),
            // The loop fails only when its terminal does (a hangup mid-draw: EIO).
            None => anyhow::Context::context(exit, "the screen's terminal failed"),
        };
        (
            exit.map(|e| e.status()),
            recorded,
            ended.filter(|_| by_itself),
        )
    });
    crate::terminal::restore();
    if let Some(e) = &failed {
        crate::headless::say_tail_lines(&tail, child_log.as_deref(), e);
    }
    if let Some(p) = recorded {
        crate::say!("provetop: session recorded to {}", p.display());
    }
    result
}

/// After `d` (or a hangup with `--detach-on-hangup`): tell the host to give the prompt
/// back, then serve the session headless; `why` goes into the recording.
async fn detached(
    mut driver: LiveDriver,
    mut app: App,
    served: crate::headless::Served,
    why: &str,
) -> (
    anyhow::Result<i32>,
    Option<std::path::PathBuf>,
    Option<provetop_collect::supervisor::ExitInfo>,
) {
    let host = driver
        .host
        .take()
        .expect("only a screen with a host detaches");
    let id = driver
        .control
        .as_ref()
        .map(|c| c.id().to_string())
        .unwrap_or_default();
    let msg = format!(
        "provetop: detached; the prover goes on (supervisor pid {}): provetop attach {id}",
        std::process::id()
    );
    if let Err(e) = host.detach(&msg) {
        // Still attached to the terminal: stop as a quit would, saying why.
        crate::say!("provetop: {e:#}");
        let why = format!("{e:#}");
        let (_, recorded) = driver.monitor.stop(&mut app.model, &why).await;
        return (Ok(1), recorded, None);
    }
    driver
        .monitor
        .pipeline
        .note(&mut app.model, format!("{why}; supervising headless"));
    let control = driver.control.take();
    match crate::headless::serve(
        driver.monitor,
        &mut app.model,
        served,
        control,
        crate::monitor::signals::served_stop_signal(),
    )
    .await
    {
        Ok((code, recorded, _dead)) => (Ok(code), recorded, None),
        Err(e) => (Err(e), None, None),
    }
}
