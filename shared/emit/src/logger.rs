//! A `log::Log` bridge: log records become `log` events, and every record still reaches the
//! logger the prover had (env_logger, fil_logger, …).
//!
//! ```no_run
//! # struct Mine; impl log::Log for Mine { fn enabled(&self, _: &log::Metadata) -> bool { true }
//! # fn log(&self, _: &log::Record) {} fn flush(&self) {} }
//! provetop_emit::logger::Bridge::new(provetop_emit::from_env())
//!     .inner(Mine) // the logger you had, e.g. env_logger::Builder::from_default_env().build()
//!     .install(log::LevelFilter::Info)
//!     .expect("no other logger yet");
//! ```
//!
//! An [`Intercept`] sees each record first and may take it (for example, to turn a library's
//! marker lines into phase events); a record it takes is not written as a `log` event.

use log::{LevelFilter, Log, Metadata, Record, SetLoggerError};
use provetop_shared::protocol::Event;

use crate::Emitter;

/// A hook that sees records before they become `log` events.
pub trait Intercept: Send + Sync + 'static {
    /// Whether records like this one should reach [`Intercept::record`] even when neither the
    /// event level nor the inner logger wants them (bellperson's debug markers, say).
    fn wants(&self, _metadata: &Metadata<'_>) -> bool {
        false
    }

    /// Sees a record (its message formatted once); `true` means it was dealt with and no
    /// `log` event is written for it.
    fn record(&self, record: &Record<'_>, message: &str) -> bool;
}

/// The bridge; see the module documentation.
pub struct Bridge {
    emitter: Emitter,
    level: LevelFilter,
    inner: Option<Box<dyn Log>>,
    intercept: Option<Box<dyn Intercept>>,
}

impl Bridge {
    /// Records at info and above become `log` events on `emitter`.
    pub fn new(emitter: Emitter) -> Self {
        Bridge {
            emitter,
            level: LevelFilter::Info,
            inner: None,
            intercept: None,
        }
    }

    /// Records at `level` and above become events (`Off`: none).
    pub fn level(mut self, level: LevelFilter) -> Self {
        self.level = level;
        self
    }

    /// Hand every record the inner logger is enabled for on to it.
    pub fn inner(mut self, inner: impl Log + 'static) -> Self {
        self.inner = Some(Box::new(inner));
        self
    }

    /// See records first with `intercept`.
    pub fn intercept(mut self, intercept: impl Intercept) -> Self {
        self.intercept = Some(Box::new(intercept));
        self
    }

    /// Make this the process's logger, with `log`'s global `max_level` (records above it are
    /// never built, by anyone).
    pub fn install(self, max_level: LevelFilter) -> Result<(), SetLoggerError> {
        log::set_boxed_logger(Box::new(self))?;
        log::set_max_level(max_level);
        Ok(())
    }

    fn wants_event(&self, m: &Metadata<'_>) -> bool {
        m.level() <= self.level && self.emitter.is_enabled()
    }
}

impl Log for Bridge {
    fn enabled(&self, m: &Metadata<'_>) -> bool {
        self.wants_event(m)
            || self.intercept.as_ref().is_some_and(|i| i.wants(m))
            || self.inner.as_ref().is_some_and(|l| l.enabled(m))
    }

    fn log(&self, r: &Record<'_>) {
        let m = r.metadata();
        let event = self.wants_event(m);
        let hooked = self.intercept.as_ref().filter(|i| event || i.wants(m));
        if event || hooked.is_some() {
            let message = r.args().to_string();
            let taken = hooked.is_some_and(|i| i.record(r, &message));
            if event && !taken {
                self.emitter.emit(Event::Log {
                    level: r.level().as_str().to_ascii_lowercase(),
                    target: r.target().to_string(),
                    message,
                });
            }
        }
        if let Some(inner) = self.inner.as_ref().filter(|l| l.enabled(m)) {
            inner.log(r);
        }
    }

    fn flush(&self) {
        if let Some(inner) = &self.inner {
            inner.flush();
        }
    }
}
