//! Live monitoring: `provetop` (the bundled prover), `provetop run [-- CMD]` and
//! `provetop watch --pid PID`, with the screen or headless.
//!
//! One [`Collector`] gathers records from the sampler (drained every tick), the supervisor
//! (an mpsc channel) and key-press controls; every record goes to the alert engine, the model
//! and the recorder, in that order, and alerts the engine raises go the same way.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use anyhow::Context;
use provetop_collect::alerts::{self, AlertEngine, Rule};
use provetop_collect::recorder::Recorder;
use provetop_collect::sampler::{self, SamplerHandle};
use provetop_collect::supervisor::{self, ChildSpec, ExitInfo, Restart, SupervisorHandle};
use provetop_shared::clock::mono_ns;
use provetop_shared::session::SessionHeader;
use provetop_shared::{Alert, AlertState, Control, Mark, Record, RecordBody};
use tokio::sync::{mpsc, watch};

use crate::app::{self, Action, App, Driver, Screen};
use crate::cli::{RestartPolicy, RunArgs, WatchArgs};
use crate::model::{control_text, Model};
use crate::settings::{rule_lines, setup, watchdog_rule};
use crate::ui::theme::Theme;

/// The recording, reachable from the panic hook so a crash still flushes it.
static RECORDER: Mutex<Option<Recorder>> = Mutex::new(None);

/// Flush and close the recording from a panic hook (never blocks on the lock).
pub fn finish_recording_on_panic() {
    if let Ok(mut g) = RECORDER.try_lock() {
        if let Some(r) = g.take() {
            if let Ok(p) = r.finish() {
                crate::say!("provetop: session recorded to {}", p.display());
            }
        }
    }
}

fn with_recorder<T>(f: impl FnOnce(&mut Option<Recorder>) -> T) -> T {
    let mut g = RECORDER.lock().unwrap_or_else(|e| e.into_inner());
    f(&mut g)
}

/// Gathers live records and sends each to alerts, model and recorder.
pub struct Collector {
    sampler: Option<SamplerHandle>,
    rx: Option<mpsc::Receiver<Record>>,
    pid_watch: Option<watch::Receiver<Option<u32>>>,
    engine: AlertEngine,
    hook: Option<Vec<String>>,
    buf: Vec<Record>,
    reported_drops: u64,
    watched: Option<u32>,
    watched_gone: bool,
    hook_failed: bool,
    /// Print alerts to stderr (headless).
    pub alerts_to_stderr: bool,
}

impl Collector {
    /// A collector over a sampler and/or a supervisor channel.
    pub fn new(
        sampler: Option<SamplerHandle>,
        rx: Option<mpsc::Receiver<Record>>,
        pid_watch: Option<watch::Receiver<Option<u32>>>,
        rules: Vec<Rule>,
        hook: Option<Vec<String>>,
    ) -> Self {
        Collector {
            sampler,
            rx,
            pid_watch,
            engine: AlertEngine::new(rules),
            hook,
            buf: Vec::with_capacity(256),
            reported_drops: 0,
            watched: None,
            watched_gone: false,
            hook_failed: false,
            alerts_to_stderr: false,
        }
    }

    /// Also notice when a watched (not supervised) process goes away.
    pub fn watch_pid(&mut self, pid: u32) {
        self.watched = Some(pid);
    }

    /// Handle one record: alerts first (their records follow it), then model and recorder.
    pub fn push(&mut self, model: &mut Model, rec: Record) {
        if let (true, RecordBody::Mark(Mark::Warning { text })) = (self.alerts_to_stderr, &rec.body)
        {
            crate::say!("provetop: warning: {text}");
        }
        let raised = self.engine.observe(&rec);
        self.store(model, &rec);
        for a in raised {
            let r = Record::new(rec.t, RecordBody::Alert(a.clone()));
            if self.alerts_to_stderr {
                crate::say!("provetop: {}", alert_line(&a));
            }
            self.store(model, &r);
            if let Some(h) = &self.hook {
                if let Err(e) = alerts::spawn_hook(h, &a, rec.t) {
                    if !self.hook_failed {
                        // Said once: a broken hook must not flood the log.
                        self.hook_failed = true;
                        let text = format!("alert hook {:?} cannot start: {e}", h[0]);
                        if self.alerts_to_stderr {
                            crate::say!("provetop: {text}");
                        }
                        let w = Record::new(rec.t, RecordBody::Mark(Mark::Warning { text }));
                        self.store(model, &w);
                    }
                }
            }
        }
    }

