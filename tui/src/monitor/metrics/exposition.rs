//! The exposition: what one scrape writes, family by family, from the [`State`](super::state::State) under its lock
//! (taken once per scrape). The build and prover info, memory from the latest sample (and the
//! per-GPU memory and utilisation), the usage families ([`usage_gauges`]), phases, proofs, the
//! child, alerts, and provetop's own health. A scrape counts itself and resets the interval
//! peak to the latest RSS.

use std::fmt;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::DescriptorEncoder;
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Unit;
use provetop_shared::classify::ThresholdPhase;

use super::labels::{gpu_labels, phase_name, LEVELS, PHASES, PROVER_STATES, RESULTS};
use super::out::{Counter, Gauge, Out};
use super::state::CGROUP_HELD_NS;
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
        let mut o = Out { enc: &mut enc };
        let b = || Some(Unit::Bytes);
        o.enc
            .encode_descriptor("build", "provetop's build", None, MetricType::Info)?
            .encode_info(&[("version", env!("CARGO_PKG_VERSION"))])?;
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

        // Memory, from the latest sample.
        if let Some(s) = &st.sample {
            o.gauge(
                "rss",
                "resident memory of the process tree (VmRSS)",
                b(),
                s.rss,
            )?;
            let peak = st.interval_peak.take().unwrap_or(s.rss);
            o.gauge(
                "rss_interval_peak",
                "highest RSS of the tree since the previous scrape (interval peaks included)",
                b(),
                peak,
            )?;
            st.interval_peak = Some(s.rss);
            o.opt_gauge(
                "rss_anon",
                "anonymous resident memory (RssAnon)",
                b(),
                s.anon,
            )?;
            o.opt_gauge(
                "rss_file",
                "file-backed resident memory (RssFile)",
                b(),
                s.file,
            )?;
            o.opt_gauge(
                "rss_shmem",
                "shared resident memory (RssShmem)",
                b(),
                s.shmem,
            )?;
            o.opt_gauge(
                "swap",
                "swapped-out memory of the tree (VmSwap)",
                b(),
                s.swap,
            )?;
            o.opt_gauge(
                "locked",
                "mlocked memory of the tree (VmLck)",
                b(),
                s.locked,
            )?;
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
                    b(),
                    ["source"],
                    pinned,
                )?;
            }
            o.gauge("processes", "processes in the tree", None, s.procs)?;
            o.opt_gauge(
                "mem_available",
                "MemAvailable of the system",
                b(),
                s.mem_available,
            )?;
            o.opt_gauge("mem_total", "MemTotal of the system", b(), s.mem_total)?;
            let cgroup_current = st
                .cgroup_current
                .filter(|&(t, _)| st.now.saturating_sub(t) <= CGROUP_HELD_NS)
                .map(|(_, c)| c);
            o.opt_gauge(
                "cgroup_memory_current",
                "memory.current of the tree's cgroup",
                b(),
                cgroup_current,
            )?;
            o.opt_gauge(
                "cgroup_memory_max",
                "memory.max of the tree's cgroup (absent when unlimited)",
                b(),
                s.cgroup_max,
            )?;
            if !s.gpus.is_empty() {
                let gpus: Vec<(&provetop_shared::record::GpuReading, [String; 2])> = s
                    .gpus
                    .iter()
                    .filter(|g| (g.index as usize) < MAX_GPUS)
                    .map(|g| (g, gpu_labels(g.index)))
                    .collect();
                fn labels(l: &[String; 2]) -> [&str; 2] {
                    [l[0].as_str(), l[1].as_str()]
                }
                let keys = ["gpu", "device"];
                o.family(
                    Gauge,
                    "gpu_memory_used",
                    "GPU memory used by the process tree, per device (gpu: the NVML index, as dcgm-exporter labels it)",
                    b(),
                    keys,
                    gpus.iter().map(|(g, l)| (labels(l), g.proc_used)),
                )?;
                o.family(
                    Gauge,
                    "gpu_device_memory_used",
                    "GPU memory used on the device by every process",
                    b(),
                    keys,
                    gpus.iter().map(|(g, l)| (labels(l), g.used)),
                )?;
                o.family(
                    Gauge,
                    "gpu_device_memory_total",
                    "GPU memory of the device",
                    b(),
                    keys,
                    gpus.iter().map(|(g, l)| (labels(l), g.total)),
                )?;
                o.family(
                    Gauge,
                    "gpu_utilization",
                    "GPU utilization of the device (0 to 1)",
                    Some(Unit::Other("ratio".into())),
                    keys,
                    gpus.iter().filter_map(|(g, l)| {
                        Some((labels(l), f64::from(g.utilization()?) / 100.0))
                    }),
                )?;
            }
        }
        if let Some(u) = &st.usage {
            usage_gauges(&mut o, u)?;
        }
        o.opt_gauge(
            "predicted_free",
            "memory predicted to be left when the running proof peaks (negative: short by that much)",
            b(),
            st.predicted_free,
        )?;
        o.opt_gauge(
            "time_to_oom",
            "seconds until memory runs out at the process tree's recent RSS growth (absent while it is not growing)",
            Some(Unit::Seconds),
            st.time_to_oom,
        )?;
        o.counter("samples", "memory samples taken", None, st.samples)?;

        // Phases.
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

        // Proofs.
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
            b(),
            st.last_proof_peak,
        )?;
        o.opt_gauge(
            "last_proof_duration",
            "wall seconds of the last finished proof",
            Some(Unit::Seconds),
            st.last_proof_seconds,
        )?;

        // The child.
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
            "ends of the child by an OOM kill",
            None,
            st.oom_kills,
        )?;

        // Alerts.
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
        )?;

        // Self-health.
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
            "connections turned away (too many open at once)",
            None,
            st.rejected,
        )?;
        Ok(())
    }
}
