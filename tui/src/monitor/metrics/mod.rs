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
//! The parts: [`state`] folds the records, [`exposition`] writes a scrape through the family
//! writer [`out`] (the usage families in [`usage`]; the gauges of the metric table from its
//! Prometheus column), over the bounded label sets of [`labels`] and the histograms of
//! [`hist`]; [`format`] picks the text format and [`endpoint`] serves it, taking a connection
//! once its request head is whole ([`admission`]).
//!
//! [`docs/metrics.md`](../../../../docs/metrics.md) lists every metric.

mod admission;
pub mod endpoint;
mod exposition;
mod format;
mod hist;
mod kernel;
mod labels;
mod out;
mod state;
mod usage;

use std::sync::{Arc, Mutex, MutexGuard};

use prometheus_client::registry::Registry;
use provetop_shared::alerts::Rule;
use provetop_shared::Record;

pub use endpoint::Endpoint;
pub use format::Format;
pub use hist::DURATION_BUCKETS;

use crate::model::{Effects, Model};
use exposition::Scrape;
use state::State;

/// Alert rules exported by name at most (the configured ones come first).
pub const MAX_RULES: usize = 256;
/// GPUs exported at most (by device index).
pub const MAX_GPUS: usize = 64;
/// Longest label value taken from the prover's `hello`, in characters.
pub const MAX_LABEL_CHARS: usize = 64;

/// The metrics of one session: fed by the pipeline, read by scrapes (cheap to clone: one
/// shared state).
#[derive(Debug, Clone)]
pub struct Metrics {
    state: Arc<Mutex<State>>,
}

impl Metrics {
    /// Metrics for a session alerting on `rules` (exported by rule, inactive at first).
    pub fn new(rules: &[Rule]) -> Self {
        Metrics {
            state: Arc::new(Mutex::new(State::new(rules))),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic elsewhere while holding it leaves plain counters: still worth serving.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Fold one record the pipeline stored, with what it changed in `model` (`fx`).
    pub fn observe(&self, rec: &Record, fx: &Effects, model: &Model) {
        self.lock().observe(rec, fx, model);
    }

    /// The recorder warned (writing the session file failed, or works again); `failing`:
    /// whether it fails now.
    pub fn recorder_warning(&self, failing: bool) {
        let mut st = self.lock();
        st.recorder_warnings += 1;
        st.recording_failing = failing;
    }

    /// The session's id, as `provetop ls` and the control socket name it: exported as
    /// `provetop_session_info{session}` (one series; the fleet screen's attach target).
    pub fn session(&self, id: &str) {
        self.lock().session = Some(labels::cut(id));
    }

    /// The session watches a process that runs now (`watch PID`): it counts as the child
    /// until its end is recorded.
    pub fn watching(&self) {
        self.lock().child_running = true;
    }

    /// A connection the endpoint closed before its request head came (too many waiting).
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

#[cfg(test)]
mod tests;