    fn store(&mut self, model: &mut Model, rec: &Record) {
        model.apply(rec);
        let warn = with_recorder(|r| r.as_mut().and_then(|r| r.record(rec)));
        if let Some(m) = warn {
            self.recorder_warning(model, m);
        }
    }

    /// A warning from the recorder (writing fails, or works again): shown and recorded.
    fn recorder_warning(&self, model: &mut Model, m: Mark) {
        if let (true, Mark::Warning { text }) = (self.alerts_to_stderr, &m) {
            crate::say!("provetop: warning: {text}");
        }
        let w = Record::new(mono_ns(), RecordBody::Mark(m));
        model.apply(&w);
        with_recorder(|r| r.as_mut().and_then(|r| r.record(&w)));
    }

    /// Whether writing the recording fails now (disk full, …).
    pub fn recording_failing(&self) -> bool {
        with_recorder(|r| r.as_ref().is_some_and(|r| r.is_failing()))
    }

    /// Drain everything available now; returns how many records arrived.
    pub fn pump(&mut self, model: &mut Model) -> usize {
        let mut buf = std::mem::take(&mut self.buf);
        buf.clear();
        if let Some(s) = &mut self.sampler {
            s.drain(&mut buf);
            let dropped = s.dropped();
            if dropped > self.reported_drops {
                buf.push(Record::new(
                    mono_ns(),
                    RecordBody::Mark(Mark::Dropped {
                        what: "samples".into(),
                        count: dropped - self.reported_drops,
                    }),
                ));
                self.reported_drops = dropped;
            }
        }
        if let Some(rx) = &mut self.rx {
            while let Ok(r) = rx.try_recv() {
                buf.push(r);
            }
        }
        if let (Some(w), Some(s)) = (&mut self.pid_watch, &self.sampler) {
            if w.has_changed().unwrap_or(false) {
                if let Some(pid) = *w.borrow_and_update() {
                    s.set_root(pid);
                }
            }
        }
        if let Some(pid) = self.watched {
            if !self.watched_gone && !Path::new(&format!("/proc/{pid}")).exists() {
                self.watched_gone = true;
                buf.push(Record::new(
                    mono_ns(),
                    RecordBody::Mark(Mark::ChildExited {
                        pid,
                        code: None,
                        signal: None,
                        oom_kill: false,
                        reason: "exited (watched: status unknown)".into(),
                    }),
                ));
            }
        }
        // Sampler and supervisor interleave: keep the merged batch in time order.
        buf.sort_by_key(|r| r.t);
        let n = buf.len();
        for r in buf.drain(..) {
            self.push(model, r);
        }
        self.buf = buf;
        if let Some(m) = with_recorder(|r| r.as_mut().and_then(|r| r.tick())) {
            self.recorder_warning(model, m);
        }
        n
    }

    /// Whether the watched process is gone.
    pub fn watched_gone(&self) -> bool {
        self.watched_gone
    }

    /// Stop the sampler thread.
    pub fn stop(&mut self) {
        if let Some(s) = self.sampler.take() {
            s.stop();
        }
    }
}

/// "ALERT warn rss > 1GiB: rss 1.2 GiB > 1.0 GiB" / "cleared …".
pub fn alert_line(a: &Alert) -> String {
    let (rule, detail) = crate::model::alert_parts(a);
    match a.state {
        AlertState::Firing => format!("ALERT {}: {rule}: {detail}", a.level.name()),
        AlertState::Cleared => format!("alert cleared: {rule}: {detail}"),
    }
}

