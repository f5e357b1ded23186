//! The record pipeline: gathers live records from the sampler (its ring drained at every
//! pump), the supervisor (a channel) and the monitor's own notes, and sends each to the alert engine,
//! the model and the recorder, in that order; alerts the engine raises go the same way,
//! right behind the record that raised them.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::monitor::recorder::Recorder;
use provetop_collect::channel::RecordRx;
use provetop_collect::hook::{HookLimits, HookRunner};
use provetop_collect::sampler::SamplerHandle;
use provetop_shared::alerts::{AlertEngine, Rule};
use provetop_shared::clock::mono_ns;
use provetop_shared::session::SessionHeader;
use provetop_shared::{Mark, Record, RecordBody};
use tokio::sync::mpsc::error::TryRecvError;
use tokio::sync::watch;

use crate::model::Model;
use crate::text::alert_line;

/// Longest a routine record (an event, an output line) waits in the channel while the
/// sampler wakes nothing (its process gone, between two runs): twice the sampler's pace.
pub const RECORDS_WITHIN: Duration = Duration::from_millis(500);
/// How often a watched target is looked at when nothing else wakes the pump (once the
/// sampler, whose wake-ups look at it too, has been silent four times this long).
pub const WATCHED_CHECK: Duration = Duration::from_millis(250);
/// How long a watched cgroup stays removed before the watch ends on it.
pub const CGROUP_GONE_GRACE: Duration = Duration::from_millis(200);
/// Least time between two warnings that say how many hook runs were suppressed.
pub const SUPPRESSED_WARNING_EVERY: Duration = Duration::from_secs(10);
/// How long hooks still running at the end are waited for before their groups are killed.
pub const HOOK_EXIT_WAIT: Duration = Duration::from_secs(3);

/// The recording, shared with the panic hook's cleanup so a crash still flushes it.
pub type SharedRecorder = Arc<Mutex<Option<Recorder>>>;

/// Where the records come from and go to.
pub struct Pipeline {
    sampler: Option<SamplerHandle>,
    rx: Option<RecordRx>,
    pid_watch: Option<watch::Receiver<Option<u32>>>,
    engine: AlertEngine,
    hooks: Option<HookRunner>,
    /// Suppressed hook runs not said yet, and when they were last said.
    suppressed: u64,
    suppressed_said: Option<Instant>,
    recorder: SharedRecorder,
    buf: Vec<Record>,
    /// The channel is closed (its sender is gone) and drained: no more waiting on it.
    rx_closed: bool,
    /// When the sampler last woke [`Self::wait`].
    sampler_woke: Instant,
    /// When a watched target is looked at next if nothing wakes the pump before: one timer
    /// kept between waits and moved only when it passes (a timer made at each wait and
    /// dropped when something else woke it has the runtime's timer thread woken twice).
    watch_timer: Option<std::pin::Pin<Box<tokio::time::Sleep>>>,
    reported_drops: u64,
    watched: Option<Watching>,
    /// What ended the watched target ("pid 12 OOM-killed (…)", "cgroup /x was removed"),
    /// once it has.
    watched_gone: Option<String>,
    hook_failed: bool,
    /// The sampler thread ended without a stop: why (fatal: the session must stop).
    sampler_died: Option<String>,
    /// Print alerts, warnings and restarts to stderr (headless).
    pub to_stderr: bool,
    /// The child's last exit, for the restart that follows it on stderr.
    last_exit: Option<Mark>,
    /// The metrics endpoint, fed every record stored and its effects (`--metrics`).
    pub metrics: Option<super::metrics::Endpoint>,
}

impl Pipeline {
    /// A pipeline with no sources yet, recording to `record` when given.
    pub fn new(
        rules: Vec<Rule>,
        hook: Option<Vec<String>>,
        record: Option<(&Path, SessionHeader)>,
    ) -> anyhow::Result<Self> {
        let recorder = match record {
            Some((path, header)) => Some(Recorder::create(path, &header)?),
            None => None,
        };
        Ok(Pipeline {
            sampler: None,
            rx: None,
            pid_watch: None,
            engine: AlertEngine::new(rules),
            hooks: hook.map(|argv| HookRunner::new(argv, HookLimits::default())),
            suppressed: 0,
            suppressed_said: None,
            recorder: Arc::new(Mutex::new(recorder)),
            buf: Vec::with_capacity(256),
            rx_closed: false,
            sampler_woke: Instant::now(),
            watch_timer: None,
            reported_drops: 0,
            watched: None,
            watched_gone: None,
            hook_failed: false,
            sampler_died: None,
            to_stderr: false,
            last_exit: None,
            metrics: None,
        })
    }

