//! GPU health on the timeline: the fields read with each device's details (ECC error counts,
//! the PCIe replay counter, the enforced power limit and the slowdown temperature, read once),
//! NVML's XID and ECC events, and the marks a change of state makes ([`HealthMarks`]).
//!
//! A mark is made when a state changes, never for a reading that merely moves: a slowdown
//! reason (power cap, thermal, hardware, sync boost) starting or ending, an ECC or PCIe replay
//! counter that grew since the last reading (the first reading is the baseline), an XID
//! error, the temperature reaching within [`HOT_MARGIN_C`] of the slowdown threshold or
//! leaving it, the power reaching [`POWER_CAP_SHARE`] of the enforced limit or leaving it.

use std::collections::HashMap;

use nvml_wrapper::bitmasks::event::EventTypes;
use nvml_wrapper::enum_wrappers::device::{EccCounter, MemoryError, TemperatureThreshold};
use nvml_wrapper::error::NvmlError;
use nvml_wrapper::{Device, EventSet, Nvml};
use provetop_shared::record::GpuDetail;
use provetop_shared::slowdown::SLOWDOWN_REASONS;

use super::nvml_cost::CallClock;

/// Degrees below the slowdown threshold at which a GPU is "hot".
pub const HOT_MARGIN_C: u32 = 5;
/// Share of the enforced power limit at which a GPU is "at its power limit".
pub const POWER_CAP_SHARE: f64 = 0.98;
/// Most events taken from NVML in one round.
const MAX_EVENTS: usize = 16;

/// The health fields of one device's details, read now (`limits`: the power limit and the
/// slowdown temperature, read once per device and kept).
pub fn read_fields(
    dev: &Device<'_>,
    clock: &mut CallClock,
    limits: &mut Option<(Option<f64>, Option<u32>)>,
    d: &mut GpuDetail,
) {
    let ecc = |clock: &mut CallClock, kind| {
        clock
            .time("GetTotalEccErrors", || {
                dev.total_ecc_errors(kind, EccCounter::Volatile)
            })
            .ok()
    };
    d.ecc_corrected = ecc(clock, MemoryError::Corrected);
    d.ecc_uncorrected = ecc(clock, MemoryError::Uncorrected);
    d.pcie_replays = clock
        .time("GetPcieReplayCounter", || dev.pcie_replay_counter())
        .ok()
        .map(u64::from);
    let (power_limit_w, temp_slowdown_c) = *limits.get_or_insert_with(|| {
        let p = clock
            .time("GetEnforcedPowerLimit", || dev.enforced_power_limit())
            .ok()
            .map(|mw| f64::from(mw) / 1000.0);
        let t = clock
            .time("GetTemperatureThreshold", || {
                dev.temperature_threshold(TemperatureThreshold::Slowdown)
            })
            .ok();
        (p, t)
    });
    d.power_limit_w = power_limit_w;
    d.temp_slowdown_c = temp_slowdown_c;
}

/// NVML's XID and ECC events for every device that takes them (`None`: no device does, or
/// NVML cannot make an event set here).
pub fn event_set<'a, 'n: 'a>(
    nvml: &'n Nvml,
    devices: impl Iterator<Item = &'a Device<'n>>,
) -> Option<EventSet<'n>> {
    let mut set = nvml.create_event_set().ok()?;
    let mut any = false;
    let kinds = EventTypes::CRITICAL_XID_ERROR
        | EventTypes::SINGLE_BIT_ECC_ERROR
        | EventTypes::DOUBLE_BIT_ECC_ERROR;
    for d in devices {
        match d.register_events(kinds, set) {
            Ok(s) => {
                set = s;
                any = true;
            }
            // The set is released on an unknown error: none is left to register with.
            Err(_) => {
                set = nvml.create_event_set().ok()?;
            }
        }
    }
    any.then_some(set)
}

