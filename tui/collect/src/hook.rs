//! The alert hook: a program run on alert changes, without a shell.
//!
//! Values travel in environment variables only (`PROVETOP_ALERT_RULE`, `_LEVEL`, `_STATE`,
//! `_METRIC`, `_VALUE`, `_THRESHOLD`, `_MESSAGE`, `_TIME`, `_MONO_NS`), never in a command
//! line, so a rule or message cannot inject anything. Each value is made inert first: control
//! characters and terminal escape sequences (a child's phase name can hold them) are removed,
//! and it is cut to [`ENV_MAX`] bytes, so a child cannot make the hook fail to start (E2BIG)
//! and so suppress its own alert. The hook's output goes to /dev/null (the terminal belongs
//! to the UI); it runs in its own process group, which is killed if it runs longer than
//! [`HOOK_TIMEOUT`].
//!
//! [`HookRunner`] is how the monitor runs hooks: per rule at most one hook at a time and one
//! start per [`HookLimits::min_interval`]; a change that arrives meanwhile waits and is
//! delivered after (the latest state wins; one equal to what the hook was last told is not
//! repeated); at most [`HookLimits::max_running`] hooks run at once overall. Changes that
//! never reached the hook are counted ([`HookRunner::take_suppressed`]). On
//! [`HookRunner::shutdown`] hooks still running are waited for, then their groups killed.

use std::collections::BTreeMap;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use provetop_shared::clock::{mono_ns, wall_ns};
use provetop_shared::{Alert, AlertLevel, AlertState};

/// A hook still running after this long is killed.
pub const HOOK_TIMEOUT: Duration = Duration::from_secs(60);

/// Longest value of one `PROVETOP_ALERT_*` variable, bytes (a longer one is cut on a char
/// boundary and ends in [`CUT_MARKER`]).
pub const ENV_MAX: usize = 4096;

/// What ends a value that was cut to [`ENV_MAX`].
pub const CUT_MARKER: &str = "…[cut]";

/// Make text from a child inert for a hook's environment: escape sequences (CSI, OSC, DCS …)
/// and other control characters go (a tab or newline becomes a space), and the result is cut
/// to `max` bytes on a char boundary, ending in [`CUT_MARKER`] when cut.
pub fn inert(s: &str, max: usize) -> String {
    let mut out = String::with_capacity(s.len().min(max));
    let mut it = s.chars().peekable();
    while let Some(c) = it.next() {
        match c {
            '\u{1b}' => match it.peek() {
                // CSI: parameters and intermediates up to a final byte in @..~.
                Some('[') => {
                    it.next();
                    for c in it.by_ref() {
                        if ('@'..='~').contains(&c) {
                            break;
                        }
                    }
                }
                // OSC, DCS, SOS, PM, APC: a string up to BEL or ST (ESC \).
                Some(']' | 'P' | 'X' | '^' | '_') => {
                    it.next();
                    while let Some(c) = it.next() {
                        if c == '\u{7}' || c == '\u{9c}' {
                            break;
                        }
                        if c == '\u{1b}' && it.peek() == Some(&'\\') {
                            it.next();
                            break;
                        }
                    }
                }
                // A two-character escape: ESC and the next one.
                Some(_) => {
                    it.next();
                }
                None => {}
            },
            '\t' | '\n' | '\r' => out.push(' '),
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    if out.len() > max {
        let keep = max.saturating_sub(CUT_MARKER.len());
        let mut end = keep.min(out.len());
        while !out.is_char_boundary(end) {
            end -= 1;
        }
        out.truncate(end);
        out.push_str(CUT_MARKER);
    }
    out
}

/// Start `argv` for `alert` (raised at monotonic time `t`) in its own process group, with
/// the alert in its environment; errors (program not found, …) are returned.
fn start(argv: &[String], alert: &Alert, t: u64) -> std::io::Result<Child> {
    let Some(program) = argv.first() else {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "empty alert hook command",
        ));
    };
    let level = match alert.level {
        AlertLevel::Info => "info",
        AlertLevel::Warn => "warn",
        AlertLevel::Crit => "crit",
    };
    let state = match alert.state {
        AlertState::Firing => "firing",
        AlertState::Cleared => "cleared",
    };
    // Unix seconds of the alert: wall clock now, minus how long ago t was.
    let wall = wall_ns() as i128 - (mono_ns() as i128 - t as i128);
    let time = format!("{:.3}", wall as f64 / 1e9);
    let num = |v: f64| {
        if v.is_finite() {
            format!("{v}")
        } else {
            String::new()
        }
    };
    let mut cmd = Command::new(program);
    cmd.args(&argv[1..])
        .env("PROVETOP_ALERT_RULE", inert(&alert.rule, ENV_MAX))
        .env("PROVETOP_ALERT_LEVEL", level)
        .env("PROVETOP_ALERT_STATE", state)
        .env("PROVETOP_ALERT_METRIC", inert(&alert.metric, ENV_MAX))
        .env("PROVETOP_ALERT_VALUE", num(alert.value))
        .env("PROVETOP_ALERT_THRESHOLD", num(alert.threshold))
        .env("PROVETOP_ALERT_MESSAGE", inert(&alert.message, ENV_MAX))
        .env("PROVETOP_ALERT_TIME", time)
        .env("PROVETOP_ALERT_MONO_NS", t.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0);
    // A helper of provetop's own: never taken for an orphan of the supervised child's tree.
    crate::supervisor::spawn_helper(|| cmd.spawn())
}