    /// Take records from the supervisor, and follow its child's pid for the sampler.
    pub fn supervised(&mut self, rx: RecordRx, pid: watch::Receiver<Option<u32>>) {
        self.rx = Some(rx);
        self.pid_watch = Some(pid);
    }

    /// Records from a followed log (`watch --log`): the records channel of a watch.
    pub fn followed(&mut self, rx: RecordRx) {
        self.rx = Some(rx);
    }

    /// Take samples from the sampler.
    pub fn sampled(&mut self, s: SamplerHandle) {
        self.sampler = Some(s);
    }

    /// Feed `endpoint` from now on (none: no metrics), and note where it serves.
    pub fn serve_metrics(&mut self, endpoint: Option<super::metrics::Endpoint>, model: &mut Model) {
        let Some(e) = endpoint else { return };
        let text = format!("metrics served on http://{}/metrics", e.addr());
        self.metrics = Some(e);
        self.note(model, text);
    }

    /// Also notice when a watched (not supervised) process goes away, and whether the
    /// kernel killed it for memory.
    pub fn watch_pid(&mut self, pid: u32) {
        let started_us = super::watched_exit::started_us(pid);
        self.watched = Some(Watching::Pid { pid, started_us });
        self.watching_metrics();
    }

    /// Also notice when a watched cgroup is removed (its members come and go meanwhile):
    /// the end of the session, unless it is `unit`'s, which systemd removes at each stop and
    /// restart (then its removal and its return are said, and the session goes on).
    pub fn watch_cgroup(&mut self, cgroup: &super::service::Cgroup, unit: Option<&str>) {
        self.watched = Some(Watching::Cgroup {
            members: provetop_collect::sampler::members::CgroupMembers::new(&cgroup.dir),
            name: cgroup.name.clone(),
            unit: unit.map(str::to_string),
            absent: false,
            gone_at: None,
        });
        self.watching_metrics();
    }

    fn watching_metrics(&self) {
        if let Some(e) = &self.metrics {
            // No ChildStarted mark comes for a process provetop did not start.
            e.metrics().watching();
        }
    }

    /// Rotate the recording (before any record is written): see [`Recorder::rotate`].
    pub fn rotate(
        &self,
        rotation: super::rotation::Rotation,
        header: SessionHeader,
    ) -> anyhow::Result<()> {
        self.with_recorder(|r| match r {
            Some(r) => r.rotate(rotation, header),
            None => Ok(()),
        })
    }

    /// The recording, for the panic hook's cleanup.
    pub fn recorder(&self) -> SharedRecorder {
        self.recorder.clone()
    }

    fn with_recorder<T>(&self, f: impl FnOnce(&mut Option<Recorder>) -> T) -> T {
        let mut g = self.recorder.lock().unwrap_or_else(|e| e.into_inner());
        f(&mut g)
    }

    /// Handle one record: alerts first (their records follow it), then model and recorder.
    pub fn push(&mut self, model: &mut Model, rec: Record) {
        if self.to_stderr {
            match &rec.body {
                RecordBody::Mark(Mark::Warning { text }) => {
                    crate::say!("provetop: warning: {}", crate::text::inert(text));
                }
                // What the kernel did to the tree's memory is said as it happens.
                RecordBody::Mark(Mark::OomKill { text, .. }) => {
                    crate::say!("provetop: {}", crate::text::inert(text));
                }
                RecordBody::Mark(m @ Mark::Stall { .. }) => {
                    crate::say!("provetop: {}", crate::text::mark_line(m));
                }
                RecordBody::Mark(m @ Mark::ChildExited { .. }) => self.last_exit = Some(m.clone()),
                RecordBody::Mark(m @ Mark::Restart { .. }) => {
                    if let Some(line) = crate::text::restart_line(self.last_exit.as_ref(), m) {
                        crate::say!("provetop: {line}");
                    }
                }
                _ => {}
            }
        }
        let raised = self.engine.observe(&rec);
        self.store(model, &rec);
        for a in raised {
            let r = Record::new(rec.t, RecordBody::Alert(a.clone()));
            if self.to_stderr {
                crate::say!("provetop: {}", alert_line(&a));
            }
            self.store(model, &r);
            if let Some(h) = &self.hooks {
                h.deliver(&a, rec.t);
            }
        }
    }

