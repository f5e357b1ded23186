//! A `log::Log` that turns bellperson's log records into phase boundaries and events.
//!
//! bellperson logs its proving steps ("starting proof timer", "multiexp h", …, "prover time")
//! on the thread that called it. A proving call registers its [`CallTracker`] on that thread
//! with [`CallScope::enter`]; records carrying a known [`Marker`] are routed to it. Other
//! records at info level or above become `log` events; everything passes to stderr according
//! to the level filter (human logs never go to the event stream's fd unless asked).

use std::cell::RefCell;
use std::sync::{Arc, OnceLock};

use log::{Level, LevelFilter, Log, Metadata, Record};
use provetop_shared::protocol::Event;

use crate::events::Emitter;
use crate::phases::{CallTracker, Marker};

thread_local! {
    static CURRENT: RefCell<Option<Arc<CallTracker>>> = const { RefCell::new(None) };
}

/// While alive, bellperson markers logged on this thread go to the given tracker.
pub struct CallScope {
    prev: Option<Arc<CallTracker>>,
}

impl CallScope {
    /// Route this thread's markers to `t`.
    pub fn enter(t: Arc<CallTracker>) -> CallScope {
        let prev = CURRENT.with(|c| c.replace(Some(t)));
        CallScope { prev }
    }
}

impl Drop for CallScope {
    fn drop(&mut self) {
        let prev = self.prev.take();
        CURRENT.with(|c| *c.borrow_mut() = prev);
    }
}

struct Bridge {
    default_emitter: Emitter,
    stderr_ours: LevelFilter,
    stderr_deps: LevelFilter,
}

fn is_ours(target: &str) -> bool {
    target.starts_with("provetop")
}

fn is_prover_lib(target: &str) -> bool {
    target.starts_with("bellperson") || target.starts_with("ec_gpu")
}

impl Log for Bridge {
    fn enabled(&self, m: &Metadata<'_>) -> bool {
        let t = m.target();
        (is_prover_lib(t) && m.level() <= Level::Debug)
            || m.level() <= Level::Info
            || m.level() <= self.stderr_level(t)
    }

    fn log(&self, r: &Record<'_>) {
        if !self.enabled(r.metadata()) {
            return;
        }
        let target = r.target();
        let msg = r.args().to_string();
        let mut consumed = false;
        if is_prover_lib(target) {
            if let Some(m) = Marker::parse(&msg) {
                consumed = true;
                CURRENT.with(|c| {
                    if let Some(t) = c.borrow().as_ref() {
                        t.marker(m);
                    }
                });
            }
        }
        if !consumed && r.level() <= Level::Info {
            let ev = Event::Log {
                level: r.level().as_str().to_ascii_lowercase(),
                target: target.to_string(),
                message: msg.clone(),
            };
            let routed = CURRENT.with(|c| {
                c.borrow().as_ref().map(|t| {
                    t.emitter().emit(ev.clone());
                })
            });
            if routed.is_none() {
                self.default_emitter.emit(ev);
            }
        }
        if r.level() <= self.stderr_level(target) {
            eprintln!(
                "provetop-prover: [{} {}] {}",
                r.level().as_str().to_ascii_lowercase(),
                target,
                msg
            );
        }
    }

    fn flush(&self) {}
}

impl Bridge {
    fn stderr_level(&self, target: &str) -> LevelFilter {
        if is_ours(target) {
            self.stderr_ours
        } else {
            self.stderr_deps
        }
    }
}

static INSTALLED: OnceLock<()> = OnceLock::new();

/// Install the bridge as the process logger (once; later calls are no-ops).
///
/// `RUST_LOG` set to a bare level (`debug`, `info`, …) sets the stderr level for every
/// target; otherwise stderr gets info and above from the prover, warnings from libraries.
pub fn install(default_emitter: Emitter) {
    INSTALLED.get_or_init(|| {
        let env = std::env::var("RUST_LOG")
            .ok()
            .and_then(|v| v.trim().parse::<LevelFilter>().ok());
        let bridge = Bridge {
            default_emitter,
            stderr_ours: env.unwrap_or(LevelFilter::Info),
            stderr_deps: env.unwrap_or(LevelFilter::Warn),
        };
        let max = LevelFilter::Debug.max(env.unwrap_or(LevelFilter::Off));
        if log::set_logger(Box::leak(Box::new(bridge))).is_ok() {
            log::set_max_level(max);
        }
    });
}