fn kill_group(child: &mut Child) {
    let _ = killpg(Pid::from_raw(child.id() as i32), Signal::SIGKILL);
    let _ = child.kill();
    let _ = child.wait();
    crate::supervisor::helper_ended(child.id());
}

/// Whether a hook has ended (it is then reaped and forgotten as a helper).
fn ended(child: &mut Child) -> bool {
    match child.try_wait() {
        Ok(None) => false,
        Ok(Some(_)) | Err(_) => {
            crate::supervisor::helper_ended(child.id());
            true
        }
    }
}

/// Start `argv` for `alert` (raised at monotonic time `t`) once, unthrottled; errors
/// (program not found, …) are returned. Never waits for the hook: it is reaped on a
/// background thread, and its group killed after [`HOOK_TIMEOUT`].
pub fn spawn_hook(argv: &[String], alert: &Alert, t: u64) -> std::io::Result<()> {
    let mut child = start(argv, alert, t)?;
    std::thread::Builder::new()
        .name("provetop-hook".into())
        .spawn(move || {
            let begun = Instant::now();
            loop {
                if ended(&mut child) {
                    return;
                }
                if begun.elapsed() >= HOOK_TIMEOUT {
                    return kill_group(&mut child);
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        })?;
    Ok(())
}

/// How often hooks may run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HookLimits {
    /// Least time between two starts of the hook for one rule.
    pub min_interval: Duration,
    /// Most hooks running at once, all rules together.
    pub max_running: usize,
    /// A hook running longer is killed.
    pub timeout: Duration,
}

impl Default for HookLimits {
    fn default() -> Self {
        HookLimits {
            min_interval: Duration::from_secs(5),
            max_running: 4,
            timeout: HOOK_TIMEOUT,
        }
    }
}

#[derive(Default)]
struct Slot {
    /// The hook for this rule now running.
    running: Option<(Child, Instant)>,
    /// The latest change not delivered yet.
    pending: Option<(Alert, u64)>,
    last_start: Option<Instant>,
    /// The state the hook was last told.
    told: Option<AlertState>,
}

#[derive(Default)]
struct State {
    slots: BTreeMap<String, Slot>,
    suppressed: u64,
    errors: Vec<String>,
    shutting_down: bool,
    worker: bool,
}

impl State {
    fn running(&self) -> usize {
        self.slots.values().filter(|s| s.running.is_some()).count()
    }

    fn busy(&self) -> bool {
        self.slots
            .values()
            .any(|s| s.running.is_some() || s.pending.is_some())
    }
}

struct Shared {
    state: Mutex<State>,
    wake: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Wait for a wake-up, at most `d`.
    fn wait<'a>(&self, st: MutexGuard<'a, State>, d: Duration) -> MutexGuard<'a, State> {
        self.wake
            .wait_timeout(st, d)
            .unwrap_or_else(|e| e.into_inner())
            .0
    }
}

/// Runs the alert hook with the limits of [`HookLimits`]; one background thread starts,
/// reaps and times out every hook.
pub struct HookRunner {
    argv: Vec<String>,
    limits: HookLimits,
    shared: Arc<Shared>,
}

impl HookRunner {
    /// A runner of `argv` within `limits`.
    pub fn new(argv: Vec<String>, limits: HookLimits) -> Self {
        HookRunner {
            argv,
            limits,
            shared: Arc::new(Shared {
                state: Mutex::new(State::default()),
                wake: Condvar::new(),
            }),
        }
    }

    /// The hook's command.
    pub fn argv(&self) -> &[String] {
        &self.argv
    }

    /// Deliver `alert` (raised at monotonic time `t`): now when its rule's hook is free,
    /// else after it (replacing an earlier change still waiting, which counts as
    /// suppressed). Never waits.
    pub fn deliver(&self, alert: &Alert, t: u64) {
        let mut st = self.shared.lock();
        if st.shutting_down {
            st.suppressed += 1;
            return;
        }
        let slot = st.slots.entry(alert.rule.clone()).or_default();
        let replaced = slot.pending.replace((alert.clone(), t)).is_some();
        if replaced {
            st.suppressed += 1;
        }
        self.dispatch(&mut st);
        if !st.worker && st.busy() {
            st.worker = true;
            let shared = self.shared.clone();
            let (argv, limits) = (self.argv.clone(), self.limits);
            let spawned = std::thread::Builder::new()
                .name("provetop-hooks".into())
                .spawn(move || {
                    HookRunner {
                        argv,
                        limits,
                        shared,
                    }
                    .work()
                });
            if let Err(e) = spawned {
                st.worker = false;
                st.errors.push(format!("cannot start the hook thread: {e}"));
            }
        }
        self.shared.wake.notify_all();
    }

