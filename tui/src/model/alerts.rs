//! Alerts as the stream records them: which fire now, and every change.

use provetop_shared::{Alert, AlertState};

use super::effects::{Effect, Effects};
use super::log::{Log, Logged};

/// Most alert changes kept.
pub const MAX_ALERTS: usize = 10_000;

/// An alert that is firing now.
#[derive(Debug, Clone, PartialEq)]
pub struct ActiveAlert {
    /// Since, ns.
    pub since: u64,
    pub alert: Alert,
}

/// The alerts of a stream.
#[derive(Debug, Clone, Default)]
pub struct Alerts {
    /// Alerts firing now.
    pub active: Vec<ActiveAlert>,
    /// Every alert change, oldest first.
    pub history: super::bounded::History<(u64, Alert)>,
}

impl Alerts {
    /// An alert record at `t`.
    pub fn apply(&mut self, t: u64, a: &Alert, log: &mut Log, fx: &mut Effects) {
        match a.state {
            AlertState::Firing => {
                self.active.retain(|x| x.alert.rule != a.rule);
                self.active.push(ActiveAlert {
                    since: t,
                    alert: a.clone(),
                });
                fx.push(Effect::AlertFired(a.clone()));
            }
            AlertState::Cleared => {
                self.active.retain(|x| x.alert.rule != a.rule);
                fx.push(Effect::AlertCleared(a.clone()));
            }
        }
        self.history.push_bounded((t, a.clone()), MAX_ALERTS);
        log.push(t, Logged::Alert(a.clone()));
    }

    /// Alert times (firing), for `a`/`A` navigation.
    pub fn times(&self) -> impl Iterator<Item = u64> + '_ {
        self.history
            .iter()
            .filter(|(_, a)| a.state == AlertState::Firing)
            .map(|(t, _)| *t)
    }
}
