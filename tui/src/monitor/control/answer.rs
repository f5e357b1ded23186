//! The session's answers to what its clients asked, made on the session's own task each
//! tick: status and alerts from the model, controls forwarded to the prover through the
//! supervisor, marks recorded as notes, restart and stop as the session allows them.

use serde_json::json;

use super::{ControlServer, Request, Status};
use crate::model::Model;
use crate::monitor::Monitor;

/// Answer what the clients asked, on the session's behalf: status and alerts from the model,
/// controls forwarded to the prover through the supervisor, marks recorded. Returns why to
/// stop when a client asked for it.
pub fn answer(server: &mut ControlServer, mon: &mut Monitor, model: &mut Model) -> Option<String> {
    let (incoming, notes) = server.take();
    for n in notes {
        mon.pipeline.note(model, n);
    }
    let mut stop = None;
    for i in incoming {
        match &i.request {
            Request::Status => {
                let s = status(server, mon, model);
                i.ok(json!({ "status": s }));
            }
            Request::Alerts => {
                let firing: Vec<_> = model.alerts.active.iter().map(|a| &a.alert).collect();
                let recent: Vec<_> = model.alerts.history.iter().rev().take(20).collect();
                i.ok(json!({ "firing": firing, "recent": recent }));
            }
            Request::Control { control } => match &mon.supervisor {
                None => i.err("no supervised prover: controls go nowhere"),
                Some(_) if !model.has_events() => {
                    i.err("the child does not speak the provetop protocol")
                }
                Some(sup) => match sup.try_send(control.clone()) {
                    Ok(()) => i.ok(json!({ "sent": crate::text::control_text(control) })),
                    Err(e) => i.err(format!("not sent: {e}")),
                },
            },
            Request::Mark { text } => {
                let text = crate::text::inert(text).into_owned();
                mon.pipeline.note(model, format!("mark: {text}"));
                i.ok(json!({}));
            }
            Request::Restart => match mon.supervisor.as_ref().and_then(|s| s.pid()) {
                None => i.err("no prover is running"),
                Some(_) if !server.restartable => {
                    i.err("restart needs --restart on-failure (without it the session would end)")
                }
                Some(pid) => {
                    mon.pipeline
                        .note(model, format!("restart asked (client {})", i.client));
                    // The child leads its own process group; its restart policy starts it
                    // again once it has ended. SIGKILL, not SIGTERM: a prover that exits 0
                    // on SIGTERM (the bundled one does) would count as done, not failed,
                    // and the session would end instead.
                    let _ = nix::sys::signal::kill(
                        nix::unistd::Pid::from_raw(-(pid as i32)),
                        nix::sys::signal::Signal::SIGKILL,
                    );
                    i.ok(json!({}));
                }
            },
            Request::Stop => {
                stop = Some(format!("stop asked (control client {})", i.client));
                i.ok(json!({}));
            }
            // Answered by the connection itself.
            Request::Hello { .. } => i.ok(json!({})),
        }
    }
    stop
}

fn status(server: &ControlServer, mon: &Monitor, model: &Model) -> Status {
    let (uptime_s, started_unix_s) = server.started();
    let p = &model.prover;
    Status {
        id: server.id().to_string(),
        pid: std::process::id(),
        child_pid: mon.supervisor.as_ref().and_then(|s| s.pid()),
        command: server.command.clone(),
        prover: p
            .hello
            .as_ref()
            .map(|h| format!("provetop-prover {}", h.prover_version)),
        started_unix_s,
        uptime_s,
        proofs_done: p.proofs_done,
        proofs_failed: p.proofs_failed,
        mode: p.mode.map(|m| m.to_string()),
        state: p
            .state
            .map(|s| crate::model::prover::state_name(s).to_string()),
        alerts: model.alerts.active.len(),
        session: server.session.clone(),
        clients: server.clients(),
        thresholds_gib: server.thresholds.map(|t| [t.idle, t.gpu, t.synth, t.peak]),
        rule_lines: server.rule_lines.clone(),
    }
}