    /// Say what the hook runner has to say: start failures (once: a broken hook must not
    /// flood the log) and, at most every [`SUPPRESSED_WARNING_EVERY`] (or at the end, when
    /// `now_anyway`), how many hook runs the rate limit suppressed.
    fn hook_news(&mut self, model: &mut Model, now_anyway: bool) {
        let Some(h) = &self.hooks else { return };
        let errors = h.take_errors();
        self.suppressed += h.take_suppressed();
        let mut texts = Vec::new();
        if let Some(e) = errors.into_iter().next() {
            if !self.hook_failed {
                self.hook_failed = true;
                texts.push(e);
            }
        }
        let due = self
            .suppressed_said
            .is_none_or(|t| t.elapsed() >= SUPPRESSED_WARNING_EVERY);
        if self.suppressed > 0 && (due || now_anyway) {
            texts.push(format!(
                "alert hook: {} alert changes not delivered (at most one run per rule at a \
                 time and per {} s; the latest state is delivered)",
                self.suppressed,
                HookLimits::default().min_interval.as_secs()
            ));
            self.suppressed = 0;
            self.suppressed_said = Some(Instant::now());
        }
        for text in texts {
            if self.to_stderr {
                crate::say!("provetop: warning: {text}");
            }
            let w = Record::new(mono_ns(), RecordBody::Mark(Mark::Warning { text }));
            self.store(model, &w);
        }
    }

    /// Let hooks still running finish (up to [`HOOK_EXIT_WAIT`]), kill those that do not,
    /// and say what was suppressed. Before [`Self::finish`].
    pub fn stop_hooks(&mut self, model: &mut Model) {
        if let Some(h) = &self.hooks {
            let killed = h.shutdown(HOOK_EXIT_WAIT);
            if killed > 0 {
                let text = format!(
                    "alert hook: {killed} still running after {} s at exit, killed",
                    HOOK_EXIT_WAIT.as_secs()
                );
                if self.to_stderr {
                    crate::say!("provetop: warning: {text}");
                }
                let w = Record::new(mono_ns(), RecordBody::Mark(Mark::Warning { text }));
                self.store(model, &w);
            }
        }
        self.hook_news(model, true);
    }

    /// A note of the monitor's own (why the session stops, what is watched), now.
    pub fn note(&mut self, model: &mut Model, text: String) {
        self.push(
            model,
            Record::new(mono_ns(), RecordBody::Mark(Mark::Note { text })),
        );
    }

    fn store(&mut self, model: &mut Model, rec: &Record) {
        let fx = model.apply(rec);
        if let Some(e) = &self.metrics {
            e.metrics().observe(rec, &fx, model);
        }
        if let Some(m) = self.with_recorder(|r| r.as_mut().and_then(|r| r.record(rec))) {
            self.recorder_warning(model, m);
        }
    }

    /// A warning from the recorder (writing fails, or works again): shown and recorded.
    fn recorder_warning(&self, model: &mut Model, m: Mark) {
        if let (true, Mark::Warning { text }) = (self.to_stderr, &m) {
            crate::say!("provetop: warning: {text}");
        }
        let w = Record::new(mono_ns(), RecordBody::Mark(m));
        let fx = model.apply(&w);
        self.with_recorder(|r| r.as_mut().and_then(|r| r.record(&w)));
        if let Some(e) = &self.metrics {
            e.metrics().observe(&w, &fx, model);
            e.metrics().recorder_warning(self.recording_failing());
        }
    }

    /// Whether writing the recording fails now (disk full, …).
    pub fn recording_failing(&self) -> bool {
        self.with_recorder(|r| r.as_ref().is_some_and(|r| r.is_failing()))
    }