    /// Reap finished hooks, kill timed-out ones, start what may start now; returns how long
    /// until something may change (None: nothing to wait for).
    fn dispatch(&self, st: &mut State) -> Option<Duration> {
        let now = Instant::now();
        let mut next: Option<Duration> = None;
        let mut soon = |d: Duration| next = Some(next.map_or(d, |n| n.min(d)));
        let mut running = 0;
        for slot in st.slots.values_mut() {
            if let Some((child, begun)) = &mut slot.running {
                if ended(child) {
                    slot.running = None;
                } else if now.duration_since(*begun) >= self.limits.timeout {
                    kill_group(child);
                    slot.running = None;
                } else {
                    running += 1;
                    soon(Duration::from_millis(20));
                }
            }
        }
        let shutting_down = st.shutting_down;
        let mut suppressed = 0;
        let mut errors = Vec::new();
        for slot in st.slots.values_mut() {
            if slot.running.is_some() || slot.pending.is_none() {
                continue;
            }
            // The latest change repeats what the hook was last told: nothing to say.
            if slot.pending.as_ref().map(|(a, _)| a.state) == slot.told {
                slot.pending = None;
                suppressed += 1;
                continue;
            }
            // At shutdown a last change goes out without waiting for its interval.
            if !shutting_down {
                if let Some(last) = slot.last_start {
                    let due = last + self.limits.min_interval;
                    if due > now {
                        soon(due - now);
                        continue;
                    }
                }
            }
            if running >= self.limits.max_running {
                soon(Duration::from_millis(20));
                continue;
            }
            let (alert, t) = slot.pending.take().expect("checked above");
            slot.last_start = Some(now);
            slot.told = Some(alert.state);
            match start(&self.argv, &alert, t) {
                Ok(child) => {
                    slot.running = Some((child, now));
                    running += 1;
                    soon(Duration::from_millis(20));
                }
                Err(e) => errors.push(format!("alert hook {:?} cannot start: {e}", self.argv[0])),
            }
        }
        st.suppressed += suppressed;
        st.errors.extend(errors);
        next
    }

    fn work(&self) {
        let mut st = self.shared.lock();
        loop {
            match self.dispatch(&mut st) {
                Some(d) => st = self.shared.wait(st, d),
                None => {
                    if st.shutting_down {
                        st.worker = false;
                        self.shared.wake.notify_all();
                        return;
                    }
                    st = self.shared.wake.wait(st).unwrap_or_else(|e| e.into_inner());
                }
            }
        }
    }

    /// Changes that never reached the hook since the last call (coalesced, repeated, or
    /// arriving at shutdown).
    pub fn take_suppressed(&self) -> u64 {
        std::mem::take(&mut self.shared.lock().suppressed)
    }

    /// Why hooks could not start, since the last call.
    pub fn take_errors(&self) -> Vec<String> {
        std::mem::take(&mut self.shared.lock().errors)
    }

    /// How many hooks run now.
    pub fn running(&self) -> usize {
        self.shared.lock().running()
    }

    /// Stop: changes still waiting go out now (one per rule, after the one running), hooks
    /// get up to `wait` to finish, then the groups of those still running are killed.
    /// Returns how many were killed.
    pub fn shutdown(&self, wait: Duration) -> usize {
        let end = Instant::now() + wait;
        let mut st = self.shared.lock();
        st.shutting_down = true;
        self.shared.wake.notify_all();
        loop {
            self.dispatch(&mut st);
            let now = Instant::now();
            if !st.busy() || now >= end {
                break;
            }
            st = self
                .shared
                .wait(st, (end - now).min(Duration::from_millis(20)));
        }
        let (mut killed, mut dropped) = (0, 0);
        for slot in st.slots.values_mut() {
            if let Some((mut child, _)) = slot.running.take() {
                kill_group(&mut child);
                killed += 1;
            }
            if slot.pending.take().is_some() {
                dropped += 1;
            }
        }
        st.suppressed += dropped;
        self.shared.wake.notify_all();
        killed
    }
}

impl Drop for HookRunner {
    fn drop(&mut self) {
        // The worker's own copy drops only after a shutdown; the owner's drop without one
        // must not block: what still runs is killed at once.
        if !self.shared.lock().shutting_down {
            self.shutdown(Duration::ZERO);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_sequences_and_control_characters_are_removed() {
        let s =
            "a\u{1b}[2Jb\u{1b}]52;c;ZXZpbA==\u{7}c\u{1b}]0;t\u{1b}\\d\u{1b}Me\u{0}\u{8}f\tg\u{9b}h";
        assert_eq!(inert(s, ENV_MAX), "abcdef gh");
    }

    #[test]
    fn long_values_are_cut_on_a_char_boundary_with_a_marker() {
        let s = "é".repeat(10_000);
        let v = inert(&s, ENV_MAX);
        assert!(v.len() <= ENV_MAX, "{}", v.len());
        assert!(v.ends_with(CUT_MARKER));
        assert!(v.len() > ENV_MAX - 16);
        assert_eq!(inert("short", ENV_MAX), "short");
    }
}