/// Start the recording (if any) and keep it where the panic hook can reach it.
pub fn start_recording(path: Option<&Path>, command: Vec<String>, hz: f64) -> anyhow::Result<()> {
    if let Some(p) = path {
        let rec = Recorder::create(p, &SessionHeader::now(command, hz))?;
        with_recorder(|r| *r = Some(rec));
    }
    Ok(())
}

/// Close the recording; returns its path.
pub fn finish_recording() -> Option<PathBuf> {
    let rec = with_recorder(|r| r.take())?;
    match rec.finish() {
        Ok(p) => Some(p),
        Err(e) => {
            crate::say!("provetop: finishing the session file: {e:#}");
            None
        }
    }
}

/// The bundled prover: `provetop-prover` next to this binary, else on PATH.
pub fn bundled_prover() -> anyhow::Result<PathBuf> {
    let name = "provetop-prover";
    if let Ok(exe) = std::env::current_exe() {
        if let Some(dir) = exe.parent() {
            let p = dir.join(name);
            if p.is_file() {
                return Ok(p);
            }
        }
    }
    if let Some(path) = std::env::var_os("PATH") {
        for dir in std::env::split_paths(&path) {
            let p = dir.join(name);
            if p.is_file() {
                return Ok(p);
            }
        }
    }
    let here = std::env::current_exe()
        .ok()
        .and_then(|e| e.parent().map(|d| d.display().to_string()))
        .unwrap_or_else(|| "?".into());
    anyhow::bail!(
        "the bundled prover `{name}` is neither next to provetop ({here}) nor on PATH; build it (`cargo build -p provetop-prover`) or give a command: provetop run -- CMD ARGS"
    )
}

/// The command line `provetop run` supervises.
pub fn child_argv(args: &RunArgs) -> anyhow::Result<Vec<String>> {
    if !args.command.is_empty() {
        if args.partitions.is_some()
            || args.constraints.is_some()
            || args.mode.is_some()
            || args.proofs.is_some()
            || args.mem_budget.is_some()
        {
            anyhow::bail!("--partitions/--constraints/--mode/--proofs/--mem-budget configure the bundled prover; pass them to your own command after -- instead");
        }
        return Ok(args.command.clone());
    }
    let mut v = vec![
        bundled_prover()?.display().to_string(),
        "--daemon".into(),
        "--events-fd".into(),
        supervisor::EVENTS_FD.to_string(),
        "--repeat-every".into(),
        "2".into(),
        // Quitting provetop should not wait for a proof to finish.
        "--on-sigterm".into(),
        "abort".into(),
    ];
    if let Some(p) = args.partitions {
        v.extend(["--partitions".into(), p.to_string()]);
    }
    if let Some(c) = args.constraints {
        v.extend(["--constraints".into(), c.to_string()]);
    }
    if let Some(m) = args.mode {
        v.extend(["--mode".into(), m.to_string()]);
    }
    if let Some(n) = args.proofs {
        v.extend(["--proofs".into(), n.to_string()]);
    }
    if let Some(b) = &args.mem_budget {
        provetop_shared::units::parse_bytes(b).map_err(|e| anyhow::anyhow!("--mem-budget: {e}"))?;
        v.extend(["--mem-budget".into(), b.clone()]);
    }
    Ok(v)
}

/// Check that `pid` exists and is ours (we need to reset its peak counter).
pub fn check_watch_pid(pid: u32) -> anyhow::Result<()> {
    use std::os::unix::fs::MetadataExt;
    if pid == 0 || pid > i32::MAX as u32 {
        anyhow::bail!("pid {pid}: not a process id");
    }
    let meta = match std::fs::metadata(format!("/proc/{pid}")) {
        Ok(m) => m,
        Err(_) => anyhow::bail!("no process with pid {pid}"),
    };
    let me = nix::unistd::geteuid().as_raw();
    if me != 0 && meta.uid() != me {
        anyhow::bail!(
            "pid {pid} belongs to another user (uid {}); provetop can only watch your own processes (run it as that user or as root)",
            meta.uid()
        );
    }
    Ok(())
}

