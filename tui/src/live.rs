//! The live screen: `provetop` (the bundled prover), `provetop run [-- CMD]` and
//! `provetop watch PID`, on a [`Monitor`] session, with keys that reach the prover.

use provetop_shared::clock::mono_ns;
use provetop_shared::protocol::ProverState;
use provetop_shared::Control;

use crate::app::{Action, App, Screen};
use crate::cli::{RunArgs, WatchArgs};
use crate::event_loop::{self, Driver, Exit};
use crate::model::ChildStatus;
use crate::monitor::signals::signal_name;
use crate::monitor::{self, Monitor, Target};
use crate::settings::{rule_lines, setup, watchdog_rule, Setup};
use crate::text::control_text;
use crate::theme::Theme;

/// The live screen's driver: a monitoring session, and the prover's controls.
pub struct LiveDriver {
    pub monitor: Monitor,
    told_exit: bool,
    /// Why the sampler thread died, once it has.
    sampler_died: Option<String>,
}

impl LiveDriver {
    pub fn new(monitor: Monitor) -> Self {
        LiveDriver {
            monitor,
            told_exit: false,
            sampler_died: None,
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
        let control = match a {
            Action::PauseResume => {
                if app.model.prover.state == Some(ProverState::Paused) {
                    Control::Resume
                } else {
                    Control::Pause
                }
            }
            // One more proof of the current mode's size (batch:N: N sectors).
            Action::ProveNow => Control::Prove {
                count: app.model.prover.mode.map_or(1, |m| m.sectors_per_proof()),
            },
            Action::SetMode(mode) => Control::SetMode { mode },
            _ => return,
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

    fn farewell(&mut self, app: &mut App, _exit: Exit) -> bool {
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
        Some(p) => Some(crate::compare::overlay::Baseline::open(p, s.thresholds)?),
        None => None,
    };
    let target = Target::run(args, s.record.as_deref())?;
    if args.monitor.headless {
        return crate::headless::main(s, target);
    }
    screen(s, target, Screen::Run, baseline)
}

/// `provetop watch PID`.
pub fn main_watch(args: &WatchArgs) -> anyhow::Result<i32> {
    let target = Target::pid(args.pid())?;
    let mut s = setup(&args.monitor)?;
    // Not ours to reset unless asked (`--reset-peak`'s help says why).
    s.sampler.reset_peak = args.reset_peak;
    if args.monitor.headless {
        return crate::headless::main(s, target);
    }
    screen(s, target, Screen::Watch { pid: args.pid() }, None)
}

/// Why the screen ended, for the recording.
fn why(exit: &anyhow::Result<Exit>) -> String {
    match exit {
        Ok(Exit::Quit) => "quit by the user".to_string(),
        Ok(Exit::Signal(sig)) => format!("got {}", signal_name(*sig)),
        Ok(Exit::InputClosed) => "terminal input closed".to_string(),
        Err(e) => format!("terminal lost: {e:#}"),
    }
}

fn screen(
    s: Setup,
    target: Target,
    kind: Screen,
    baseline: Option<crate::compare::overlay::Baseline>,
) -> anyhow::Result<i32> {
    let rt = monitor::runtime()?;
    let child_log = crate::headless::child_log(&target);
    let (result, recorded, failed) = rt.block_on(async {
        let mut app = App::new(kind, s.thresholds, Theme::from_env(), mono_ns());
        app.baseline = baseline.map(|b| b.for_live(app.origin));
        app.rule_lines = rule_lines(&s.rules);
        app.recording = s.record.as_ref().map(|p| p.display().to_string());
        let monitor = match Monitor::start(&s, target, &mut app.model).await {
            Ok(m) => m,
            Err(e) => return (Err(e), None, None),
        };
        crate::terminal::install_panic_hook(monitor.panic_cleanup());
        let mut driver = LiveDriver::new(monitor);
        let exit = event_loop::run_on_terminal(&mut app, &mut driver).await;
        let by_itself = matches!(app.model.child, crate::model::ChildStatus::Exited { .. });
        let dead = driver.sampler_died.take();
        let why = dead.clone().unwrap_or_else(|| why(&exit));
        let (ended, recorded) = driver.monitor.stop(&mut app.model, &why).await;
        let exit = match dead {
            Some(d) => Err(anyhow::anyhow!("{d}: the session was stopped")),
            None => exit,
        };
        (
            exit.map(|e| e.status()),
            recorded,
            ended.filter(|_| by_itself),
        )
    });
    crate::terminal::restore();
    if let Some(e) = &failed {
        crate::headless::say_child_failure(child_log.as_deref(), e);
    }
    if let Some(p) = recorded {
        crate::say!("provetop: session recorded to {}", p.display());
    }
    result
}
