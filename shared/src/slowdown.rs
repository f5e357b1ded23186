//! Which of NVML's clock throttle reasons are a GPU slowing down (the alert metric
//! `gpu_throttled`, the health marks), and which are settings.

/// Throttle reasons that slow the GPU down (the others, idle and application clocks, are
/// settings, not trouble).
pub const SLOWDOWN_REASONS: [&str; 6] = [
    "sw_power_cap",
    "hw_slowdown",
    "sync_boost",
    "sw_thermal_slowdown",
    "hw_thermal_slowdown",
    "hw_power_brake_slowdown",
];

impl crate::record::GpuDetail {
    /// How many slowdown reasons are active ([`SLOWDOWN_REASONS`]).
    pub fn slowdowns(&self) -> usize {
        self.throttle
            .iter()
            .filter(|r| SLOWDOWN_REASONS.contains(&r.as_str()))
            .count()
    }
}
