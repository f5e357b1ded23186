//! The prover as its events describe it: `hello`, run state, the SRS, proof counts, memory
//! reports, refusals, errors and `bye`.

use provetop_shared::protocol::{GpuInfo, ProverConfig, ProverState};
use provetop_shared::{Backend, BatchMode, Event, SrsSource};

use super::effects::{Effect, Effects};
use super::log::{Log, Logged};
use super::proofs::ProofEnd;

/// Where the SRS (Groth16 parameters) stands.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum SrsState {
    /// No SRS event seen.
    #[default]
    Unknown,
    /// Loading or generating.
    Loading {
        source: SrsSource,
        /// Expected bytes.
        bytes: Option<u64>,
        /// Units done / total, from `srs_progress`.
        progress: Option<(u64, u64)>,
        /// Since, ns.
        since: u64,
    },
    /// Resident.
    Ready {
        bytes: u64,
        /// Of which pinned.
        pinned_bytes: u64,
        source: SrsSource,
        /// Seconds it took.
        duration_s: f64,
    },
}

impl SrsState {
    /// The resident SRS an `srs_ready` event `e` names ([`SrsState::Unknown`] for any other
    /// event).
    pub fn ready_of(e: &Event) -> SrsState {
        match e {
            Event::SrsReady {
                bytes,
                pinned_bytes,
                source,
                duration_s,
            } => SrsState::Ready {
                bytes: *bytes,
                pinned_bytes: *pinned_bytes,
                source: *source,
                duration_s: *duration_s,
            },
            _ => SrsState::Unknown,
        }
    }
}

/// What the prover said about itself in `hello`.
#[derive(Debug, Clone, PartialEq)]
pub struct HelloInfo {
    pub protocol: String,
    pub prover_version: String,
    pub pid: u32,
    pub backend: Backend,
    pub gpus: Vec<GpuInfo>,
    /// The workload.
    pub config: ProverConfig,
}

impl HelloInfo {
    /// What `e` says, when it is a `hello`.
    pub fn of(e: &Event) -> Option<HelloInfo> {
        let Event::Hello {
            protocol,
            prover_version,
            pid,
            backend,
            gpus,
            config,
        } = e
        else {
            return None;
        };
        Some(HelloInfo {
            protocol: protocol.clone(),
            prover_version: prover_version.clone(),
            pid: *pid,
            backend: *backend,
            gpus: gpus.clone(),
            config: config.clone(),
        })
    }
}

/// The latest `memory_report`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemoryReport {
    pub pinned: u64,
    pub gpu: u64,
    pub srs: u64,
    /// GPU bytes in live use in the prover's pool, and the pool's size, where it says.
    pub gpu_live: Option<u64>,
    pub gpu_reserved: Option<u64>,
}

/// The prover's state, from its events.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ProverView {
    /// The `hello`, once seen.
    pub hello: Option<HelloInfo>,
    /// Current batch mode.
    pub mode: Option<BatchMode>,
    /// Run state from `state` events.
    pub state: Option<ProverState>,
    pub srs: SrsState,
    /// Proofs finished ok.
    pub proofs_done: u64,
    /// Sectors those proofs held (more than proofs once `batch:N` ran).
    pub sectors_done: u64,
    pub proofs_failed: u64,
    /// Proofs in flight that the session's stop ended (not counted as failed).
    pub proofs_stopped: u64,
    /// Queued proofs cancelled before they started (the prover stopped).
    pub proofs_cancelled: u64,
    /// Seconds per proof (per sector) of the last finished proof.
    pub last_s: Option<f64>,
    /// Sum of seconds over finished proofs (for the average per sector).
    sum_s: f64,
    pub report: Option<MemoryReport>,
    /// Last refused mode change: (requested, reason).
    pub refused: Option<(BatchMode, String)>,
    /// The reason the prover gave in `bye`.
    pub bye: Option<String>,
    /// Last error the prover reported.
    pub last_error: Option<String>,
}

