//! `provetop run --headless` (and `watch --headless`): no terminal. Records, evaluates alerts
//! (printed to stderr), and exits with the child's status (128 + signal for a signal).

use crate::model::Model;
use crate::monitor::signals::{exit_status, signal_name, stop_signal};
use crate::monitor::{self, Monitor, Target};
use crate::settings::Setup;

/// What the screen's header would show: the counts of what went wrong on the way in.
fn report(m: &Model, recorded: Option<std::path::PathBuf>) {
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
    if let Some(p) = recorded {
        crate::say!(
            "provetop: session recorded to {} ({} records)",
            p.display(),
            m.records()
        );
    }
}

/// Monitor `target` without a screen until it ends (or, supervised, until a signal has
/// stopped it).
pub fn main(s: Setup, target: Target) -> anyhow::Result<i32> {
    let rt = monitor::runtime()?;
    let watched = match &target {
        Target::Pid(pid) => Some(*pid),
        Target::Command(_) => None,
    };
    let mut m = Model::new(s.thresholds);
    let (code, recorded) = rt.block_on(async {
        let mut mon = Monitor::start(&s, target, &mut m).await?;
        mon.pipeline.to_stderr = true;
        let mut tick = tokio::time::interval(monitor::TICK);
        let stop = stop_signal();
        tokio::pin!(stop);
        let mut stopping = false;
        let ended = loop {
            tokio::select! {
                _ = tick.tick() => { mon.pump(&mut m); }
                e = mon.ended(&mut m) => break e,
                sig = &mut stop, if !stopping => {
                    let why = format!("got {}", signal_name(sig));
                    match watched {
                        Some(_) => return anyhow::Ok((0, mon.stop(&mut m, &why).await)),
                        None => {
                            // The child stops and ends: `ended` resolves with how.
                            stopping = true;
                            crate::say!("provetop: {why}: stopping the child");
                            mon.pipeline.note(&mut m, format!("provetop stopping: {why}"));
                            if let Some(sup) = &mon.supervisor {
                                sup.stop().await;
                            }
                        }
                    }
                }
            }
        };
        let code = match (&ended, watched) {
            (Some(exit), _) => {
                crate::say!("provetop: child {}", exit.reason);
                exit_status(exit)
            }
            (None, Some(pid)) => {
                crate::say!("provetop: pid {pid} exited");
                0
            }
            (None, None) => 0,
        };
        anyhow::Ok((code, mon.finish(&mut m).await))
    })?;
    report(&m, recorded);
    Ok(code)
}
