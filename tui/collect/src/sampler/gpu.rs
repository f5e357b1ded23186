//! GPU readings through NVML (`libnvidia-ml.so.1`, loaded at run time).
//!
//! NVML reports host pids. A prover's CUDA context may live in any process of the tree, so the
//! per-process memory is summed over the tree's pids; entries with pid 0 or `u32::MAX` (no
//! pid visible, e.g. from inside a container) are never attributed to the tree.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use nvml_wrapper::enums::device::UsedGpuMemory;
use nvml_wrapper::Nvml;
use provetop_shared::record::GpuReading;

use super::{park_until, GpuState, Shared};

/// An initialized NVML with its device count.
pub struct Gpus {
    nvml: Nvml,
    count: u32,
}

impl Gpus {
    /// Load NVML. The error text says why there is no GPU reading.
    pub fn open() -> Result<Gpus, String> {
        let nvml = Nvml::init().map_err(|e| e.to_string())?;
        let count = nvml.device_count().map_err(|e| e.to_string())?;
        if count == 0 {
            return Err("NVML found no devices".into());
        }
        Ok(Gpus { nvml, count })
    }

    /// Read every device. `tree` holds the pids of the watched tree. Returns the per-GPU
    /// readings and the tree's memory summed over devices. A device that fails to answer is
    /// skipped this round.
    pub fn read(&self, tree: &[u32]) -> (Vec<GpuReading>, u64) {
        let mut out = Vec::with_capacity(self.count as usize);
        let mut total = 0u64;
        for index in 0..self.count {
            let Ok(dev) = self.nvml.device_by_index(index) else {
                continue;
            };
            let Ok(mem) = dev.memory_info() else {
                continue;
            };
            let util = dev.utilization_rates().map(|u| u.gpu).unwrap_or(0);
            // Compute processes only: a prover's CUDA context is one, and each process query
            // is one of NVML's slowest calls (graphics contexts are not provers').
            let procs = dev.running_compute_processes().unwrap_or_default();
            let proc_used = tree_usage(
                procs.iter().map(|p| {
                    let used = match p.used_gpu_memory {
                        UsedGpuMemory::Used(b) => b,
                        UsedGpuMemory::Unavailable => 0,
                    };
                    (p.pid, used)
                }),
                tree,
            );
            total += proc_used;
            out.push(GpuReading {
                index,
                proc_used,
                used: mem.used,
                total: mem.total,
                util: util.min(100) as u8,
            });
        }
        (out, total)
    }
}

/// Sum the memory of `(pid, bytes)` entries whose pid is in `tree`. A process listed twice on
/// one device is counted once.
pub fn tree_usage(procs: impl Iterator<Item = (u32, u64)>, tree: &[u32]) -> u64 {
    let mut seen: Vec<u32> = Vec::new();
    let mut sum = 0;
    for (pid, used) in procs {
        if pid == 0 || pid == u32::MAX || !tree.contains(&pid) || seen.contains(&pid) {
            continue;
        }
        seen.push(pid);
        sum += used;
    }
    sum
}

/// The `provetop-gpu` thread: read NVML every `period` (absolute deadlines).
pub(super) fn gpu_loop(s: &Shared, period: Duration) {
    let gpus = match Gpus::open() {
        Ok(g) => g,
        Err(e) => {
            s.note(format!("no GPU (NVML unavailable: {e})"));
            return;
        }
    };
    let start = Instant::now();
    let mut k = 0u32;
    while !s.stop.load(Ordering::Acquire) {
        let (gen, pids) = s.tree_snapshot();
        let (readings, used) = gpus.read(&pids);
        {
            let mut g = s.gpu.lock().unwrap_or_else(|e| e.into_inner());
            *g = GpuState {
                gen,
                gpus: readings,
                used: Some(used),
            };
        }
        k += 1;
        let deadline = start + period * k;
        while Instant::now() < deadline && !s.stop.load(Ordering::Acquire) {
            park_until(deadline);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_tree_rejects_bogus_pids() {
        let tree = [10, 11, 12];
        let procs = vec![
            (10, 100),
            (0, 1000),
            (u32::MAX, 1000),
            (99, 5),
            (12, 7),
            (10, 100),
        ];
        assert_eq!(tree_usage(procs.into_iter(), &tree), 107);
    }
}
