//! A monitoring session, the same for the screen and for headless: start a [`Target`]
//! (supervisor → recorder → sampler → pipeline, in that order, so a command that cannot
//! start leaves no empty session file behind), pump its records into a model, stop it.
//!
//! * [`pipeline`]: the records' way from sampler and supervisor to alerts, model, recorder.
//! * [`recorder`]: appends the records to the session file, flushing at least once a second
//!   and surviving a full disk.
//! * [`target`]: the bundled prover, a command, a pid, or a cgroup.
//! * [`service`]: a cgroup or a systemd unit as the target, and the unit's journal.
//! * [`watched_exit`]: how a watched process ended (an OOM kill, from the kernel log).
//! * [`signals`]: what stops provetop, and exit statuses.
//! * [`control`]: the session's control socket (attach, ls, scripts).
//! * [`own_cpu`]: what watching cost provetop, per thread, for the note a session ends with.
//!
//! The front ends are thin: [`crate::live`] (the screen) and [`crate::headless`].

pub mod control;
pub mod logfile;
pub mod metrics;
pub mod own_cpu;
pub mod pipeline;
pub mod recorder;
pub mod rotation;
pub mod service;
pub mod signals;
pub mod target;
pub mod watched_exit;

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use provetop_collect::supervisor::{self, ExitInfo, SupervisorHandle};
use provetop_collect::{channel, sampler};
use provetop_shared::session::SessionHeader;

pub use pipeline::Pipeline;
pub use target::Target;

use crate::cli::LogSource;
use crate::model::Model;
use crate::settings::Setup;

/// What `watch` says of interval peaks without `--reset-peak`.
const WATCHED_PEAK_NOTE: &str = "interval peaks come from the cgroup's memory.peak where the \
    kernel resets it for provetop's file alone (cgroup v2, Linux 6.12 and later); elsewhere \
    they are not measured (VmHWM is not reset in a process provetop did not start; \
    --reset-peak does)";

/// How often a stopping session pumps the records of its ending child.
pub const TICK: Duration = Duration::from_millis(50);

/// Longest time a front end without a screen leaves samples in the sampler's ring before it
/// pumps them (alerts, recorder, metrics, the watched pid's end), and the child's events
/// with them (its lifecycle marks and a backlog are pumped on arrival: `channel`); control
/// requests are answered on arrival. Why no timer: a timer wakes the pipeline whether or not
/// anything waits, and what a flood brings waits in memory for it
/// (docs/measurements.md#what-keeps-it-there).
pub const PUMP_EVERY: Duration = Duration::from_millis(250);

/// Make the recording rotate when the setup says so.
fn rotate(
    pipeline: &Pipeline,
    setup: &Setup,
    record: Option<(&std::path::Path, SessionHeader)>,
) -> anyhow::Result<()> {
    match (setup.rotation, record) {
        (Some(r), Some((_, header))) => pipeline.rotate(r, header),
        _ => Ok(()),
    }
}

/// A running session.
pub struct Monitor {
    pub pipeline: Pipeline,
    /// The supervised child (None when watching a pid).
    pub supervisor: Option<SupervisorHandle>,
    grace: Duration,
    /// This session's claim on sampling its target's tree.
    _claim: sampler::SamplingClaim,
}

