//! The exposition: what one scrape writes, family by family, from the [`State`] under its
//! lock (taken once per scrape). The build and prover info, memory from the latest sample
//! (and the per-GPU memory and utilisation), the usage families ([`usage_gauges`]), the
//! kernel's ([`kernel_gauges`]: the limit that binds, pressure, the cgroup), the forecasts, phases, proofs, the child, alerts, and provetop's own health. A scrape counts
//! itself and resets the interval peak to the latest RSS.
//!
//! The memory, usage and GPU gauges that are metrics of the metric table take their name,
//! unit, help and reading from its Prometheus column ([`Out::metric`]); the families written
//! here by hand are the readings the table has no metric for, and the phases, proofs, child,
//! alerts and health.

use std::fmt;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::DescriptorEncoder;
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Unit;
use provetop_shared::classify::ThresholdPhase;
use provetop_shared::metric::Metric;
use provetop_shared::record::GpuReading;
use provetop_shared::Sample;

use super::kernel::kernel_gauges;
use super::labels::{gpu_labels, phase_name, GPU_KEYS, LEVELS, PHASES, PROVER_STATES, RESULTS};
use super::out::{gpu_series, Counter, Gauge, Out, Value};
use super::state::{State, CGROUP_HELD_NS};
use super::usage::usage_gauges;
use super::{Metrics, MAX_GPUS};

/// The collector a scrape's registry encodes: the state, under its lock, once.
#[derive(Debug)]
pub(super) struct Scrape {
    pub(super) metrics: Metrics,
}

impl Collector for Scrape {
    fn encode(&self, mut enc: DescriptorEncoder) -> fmt::Result {
        let mut st = self.metrics.lock();
        st.scrapes += 1;
        let st = &mut *st;
        let o = &mut Out { enc: &mut enc };
        info(o, st)?;
        memory(o, st)?;
        if let Some(u) = &st.usage {
            usage_gauges(o, u)?;
        }
        if let Some(k) = &st.kernel {
            kernel_gauges(o, k)?;
        }
        forecasts(o, st)?;
        phases(o, st)?;
        proofs(o, st)?;
        child(o, st)?;
        alerts(o, st)?;
        health(o, st)
    }
}

fn bytes() -> Option<Unit> {
    Some(Unit::Bytes)
}

/// provetop's build, and the prover as its hello says.
fn info(o: &mut Out<'_, '_>, st: &State) -> fmt::Result {
    o.enc
        .encode_descriptor("build", "provetop's build", None, MetricType::Info)?
        .encode_info(&[("version", env!("CARGO_PKG_VERSION"))])?;
    if let Some(id) = &st.session {
        o.enc
            .encode_descriptor(
                "session",
                "the session: its id, as provetop ls names it",
                None,
                MetricType::Info,
            )?
            .encode_info(&[("session", id.as_str())])?;
    }
    if let Some(p) = &st.prover {
        let mode = st.mode.map(|m| m.to_string()).unwrap_or_default();
        o.enc
            .encode_descriptor(
                "prover",
                "the supervised prover, as its hello says (mode: the batch mode now)",
                None,
                MetricType::Info,
            )?
            .encode_info(&[
                ("prover_version", p.version.as_str()),
                ("backend", p.backend.as_str()),
                ("protocol", p.protocol.as_str()),
                ("circuit", p.circuit.as_str()),
                ("mode", mode.as_str()),
            ])?;
    }
    Ok(())
}

/// The family of a metric of the table that every sample reads.
fn sample_metric(o: &mut Out<'_, '_>, m: Metric, s: &Sample) -> fmt::Result {
    o.metric(m, m.of(s).map(Value::Whole))
}

