//! The signals that stop provetop, and how a child's end becomes provetop's exit status.

use provetop_collect::supervisor::ExitInfo;

/// Resolves on any signal whose default action would end provetop and that can be caught,
/// with the signal's number: SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGALRM,
/// SIGVTALRM, SIGPROF, SIGXCPU, SIGIO, SIGPWR, SIGSTKFLT and the real-time signals. Each
/// stops the session the same way (terminal restored, child stopped, recording finalized).
///
/// Not here: SIGKILL (cannot be caught: the child still dies by its parent-death signal, the
/// recording keeps all but the last half second, the terminal stays as it was); SIGPIPE
/// (ignored by the Rust runtime: a write fails instead) and SIGXFSZ (a write error, see
/// main.rs); the faults SIGABRT, SIGILL, SIGFPE, SIGTRAP, SIGSYS (the terminal is restored by
/// [`crate::terminal`]'s handler before they end provetop); SIGSEGV and SIGBUS, left to the
/// Rust runtime's stack-overflow report.
///
/// The handlers are installed when this is called, not when the future is first polled: call
/// it before starting anything a signal must stop cleanly (a signal that arrives before the
/// handlers are in would take its default action and end provetop unrecorded).
pub fn stop_signal() -> impl std::future::Future<Output = i32> {
    stop_signal_but(&[])
}

/// [`stop_signal`] for a session with no terminal of its own (headless, served, detached):
/// a hangup (SIGHUP: the terminal that started it closed, an SSH connection dropped) is
/// caught and does not stop it; it is said once on stderr. Only an explicit signal or the
/// control socket's `stop` ends the session.
pub fn served_stop_signal() -> impl std::future::Future<Output = i32> {
    stop_signal_but(&[SIGHUP])
}

/// [`stop_signal`], with the signals in `survived` caught (so their default action does not
/// end provetop) but not stopping it. The handlers go in now (inside a tokio runtime).
fn stop_signal_but(survived: &'static [i32]) -> impl std::future::Future<Output = i32> {
    use tokio::signal::unix::{signal, SignalKind};
    let streams: Vec<(i32, tokio::signal::unix::Signal)> = STOP_SIGNALS
        .iter()
        .copied()
        .chain(realtime_signals())
        .filter_map(|n| signal(SignalKind::from_raw(n)).ok().map(|s| (n, s)))
        .collect();
    wait_for_stop(streams, survived)
}

async fn wait_for_stop(
    mut streams: Vec<(i32, tokio::signal::unix::Signal)>,
    survived: &[i32],
) -> i32 {
    use futures::future::select_all;
    let mut said = false;
    if streams.is_empty() {
        return std::future::pending().await;
    }
    loop {
        let waits = streams.iter_mut().map(|(n, s)| {
            let n = *n;
            Box::pin(async move {
                s.recv().await;
                n
            })
        });
        let (n, _, _) = select_all(waits).await;
        if !survived.contains(&n) {
            return n;
        }
        if !said {
            said = true;
            crate::say!(
                "provetop: got {}: going on (stop with SIGTERM or `provetop attach`, then q)",
                signal_name(n)
            );
        }
    }
}

/// The signals [`stop_signal`] waits for, besides the real-time ones.
pub const STOP_SIGNALS: &[i32] = &[
    SIGINT,
    SIGTERM,
    SIGHUP,
    nix::libc::SIGQUIT,
    nix::libc::SIGUSR1,
    nix::libc::SIGUSR2,
    nix::libc::SIGALRM,
    nix::libc::SIGVTALRM,
    nix::libc::SIGPROF,
    nix::libc::SIGXCPU,
    nix::libc::SIGIO,
    nix::libc::SIGPWR,
    nix::libc::SIGSTKFLT,
];

/// SIGRTMIN..=SIGRTMAX (their default action terminates too).
fn realtime_signals() -> std::ops::RangeInclusive<i32> {
    nix::libc::SIGRTMIN()..=nix::libc::SIGRTMAX()
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