impl Monitor {
    /// Start monitoring `target` with `setup`.
    pub async fn start(setup: &Setup, target: Target, model: &mut Model) -> anyhow::Result<Self> {
        let command = target.command();
        let record = setup
            .record
            .as_deref()
            .map(|p| (p, SessionHeader::now(command.clone(), setup.sampler.hz)));
        // Listening comes first: a port that cannot be had starts nothing.
        let endpoint = setup
            .metrics
            .map(|a| {
                let m = metrics::Metrics::new(&setup.rules);
                m.session(&control::session_id(
                    setup
                        .record
                        .as_deref()
                        .unwrap_or(std::path::Path::new("provetop")),
                ));
                metrics::Endpoint::start(a, m)
            })
            .transpose()?;
        match target {
            Target::Command(spec) => {
                let grace = spec.grace;
                let (tx, rx) = channel::channel(supervisor::RECORD_CHANNEL);
                let sup = supervisor::spawn(spec, tx).await?;
                // Only now: a command that cannot start leaves no empty session behind. The
                // child's first records wait in the channel.
                let mut pipeline =
                    Pipeline::new(setup.rules.clone(), setup.hook.clone(), record.clone())?;
                rotate(&pipeline, setup, record)?;
                pipeline.serve_metrics(endpoint, model);
                let pid = sup.pid().unwrap_or(0);
                let s = sampler::spawn(setup.sampler.clone(), pid)
                    .context("cannot start the sampler")?;
                pipeline.supervised(rx, sup.pid_watch());
                pipeline.sampled(s);
                let claim = claim(&mut pipeline, model, pid);
                Ok(Monitor {
                    pipeline,
                    supervisor: Some(sup),
                    grace,
                    _claim: claim,
                })
            }
            Target::Pid { pid, log } => {
                let mut pipeline =
                    Pipeline::new(setup.rules.clone(), setup.hook.clone(), record.clone())?;
                rotate(&pipeline, setup, record)?;
                pipeline.serve_metrics(endpoint, model);
                let s = sampler::spawn(setup.sampler.clone(), pid)
                    .context("cannot start the sampler")?;
                pipeline.sampled(s);
                pipeline.watch_pid(pid);
                if let Some(src) = log {
                    pipeline.followed(logfile::spawn(src, setup.log_rules.clone())?);
                }
                let text = format!("watching pid {pid} ({})", target::cmdline(pid));
                pipeline.note(model, text);
                let claim = claim(&mut pipeline, model, pid);
                Ok(watching(pipeline, model, setup, claim))
            }
            Target::Cgroup { cgroup, unit, log } => {
                let mut pipeline =
                    Pipeline::new(setup.rules.clone(), setup.hook.clone(), record.clone())?;
                rotate(&pipeline, setup, record)?;
                pipeline.serve_metrics(endpoint, model);
                let s = sampler::spawn_cgroup(setup.sampler.clone(), cgroup.dir.clone())
                    .context("cannot start the sampler")?;
                pipeline.sampled(s);
                pipeline.watch_cgroup(&cgroup, unit.as_deref());
                let following = match &log {
                    Some(LogSource::Command(argv)) => format!(", following `{}`", argv.join(" ")),
                    _ => String::new(),
                };
                let has_log = log.is_some();
                if let Some(src) = log {
                    pipeline.followed(logfile::spawn(src, setup.log_rules.clone())?);
                }
                let what = match &unit {
                    Some(u) => format!("unit {u} (cgroup {})", cgroup.dir.display()),
                    None => format!("cgroup {}", cgroup.dir.display()),
                };
                pipeline.note(
                    model,
                    format!("watching every process of {what}{following}"),
                );
                if let (Some(u), false) = (&unit, has_log) {
                    let text = format!(
                        "journald is not running here: the journal of {u} is not followed \
                         (--log FILE reads a log instead)"
                    );
                    warn_at_start(&mut pipeline, model, text);
                }
                // No claim: its lock names one process's tree, and a cgroup's members change.
                let claim = sampler::SamplingClaim::take(0).0;
                Ok(watching(pipeline, model, setup, claim))
            }
        }
    }

