//! `provetop run --headless` (and `watch --headless`): no terminal. Records, evaluates alerts
//! (printed to stderr), and exits with the child's status (128 + signal for a signal).

use std::time::Duration;

use anyhow::Context;
use provetop_collect::sampler;
use provetop_collect::supervisor::{self, ChildSpec};
use provetop_shared::classify::Thresholds;
use provetop_shared::clock::mono_ns;
use provetop_shared::{Mark, Record, RecordBody};
use tokio::sync::mpsc;

use crate::live::{
    exit_status, finish_recording, signal_name, start_recording, stop_signal, Collector,
};
use crate::model::Model;
use crate::settings::Setup;

/// How often records are drained.
const TICK: Duration = Duration::from_millis(50);

fn model(t: Thresholds) -> Model {
    Model::new(t)
}

fn report(m: &Model) {
    // What the screen's header would show: the counts of what went wrong on the way in.
    let mut lost = Vec::new();
    if m.bad_lines > 0 {
        lost.push(format!("{} bad event lines", m.bad_lines));
    }
    if m.dropped_events > 0 {
        lost.push(format!("{} events dropped", m.dropped_events));
    }
    if m.dropped_samples > 0 {
        lost.push(format!("{} samples dropped", m.dropped_samples));
    }
    if !lost.is_empty() {
        crate::say!("provetop: {}", lost.join(", "));
    }
    if let Some(p) = finish_recording() {
        crate::say!(
            "provetop: session recorded to {} ({} records)",
            p.display(),
            m.records()
        );
    }
}

/// Supervise `spec` without a screen.
pub fn run(s: Setup, spec: ChildSpec) -> anyhow::Result<i32> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let argv = spec.argv.clone();
    let mut m = model(s.thresholds);
    let code = rt.block_on(async {
        let (tx, rx) = mpsc::channel(16_384);
        let mut sup = supervisor::spawn(spec, tx).await?;
        start_recording(s.record.as_deref(), argv.clone(), s.sampler.hz)?;
        let pid = sup.pid().unwrap_or(0);
        let sampler = sampler::spawn(s.sampler.clone(), pid).context("cannot start the sampler")?;
        let mut c = Collector::new(
            Some(sampler),
            Some(rx),
            Some(sup.pid_watch()),
            s.rules,
            s.hook,
        );
        c.alerts_to_stderr = true;
        let mut tick = tokio::time::interval(TICK);
        let stop = stop_signal();
        tokio::pin!(stop);
        let mut stopping = false;
        let exit = loop {
            tokio::select! {
                _ = tick.tick() => { c.pump(&mut m); }
                e = sup.wait() => break e,
                sig = &mut stop, if !stopping => {
                    stopping = true;
                    let why = format!("got {}", signal_name(sig));
                    crate::say!("provetop: {why}: stopping the child");
                    let text = format!("provetop stopping: {why}");
                    c.push(&mut m, Record::new(mono_ns(), RecordBody::Mark(Mark::Note { text })));
                    sup.stop().await;
                }
            }
        };
        // Let the supervisor's last records (exit mark, final events) arrive.
        tokio::time::sleep(Duration::from_millis(100)).await;
        c.pump(&mut m);
        c.stop();
        crate::say!("provetop: child {}", exit.reason);
        anyhow::Ok(exit_status(&exit))
    });
    report(&m);
    code
}

/// Watch `pid` without a screen until it exits or a signal arrives.
pub fn watch(s: Setup, pid: u32, command: Vec<String>) -> anyhow::Result<i32> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let mut m = model(s.thresholds);
    let code = rt.block_on(async {
        start_recording(s.record.as_deref(), command, s.sampler.hz)?;
        let sampler = sampler::spawn(s.sampler.clone(), pid).context("cannot start the sampler")?;
        let mut c = Collector::new(Some(sampler), None, None, s.rules, s.hook);
        c.alerts_to_stderr = true;
        c.watch_pid(pid);
        let mut tick = tokio::time::interval(TICK);
        let stop = stop_signal();
        tokio::pin!(stop);
        loop {
            tokio::select! {
                _ = tick.tick() => {
                    c.pump(&mut m);
                    if c.watched_gone() {
                        crate::say!("provetop: pid {pid} exited");
                        break;
                    }
                }
                sig = &mut stop => {
                    let text = format!("provetop stopping: got {}", signal_name(sig));
                    c.push(&mut m, Record::new(mono_ns(), RecordBody::Mark(Mark::Note { text })));
                    break;
                }
            }
        }
        c.stop();
        anyhow::Ok(0)
    });
    report(&m);
    code
}
