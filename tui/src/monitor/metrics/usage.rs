//! The usage record's families: the tree's cores, threads, context switches, faults and
//! storage rates, the host's cores, and per GPU (labels `gpu`, `device`) an info series naming
//! the card plus its temperature, power, SM clock and PCIe rates. A reading the record lacks
//! is left out; a family no GPU has a reading for is left out whole.

use std::fmt;

use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Unit;
use provetop_shared::Usage;

use super::labels::{cut, gpu_labels};
use super::out::{Gauge, Out};
use super::MAX_GPUS;

/// A per-GPU gauge of the usage record: name, help, unit, its reading.
type GpuFamily = (
    &'static str,
    &'static str,
    Option<Unit>,
    fn(&provetop_shared::record::GpuDetail) -> Option<f64>,
);

/// The gauges of the latest usage record: the tree's cores, threads, rates, the host's cores,
/// and each GPU's details. A reading the record lacks is left out.
pub(super) fn usage_gauges(o: &mut Out<'_, '_>, u: &Usage) -> fmt::Result {
    let cores = || Some(Unit::Other("cores".into()));
    let per_s = || Some(Unit::Other("per_second".into()));
    let bytes_per_s = || Some(Unit::Other("bytes_per_second".into()));
    o.opt_gauge(
        "cpu",
        "cores busy in the process tree (user + system CPU seconds per second, over the last usage interval)",
        cores(),
        u.cores,
    )?;
    o.gauge("threads", "threads in the process tree", None, u.threads)?;
    o.opt_gauge(
        "context_switches",
        "context switches per second in the process tree (voluntary and not)",
        per_s(),
        u.ctx_switches,
    )?;
    o.opt_gauge(
        "major_faults",
        "major page faults per second in the process tree (the first sign of swapping)",
        per_s(),
        u.major_faults,
    )?;
    o.opt_gauge(
        "read",
        "bytes the process tree read from storage per second (absent when a process's /proc/PID/io is unreadable)",
        bytes_per_s(),
        u.read_bps,
    )?;
    o.opt_gauge(
        "write",
        "bytes the process tree wrote to storage per second",
        bytes_per_s(),
        u.write_bps,
    )?;
    o.opt_gauge(
        "host_cpu",
        "cores busy on the whole host (/proc/stat)",
        cores(),
        u.host_cores,
    )?;
    if u.host_ncpu > 0 {
        o.gauge("host_cpus", "cores online on the host", None, u.host_ncpu)?;
    }
    let gpus: Vec<_> = u
        .gpus
        .iter()
        .filter(|g| (g.index as usize) < MAX_GPUS)
        .map(|g| (g, gpu_labels(g.index)))
        .collect();
    if gpus.is_empty() {
        return Ok(());
    }
    {
        let mut m = o.enc.encode_descriptor(
            "gpu",
            "which card each GPU index is: its NVML UUID and product name",
            None,
            MetricType::Info,
        )?;
        for (g, l) in &gpus {
            let (uuid, name) = (cut(&g.uuid), cut(&g.name));
            m.encode_info(&[
                ("gpu", l[0].as_str()),
                ("device", l[1].as_str()),
                ("uuid", uuid.as_str()),
                ("name", name.as_str()),
            ])?;
        }
    }
    let keys = ["gpu", "device"];
    let series = |f: fn(&provetop_shared::record::GpuDetail) -> Option<f64>| {
        gpus.iter()
            .filter_map(move |(g, l)| Some(([l[0].as_str(), l[1].as_str()], f(g)?)))
            .collect::<Vec<_>>()
    };
    let families: [GpuFamily; 5] = [
        (
            "gpu_temperature",
            "temperature of the GPU (NVML)",
            Some(Unit::Celsius),
            |g| g.temp_c.map(f64::from),
        ),
        (
            "gpu_power",
            "power the GPU draws (NVML)",
            Some(Unit::Other("watts".into())),
            |g| g.power_w,
        ),
        (
            "gpu_sm_clock",
            "SM clock of the GPU (NVML)",
            Some(Unit::Other("hertz".into())),
            |g| g.sm_clock_mhz.map(|m| f64::from(m) * 1e6),
        ),
        (
            "gpu_pcie_receive",
            "PCIe throughput host to GPU (NVML)",
            Some(Unit::Other("bytes_per_second".into())),
            |g| g.pcie_rx_bps,
        ),
        (
            "gpu_pcie_transmit",
            "PCIe throughput GPU to host (NVML)",
            Some(Unit::Other("bytes_per_second".into())),
            |g| g.pcie_tx_bps,
        ),
    ];
    for (name, help, unit, f) in families {
        let v = series(f);
        // A family no GPU has a reading for is left out whole.
        if !v.is_empty() {
            o.family(Gauge, name, help, unit, keys, v)?;
        }
    }
    Ok(())
}
