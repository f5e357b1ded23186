//! The session's metrics for a monitoring stack (`--metrics ADDR`): what the screen shows,
//! as Prometheus / OpenMetrics metrics served by [`Endpoint`].
//!
//! The contract:
//! * Fed only by the pipeline: [`Metrics::observe`] gets every record it stores together
//!   with the [`Effects`] `Model::apply` returned for it (and the model after it), and
//!   [`Metrics::recorder_warning`] the recorder's warnings. Nothing here reads /proc or NVML:
//!   a scrape costs no sampling, and what is scraped is what the session file holds.
//! * `provetop_rss_interval_peak_bytes` is the highest RSS of the tree (the sampler's
//!   interval peaks included) since the previous scrape, so a 15 s scrape interval does not
//!   miss a 20 ms spike; a scrape resets it to the latest RSS. Every scrape resets it: two
//!   Prometheus servers scraping one provetop each see the peaks since either's last scrape.
//! * No unbounded label values: phases are the protocol's known names plus `other`, states,
//!   results and levels are fixed sets, alert rules are the configured ones (at most
//!   [`MAX_RULES`]), GPUs are device indices (at most [`MAX_GPUS`]), and the prover's own
//!   words (its `hello`) make one info series at a time, each value cut to
//!   [`MAX_LABEL_CHARS`]. No pid and no proof id is ever a label.
//! * A reading the session does not have (no sample yet, no cgroup limit, no forecast, no
//!   GPU, no usage record yet, a rate the first usage reading lacks, a GPU's temperature NVML
//!   did not give) is left out, never exported as 0. The usage gauges (`provetop_cpu_cores`,
//!   I/O, faults, GPU temperature, power, clocks) are the latest usage record's; a child that
//!   exits or starts takes them away until its next reading.
//! * Every per-GPU series has the labels `gpu` (the NVML index) and `device` (`nvidiaN`);
//!   `provetop_gpu_info{gpu,device,uuid,name}` says which card each index is (UUIDs and names
//!   are cut to [`MAX_LABEL_CHARS`]), for a `group_left` join, so no series changes labels when
//!   the first usage record tells the UUID.
//!
//! [`docs/metrics.md`](../../../../docs/metrics.md) lists every metric.

pub mod endpoint;

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard};

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{
    DescriptorEncoder, EncodeCounterValue, EncodeGaugeValue, NoLabelSet,
};
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::{Registry, Unit};
use provetop_collect::alerts::Rule;
use provetop_shared::classify::ThresholdPhase;
use provetop_shared::protocol::ProverState;
use provetop_shared::{
    AlertLevel, BatchMode, Event, Mark, Phase, Record, RecordBody, Sample, Usage,
};

pub use endpoint::Endpoint;

use crate::model::{Effect, Effects, Model, SpanSource};

/// Alert rules exported by name at most (the configured ones come first).
pub const MAX_RULES: usize = 256;
/// GPUs exported at most (by device index).
pub const MAX_GPUS: usize = 64;
/// Longest label value taken from the prover's `hello`, in characters.
pub const MAX_LABEL_CHARS: usize = 64;

/// The phases this build knows by name, in label order; every other phase is `other`.
static KNOWN_PHASES: [Phase; 11] = [
    Phase::SrsGenerate,
    Phase::SrsLoad,
    Phase::Synthesis,
    Phase::Prove,
    Phase::GpuSetup,
    Phase::FftH,
    Phase::MsmH,
    Phase::MsmL,
    Phase::MsmAB1,
    Phase::MsmB2,
    Phase::Verify,
];
/// Phase label values: the known phases, then `other`.
const PHASES: usize = KNOWN_PHASES.len() + 1;

fn phase_index(p: &Phase) -> usize {
    KNOWN_PHASES
        .iter()
        .position(|k| k == p)
        .unwrap_or(KNOWN_PHASES.len())
}

fn phase_name(i: usize) -> &'static str {
    KNOWN_PHASES.get(i).map_or("other", Phase::as_str)
}

const PROVER_STATES: [ProverState; 4] = [
    ProverState::Idle,
    ProverState::Proving,
    ProverState::Paused,
    ProverState::Stopping,
];