impl ProverView {
    /// Average seconds per proof (per sector) over finished proofs.
    pub fn avg_s(&self) -> Option<f64> {
        (self.sectors_done > 0).then(|| self.sum_s / self.sectors_done as f64)
    }

    /// Count a proof that ended (see [`super::Proofs::apply`]).
    pub fn count(&mut self, end: ProofEnd) {
        match end {
            ProofEnd::Done {
                sectors,
                duration_s,
            } => {
                let per = duration_s / sectors as f64;
                self.proofs_done += 1;
                self.sectors_done += sectors as u64;
                self.last_s = Some(per);
                self.sum_s += per * sectors as f64;
            }
            ProofEnd::Failed => self.proofs_failed += 1,
            ProofEnd::Stopped => self.proofs_stopped += 1,
            ProofEnd::Cancelled => self.proofs_cancelled += 1,
        }
    }
}

/// The prover's state as the header and the export's phase column name it.
pub fn state_name(s: ProverState) -> &'static str {
    match s {
        ProverState::Idle => "idle",
        ProverState::Proving => "proving",
        ProverState::Paused => "paused",
        ProverState::Stopping => "stopping",
    }
}

impl ProverView {
    /// An event at `t`: what the prover says of itself (its proofs and phases are the
    /// other domains').
    pub fn apply(&mut self, t: u64, e: &Event, log: &mut Log, fx: &mut Effects) {
        match e {
            Event::Hello { .. } => {
                let Some(hello) = HelloInfo::of(e) else {
                    return;
                };
                self.mode = Some(hello.config.mode);
                self.hello = Some(hello);
                log.push(t, Logged::Event(e.clone()));
            }
            Event::SrsLoading { source, bytes } => {
                self.srs = SrsState::Loading {
                    source: *source,
                    bytes: *bytes,
                    progress: None,
                    since: t,
                };
                log.push(t, Logged::Event(e.clone()));
            }
            Event::SrsProgress { done, total } => {
                if let SrsState::Loading { progress, .. } = &mut self.srs {
                    *progress = Some((*done, *total));
                }
            }
            Event::SrsReady { bytes, .. } => {
                self.srs = SrsState::ready_of(e);
                log.push(t, Logged::Event(e.clone()));
                fx.push(Effect::SrsReady { bytes: *bytes });
            }
            Event::ModeRefused { requested, reason } => {
                self.refused = Some((*requested, reason.clone()));
                log.push(t, Logged::Event(e.clone()));
            }
            Event::MemoryReport {
                pinned_bytes,
                gpu_bytes,
                srs_bytes,
                gpu_live_bytes,
                gpu_reserved_bytes,
            } => {
                self.report = Some(MemoryReport {
                    pinned: *pinned_bytes,
                    gpu: *gpu_bytes,
                    srs: *srs_bytes,
                    gpu_live: *gpu_live_bytes,
                    gpu_reserved: *gpu_reserved_bytes,
                });
            }
            Event::State { state } => {
                self.state = Some(*state);
                fx.push(Effect::StateChanged(*state));
                log.push(t, Logged::Event(e.clone()));
            }
            Event::Log { .. } => log.push(t, Logged::Event(e.clone())),
            Event::Error { message, .. } => {
                self.last_error = Some(message.clone());
                log.push(t, Logged::Event(e.clone()));
            }
            Event::Bye { reason, .. } => {
                self.bye = Some(reason.clone());
                self.state = Some(ProverState::Stopping);
                fx.push(Effect::StateChanged(ProverState::Stopping));
                log.push(t, Logged::Event(e.clone()));
            }
            Event::ProofStarted { mode, .. } => self.mode = Some(*mode),
            Event::ModeChanged { to, .. } => self.mode = Some(*to),
            Event::ProofQueued { .. }
            | Event::ProofFinished { .. }
            | Event::PhaseStarted { .. }
            | Event::PhaseEnded { .. } => {}
        }
    }
}