    /// What the panic hook must do for this session: kill every supervised child, flush
    /// the recording.
    pub fn panic_cleanup(&self) -> impl Fn() + Send + Sync + 'static {
        let recorder = self.pipeline.recorder();
        move || {
            supervisor::kill_all_children();
            pipeline::finish_on_panic(&recorder);
        }
    }

    /// Drain what arrived into `model`; returns how many records.
    pub fn pump(&mut self, model: &mut Model) -> usize {
        self.pipeline.pump(model)
    }

    /// Resolves when the supervisor gave up (its child ended and no restart follows); never
    /// when watching a pid (a pump notices it gone: [`Pipeline::watched_gone`]). A function
    /// of the supervisor alone, so a loop can wait on it and on [`Pipeline::wait`] at once.
    pub async fn child_ended(supervisor: &mut Option<SupervisorHandle>) -> ExitInfo {
        match supervisor {
            Some(sup) => sup.wait().await,
            None => std::future::pending().await,
        }
    }

    /// Stop the session: record why, stop the child (SIGTERM, SIGKILL after the grace
    /// period) while still draining its records until the supervisor has reported its end,
    /// so the recording says how it ended; then stop the sampler and close the recording.
    /// Returns how the child ended (None when watching a pid, or when the supervisor did
    /// not report within the grace period and half a minute) and the recording's path.
    pub async fn stop(
        mut self,
        model: &mut Model,
        why: &str,
    ) -> (Option<ExitInfo>, Option<PathBuf>) {
        self.pipeline
            .note(model, format!("{}: {why}", crate::model::STOPPING_NOTE));
        let mut exit = None;
        if let Some(sup) = self.supervisor.as_mut() {
            let pipeline = &mut self.pipeline;
            let done = async {
                sup.stop().await;
                sup.wait().await
            };
            tokio::pin!(done);
            // stop() is bounded by the grace period plus the kernel; the supervisor then
            // forwards the exit mark within seconds. The cap only guards against a wedged
            // supervisor.
            let cap = tokio::time::sleep(self.grace + Duration::from_secs(30));
            tokio::pin!(cap);
            loop {
                tokio::select! {
                    e = &mut done => {
                        exit = Some(e);
                        break;
                    }
                    _ = &mut cap => break,
                    _ = tokio::time::sleep(TICK) => {
                        pipeline.pump(model);
                    }
                }
            }
        }
        (exit, self.finish(model).await)
    }

    /// The target has ended by itself: take its last records, stop the sampler, close the
    /// recording. Returns the recording's path.
    pub async fn finish(mut self, model: &mut Model) -> Option<PathBuf> {
        // Let the supervisor's last records (exit mark, final events) arrive.
        tokio::time::sleep(Duration::from_millis(100)).await;
        self.pipeline.pump(model);
        self.pipeline.stop_hooks(model);
        self.pipeline.note_costs(model);
        self.pipeline.finish()
    }
}

/// Claim sampling `pid`'s tree; another provetop already sampling it (or a tree holding
/// it) is said on stderr and recorded as a warning.
/// The monitor of a target provetop did not start (a pid, a cgroup): nothing to supervise,
/// and where no VmHWM reset runs, a note on where interval peaks come from.
fn watching(
    mut pipeline: Pipeline,
    model: &mut Model,
    setup: &Setup,
    claim: sampler::SamplingClaim,
) -> Monitor {
    if !setup.sampler.reset_peak {
        pipeline.note(model, WATCHED_PEAK_NOTE.into());
    }
    Monitor {
        pipeline,
        supervisor: None,
        grace: Duration::ZERO,
        _claim: claim,
    }
}

fn claim(pipeline: &mut Pipeline, model: &mut Model, pid: u32) -> sampler::SamplingClaim {
    let (claim, others) = sampler::SamplingClaim::take(pid);
    for (holder, root) in others {
        let whose = if root == pid {
            format!("pid {pid}")
        } else {
            format!("the tree of pid {root}, which holds pid {pid},")
        };
        let text = format!(
            "{whose} is also sampled by another provetop (pid {holder}): where either resets \
             VmHWM, the other's interval peaks are spoiled"
        );
        warn_at_start(pipeline, model, text);
    }
    claim
}

/// A warning while the session starts: on stderr now (no screen is up yet), and recorded.
fn warn_at_start(pipeline: &mut Pipeline, model: &mut Model, text: String) {
    crate::say!("provetop: warning: {text}");
    let was = std::mem::replace(&mut pipeline.to_stderr, false);
    pipeline.push(
        model,
        provetop_shared::Record::new(
            provetop_shared::clock::mono_ns(),
            provetop_shared::RecordBody::Mark(provetop_shared::Mark::Warning { text }),
        ),
    );
    pipeline.to_stderr = was;
}

/// The async runtime every front end runs on.
pub fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}