const LEVELS: [AlertLevel; 3] = [AlertLevel::Info, AlertLevel::Warn, AlertLevel::Crit];

/// Upper bounds of the duration histograms, seconds: a 10 ms phase to an hour-long proof.
pub const DURATION_BUCKETS: [f64; 16] = [
    0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0,
    3600.0,
];

/// A histogram of durations over [`DURATION_BUCKETS`] (and `+Inf`).
#[derive(Debug, Clone, Default)]
struct Hist {
    /// Per bucket, not cumulative; the last is `+Inf`.
    counts: [u64; DURATION_BUCKETS.len() + 1],
    sum: f64,
    count: u64,
}

impl Hist {
    fn observe(&mut self, secs: f64) {
        if !(secs.is_finite() && secs >= 0.0) {
            return;
        }
        self.counts[DURATION_BUCKETS.partition_point(|b| *b < secs)] += 1;
        self.sum += secs;
        self.count += 1;
    }

    fn buckets(&self) -> [(f64, u64); DURATION_BUCKETS.len() + 1] {
        let mut out = [(f64::INFINITY, 0); DURATION_BUCKETS.len() + 1];
        for (i, o) in out.iter_mut().enumerate() {
            *o = (
                DURATION_BUCKETS.get(i).copied().unwrap_or(f64::INFINITY),
                self.counts[i],
            );
        }
        out
    }
}

/// Proof results as labels.
#[derive(Debug, Clone, Copy)]
enum ProofResult {
    Ok,
    Failed,
    Cancelled,
}

const RESULTS: [&str; 3] = ["ok", "failed", "cancelled"];

/// One configured (or seen) alert rule.
#[derive(Debug, Clone)]
struct RuleState {
    text: String,
    level: AlertLevel,
    metric: String,
    active: bool,
}

/// What the prover said in `hello`, cut for labels.
#[derive(Debug, Clone, Default)]
struct ProverInfo {
    version: String,
    backend: String,
    protocol: String,
    circuit: String,
}

/// Everything a scrape shows, folded from the records.
#[derive(Debug, Default)]
struct State {
    sample: Option<Sample>,
    /// The latest usage record of the current child.
    usage: Option<Usage>,
    samples: u64,
    /// Highest RSS (interval peaks included) since the previous scrape.
    interval_peak: Option<u64>,
    pinned_reported: Option<u64>,
    predicted_free: Option<f64>,
    /// Seconds until memory runs out at the recent RSS growth (absent while not growing).
    time_to_oom: Option<f64>,
    /// Prover spans open per phase, as the model counts them (only phases with some open).
    open: HashMap<Phase, usize>,
    /// The SRS load or generation open (a span of its own in the model).
    srs_open: Option<Phase>,
    /// Spans open per phase label (prover spans and the SRS one).
    open_n: [usize; PHASES],
    /// When each phase label last went from none open to some open (record time, ns).
    open_since: [Option<u64>; PHASES],
    /// Time with some span of the phase open, ns, closed stretches only.
    busy_ns: [u64; PHASES],
    phase_hist: [Hist; PHASES],
    threshold_phase: Option<ThresholdPhase>,
    prover_state: Option<ProverState>,
    prover: Option<ProverInfo>,
    mode: Option<BatchMode>,
    proofs: [u64; 3],
    proof_hist: Hist,
    running: usize,
    last_proof_peak: Option<u64>,
    last_proof_seconds: Option<f64>,
    child_running: bool,
    child_starts: u64,
    restarts: u64,
    oom_kills: u64,
    rules: Vec<RuleState>,
    alerts_fired: [u64; 3],
    dropped_samples: u64,
    dropped_events: u64,
    bad_lines: u64,
    warnings: u64,
    recorder_warnings: u64,
    recording_failing: bool,
    /// Newest record time, ns.
    now: u64,
    scrapes: u64,
    rejected: u64,
}

/// The metrics of one session: fed by the pipeline, read by scrapes (cheap to clone: one
/// shared state).
#[derive(Debug, Clone)]
pub struct Metrics {
    state: Arc<Mutex<State>>,
}

/// The exposition formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// `application/openmetrics-text; version=1.0.0`.
    OpenMetrics,
    /// `text/plain; version=0.0.4`.
    Prometheus,
}