/// Memory, from the latest sample: the tree's, the system's, the cgroup's and the GPUs'. The
/// interval peak starts anew at the latest RSS.
fn memory(o: &mut Out<'_, '_>, st: &mut State) -> fmt::Result {
    let Some(s) = &st.sample else {
        return Ok(());
    };
    sample_metric(o, Metric::Rss, s)?;
    let peak = st.interval_peak.take().unwrap_or(s.rss);
    o.gauge(
        "rss_interval_peak",
        "highest RSS of the tree since the previous scrape (interval peaks included)",
        bytes(),
        peak,
    )?;
    st.interval_peak = Some(s.rss);
    for m in [
        Metric::Anon,
        Metric::File,
        Metric::Shmem,
        Metric::Swap,
        Metric::Locked,
    ] {
        sample_metric(o, m, s)?;
    }
    // One family of two readings: what smaps shows and what the prover reports.
    let pinned: Vec<([&'static str; 1], u64)> =
        [("measured", s.pinned), ("reported", st.pinned_reported)]
            .into_iter()
            .filter_map(|(k, v)| Some(([k], v?)))
            .collect();
    if !pinned.is_empty() {
        o.family(
            Gauge,
            "pinned",
            "CUDA pinned host memory: measured (smaps) and reported by the prover",
            bytes(),
            ["source"],
            pinned,
        )?;
    }
    o.gauge("processes", "processes in the tree", None, s.procs)?;
    sample_metric(o, Metric::MemAvailable, s)?;
    o.opt_gauge("mem_total", "MemTotal of the system", bytes(), s.mem_total)?;
    let cgroup_current = st
        .cgroup_current
        .filter(|&(t, _)| st.now.saturating_sub(t) <= CGROUP_HELD_NS)
        .map(|(_, c)| c);
    o.opt_gauge(
        "cgroup_memory_current",
        "memory.current of the cgroup whose limit binds the tree",
        bytes(),
        cgroup_current,
    )?;
    o.opt_gauge(
        "cgroup_memory_max",
        "the cgroup limit that binds the tree: of memory.max and memory.high up the hierarchy, the one with the least room (absent when none)",
        bytes(),
        s.cgroup_max,
    )?;
    if !s.gpus.is_empty() {
        gpus(o, s)?;
    }
    Ok(())
}

/// Each GPU's memory (the tree's, the device's used and total) and utilisation, from the
/// latest sample.
fn gpus(o: &mut Out<'_, '_>, s: &Sample) -> fmt::Result {
    let gpus: Vec<(&GpuReading, [String; 2])> = s
        .gpus
        .iter()
        .filter(|g| (g.index as usize) < MAX_GPUS)
        .map(|g| (g, gpu_labels(g.index)))
        .collect();
    fn labels(l: &[String; 2]) -> [&str; 2] {
        [l[0].as_str(), l[1].as_str()]
    }
    o.family(
        Gauge,
        "gpu_memory_used",
        "GPU memory used by the process tree, per device (gpu: the NVML index, as dcgm-exporter labels it)",
        bytes(),
        GPU_KEYS,
        gpus.iter().map(|(g, l)| (labels(l), g.proc_used)),
    )?;
    o.gpu_metric(Metric::GpuMem, &gpu_series(Metric::GpuMem, Some(s), None))?;
    o.family(
        Gauge,
        "gpu_device_memory_total",
        "GPU memory of the device",
        bytes(),
        GPU_KEYS,
        gpus.iter().map(|(g, l)| (labels(l), g.total)),
    )?;
    o.gpu_metric(Metric::GpuUtil, &gpu_series(Metric::GpuUtil, Some(s), None))
}

/// The forecasts (memory left at the running proof's peak, time to OOM) and the samples
/// taken.
fn forecasts(o: &mut Out<'_, '_>, st: &State) -> fmt::Result {
    o.metric(Metric::PredictedFree, st.predicted_free.map(Value::Decimal))?;
    o.metric(Metric::TimeToOom, st.time_to_oom.map(Value::Decimal))?;
    o.counter("samples", "memory samples taken", None, st.samples)
}

/// The phases open now and their time, the closed spans' durations, the threshold phase and
/// the prover's run state.
fn phases(o: &mut Out<'_, '_>, st: &State) -> fmt::Result {
    o.family(
        Gauge,
        "phase",
        "1 for each phase with a span open now (the SRS load included), else 0",
        None,
        ["phase"],
        (0..PHASES).map(|i| ([phase_name(i)], u64::from(st.open_n[i] > 0))),
    )?;
    o.family(
        Gauge,
        "phase_open_spans",
        "spans of each phase open now (partitions count one each)",
        None,
        ["phase"],
        (0..PHASES).map(|i| ([phase_name(i)], st.open_n[i] as u64)),
    )?;
    o.family(
        Counter,
        "phase",
        "time with at least one span of the phase open",
        Some(Unit::Seconds),
        ["phase"],
        (0..PHASES).map(|i| ([phase_name(i)], st.busy_secs(i))),
    )?;
    o.histograms(
        "phase_duration",
        "durations of closed phase spans (the prover's measure)",
        Some("phase"),
        (0..PHASES).map(|i| (phase_name(i), &st.phase_hist[i])),
    )?;
    if let Some(tp) = st.threshold_phase {
        o.family(
            Gauge,
            "threshold_phase",
            "1 for the RSS threshold phase now (children without events), else 0",
            None,
            ["phase"],
            ThresholdPhase::ALL
                .iter()
                .map(|p| ([p.name()], u64::from(*p == tp))),
        )?;
    }
    if let Some(ps) = st.prover_state {
        o.family(
            Gauge,
            "prover_state",
            "1 for the prover's run state now, else 0",
            None,
            ["state"],
            PROVER_STATES
                .iter()
                .map(|s| ([crate::model::prover::state_name(*s)], u64::from(*s == ps))),
        )?;
    }
    Ok(())
}

/// Proofs finished by result, their durations, those running, and the last one's peak and
/// duration.
fn proofs(o: &mut Out<'_, '_>, st: &State) -> fmt::Result {
    o.family(
        Counter,
        "proofs",
        "proofs finished, by result (cancelled: never started)",
        None,
        ["result"],
        (0..RESULTS.len()).map(|i| ([RESULTS[i]], st.proofs[i])),
    )?;
    o.histograms(
        "proof_duration",
        "wall seconds of finished proofs",
        None,
        [("", &st.proof_hist)],
    )?;
    o.gauge(
        "proofs_running",
        "proofs in flight",
        None,
        st.running as u64,
    )?;
    o.opt_gauge(
        "last_proof_peak",
        "highest RSS of the tree while the last finished proof ran",
        bytes(),
        st.last_proof_peak,
    )?;
    o.opt_gauge(
        "last_proof_duration",
        "wall seconds of the last finished proof",
        Some(Unit::Seconds),
        st.last_proof_seconds,
    )
}

/// The child: running, starts, restarts, OOM kills.
fn child(o: &mut Out<'_, '_>, st: &State) -> fmt::Result {
    o.gauge(
        "child_running",
        "1 while the supervised (or watched) process runs",
        None,
        u64::from(st.child_running),
    )?;
    o.counter(
        "child_starts",
        "starts of the supervised child",
        None,
        st.child_starts,
    )?;
    o.counter(
        "restarts",
        "restarts of the supervised child",
        None,
        st.restarts,
    )?;
    o.counter(
        "oom_kills",
        "OOM kills of the watched tree or of other processes in its memory cgroup",
        None,
        st.oom_kills,
    )
}

/// Each alert rule, firing or not, and the alerts fired by level.
fn alerts(o: &mut Out<'_, '_>, st: &State) -> fmt::Result {
    {
        let mut m = o.enc.encode_descriptor(
            "alert_active",
            "1 while the alert rule fires, else 0",
            None,
            MetricType::Gauge,
        )?;
        for r in &st.rules {
            let labels = [
                ("rule", r.text.as_str()),
                ("level", r.level.name()),
                ("metric", r.metric.as_str()),
            ];
            m.encode_family(&labels)?
                .encode_gauge(&u64::from(r.active))?;
        }
    }
    o.family(
        Counter,
        "alerts_fired",
        "alerts that started firing, by level",
        None,
        ["level"],
        LEVELS
            .iter()
            .map(|l| ([l.name()], st.alerts_fired[*l as usize])),
    )
}

/// provetop's own health: records lost, bad lines, warnings, the recording, the endpoint.
fn health(o: &mut Out<'_, '_>, st: &State) -> fmt::Result {
    o.family(
        Counter,
        "dropped",
        "records lost on the way in: samples (sampler ring full), events (over the rate)",
        None,
        ["what"],
        [
            (["samples"], st.dropped_samples),
            (["events"], st.dropped_events),
        ],
    )?;
    o.counter(
        "bad_lines",
        "lines from the child that were not protocol messages",
        None,
        st.bad_lines,
    )?;
    o.counter(
        "warnings",
        "warnings of the monitor itself",
        None,
        st.warnings,
    )?;
    o.counter(
        "recorder_warnings",
        "session file warnings (writing failed, or works again)",
        None,
        st.recorder_warnings,
    )?;
    o.gauge(
        "recording_failing",
        "1 while writing the session file fails",
        None,
        u64::from(st.recording_failing),
    )?;
    o.counter(
        "metrics_scrapes",
        "scrapes of this endpoint",
        None,
        st.scrapes,
    )?;
    o.counter(
        "metrics_rejected_connections",
        "connections closed before their request head came (too many waiting at once)",
        None,
        st.rejected,
    )
}
