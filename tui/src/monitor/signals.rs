//! The signals that stop provetop, and how a child's end becomes provetop's exit status.

use provetop_collect::supervisor::ExitInfo;

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
        _ = recv(&mut int) => SIGINT,
        _ = recv(&mut term) => SIGTERM,
        _ = recv(&mut hup) => SIGHUP,
    }
}

const SIGINT: i32 = nix::sys::signal::Signal::SIGINT as i32;
const SIGTERM: i32 = nix::sys::signal::Signal::SIGTERM as i32;
const SIGHUP: i32 = nix::sys::signal::Signal::SIGHUP as i32;

/// "SIGHUP" for 1, "signal 99" when unknown.
pub fn signal_name(sig: i32) -> String {
    nix::sys::signal::Signal::try_from(sig)
        .map(|s| s.as_str().to_string())
        .unwrap_or_else(|_| format!("signal {sig}"))
}

/// Exit status for a child's end: its code, or 128 + signal.
pub fn exit_status(e: &ExitInfo) -> i32 {
    match (e.code, e.signal) {
        (Some(c), _) => c,
        (None, Some(s)) => 128 + s,
        _ => 1,
    }
}