impl Format {
    /// The response's `Content-Type`.
    pub fn content_type(self) -> &'static str {
        match self {
            Format::OpenMetrics => "application/openmetrics-text; version=1.0.0; charset=utf-8",
            Format::Prometheus => prometheus_client::encoding::prometheus_text::CONTENT_TYPE,
        }
    }

    /// The format an `Accept` header asks for: OpenMetrics when it ranks
    /// `application/openmetrics-text` at least as high as `text/plain` (q-values; Prometheus
    /// asks for OpenMetrics first), Prometheus text otherwise and without the header.
    pub fn from_accept(accept: Option<&str>) -> Format {
        let Some(accept) = accept else {
            return Format::Prometheus;
        };
        let (mut om, mut text) = (0.0f64, 0.0f64);
        for range in accept.split(',') {
            let mut parts = range.split(';').map(str::trim);
            let media = parts.next().unwrap_or("").to_ascii_lowercase();
            let mut q = 1.0;
            for p in parts {
                if let Some(v) = p.strip_prefix("q=").or_else(|| p.strip_prefix("Q=")) {
                    q = v.trim().parse::<f64>().unwrap_or(0.0).clamp(0.0, 1.0);
                }
            }
            match media.as_str() {
                "application/openmetrics-text" => om = om.max(q),
                "text/plain" | "text/*" | "*/*" => text = text.max(q),
                _ => {}
            }
        }
        if om > 0.0 && om >= text {
            Format::OpenMetrics
        } else {
            Format::Prometheus
        }
    }
}

