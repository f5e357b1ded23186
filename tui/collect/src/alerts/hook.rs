//! The alert hook: a program run on every alert change, without a shell.
//!
//! Values travel in environment variables only (`PROVETOP_ALERT_RULE`, `_LEVEL`, `_STATE`,
//! `_METRIC`, `_VALUE`, `_THRESHOLD`, `_MESSAGE`, `_TIME`, `_MONO_NS`), never in a command
//! line, so a rule or message cannot inject anything. The hook's output goes to /dev/null (the
//! terminal belongs to the UI); it is reaped on a background thread and killed if it runs
//! longer than [`HOOK_TIMEOUT`].

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use provetop_shared::clock::{mono_ns, wall_ns};
use provetop_shared::{Alert, AlertLevel, AlertState};

/// A hook still running after this long is killed.
pub const HOOK_TIMEOUT: Duration = Duration::from_secs(60);

/// Start `argv` for `alert` (raised at monotonic time `t`); errors (program not found, …) are
/// returned. Never waits for the hook.
pub fn spawn_hook(argv: &[String], alert: &Alert, t: u64) -> std::io::Result<()> {
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
    let mut child = Command::new(program)
        .args(&argv[1..])
        .env("PROVETOP_ALERT_RULE", &alert.rule)
        .env("PROVETOP_ALERT_LEVEL", level)
        .env("PROVETOP_ALERT_STATE", state)
        .env("PROVETOP_ALERT_METRIC", &alert.metric)
        .env("PROVETOP_ALERT_VALUE", num(alert.value))
        .env("PROVETOP_ALERT_THRESHOLD", num(alert.threshold))
        .env("PROVETOP_ALERT_MESSAGE", &alert.message)
        .env("PROVETOP_ALERT_TIME", time)
        .env("PROVETOP_ALERT_MONO_NS", t.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()?;
    std::thread::Builder::new()
        .name("provetop-hook".into())
        .spawn(move || {
            let start = Instant::now();
            loop {
                match child.try_wait() {
                    Ok(Some(_)) | Err(_) => return,
                    Ok(None) if start.elapsed() >= HOOK_TIMEOUT => {
                        let _ = child.kill();
                        let _ = child.wait();
                        return;
                    }
                    Ok(None) => std::thread::sleep(Duration::from_millis(50)),
                }
            }
        })?;
    Ok(())
}
