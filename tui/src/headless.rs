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

/// Monitor `target` without a screen until it ends, or until a signal stops it (a
/// supervised child is stopped first).
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
        let (ended, by_itself, recorded) = loop {
            tokio::select! {
                _ = tick.tick() => { mon.pump(&mut m); }
                e = mon.ended(&mut m) => break (e, true, mon.finish(&mut m).await),
                sig = &mut stop => {
                    let why = format!("got {}", signal_name(sig));
                    if watched.is_none() {
                        crate::say!("provetop: {why}: stopping the child");
                    }
                    let (e, r) = mon.stop(&mut m, &why).await;
                    break (e, false, r);
                }
            }
        };
        let code = match (&ended, watched) {
            (Some(exit), _) => {
                crate::say!("provetop: child {}", exit.reason);
                exit_status(exit)
            }
            (None, Some(pid)) if by_itself => {
                crate::say!("provetop: pid {pid} exited");
                0
            }
            _ => 0,
        };
        anyhow::Ok((code, recorded))
    })?;
    report(&m, recorded);
    Ok(code)
}