    /// Resolves when there is something to pump: the sampler's wake-up (at most once per
    /// [`Self::pump_every`]) or its end, the records channel's nudge (a lifecycle mark, a
    /// backlog, its end: see [`provetop_collect::channel`]), or, while a target is watched,
    /// every [`WATCHED_CHECK`] (its end is looked for then). Events wait for the next of these,
    /// and for [`RECORDS_WITHIN`] at most while the sampler is quiet. A front end without a
    /// screen sleeps here instead of polling: nothing wakes it between samples, not even the
    /// prover's events, and a flood of events is pumped in batches as fast as it arrives.
    pub async fn wait(&mut self) {
        let sampler = async {
            match &self.sampler {
                Some(s) => s.woken().await,
                None => std::future::pending().await,
            }
        };
        // While the sampler wakes this often, its wake-ups bound an event's wait.
        let quiet = self.sampler_woke.elapsed() >= RECORDS_WITHIN;
        let records = async {
            match (&self.rx, self.rx_closed) {
                (Some(rx), false) => rx.ready(quiet.then_some(RECORDS_WITHIN)).await,
                _ => std::future::pending().await,
            }
        };
        // A watched target can end while nothing else comes (a cgroup removed has no
        // samples): look at it every so often.
        if self.watched.is_some() && self.watch_timer.is_none() {
            self.watch_timer = Some(Box::pin(tokio::time::sleep(WATCHED_CHECK)));
        }
        let watching = async {
            match self.watch_timer.as_mut() {
                Some(t) => t.as_mut().await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = sampler => self.sampler_woke = Instant::now(),
            _ = records => {}
            _ = watching => {
                // While the sampler wakes the pump, its wake-ups look at the target: the
                // timer only has to cover its silence, so it waits on past its last one.
                let now = Instant::now();
                let next = (self.sampler_woke + 4 * WATCHED_CHECK).max(now + WATCHED_CHECK);
                if let Some(t) = self.watch_timer.as_mut() {
                    t.as_mut().reset(next.into());
                }
            }
        }
    }

    /// Let the sampler wake [`Self::wait`] at most once per `every`: its samples, and the
    /// events that came meanwhile, are pumped in batches.
    pub fn pump_every(&self, every: Duration) {
        if let Some(s) = &self.sampler {
            s.wake_every(every);
        }
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
        let died = self.sampler.as_mut().and_then(|s| s.died());
        if let Some(why) = died {
            self.sampler_ended(model, why);
        }
        if let Some(rx) = &mut self.rx {
            loop {
                match rx.try_recv() {
                    Ok(r) => buf.push(r),
                    Err(TryRecvError::Empty) => break,
                    Err(TryRecvError::Disconnected) => {
                        self.rx_closed = true;
                        break;
                    }
                }
            }
        }
        if let (Some(w), Some(s)) = (&mut self.pid_watch, &self.sampler) {
            if w.has_changed().unwrap_or(false) {
                if let Some(pid) = *w.borrow_and_update() {
                    s.set_root(pid);
                }
            }
        }
        if let Some(r) = self.watched_end() {
            buf.push(r);
        }
        // Sampler and supervisor interleave: keep the merged batch in time order.
        buf.sort_by_key(|r| r.t);
        let n = buf.len();
        for r in buf.drain(..) {
            self.push(model, r);
        }
        self.buf = buf;
        self.hook_news(model, false);
        if let Some(m) = self.with_recorder(|r| r.as_mut().and_then(|r| r.tick())) {
            self.recorder_warning(model, m);
        }
        n
    }

    /// The sampler thread died (a [`Mark::Warning`] names it, on stderr too when
    /// headless): no more samples come, so the session is stopped by its owner.
    fn sampler_ended(&mut self, model: &mut Model, why: String) {
        let text = format!("{why}: no more samples, the session is stopped");
        self.push(
            model,
            Record::new(mono_ns(), RecordBody::Mark(Mark::Warning { text })),
        );
        self.sampler_died = Some(why);
    }

    /// Why the sampler thread died, once it has (fatal: the session must stop).
    pub fn sampler_died(&self) -> Option<&str> {
        self.sampler_died.as_deref()
    }

    /// Whether the watched process (or cgroup) is gone.
    pub fn watched_gone(&self) -> bool {
        self.watched_gone.is_some()
    }

    /// What ended the watched target, once it has ended.
    pub fn watched_end_text(&self) -> Option<&str> {
        self.watched_gone.as_deref()
    }

    /// The record that says the watched target ended, the first time it is seen gone: a
    /// process's exit (an OOM kill where the kernel log names it), a cgroup's removal (its
    /// members' exits end nothing); a unit's cgroup removed, or back, is a note each time.
    fn watched_end(&mut self) -> Option<Record> {
        if self.watched_gone.is_some() {
            return None;
        }
        if let Some(Watching::Cgroup {
            members,
            name,
            unit: Some(unit),
            absent,
            ..
        }) = self.watched.as_mut()
        {
            if members.exists() != *absent {
                return None;
            }
            *absent = !*absent;
            let text = if *absent {
                format!("cgroup {name} was removed ({unit} stopped, or restarts): waiting for it")
            } else {
                format!("cgroup {name} is back ({unit} started): watching its processes")
            };
            return Some(Record::new(
                mono_ns(),
                RecordBody::Mark(Mark::Note { text }),
            ));
        }
        let (text, mark) = match self.watched.as_mut()? {
            Watching::Pid { pid, started_us } => {
                if !super::watched_exit::ended(*pid, *started_us) {
                    return None;
                }
                let mark = super::watched_exit::exit_mark(*pid, *started_us);
                let Mark::ChildExited { reason, .. } = &mark else {
                    return None;
                };
                (format!("pid {pid} {reason}"), mark)
            }
            Watching::Cgroup {
                members,
                name,
                gone_at,
                ..
            } => {
                if members.exists() {
                    *gone_at = None;
                    return None;
                }
                // Its last members may have just been OOM-killed (systemd removes a failed
                // service's cgroup at once): the sampler gets a few ticks to mark the kills
                // the kernel log names before the watch ends.
                if gone_at.get_or_insert_with(Instant::now).elapsed() < CGROUP_GONE_GRACE {
                    return None;
                }
                let text = format!("cgroup {name} was removed: nothing more to watch");
                (text.clone(), Mark::Note { text })
            }
        };
        self.watched_gone = Some(text);
        Some(Record::new(mono_ns(), RecordBody::Mark(mark)))
    }

    /// Note what watching cost, before [`Self::finish`]: the sampler's peak resets (what they
    /// cost the target, [`SamplerHandle::reset_report`]), its ticks
    /// ([`SamplerHandle::tick_report`]), its NVML calls ([`SamplerHandle::nvml_report`]) and
    /// provetop's own CPU per thread
    /// ([`OwnCpu`](super::own_cpu::OwnCpu)), a line each.
    pub fn note_costs(&mut self, model: &mut Model) {
        // Recorded, not said: numbers for whoever measures, not news for the operator.
        let mut lines = Vec::new();
        if let Some(s) = &self.sampler {
            lines.extend(s.reset_report().map(|r| r.to_string()));
            lines.extend(s.tick_report().map(|r| r.to_string()));
            lines.extend(s.nvml_report());
        }
        lines.extend(super::own_cpu::OwnCpu::read().map(|c| c.to_string()));
        for l in lines {
            self.note(model, l);
        }
    }

    /// Stop the sampler thread and close the recording; returns its path.
    pub fn finish(&mut self) -> Option<PathBuf> {
        if let Some(s) = self.sampler.take() {
            s.stop();
        }
        let rec = self.with_recorder(|r| r.take())?;
        match rec.finish() {
            Ok(p) => Some(p),
            Err(e) => {
                crate::say!("provetop: finishing the session file: {e:#}");
                None
            }
        }
    }
}

/// What a watch follows to its end.
enum Watching {
    /// A process (and its tree), and when it started (µs since boot), to tell its OOM kill
    /// in the kernel log from an older one of a recycled pid.
    Pid { pid: u32, started_us: Option<u64> },
    /// A cgroup's members, its path from the hierarchy's root, the unit it is of (its
    /// removal then ends nothing), and whether it is removed now.
    Cgroup {
        members: provetop_collect::sampler::members::CgroupMembers,
        name: String,
        unit: Option<String>,
        absent: bool,
        /// When it was first seen removed (a cgroup not of a unit).
        gone_at: Option<Instant>,
    },
}

/// Flush and close a recording from a panic hook (never blocks on the lock).
pub fn finish_on_panic(recorder: &SharedRecorder) {
    if let Ok(mut g) = recorder.try_lock() {
        if let Some(r) = g.take() {
            if let Ok(p) = r.finish() {
                crate::say!("provetop: session recorded to {}", p.display());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dead_sampler_is_recorded_as_a_warning_that_names_it_and_is_kept_for_the_stop() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.ptop");
        let header = SessionHeader::now(vec!["x".into()], 10.0);
        let mut p = Pipeline::new(Vec::new(), None, Some((&path, header))).unwrap();
        let mut m = Model::new(Default::default());
        assert_eq!(p.sampler_died(), None);
        p.sampler_ended(&mut m, "the sampler thread panicked: boom".into());
        assert_eq!(p.sampler_died(), Some("the sampler thread panicked: boom"));
        let recorded = p.finish().unwrap();
        let loaded = provetop_shared::session::load(&recorded).unwrap();
        let warned = loaded.records.iter().any(|r| {
            matches!(&r.body, RecordBody::Mark(Mark::Warning { text })
                if text.contains("the sampler thread panicked: boom")
                    && text.contains("the session is stopped"))
        });
        assert!(warned, "no warning recorded");
    }
}