impl Metrics {
    /// Metrics for a session alerting on `rules` (exported by rule, inactive at first).
    pub fn new(rules: &[Rule]) -> Self {
        let mut st = State::default();
        for r in rules.iter().take(MAX_RULES) {
            if !st.rules.iter().any(|x| x.text == r.text) {
                st.rules.push(RuleState {
                    text: r.text.clone(),
                    level: r.level,
                    metric: r.metric_label(),
                    active: false,
                });
            }
        }
        Metrics {
            state: Arc::new(Mutex::new(st)),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic elsewhere while holding it leaves plain counters: still worth serving.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Fold one record the pipeline stored, with what it changed in `model` (`fx`).
    pub fn observe(&self, rec: &Record, fx: &Effects, model: &Model) {
        let mut st = self.lock();
        st.now = st.now.max(rec.t);
        match &rec.body {
            RecordBody::Sample(s) => {
                let high = s.peak.unwrap_or(s.rss).max(s.rss);
                st.interval_peak = Some(st.interval_peak.map_or(high, |p| p.max(high)));
                st.samples += 1;
                st.pinned_reported = s.pinned_reported.or(model.prover.report.map(|r| r.pinned));
                st.predicted_free = model.predicted_free();
                st.time_to_oom = model.time_to_oom();
                match &mut st.sample {
                    // Reuse the per-GPU vector: a sample at 20 Hz allocates nothing here.
                    Some(old) => old.clone_from(s),
                    None => st.sample = Some(s.clone()),
                }
            }
            RecordBody::Event(Event::Hello {
                protocol,
                prover_version,
                backend,
                config,
                ..
            }) => {
                st.prover = Some(ProverInfo {
                    version: cut(prover_version),
                    backend: backend.to_string(),
                    protocol: cut(protocol),
                    circuit: cut(&config.circuit),
                });
            }
            RecordBody::Event(Event::MemoryReport { pinned_bytes, .. }) => {
                st.pinned_reported = Some(*pinned_bytes);
            }
            RecordBody::Usage(u) => match &mut st.usage {
                Some(old) => old.clone_from(u),
                None => st.usage = Some(u.clone()),
            },
            RecordBody::Mark(m) => match m {
                Mark::Restart { .. } => st.restarts += 1,
                // The usage readings were the old tree's.
                Mark::ChildStarted { .. } => st.usage = None,
                Mark::ChildExited { oom_kill, .. } => {
                    st.oom_kills += u64::from(*oom_kill);
                    st.usage = None;
                }
                Mark::Dropped { what, count } => {
                    if what == "samples" {
                        st.dropped_samples += count;
                    } else {
                        st.dropped_events += count;
                    }
                }
                Mark::BadLine { .. } => st.bad_lines += 1,
                Mark::Warning { .. } => st.warnings += 1,
                _ => {}
            },
            _ => {}
        }
        for e in fx {
            st.effect(rec.t, e, model);
        }
        st.running = model.running.len();
        st.prover_state = model.prover.state;
        st.mode = model.prover.mode;
    }

    /// The recorder warned (writing the session file failed, or works again); `failing`:
    /// whether it fails now.
    pub fn recorder_warning(&self, failing: bool) {
        let mut st = self.lock();
        st.recorder_warnings += 1;
        st.recording_failing = failing;
    }

    /// The session watches a process that runs now (`watch PID`): it counts as the child
    /// until its end is recorded.
    pub fn watching(&self) {
        self.lock().child_running = true;
    }

    /// A connection the endpoint turned away (too many open).
    pub(crate) fn rejected(&self) {
        self.lock().rejected += 1;
    }

    /// One scrape: the exposition in `format`, and the interval peak starts anew.
    pub fn scrape(&self, format: Format) -> String {
        let mut registry = Registry::with_prefix("provetop");
        registry.register_collector(Box::new(Scrape {
            metrics: self.clone(),
        }));
        let mut out = String::with_capacity(16 * 1024);
        // Writing into a String cannot fail, and the collector's own writes only fail with it.
        let _ = match format {
            Format::OpenMetrics => prometheus_client::encoding::text::encode(&mut out, &registry),
            Format::Prometheus => {
                prometheus_client::encoding::prometheus_text::encode(&mut out, &registry)
            }
        };
        out
    }
}

/// A label value from the prover's words: at most [`MAX_LABEL_CHARS`] characters.
fn cut(s: &str) -> String {
    s.chars().take(MAX_LABEL_CHARS).collect()
}

impl State {
    fn effect(&mut self, t: u64, e: &Effect, model: &Model) {
        match e {
            Effect::SpanOpened { source, phase, .. } => self.span_changed(t, *source, phase, model),
            Effect::SpanClosed { source, span } => {
                self.span_changed(t, *source, &span.phase, model);
                let secs = span.duration_s.unwrap_or_else(|| {
                    span.end.unwrap_or(span.start).saturating_sub(span.start) as f64 / 1e9
                });
                self.phase_hist[phase_index(&span.phase)].observe(secs);
            }
            Effect::ProofFinished(p) => {
                let result = if p.ok == Some(true) {
                    ProofResult::Ok
                } else {
                    ProofResult::Failed
                };
                self.proofs[result as usize] += 1;
                let secs = p.duration_s.unwrap_or_else(|| {
                    p.end.unwrap_or(p.start).saturating_sub(p.start) as f64 / 1e9
                });
                self.proof_hist.observe(secs);
                self.last_proof_seconds = Some(secs);
                self.last_proof_peak = p.rss.max();
            }
            Effect::ProofCancelled { .. } => self.proofs[ProofResult::Cancelled as usize] += 1,
            Effect::AlertFired(a) | Effect::AlertCleared(a) => {
                let active = matches!(e, Effect::AlertFired(_));
                if active {
                    self.alerts_fired[a.level as usize] += 1;
                }
                if let Some(r) = self.rules.iter_mut().find(|r| r.text == a.rule) {
                    r.active = active;
                } else if self.rules.len() < MAX_RULES {
                    self.rules.push(RuleState {
                        text: a.rule.clone(),
                        level: a.level,
                        metric: a.metric.clone(),
                        active,
                    });
                }
            }
            Effect::ChildStarted { .. } => {
                self.child_running = true;
                self.child_starts += 1;
            }
            Effect::ChildExited { .. } => self.child_running = false,
            Effect::ThresholdPhaseChanged(p) => self.threshold_phase = Some(*p),
            Effect::ModeChanged { .. } | Effect::StateChanged(_) | Effect::SrsReady { .. } => {}
        }
    }

    /// A span of `phase` opened or closed: take the model's count of that phase's open spans,
    /// and keep the time the phase's label had some open.
    fn span_changed(&mut self, t: u64, source: SpanSource, phase: &Phase, model: &Model) {
        let i = phase_index(phase);
        let was = self.open_n[i];
        match source {
            SpanSource::Prover => {
                let now = model.open.count(phase);
                let before = match self.open.get_mut(phase) {
                    Some(n) => std::mem::replace(n, now),
                    None => {
                        if now > 0 {
                            self.open.insert(phase.clone(), now);
                        }
                        0
                    }
                };
                if now == 0 {
                    self.open.remove(phase);
                }
                self.open_n[i] = self.open_n[i].saturating_sub(before) + now;
            }
            SpanSource::Srs => {
                let now = model.srs_open.as_ref().map(|s| s.phase.clone());
                // The old SRS span goes, the model's comes (another phase label, maybe).
                if let Some(old) = self.srs_open.take() {
                    let j = phase_index(&old);
                    let was_j = self.open_n[j];
                    self.open_n[j] = was_j.saturating_sub(1);
                    if j != i {
                        self.transition(j, t, was_j);
                    }
                }
                if let Some(new) = now {
                    let j = phase_index(&new);
                    let was_j = self.open_n[j];
                    self.open_n[j] += 1;
                    if j != i {
                        self.transition(j, t, was_j);
                    }
                    self.srs_open = Some(new);
                }
            }
        }
        self.transition(i, t, was);
    }

    /// Phase label `i` had `was` spans open before a change at `t`: start or end its stretch.
    fn transition(&mut self, i: usize, t: u64, was: usize) {
        match (was > 0, self.open_n[i] > 0) {
            (false, true) => self.open_since[i] = Some(t),
            (true, false) => {
                if let Some(since) = self.open_since[i].take() {
                    self.busy_ns[i] += t.saturating_sub(since);
                }
            }
            _ => {}
        }
    }

    /// Seconds phase label `i` has had a span open, the open stretch up to the newest record
    /// included.
    fn busy_secs(&self, i: usize) -> f64 {
        let open = self.open_since[i].map_or(0, |s| self.now.saturating_sub(s));
        (self.busy_ns[i] + open) as f64 / 1e9
    }
}

/// A per-GPU gauge of the usage record: name, help, unit, its reading.
type GpuFamily = (
    &'static str,
    &'static str,
    Option<Unit>,
    fn(&provetop_shared::record::GpuDetail) -> Option<f64>,
);

/// `gpu` and `device` label values of a GPU index.
fn gpu_labels(index: u32) -> [String; 2] {
    [index.to_string(), format!("nvidia{index}")]
}

/// The gauges of the latest usage record: the tree's cores, threads, rates, the host's cores,
/// and each GPU's details. A reading the record lacks is left out.
fn usage_gauges(o: &mut Out<'_, '_>, u: &Usage) -> fmt::Result {
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
            o.gauges(name, help, unit, keys, v)?;
        }
    }
    Ok(())
}

