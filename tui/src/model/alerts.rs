//! Alerts as the stream records them: which fire now, and every change.

use provetop_shared::{Alert, AlertState};

use super::effects::{Effect, Effects};
use super::log::Logged;
use super::{push_bounded, Model};

/// Most alert changes kept.
pub const MAX_ALERTS: usize = 10_000;

/// An alert that is firing now.
#[derive(Debug, Clone, PartialEq)]
pub struct ActiveAlert {
    /// Since, ns.
    pub since: u64,
    pub alert: Alert,
}

impl Model {
    pub(super) fn on_alert(&mut self, t: u64, a: &Alert, fx: &mut Effects) {
        match a.state {
            AlertState::Firing => {
                self.active_alerts.retain(|x| x.alert.rule != a.rule);
                self.active_alerts.push(ActiveAlert {
                    since: t,
                    alert: a.clone(),
                });
                fx.push(Effect::AlertFired(a.clone()));
            }
            AlertState::Cleared => {
                self.active_alerts.retain(|x| x.alert.rule != a.rule);
                fx.push(Effect::AlertCleared(a.clone()));
            }
        }
        push_bounded(&mut self.alert_history, (t, a.clone()), MAX_ALERTS);
        self.push_log(t, Logged::Alert(a.clone()));
    }

    /// Alert times (firing) in the model, for `a`/`A` navigation.
    pub fn alert_times(&self) -> impl Iterator<Item = u64> + '_ {
        self.alert_history
            .iter()
            .filter(|(_, a)| a.state == AlertState::Firing)
            .map(|(t, _)| *t)
    }
}
