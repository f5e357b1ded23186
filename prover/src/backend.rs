//! The proving backend: owns the parameters resident in memory and proves circuits with them.
//!
//! This is the seam for GPU backends:
//!
//! * default (CPU): bellperson's native prover reads bases through
//!   [`crate::timed_params::TimedParams`] (measured MSM phases, abortable multiexps);
//! * feature `cuda`: the same native prover; bellperson runs FFT and multiexps on the GPU
//!   (ec-gpu-gen kernels) and logs its GPU set-up lines, which become `gpu_setup` phases;
//! * feature `supraseal`: bellperson's prover takes `SuprasealParameters`, which reads the
//!   parameter file itself and pins it in host memory (the cache file is readable as is: its
//!   checksum trailer comes after bellperson's encoding). The call is opaque: only `prove` is
//!   reported inside it. Pinned and GPU bytes of GPU backends are reported by
//!   [`Backend::pinned_bytes`] / [`Backend::gpu_bytes`].
//!
//! Proving cannot be interrupted inside bellperson's call except where this crate gets
//! control: between challenges during synthesis (the circuit checks the abort flag) and per
//! base during CPU multiexps (the timed bases check it). FFTs run to completion.

use std::sync::Arc;

use bellperson::groth16::{
    create_random_proof_batch, prepare_verifying_key, verify_proof, Parameters,
    PreparedVerifyingKey, Proof,
};
use bellperson::SynthesisError;
use blstrs::{Bls12, Scalar as Fr};
use provetop_shared::protocol::{Backend as BackendKind, GpuInfo};

use crate::circuit::PartitionCircuit;
use crate::logbridge::CallScope;
use crate::phases::{CallTracker, SubSteps};
use crate::srs::{self, Srs};

/// The backend this build proves with (fixed at compile time by the cargo features).
pub fn build_kind() -> BackendKind {
    if cfg!(feature = "supraseal") {
        BackendKind::Supraseal
    } else if cfg!(feature = "cuda") {
        BackendKind::Cuda
    } else {
        BackendKind::Cpu
    }
}

/// GPUs the backend will use, for `hello` (none on the CPU backend; GPU builds list the
/// devices here).
pub fn detect_gpus() -> Vec<GpuInfo> {
    crate::gpu::detect()
}

/// Parameters resident for the daemon's life, and the prover that uses them.
pub struct Backend {
    // Declared before `params`: unregistered before the vectors it pinned are freed.
    #[cfg(feature = "cuda")]
    _pinned_srs: Option<crate::gpu::PinnedSrs>,
    pinned_bytes: u64,
    params: Parameters<Bls12>,
    pvk: PreparedVerifyingKey<Bls12>,
    srs_bytes: u64,
    #[cfg(feature = "supraseal")]
    supra: bellperson::groth16::SuprasealParameters<Bls12>,
}

/// Backend set-up failure.
#[derive(Debug, thiserror::Error)]
pub enum BackendError {
    /// The GPU backend could not take the parameters.
    #[error("backend cannot load parameters: {0}")]
    Load(String),
}

impl Backend {
    /// Make `srs` resident for this backend.
    pub fn new(srs: Srs) -> Result<Self, BackendError> {
        let pvk = prepare_verifying_key(&srs.params.vk);
        let srs_bytes = srs::resident_bytes(&srs.params);
        #[cfg(feature = "supraseal")]
        let supra = {
            let path = srs.path.clone().ok_or_else(|| {
                BackendError::Load(
                    "supraseal needs the SRS cache file (do not disable the cache)".into(),
                )
            })?;
            bellperson::groth16::SuprasealParameters::<Bls12>::new(path)
                .map_err(|e| BackendError::Load(e.to_string()))?
        };
        // supraseal holds the SRS in pinned memory on the C++ side: keep only the verifying
        // key here, or the SRS would be resident twice.
        #[cfg(feature = "supraseal")]
        let (params, pinned_bytes) = (
            crate::gpu::vk_only(&srs.params),
            crate::gpu::supraseal_pinned_bytes(&srs.params),
        );
        #[cfg(not(feature = "supraseal"))]
        let params = srs.params;
        // cuda: page-lock the resident bases so every multiexp's upload is DMA
        // (PROVETOP_PIN_SRS=0 turns it off, to measure the difference).
        #[cfg(feature = "cuda")]
        let pinned_srs = if std::env::var("PROVETOP_PIN_SRS").as_deref() == Ok("0") {
            None
        } else {
            match crate::gpu::PinnedSrs::register(&params) {
                Ok(p) => Some(p),
                Err(why) => {
                    log::warn!("SRS stays pageable: {why}");
                    None
                }
            }
        };
        #[cfg(all(feature = "cuda", not(feature = "supraseal")))]
        let pinned_bytes = pinned_srs.as_ref().map_or(0, |p| p.bytes());
        #[cfg(not(any(feature = "cuda", feature = "supraseal")))]
        let pinned_bytes = 0;
        Ok(Backend {
            #[cfg(feature = "cuda")]
            _pinned_srs: pinned_srs,
            pinned_bytes,
            params,
            pvk,
            srs_bytes,
            #[cfg(feature = "supraseal")]
            supra,
        })
    }

    /// Which backend this build proves with.
    pub fn kind(&self) -> BackendKind {
        build_kind()
    }

    /// What the backend can report inside a proving call.
    pub fn substeps(&self) -> SubSteps {
        if cfg!(feature = "supraseal") {
            SubSteps::None
        } else {
            SubSteps::Measured
        }
    }

    /// Bytes of SRS held in (host) memory.
    pub fn srs_bytes(&self) -> u64 {
        self.srs_bytes
    }

    /// Bytes this process pinned (cudaHostAlloc/cudaHostRegister); 0 on the CPU.
    pub fn pinned_bytes(&self) -> u64 {
        self.pinned_bytes
    }

    /// Bytes held on GPUs between proofs; 0 on the CPU.
    pub fn gpu_bytes(&self) -> u64 {
        0
    }

    /// The resident parameters.
    pub fn params(&self) -> &Parameters<Bls12> {
        &self.params
    }

    /// Prove `circuits` (same shape) in one bellperson call; phases go to `tracker`.
    /// Synthesis happens inside the call (bellperson 0.27 has no public API that takes
    /// pre-synthesized assignments); each circuit times its own synthesis. The `prove` and
    /// `fft_h` phases come from bellperson's log lines: install [`crate::logbridge`] first.
    pub fn prove(
        &self,
        circuits: Vec<PartitionCircuit>,
        tracker: &Arc<CallTracker>,
    ) -> Result<Vec<Proof<Bls12>>, SynthesisError> {
        let _scope = CallScope::enter(tracker.clone());
        let mut rng = rand::thread_rng();
        #[cfg(not(feature = "supraseal"))]
        let res = {
            let src = crate::timed_params::TimedParams::new(
                &self.params,
                tracker.clone(),
                tracker.abort_flag(),
            );
            create_random_proof_batch(circuits, src, &mut rng)
        };
        #[cfg(feature = "supraseal")]
        let res = create_random_proof_batch(circuits, &self.supra, &mut rng);
        tracker.finish();
        res
    }

    /// Verify one proof against the prepared verifying key.
    pub fn verify(&self, proof: &Proof<Bls12>, inputs: &[Fr]) -> Result<bool, SynthesisError> {
        verify_proof(&self.pvk, proof, inputs)
    }
}