/// The events waiting (at most [`MAX_EVENTS`], without waiting for more): (device index,
/// XID error or `None` for an ECC event, what it was).
pub fn take_events(set: &EventSet<'_>, clock: &mut CallClock) -> Vec<(u32, Option<u64>, String)> {
    let mut out = Vec::new();
    while out.len() < MAX_EVENTS {
        match clock.time("EventSetWait", || set.wait(0)) {
            Ok(e) => {
                let index = e.device.index().unwrap_or(u32::MAX);
                let what = if e.event_type.contains(EventTypes::CRITICAL_XID_ERROR) {
                    "XID error"
                } else if e.event_type.contains(EventTypes::DOUBLE_BIT_ECC_ERROR) {
                    "uncorrected (double-bit) ECC error"
                } else {
                    "corrected (single-bit) ECC error"
                };
                let xid = e.event_data.map(|x| match x {
                    nvml_wrapper::enums::event::XidError::Value(v) => v,
                    nvml_wrapper::enums::event::XidError::Unknown => 999,
                });
                out.push((index, xid, what.to_string()));
            }
            Err(NvmlError::Timeout) | Err(_) => break,
        }
    }
    out
}

/// What each GPU's health was at its last reading.
#[derive(Debug, Default, Clone)]
struct Seen {
    slowdowns: Vec<String>,
    ecc_corrected: Option<u64>,
    ecc_uncorrected: Option<u64>,
    pcie_replays: Option<u64>,
    hot: bool,
    capped: bool,
}

/// The marks health changes make, per GPU.
#[derive(Debug, Default)]
pub struct HealthMarks {
    seen: HashMap<u32, Seen>,
    /// The last XID per GPU (carried into its details).
    xid: HashMap<u32, u64>,
}

impl HealthMarks {
    /// An NVML event for GPU `index`: its mark.
    pub fn event(&mut self, index: u32, xid: Option<u64>, what: &str) -> String {
        match xid {
            Some(x) => {
                self.xid.insert(index, x);
                format!("GPU {index}: {what} {x} (NVML event)")
            }
            None => format!("GPU {index}: {what} (NVML event)"),
        }
    }

