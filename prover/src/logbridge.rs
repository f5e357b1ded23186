//! The prover's logger: provetop-emit's log bridge, with bellperson's log records turned into
//! phase boundaries.
//!
//! bellperson logs its proving steps ("starting proof timer", "multiexp h", …, "prover time")
//! on the thread that called it. A proving call registers its [`CallTracker`] on that thread
//! with [`CallScope::enter`]; records carrying a known [`Marker`] are routed to it. Other
//! records at info level or above become `log` events; everything passes to stderr according
//! to the level filter (human logs never go to the event stream's fd unless asked).

use std::cell::RefCell;
use std::sync::{Arc, OnceLock};

use log::{Level, LevelFilter, Log, Metadata, Record};
use provetop_emit::logger::{Bridge, Intercept};
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

/// bellperson's markers go to the thread's [`CallTracker`]; other records, while a proving call
/// is on this thread, become `log` events on that call's emitter.
struct Markers;

fn is_ours(target: &str) -> bool {
    target.starts_with("provetop")
}

fn is_prover_lib(target: &str) -> bool {
    target.starts_with("bellperson") || target.starts_with("ec_gpu")
}

impl Intercept for Markers {
    fn wants(&self, m: &Metadata<'_>) -> bool {
        is_prover_lib(m.target()) && m.level() <= Level::Debug
    }

    fn record(&self, r: &Record<'_>, msg: &str) -> bool {
        if is_prover_lib(r.target()) {
            if let Some(m) = Marker::parse(msg) {
                CURRENT.with(|c| {
                    if let Some(t) = c.borrow().as_ref() {
                        t.marker(m);
                    }
                });
                return true;
            }
        }
        if r.level() > Level::Info {
            return false;
        }
        CURRENT.with(|c| {
            c.borrow().as_ref().is_some_and(|t| {
                t.emitter().emit(Event::Log {
                    level: r.level().as_str().to_ascii_lowercase(),
                    target: r.target().to_string(),
                    message: msg.to_string(),
                });
                true
            })
        })
    }
}

/// Human logs on stderr: the prover's own at `ours`, libraries' at `deps`.
struct Stderr {
    ours: LevelFilter,
    deps: LevelFilter,
}

impl Log for Stderr {
    fn enabled(&self, m: &Metadata<'_>) -> bool {
        let level = if is_ours(m.target()) {
            self.ours
        } else {
            self.deps
        };
        m.level() <= level
    }

    fn log(&self, r: &Record<'_>) {
        eprintln!(
            "provetop-prover: [{} {}] {}",
            r.level().as_str().to_ascii_lowercase(),
            r.target(),
            r.args()
        );
    }

    fn flush(&self) {}
}

static INSTALLED: OnceLock<()> = OnceLock::new();

/// Install the bridge as the process logger (once; later calls are no-ops): provetop-emit's
/// [`Bridge`] writing to `default_emitter`, with the markers above and stderr behind it.
///
/// `RUST_LOG` set to a bare level (`debug`, `info`, …) sets the stderr level for every
/// target; otherwise stderr gets info and above from the prover, warnings from libraries.
pub fn install(default_emitter: Emitter) {
    INSTALLED.get_or_init(|| {
        let env = std::env::var("RUST_LOG")
            .ok()
            .and_then(|v| v.trim().parse::<LevelFilter>().ok());
        let stderr = Stderr {
            ours: env.unwrap_or(LevelFilter::Info),
            deps: env.unwrap_or(LevelFilter::Warn),
        };
        let max = LevelFilter::Debug.max(env.unwrap_or(LevelFilter::Off));
        let _ = Bridge::new(default_emitter)
            .intercept(Markers)
            .inner(stderr)
            .install(max);
    });
}