/// The collector a scrape's registry encodes: the state, under its lock, once.
#[derive(Debug)]
struct Scrape {
    metrics: Metrics,
}

/// A family's descriptor, then its series.
struct Out<'a, 'e> {
    enc: &'a mut DescriptorEncoder<'e>,
}

impl Out<'_, '_> {
    fn gauge(
        &mut self,
        name: &str,
        help: &str,
        unit: Option<Unit>,
        v: impl EncodeGaugeValue,
    ) -> fmt::Result {
        let mut m = self
            .enc
            .encode_descriptor(name, help, unit.as_ref(), MetricType::Gauge)?;
        m.encode_gauge(&v)
    }

    fn opt_gauge<V: EncodeGaugeValue>(
        &mut self,
        name: &str,
        help: &str,
        unit: Option<Unit>,
        v: Option<V>,
    ) -> fmt::Result {
        match v {
            Some(v) => self.gauge(name, help, unit, v),
            None => Ok(()),
        }
    }

    fn counter(&mut self, name: &str, help: &str, unit: Option<Unit>, v: u64) -> fmt::Result {
        let mut m = self
            .enc
            .encode_descriptor(name, help, unit.as_ref(), MetricType::Counter)?;
        m.encode_counter::<NoLabelSet, _, u64>(&v, None)
    }