    /// A reading of one GPU's details: the marks of what changed since its last reading; the
    /// last XID seen is carried into `d`.
    pub fn observe(&mut self, d: &mut GpuDetail) -> Vec<String> {
        let i = d.index;
        if let Some(x) = self.xid.get(&i) {
            d.xid = Some(*x);
        }
        let mut marks = Vec::new();
        let first = !self.seen.contains_key(&i);
        let seen = self.seen.entry(i).or_default();
        let slowdowns: Vec<String> = d
            .throttle
            .iter()
            .filter(|r| SLOWDOWN_REASONS.contains(&r.as_str()))
            .cloned()
            .collect();
        if slowdowns != seen.slowdowns {
            marks.push(match (slowdowns.is_empty(), seen.slowdowns.is_empty()) {
                (false, _) => format!("GPU {i} slowed down: {}", slowdowns.join(", ")),
                (true, _) => format!(
                    "GPU {i} no longer slowed down (was {})",
                    seen.slowdowns.join(", ")
                ),
            });
            seen.slowdowns = slowdowns;
        }
        let grew = |now: Option<u64>, before: &mut Option<u64>| -> Option<(u64, u64)> {
            let r = match (now, *before) {
                (Some(n), Some(b)) if n > b => Some((n - b, n)),
                _ => None,
            };
            if now.is_some() {
                *before = now;
            }
            r
        };
        if let Some((n, total)) = grew(d.ecc_uncorrected, &mut seen.ecc_uncorrected) {
            marks.push(format!(
                "GPU {i}: {n} new uncorrected ECC errors ({total} since the driver loaded)"
            ));
        }
        if let Some((n, total)) = grew(d.ecc_corrected, &mut seen.ecc_corrected) {
            marks.push(format!(
                "GPU {i}: {n} new corrected ECC errors ({total} since the driver loaded)"
            ));
        }
        if let Some((n, total)) = grew(d.pcie_replays, &mut seen.pcie_replays) {
            marks.push(format!(
                "GPU {i}: PCIe replay counter +{n} ({total} since the driver loaded)"
            ));
        }
        if let (Some(t), Some(slow)) = (d.temp_c, d.temp_slowdown_c) {
            let hot = t + HOT_MARGIN_C >= slow;
            if hot != seen.hot {
                marks.push(if hot {
                    format!("GPU {i} hot: {t} °C (it slows down at {slow} °C)")
                } else {
                    format!("GPU {i} cooled: {t} °C")
                });
                seen.hot = hot;
            }
        }
        if let (Some(w), Some(limit)) = (d.power_w, d.power_limit_w) {
            let capped = limit > 0.0 && w >= POWER_CAP_SHARE * limit;
            if capped != seen.capped {
                marks.push(if capped {
                    format!("GPU {i} at its power limit: {w:.0} W of {limit:.0} W")
                } else {
                    format!("GPU {i} below its power limit: {w:.0} W of {limit:.0} W")
                });
                seen.capped = capped;
            }
        }
        if first {
            // The first reading is the baseline; only trouble already present is said.
            marks.retain(|m| {
                !m.contains("no longer") && !m.contains("cooled") && !m.contains("below")
            });
        }
        marks
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn detail(
        throttle: &[&str],
        ecc_u: Option<u64>,
        replays: Option<u64>,
        temp: u32,
        power: f64,
    ) -> GpuDetail {
        GpuDetail {
            index: 0,
            temp_c: Some(temp),
            power_w: Some(power),
            throttle: throttle.iter().map(|s| s.to_string()).collect(),
            ecc_uncorrected: ecc_u,
            ecc_corrected: ecc_u.map(|_| 0),
            pcie_replays: replays,
            power_limit_w: Some(700.0),
            temp_slowdown_c: Some(87),
            ..GpuDetail::default()
        }
    }

    /// A flow as an H100 under a prover gives it: idle, then busy at the power cap, warming,
    /// a replay burst, an ECC error and an XID, then calm.
    #[test]
    fn health_marks_come_on_changes_of_state_only() {
        let mut h = HealthMarks::default();
        let mut flow = [
            detail(&["gpu_idle"], Some(0), Some(12), 34, 70.0),
            detail(&["gpu_idle"], Some(0), Some(12), 35, 71.0),
            detail(&["sw_power_cap"], Some(0), Some(12), 70, 695.0),
            detail(&["sw_power_cap"], Some(0), Some(12), 78, 697.0),
            detail(
                &["sw_power_cap", "sw_thermal_slowdown"],
                Some(0),
                Some(17),
                83,
                699.0,
            ),
            detail(&["sw_thermal_slowdown"], Some(1), Some(17), 84, 650.0),
            detail(&[], Some(1), Some(17), 60, 300.0),
            detail(&[], Some(1), Some(17), 59, 290.0),
        ];
        let mut said: Vec<Vec<String>> = Vec::new();
        for (n, d) in flow.iter_mut().enumerate() {
            if n == 5 {
                let m = h.event(0, Some(79), "XID error");
                assert_eq!(m, "GPU 0: XID error 79 (NVML event)");
            }
            said.push(h.observe(d));
        }
        assert!(said[0].is_empty() && said[1].is_empty(), "{said:?}");
        assert_eq!(
            said[2],
            [
                "GPU 0 slowed down: sw_power_cap",
                "GPU 0 at its power limit: 695 W of 700 W"
            ]
        );
        assert!(said[3].is_empty(), "{said:?}");
        assert_eq!(
            said[4],
            [
                "GPU 0 slowed down: sw_power_cap, sw_thermal_slowdown",
                "GPU 0: PCIe replay counter +5 (17 since the driver loaded)",
                "GPU 0 hot: 83 °C (it slows down at 87 °C)",
            ]
        );
        assert_eq!(
            said[5],
            [
                "GPU 0 slowed down: sw_thermal_slowdown",
                "GPU 0: 1 new uncorrected ECC errors (1 since the driver loaded)",
                "GPU 0 below its power limit: 650 W of 700 W",
            ]
        );
        assert_eq!(flow[5].xid, Some(79), "the XID is carried into the details");
        assert_eq!(
            said[6],
            [
                "GPU 0 no longer slowed down (was sw_thermal_slowdown)",
                "GPU 0 cooled: 60 °C"
            ]
        );
        assert!(said[7].is_empty());
    }

    #[test]
    fn a_gpu_already_in_trouble_at_its_first_reading_is_said_and_calm_is_not() {
        let mut h = HealthMarks::default();
        let mut d = detail(&["hw_slowdown"], Some(3), Some(0), 40, 100.0);
        assert_eq!(h.observe(&mut d), ["GPU 0 slowed down: hw_slowdown"]);
        let mut calm = detail(&[], None, None, 40, 100.0);
        calm.index = 1;
        assert!(h.observe(&mut calm).is_empty());
        // A counter NVML stops giving is not a change.
        let mut gone = detail(&["hw_slowdown"], None, None, 40, 100.0);
        assert!(h.observe(&mut gone).is_empty());
    }
}
