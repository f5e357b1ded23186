//! GPU specifics of the backends: which GPUs, and what is pinned.
//!
//! * Inventory ([`detect`]): NVML through `provetop-kernels` (names, compute capability,
//!   memory) for `hello`. A CPU build lists none.
//! * `supraseal`: `SuprasealParameters` copies every SRS query (h, l, a, b_g1, b_g2) into one
//!   `cudaHostAlloc` region, each query rounded up to 4 KiB ([`supraseal_pinned_bytes`]
//!   repeats that arithmetic so the prover can report what it pinned; the monitor sees the same
//!   bytes as Rss of the `/dev/nvidia*` mapping in smaps). The host copy bellperson would keep
//!   is dropped: only the verifying key stays outside pinned memory.
//! * `cuda`: ec-gpu-gen copies the bases of every multiexp from host memory. With `PinnedSrs`
//!   (feature `cuda`) the resident SRS vectors are page-locked in place (`cuMemHostRegister`,
//!   portable to every context), so those copies are DMA from pinned memory instead of staged
//!   through a driver bounce buffer. Registered memory is invisible from outside (it is not a
//!   `/dev/nvidia*` mapping, nor VmLck/VmPin): the prover reports it in `memory_report`.

use bellperson::groth16::Parameters;
use blstrs::Bls12;
use provetop_shared::protocol::GpuInfo;

/// GPUs NVML sees (none on a CPU build, or when no driver is present).
pub fn detect() -> Vec<GpuInfo> {
    if !cfg!(any(feature = "cuda", feature = "supraseal")) {
        return Vec::new();
    }
    match provetop_kernels::gpus() {
        Ok(list) => list
            .into_iter()
            .map(|g| GpuInfo {
                index: g.index,
                name: g.name,
                compute_capability: Some(g.compute_capability),
                memory_bytes: Some(g.memory_bytes),
            })
            .collect(),
        Err(why) => {
            log::warn!("no GPU listed: {why}");
            Vec::new()
        }
    }
}

/// Bytes supraseal pins for these parameters: each query rounded up to 4 KiB; G1 affine
/// points are 96 bytes and G2 points 192 in sppark's layout.
pub fn supraseal_pinned_bytes(p: &Parameters<Bls12>) -> u64 {
    fn page(n: usize) -> u64 {
        (n as u64 + 4095) & !4095
    }
    page(p.l.len() * 96)
        + page(p.a.len() * 96)
        + page(p.b_g1.len() * 96)
        + page(p.b_g2.len() * 192)
        + page(p.h.len() * 96)
}

/// Parameters with every query emptied: what a supraseal backend keeps on the Rust side
/// (the verifying key), so the SRS is not held twice.
pub fn vk_only(p: &Parameters<Bls12>) -> Parameters<Bls12> {
    use std::sync::Arc;
    Parameters {
        vk: p.vk.clone(),
        h: Arc::new(Vec::new()),
        l: Arc::new(Vec::new()),
        a: Arc::new(Vec::new()),
        b_g1: Arc::new(Vec::new()),
        b_g2: Arc::new(Vec::new()),
    }
}

#[cfg(feature = "cuda")]
pub use pin::PinnedSrs;

#[cfg(feature = "cuda")]
mod pin {
    use bellperson::groth16::Parameters;
    use blstrs::Bls12;
    use cuda_driver_sys as cu;

    /// The resident SRS vectors, page-locked in place for as long as this lives. Must be
    /// dropped before the parameters it registered (the backend declares it first).
    pub struct PinnedSrs {
        regions: Vec<(usize, usize)>,
        bytes: u64,
    }

    fn check(what: &str, r: cu::CUresult) -> Result<(), String> {
        if r == cu::cudaError_enum::CUDA_SUCCESS {
            Ok(())
        } else {
            Err(format!("{what} failed: {r:?}"))
        }
    }

    impl PinnedSrs {
        /// Register h, l, a, b_g1 and b_g2 with the CUDA driver (portable to all contexts).
        pub fn register(p: &Parameters<Bls12>) -> Result<Self, String> {
            let mut dev: cu::CUdevice = 0;
            let mut ctx: cu::CUcontext = std::ptr::null_mut();
            // SAFETY: plain driver-API calls with out-pointers to live locals; cuInit is
            // idempotent and the primary context is the one rust-gpu-tools uses too.
            unsafe {
                check("cuInit", cu::cuInit(0))?;
                check("cuDeviceGet", cu::cuDeviceGet(&mut dev, 0))?;
                check(
                    "cuDevicePrimaryCtxRetain",
                    cu::cuDevicePrimaryCtxRetain(&mut ctx, dev),
                )?;
                check("cuCtxSetCurrent", cu::cuCtxSetCurrent(ctx))?;
            }
            let spans: [(usize, usize); 5] = [
                (p.h.as_ptr() as usize, std::mem::size_of_val(&p.h[..])),
                (p.l.as_ptr() as usize, std::mem::size_of_val(&p.l[..])),
                (p.a.as_ptr() as usize, std::mem::size_of_val(&p.a[..])),
                (p.b_g1.as_ptr() as usize, std::mem::size_of_val(&p.b_g1[..])),
                (p.b_g2.as_ptr() as usize, std::mem::size_of_val(&p.b_g2[..])),
            ];
            let mut out = PinnedSrs {
                regions: Vec::new(),
                bytes: 0,
            };
            for (ptr, len) in spans {
                if len == 0 {
                    continue;
                }
                // SAFETY: [ptr, ptr+len) is the live, immutable buffer of an Arc<Vec<_>> held
                // by the backend for longer than this registration (PinnedSrs is dropped
                // first). Registration only locks the pages; the driver never writes them.
                let r = unsafe {
                    cu::cuMemHostRegister_v2(
                        ptr as *mut std::ffi::c_void,
                        len,
                        cu::CU_MEMHOSTREGISTER_PORTABLE,
                    )
                };
                check("cuMemHostRegister", r)?;
                out.regions.push((ptr, len));
                out.bytes += len as u64;
            }
            Ok(out)
        }

        /// Bytes page-locked.
        pub fn bytes(&self) -> u64 {
            self.bytes
        }
    }

    impl Drop for PinnedSrs {
        fn drop(&mut self) {
            for (ptr, _) in self.regions.drain(..) {
                // SAFETY: each pointer was registered above and is still mapped (the
                // parameters outlive this value).
                unsafe {
                    cu::cuMemHostUnregister(ptr as *mut std::ffi::c_void);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_build_lists_no_gpu() {
        if !cfg!(any(feature = "cuda", feature = "supraseal")) {
            assert!(detect().is_empty());
        }
    }
}