    /// A gauge family over `series`: (label values, value), all with the label names `keys`.
    fn gauges<'v, const N: usize, V: EncodeGaugeValue>(
        &mut self,
        name: &str,
        help: &str,
        unit: Option<Unit>,
        keys: [&str; N],
        series: impl IntoIterator<Item = ([&'v str; N], V)>,
    ) -> fmt::Result {
        let mut m = self
            .enc
            .encode_descriptor(name, help, unit.as_ref(), MetricType::Gauge)?;
        for (values, v) in series {
            let labels: [(&str, &str); N] = std::array::from_fn(|i| (keys[i], values[i]));
            m.encode_family(&labels)?.encode_gauge(&v)?;
        }
        Ok(())
    }

    fn counters<'v, const N: usize, V: EncodeCounterValue>(
        &mut self,
        name: &str,
        help: &str,
        unit: Option<Unit>,
        keys: [&str; N],
        series: impl IntoIterator<Item = ([&'v str; N], V)>,
    ) -> fmt::Result {
        let mut m = self
            .enc
            .encode_descriptor(name, help, unit.as_ref(), MetricType::Counter)?;
        for (values, v) in series {
            let labels: [(&str, &str); N] = std::array::from_fn(|i| (keys[i], values[i]));
            m.encode_family(&labels)?
                .encode_counter::<NoLabelSet, _, u64>(&v, None)?;
        }
        Ok(())
    }

    fn histograms<'h>(
        &mut self,
        name: &str,
        help: &str,
        key: Option<&str>,
        series: impl IntoIterator<Item = (&'static str, &'h Hist)>,
    ) -> fmt::Result {
        let unit = Unit::Seconds;
        let mut m = self
            .enc
            .encode_descriptor(name, help, Some(&unit), MetricType::Histogram)?;
        for (value, h) in series {
            let buckets = h.buckets();
            match key {
                Some(k) => m
                    .encode_family(&[(k, value)])?
                    .encode_histogram::<NoLabelSet>(h.sum, h.count, &buckets, None)?,
                None => m.encode_histogram::<NoLabelSet>(h.sum, h.count, &buckets, None)?,
            }
        }
        Ok(())
    }
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
                o.gauges(
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
            o.opt_gauge(
                "cgroup_memory_current",
                "memory.current of the tree's cgroup",
                b(),
                s.cgroup_current,
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
                    .map(|g| (g, [g.index.to_string(), format!("nvidia{}", g.index)]))
                    .collect();
                fn labels(l: &[String; 2]) -> [&str; 2] {
                    [l[0].as_str(), l[1].as_str()]
                }
                let keys = ["gpu", "device"];
                o.gauges(
                    "gpu_memory_used",
                    "GPU memory used by the process tree, per device (gpu: the NVML index, as dcgm-exporter labels it)",
                    b(),
                    keys,
                    gpus.iter().map(|(g, l)| (labels(l), g.proc_used)),
                )?;
                o.gauges(
                    "gpu_device_memory_used",
                    "GPU memory used on the device by every process",
                    b(),
                    keys,
                    gpus.iter().map(|(g, l)| (labels(l), g.used)),
                )?;
                o.gauges(
                    "gpu_device_memory_total",
                    "GPU memory of the device",
                    b(),
                    keys,
                    gpus.iter().map(|(g, l)| (labels(l), g.total)),
                )?;
                o.gauges(
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
        o.gauges(
            "phase",
            "1 for each phase with a span open now (the SRS load included), else 0",
            None,
            ["phase"],
            (0..PHASES).map(|i| ([phase_name(i)], u64::from(st.open_n[i] > 0))),
        )?;
        o.gauges(
            "phase_open_spans",
            "spans of each phase open now (partitions count one each)",
            None,
            ["phase"],
            (0..PHASES).map(|i| ([phase_name(i)], st.open_n[i] as u64)),
        )?;
        o.counters(
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
            o.gauges(
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
            o.gauges(
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
        o.counters(
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
        o.counters(
            "alerts_fired",
            "alerts that started firing, by level",
            None,
            ["level"],
            LEVELS
                .iter()
                .map(|l| ([l.name()], st.alerts_fired[*l as usize])),
        )?;

        // Self-health.
        o.counters(
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

#[cfg(test)]
mod tests;