/// The live screen's driver: the collector plus the supervisor for controls.
pub struct LiveDriver {
    /// Record sources.
    pub collector: Collector,
    /// The supervised child (None for `watch`).
    pub supervisor: Option<SupervisorHandle>,
    told_exit: bool,
    panic_at_ms: Option<u64>,
}

impl LiveDriver {
    /// A driver over a collector and (for `run`) a supervisor.
    pub fn new(collector: Collector, supervisor: Option<SupervisorHandle>) -> Self {
        LiveDriver {
            collector,
            supervisor,
            told_exit: false,
            panic_at_ms: std::env::var(TEST_PANIC_ENV)
                .ok()
                .and_then(|v| v.parse().ok()),
        }
    }
}

/// Set to a number of milliseconds, makes the live screen panic that long after it starts:
/// the end-to-end test of the panic path (terminal restored, child killed, recording kept).
pub const TEST_PANIC_ENV: &str = "PROVETOP_TEST_PANIC_MS";

impl Driver for LiveDriver {
    fn poll(&mut self, app: &mut App) -> bool {
        if let Some(ms) = self.panic_at_ms {
            if app.clock.saturating_sub(app.origin) / 1_000_000 >= ms {
                panic!("{TEST_PANIC_ENV}={ms}: panicking on purpose");
            }
        }
        app.clock = mono_ns();
        let n = self.collector.pump(&mut app.model);
        app.recording_failing = self.collector.recording_failing();
        let gone = match (&self.supervisor, &app.model.child) {
            (Some(_), crate::model::ChildStatus::Exited { reason, .. }) => Some(reason.clone()),
            (None, crate::model::ChildStatus::Exited { reason, .. }) => Some(reason.clone()),
            _ => None,
        };
        if let Some(reason) = gone {
            if !self.told_exit {
                self.told_exit = true;
                let who = if self.supervisor.is_some() {
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
                if app.model.prover.state == Some(provetop_shared::protocol::ProverState::Paused) {
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
        let Some(sup) = &self.supervisor else { return };
        let text = control_text(&control);
        if !app.model.has_events() {
            app.flash(
                format!("{text}: the child does not speak the provetop protocol"),
                true,
            );
            return;
        }
        if sup.send(control) {
            app.flash(format!("sent: {text}"), false);
        } else {
            app.flash(format!("{text}: the prover is not running"), true);
        }
    }
}

fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}

/// Resolves on SIGINT, SIGTERM or SIGHUP, with the signal's number.
pub async fn stop_signal() -> i32 {
    use tokio::signal::unix::{signal, SignalKind};
    let mut int = signal(SignalKind::interrupt()).ok();
    let mut term = signal(SignalKind::terminate()).ok();
    let mut hup = signal(SignalKind::hangup()).ok();
    async fn recv(s: &mut Option<tokio::signal::unix::Signal>) {
        match s {
            Some(s) => {
                s.recv().await;
            }
            None => std::future::pending::<()>().await,
        }
    }
    tokio::select! {
        _ = recv(&mut int) => libc_sig::SIGINT,
        _ = recv(&mut term) => libc_sig::SIGTERM,
        _ = recv(&mut hup) => libc_sig::SIGHUP,
    }
}

mod libc_sig {
    pub const SIGINT: i32 = nix::sys::signal::Signal::SIGINT as i32;
    pub const SIGTERM: i32 = nix::sys::signal::Signal::SIGTERM as i32;
    pub const SIGHUP: i32 = nix::sys::signal::Signal::SIGHUP as i32;
}

/// Exit status for a child's end: its code, or 128 + signal.
pub fn exit_status(e: &ExitInfo) -> i32 {
    match (e.code, e.signal) {
        (Some(c), _) => c,
        (None, Some(s)) => 128 + s,
        _ => 1,
    }
}

/// `provetop` / `provetop run`.
pub fn main_run(args: &RunArgs) -> anyhow::Result<i32> {
    let mut s = setup(&args.monitor)?;
    if let Some(w) = &args.watchdog {
        s.rules.push(watchdog_rule(w)?);
    }
    let argv = child_argv(args)?;
    let restart = match args.restart {
        RestartPolicy::Never => Restart::Never,
        RestartPolicy::OnFailure => Restart::OnFailure {
            max: args.max_restarts,
        },
    };
    let grace = crate::settings::grace(args.grace)?;
    let spec = ChildSpec {
        argv: argv.clone(),
        env: Vec::new(),
        log_path: s.record.as_ref().map(|p| {
            let mut l = p.clone().into_os_string();
            l.push(".child.log");
            PathBuf::from(l)
        }),
        restart,
        grace,
    };
    if args.monitor.headless {
        return crate::headless::run(s, spec);
    }
    crate::terminal::install_panic_hook();
    let rt = runtime()?;
    let result = rt.block_on(async {
        let (tx, rx) = mpsc::channel(16_384);
        let sup = supervisor::spawn(spec, tx).await?;
        // Only now: a command that cannot start leaves no empty session behind. The child's
        // first records wait in the channel.
        start_recording(s.record.as_deref(), argv.clone(), s.sampler.hz)?;
        let pid = sup.pid().unwrap_or(0);
        let sampler = sampler::spawn(s.sampler.clone(), pid).context("cannot start the sampler")?;
        let collector = Collector::new(
            Some(sampler),
            Some(rx),
            Some(sup.pid_watch()),
            s.rules.clone(),
            s.hook.clone(),
        );
        let mut driver = LiveDriver::new(collector, Some(sup));
        let mut app = App::new(Screen::Run, s.thresholds, Theme::from_env(), mono_ns());
        app.rule_lines = rule_lines(&s.rules);
        app.recording = s.record.as_ref().map(|p| p.display().to_string());
        let exit = screen_loop(&mut app, &mut driver).await;
        note_stop(&mut driver.collector, &mut app.model, &exit);
        stop_child(&mut driver, &mut app.model, grace).await;
        driver.collector.stop();
        exit.map(|e| e.status())
    });
    crate::terminal::restore();
    report_recording();
    result
}

/// Record why the session is ending (evidence for whoever reads the recording later).
fn note_stop(c: &mut Collector, model: &mut Model, exit: &anyhow::Result<app::Exit>) {
    let why = match exit {
        Ok(app::Exit::Quit) => "quit by the user".to_string(),
        Ok(app::Exit::Signal(sig)) => format!("got {}", signal_name(*sig)),
        Ok(app::Exit::InputClosed) => "terminal input closed".to_string(),
        Err(e) => format!("terminal lost: {e:#}"),
    };
    let text = format!("provetop stopping: {why}");
    c.push(
        model,
        Record::new(mono_ns(), RecordBody::Mark(Mark::Note { text })),
    );
}

/// "SIGHUP" for 1, "signal 99" when unknown.
pub fn signal_name(sig: i32) -> String {
    nix::sys::signal::Signal::try_from(sig)
        .map(|s| s.as_str().to_string())
        .unwrap_or_else(|_| format!("signal {sig}"))
}

/// Stop the child per policy (SIGTERM, SIGKILL after the grace period) and keep draining
/// records until the supervisor has reported its end, so the recording says how it ended.
async fn stop_child(driver: &mut LiveDriver, model: &mut Model, grace: Duration) {
    let collector = &mut driver.collector;
    if let Some(sup) = driver.supervisor.as_mut() {
        let done = async {
            sup.stop().await;
            sup.wait().await
        };
        tokio::pin!(done);
        // stop() is bounded by the grace period plus the kernel; the supervisor then forwards
        // the exit mark within seconds. The cap only guards against a wedged supervisor.
        let cap = tokio::time::sleep(grace + Duration::from_secs(30));
        tokio::pin!(cap);
        loop {
            tokio::select! {
                _ = &mut done => break,
                _ = &mut cap => break,
                _ = tokio::time::sleep(Duration::from_millis(50)) => {
                    collector.pump(model);
                }
            }
        }
    }
    collector.pump(model);
}

async fn screen_loop(app: &mut App, driver: &mut LiveDriver) -> anyhow::Result<app::Exit> {
    let mut tui = crate::terminal::Tui::enter()?;
    let input = crossterm::event::EventStream::new();
    let exit = app::run(&mut tui.terminal, app, driver, input, stop_signal()).await;
    if exit.is_ok() {
        // Show that we are stopping the child (it may take the grace period).
        app.flash("stopping…", false);
        let _ = tui.terminal.draw(|f| crate::ui::draw(f, app));
    }
    exit
}

fn report_recording() {
    if let Some(p) = finish_recording() {
        crate::say!("provetop: session recorded to {}", p.display());
    }
}

/// `provetop watch --pid PID`.
pub fn main_watch(args: &WatchArgs) -> anyhow::Result<i32> {
    check_watch_pid(args.pid())?;
    let s = setup(&args.monitor)?;
    let command = vec!["watch".to_string(), args.pid().to_string()];
    if args.monitor.headless {
        return crate::headless::watch(s, args.pid(), command);
    }
    crate::terminal::install_panic_hook();
    let rt = runtime()?;
    let result = rt.block_on(async {
        start_recording(s.record.as_deref(), command, s.sampler.hz)?;
        let sampler =
            sampler::spawn(s.sampler.clone(), args.pid()).context("cannot start the sampler")?;
        let mut collector =
            Collector::new(Some(sampler), None, None, s.rules.clone(), s.hook.clone());
        collector.watch_pid(args.pid());
        let mut driver = LiveDriver::new(collector, None);
        let mut app = App::new(
            Screen::Watch { pid: args.pid() },
            s.thresholds,
            Theme::from_env(),
            mono_ns(),
        );
        app.rule_lines = rule_lines(&s.rules);
        app.recording = s.record.as_ref().map(|p| p.display().to_string());
        let note = Record::new(
            mono_ns(),
            RecordBody::Mark(Mark::Note {
                text: format!("watching pid {} ({})", args.pid(), cmdline(args.pid())),
            }),
        );
        driver.collector.push(&mut app.model, note);
        let exit = screen_loop(&mut app, &mut driver).await;
        note_stop(&mut driver.collector, &mut app.model, &exit);
        driver.collector.pump(&mut app.model);
        driver.collector.stop();
        exit.map(|e| e.status())
    });
    crate::terminal::restore();
    report_recording();
    result
}

/// The command line of a process, for notes ("?" when unreadable).
pub fn cmdline(pid: u32) -> String {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .ok()
        .map(|b| {
            b.split(|c| *c == 0)
                .filter(|s| !s.is_empty())
                .map(|s| String::from_utf8_lossy(s).into_owned())
                .collect::<Vec<_>>()
                .join(" ")
        })
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "?".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn watch_pid_errors() {
        assert!(check_watch_pid(std::process::id()).is_ok());
        let e = check_watch_pid(0).unwrap_err().to_string();
        assert!(e.contains("not a process id"), "{e}");
        let e = check_watch_pid(i32::MAX as u32 - 1)
            .unwrap_err()
            .to_string();
        assert!(e.contains("no process with pid"), "{e}");
        if nix::unistd::geteuid().as_raw() != 0 {
            let e = check_watch_pid(1).unwrap_err().to_string();
            assert!(e.contains("another user"), "{e}");
        }
    }

    #[test]
    fn own_command_refuses_prover_flags() {
        use clap::Parser;
        let cli = crate::cli::Cli::try_parse_from([
            "provetop",
            "run",
            "--partitions",
            "2",
            "--",
            "sleep",
            "1",
        ])
        .unwrap();
        let Some(crate::cli::Command::Run(a)) = cli.command else {
            panic!()
        };
        assert!(child_argv(&a).is_err());
        let cli = crate::cli::Cli::try_parse_from(["provetop", "run", "--", "sleep", "1"]).unwrap();
        let Some(crate::cli::Command::Run(a)) = cli.command else {
            panic!()
        };
        assert_eq!(child_argv(&a).unwrap(), vec!["sleep", "1"]);
    }
}
