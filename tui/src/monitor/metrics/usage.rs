//! The usage record's families: the tree's cores, threads, context switches, faults and
//! storage rates, the host's cores, and per GPU (labels `gpu`, `device`) an info series naming
//! the card plus its temperature, power, SM clock and PCIe rates. A reading the record lacks
//! is left out; a family no GPU has a reading for is left out whole. The metrics of the
//! metric table among them are written from its Prometheus column.

use std::fmt;

use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Unit;
use provetop_shared::metric::{Metric, Read};
use provetop_shared::Usage;

use super::labels::{cut, gpu_labels, GPU_KEYS};
use super::out::{gpu_series, Gauge, Out, Value};
use super::MAX_GPUS;

/// A per-GPU gauge of the usage record the metric table has no metric for: name, help, unit,
/// its reading.
type GpuFamily = (
    &'static str,
    &'static str,
    Option<Unit>,
    fn(&provetop_shared::record::GpuDetail) -> Option<f64>,
);

/// The family of a metric of the table that the usage record reads, with the record's
/// reading as it holds it.
fn usage_metric(o: &mut Out<'_, '_>, m: Metric, u: &Usage) -> fmt::Result {
    let v = match m.def().read {
        Read::Usage(f) => f(u),
        _ => None,
    };
    o.metric(m, v.map(|v| Value::reading(m.unit(), v)))
}

/// The gauges of the latest usage record: the tree's cores, threads, rates, the host's cores,
/// and each GPU's details. A reading the record lacks is left out.
pub(super) fn usage_gauges(o: &mut Out<'_, '_>, u: &Usage) -> fmt::Result {
    usage_metric(o, Metric::Cpu, u)?;
    usage_metric(o, Metric::Threads, u)?;
    o.opt_gauge(
        "context_switches",
        "context switches per second in the process tree (voluntary and not)",
        Some(Unit::Other("per_second".into())),
        u.ctx_switches,
    )?;
    for m in [
        Metric::MajorFaults,
        Metric::ReadBps,
        Metric::WriteBps,
        Metric::HostCpu,
    ] {
        usage_metric(o, m, u)?;
    }
    if u.host_ncpu > 0 {
        o.gauge("host_cpus", "cores online on the host", None, u.host_ncpu)?;
    }
    if u.gpus.iter().any(|g| (g.index as usize) < MAX_GPUS) {
        gpu_gauges(o, u)?;
    }
    nvml_costs(o, u)
}

/// What provetop's own NVML calls cost (a histogram per call kind: the kinds are the fixed
/// set of calls provetop makes), and the backoff now (1: reading at the asked rate). Left
/// out without NVML.
fn nvml_costs(o: &mut Out<'_, '_>, u: &Usage) -> fmt::Result {
    use provetop_shared::record::NVML_CALL_BUCKETS;
    if u.nvml_calls.is_empty() {
        return Ok(());
    }
    {
        let mut m = o.enc.encode_descriptor(
            "nvml_call",
            "time of each NVML call provetop made, per call kind",
            Some(&Unit::Seconds),
            MetricType::Histogram,
        )?;
        for c in &u.nvml_calls {
            let buckets: Vec<(f64, u64)> = c
                .buckets
                .iter()
                .enumerate()
                .map(|(i, &n)| {
                    (
                        NVML_CALL_BUCKETS.get(i).copied().unwrap_or(f64::INFINITY),
                        n,
                    )
                })
                .collect();
            m.encode_family(&[("call", cut(&c.call))])?
                .encode_histogram::<prometheus_client::encoding::NoLabelSet>(
                    c.sum_ns as f64 / 1e9,
                    c.count,
                    &buckets,
                    None,
                )?;
        }
    }
    o.gauge(
        "nvml_backoff",
        "how many times slower than asked provetop reads NVML now (its calls slowed)",
        None,
        u64::from(u.nvml_backoff.unwrap_or(1)),
    )
}

/// Each GPU's details: which card it is, its temperature, power (and limit), SM clock, PCIe
/// rates and health (slowdowns, ECC errors, PCIe replays, the last XID). A family no GPU has a
/// reading for is left out whole.
fn gpu_gauges(o: &mut Out<'_, '_>, u: &Usage) -> fmt::Result {
    let gpus: Vec<_> = u
        .gpus
        .iter()
        .filter(|g| (g.index as usize) < MAX_GPUS)
        .map(|g| (g, gpu_labels(g.index)))
        .collect();
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
    // The health metrics of the table (alert rules read them too).
    for m in [
        Metric::GpuTemp,
        Metric::GpuThrottled,
        Metric::GpuEccUncorrected,
        Metric::GpuPcieReplays,
    ] {
        let series = gpu_series(m, None, Some(u));
        if !series.is_empty() {
            o.gpu_metric(m, &series)?;
        }
    }
    let series = |f: fn(&provetop_shared::record::GpuDetail) -> Option<f64>| {
        gpus.iter()
            .filter_map(move |(g, l)| Some(([l[0].as_str(), l[1].as_str()], f(g)?)))
            .collect::<Vec<_>>()
    };
    let families: [GpuFamily; 7] = [
        (
            "gpu_power_limit",
            "the power limit the driver enforces on the GPU (NVML)",
            Some(Unit::Other("watts".into())),
            |g| g.power_limit_w,
        ),
        (
            "gpu_ecc_corrected_errors",
            "corrected ECC errors of the GPU since the driver loaded (volatile counter)",
            None,
            |g| g.ecc_corrected.map(|v| v as f64),
        ),
        (
            "gpu_last_xid",
            "the last XID error NVML reported for the GPU during the session",
            None,
            |g| g.xid.map(|v| v as f64),
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
            o.family(Gauge, name, help, unit, GPU_KEYS, v)?;
        }
    }
    Ok(())
}
