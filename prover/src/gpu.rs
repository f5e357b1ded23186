//! GPU specifics of the backends: which GPUs, and what is pinned.
//!
//! * Inventory ([`detect`]): NVML through `provetop-kernels` (names, compute capability,
//!   memory, UUID) for `hello`, less what `CUDA_VISIBLE_DEVICES` hides (`--gpus` sets it).
//!   A CPU build lists none.
//! * Several GPUs: both backends spread a proof over every visible device themselves.
//!   SupraSeal (sppark) splits each proof's partitions over its GPUs; ec-gpu-gen 0.7 splits
//!   every multiexp's terms over its devices (`MultiexpKernel::multiexp`, by chunks) and a
//!   batch of FFTs over them (`FftKernel::radix_fft_many`). The prover adds no scheduling of
//!   its own; `--gpus` only chooses which devices they see.
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

/// The GPUs the backend will use, for `hello`: NVML's inventory less what
/// `CUDA_VISIBLE_DEVICES` hides (none on a CPU build, or when no driver is present).
pub fn detect() -> Vec<GpuInfo> {
    if !cfg!(any(feature = "cuda", feature = "supraseal")) {
        return Vec::new();
    }
    match provetop_kernels::gpus() {
        Ok(list) => {
            let visible = std::env::var("CUDA_VISIBLE_DEVICES").ok();
            in_use(list, visible.as_deref())
                .into_iter()
                .map(|g| GpuInfo {
                    index: g.index,
                    name: g.name,
                    compute_capability: Some(g.compute_capability),
                    memory_bytes: Some(g.memory_bytes),
                    uuid: (!g.uuid.is_empty()).then_some(g.uuid),
                })
                .collect()
        }
        Err(why) => {
            log::warn!("no GPU listed: {why}");
            Vec::new()
        }
    }
}

/// The devices of `all` (NVML's list, PCI bus order) that a `CUDA_VISIBLE_DEVICES` of
/// `visible` leaves visible, in the order it names them. CUDA's own rules: entries are
/// indices or UUIDs (a unique prefix of "GPU-…" is enough); the list ends at the first entry
/// that names no device; unset means every device, empty means none. Indices are read in
/// PCI bus order, which is CUDA's where `CUDA_DEVICE_ORDER=PCI_BUS_ID` (the prover sets it
/// unless the environment says otherwise) and NVML's always.
pub fn in_use(
    all: Vec<provetop_kernels::Gpu>,
    visible: Option<&str>,
) -> Vec<provetop_kernels::Gpu> {
    let Some(visible) = visible else {
        return all;
    };
    let mut out: Vec<provetop_kernels::Gpu> = Vec::new();
    for entry in visible.split(',').map(str::trim) {
        let found = match entry.parse::<u32>() {
            Ok(i) => all.iter().find(|g| g.index == i),
            Err(_) if entry.starts_with("GPU-") => {
                let mut m = all.iter().filter(|g| g.uuid.starts_with(entry));
                match (m.next(), m.next()) {
                    (Some(g), None) => Some(g),
                    _ => None,
                }
            }
            Err(_) => None,
        };
        match found {
            Some(g) if !out.iter().any(|o| o.index == g.index) => out.push(g.clone()),
            Some(_) => {}
            None => break,
        }
    }
    out
}

/// The devices `--gpus` names, by NVML index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GpuList(pub Vec<u32>);

/// Parse `--gpus`: device indices, comma-separated, each once ("0,2").
pub fn parse_selection(s: &str) -> Result<GpuList, String> {
    let mut out: Vec<u32> = Vec::new();
    for part in s.split(',') {
        let part = part.trim();
        let i: u32 = part
            .parse()
            .map_err(|_| format!("{part:?} is not a GPU index (want e.g. 0,2)"))?;
        if out.contains(&i) {
            return Err(format!("GPU {i} is named twice"));
        }
        out.push(i);
    }
    Ok(GpuList(out))
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

#[cfg(test)]
mod selection_tests {
    use super::*;
    use provetop_kernels::Gpu;

    fn gpus(n: u32) -> Vec<Gpu> {
        (0..n)
            .map(|index| Gpu {
                index,
                name: "NVIDIA H200".into(),
                compute_capability: "9.0".into(),
                memory_bytes: 143 << 30,
                uuid: format!("GPU-{index}a5e{index}-0000"),
            })
            .collect()
    }

    fn indices(v: Vec<Gpu>) -> Vec<u32> {
        v.into_iter().map(|g| g.index).collect()
    }

    #[test]
    fn every_device_is_in_use_unless_cuda_visible_devices_says_otherwise() {
        assert_eq!(indices(in_use(gpus(4), None)), [0, 1, 2, 3]);
        assert_eq!(indices(in_use(gpus(4), Some("2,0"))), [2, 0]);
        assert_eq!(indices(in_use(gpus(4), Some(""))), Vec::<u32>::new());
    }

    #[test]
    fn cuda_visible_devices_may_name_uuids_by_a_unique_prefix() {
        assert_eq!(indices(in_use(gpus(4), Some("GPU-3a5e"))), [3]);
        // "GPU-" alone matches every device: ambiguous, so it names none (and ends the list).
        assert_eq!(indices(in_use(gpus(4), Some("GPU-,1"))), Vec::<u32>::new());
    }

    #[test]
    fn the_visible_list_ends_at_its_first_entry_that_names_no_device() {
        assert_eq!(indices(in_use(gpus(2), Some("1,7,0"))), [1]);
        assert_eq!(indices(in_use(gpus(2), Some("1,x,0"))), [1]);
        assert_eq!(indices(in_use(gpus(2), Some("1,1,0"))), [1, 0]);
    }

    #[test]
    fn a_gpu_selection_is_indices_each_once() {
        assert_eq!(parse_selection("0,2").unwrap().0, [0, 2]);
        assert_eq!(parse_selection(" 1 ").unwrap().0, [1]);
        assert!(parse_selection("0,0").unwrap_err().contains("named twice"));
        assert!(parse_selection("0,a")
            .unwrap_err()
            .contains("\"a\" is not a GPU index"));
        assert!(parse_selection("")
            .unwrap_err()
            .contains("is not a GPU index"));
    }
}
