//! The metric table itself: one row per [`Metric`], in its order (a test holds them to it),
//! saying its name, unit, help text, reader, CSV column, legend label, percent limit and
//! Prometheus family.

use super::{psi_avg10, Def, Limit, Metric, Read, Unit};

/// Every metric, in [`Metric`] order.
pub const TABLE: [Def; 33] = [
    Def::memory(Metric::Rss, "rss", Read::Sample(|s| Some(s.rss)))
        .help("resident memory of the process tree (VmRSS)")
        .csv("rss_kb")
        .legend("rss", 0)
        .prom("rss"),
    Def::memory(Metric::Peak, "peak", Read::Sample(|s| s.peak))
        .help("highest RSS since the previous sample (VmHWM, reset every sample)")
        .csv("peak_kb")
        .legend("▲", 1),
    Def::memory(Metric::Anon, "anon", Read::Sample(|s| s.anon))
        .help("anonymous resident memory (RssAnon)")
        .csv("anon_kb")
        .legend("anon", 4)
        .prom("rss_anon"),
    Def::memory(Metric::File, "file", Read::Sample(|s| s.file))
        .help("file-backed resident memory (RssFile)")
        .csv("file_kb")
        .legend("file", 7)
        .prom("rss_file"),
    Def::memory(Metric::Shmem, "shmem", Read::Sample(|s| s.shmem))
        .help("shared resident memory (RssShmem)")
        .csv("shmem_kb")
        .legend("shm", 6)
        .prom("rss_shmem"),
    // The CSV's one pinned column: measured, else what the prover reported.
    Def::memory(Metric::Pinned, "pinned", Read::Sample(|s| s.pinned))
        .help("CUDA pinned host memory and mlocked memory (mapping table, smaps-checked; alerts take the larger of it and the prover's report)")
        .csv_of("pinned_kb", Read::Sample(|s| s.pinned.or(s.pinned_reported)))
        .legend("pin", 3),
    Def::memory(Metric::PinnedReported, "pinned_reported", Read::Sample(|s| s.pinned_reported))
        .help("pinned host memory the prover reports (memory_report)")
        .legend("pin*", 5),
    Def::memory(Metric::Gpu, "gpu", Read::Sample(|s| s.gpu_used))
        .help("GPU memory used by the tree (NVML)")
        .csv("gpu_kb")
        .legend("gpu", 2),
    Def::memory(Metric::MemAvailable, "mem_available", Read::Sample(|s| s.mem_available))
        .help("MemAvailable of the system")
        .csv("mem_available_kb")
        .prom("mem_available"),
    Def::memory(Metric::Swap, "swap", Read::Sample(|s| s.swap))
        .help("swapped-out memory of the tree (VmSwap)")
        .csv("swap_kb")
        .prom("swap"),
    Def::memory(Metric::Locked, "locked", Read::Sample(|s| s.locked))
        .help("mlocked memory of the tree (VmLck)")
        .csv("locked_kb")
        .prom("locked"),
    Def::new(Metric::PhaseDuration, "phase_duration", Unit::Seconds, Read::Engine)
        .help("seconds the longest-running open phase has run"),
    Def::new(Metric::EventAge, "event_age", Unit::Seconds, Read::Engine)
        .help("seconds since the prover's last event"),
    Def::memory(Metric::PredictedFree, "predicted_free", Read::Engine)
        .help("memory expected to be left when the running proof peaks")
        .prom_with("predicted_free", "memory predicted to be left when the running proof peaks (negative: short by that much)"),
    Def::new(Metric::TimeToOom, "time_to_oom", Unit::Seconds, Read::Engine)
        .help("seconds until memory runs out at the RSS growth rate of the last seconds")
        .prom_with("time_to_oom", "seconds until memory runs out at the process tree's recent RSS growth (absent while it is not growing)"),
    Def::new(Metric::Cpu, "cpu", Unit::Cores, Read::Usage(|u| u.cores))
        .help("cores busy in the process tree (user + system CPU time per second; percent: of the host's cores online)")
        .csv("cores")
        .limit(Limit::HostCores)
        .prom_with("cpu", "cores busy in the process tree (user + system CPU seconds per second, over the last usage interval)"),
    Def::new(Metric::HostCpu, "host_cpu", Unit::Cores, Read::Usage(|u| u.host_cores))
        .help("cores busy on the whole host (/proc/stat; percent: of its cores online)")
        .csv("host_cores")
        .limit(Limit::HostCores)
        .prom_with("host_cpu", "cores busy on the whole host (/proc/stat)"),
    // A usage record always counts the threads; its first reading too.
    Def::new(Metric::Threads, "threads", Unit::Count, Read::Usage(|u| Some(f64::from(u.threads))))
        .help("threads in the process tree")
        .csv("threads")
        .prom("threads"),
    Def::new(Metric::ReadBps, "read_bps", Unit::BytesPerSecond, Read::Usage(|u| u.read_bps))
        .help("bytes read from storage per second by the tree (/proc/PID/io read_bytes)")
        .csv("read_bps")
        .prom_with("read", "bytes the process tree read from storage per second (absent when a process's /proc/PID/io is unreadable)"),
    Def::new(Metric::WriteBps, "write_bps", Unit::BytesPerSecond, Read::Usage(|u| u.write_bps))
        .help("bytes written to storage per second by the tree (/proc/PID/io write_bytes)")
        .csv("write_bps")
        .prom_with("write", "bytes the process tree wrote to storage per second"),
    Def::new(Metric::MajorFaults, "major_faults", Unit::PerSecond, Read::Usage(|u| u.major_faults))
        .help("major page faults per second in the tree (the first sign of swapping)")
        .csv("major_faults")
        .prom_with("major_faults", "major page faults per second in the process tree (the first sign of swapping)"),
    Def::new(Metric::GpuUtil, "gpu_util", Unit::Percent, Read::GpuSample(|g| g.utilization().map(f64::from)))
        .help("utilisation of a GPU, percent (NVML; the highest over the GPUs, or gpu_util[N] for GPU N)")
        .csv("util")
        .prom_with("gpu_utilization", "GPU utilization of the device (0 to 1)"),
    Def::new(Metric::GpuMem, "gpu_mem", Unit::Bytes, Read::GpuSample(|g| Some(g.used as f64)))
        .help("memory used on a GPU by every process, as nvidia-smi shows it (the highest over the GPUs, or gpu_mem[N]; percent: of that GPU's memory)")
        .csv("mem_kb")
        .limit(Limit::GpuTotal)
        .prom_with("gpu_device_memory_used", "GPU memory used on the device by every process"),
    Def::new(Metric::GpuTemp, "gpu_temp", Unit::Celsius, Read::GpuUsage(|g| g.temp_c.map(f64::from)))
        .help("temperature of a GPU, °C (the highest over the GPUs, or gpu_temp[N])")
        .csv("temp_c")
        .prom_with("gpu_temperature", "temperature of the GPU (NVML)"),
    Def::memory(Metric::MemLimit, "mem_limit", Read::Kernel(|k| k.binding.as_ref().map(|b| b.limit as f64)))
        .help("the limit that binds the tree: the least room among its cgroup's memory.max and memory.high up the hierarchy and the host's MemAvailable (named in the header)")
        .csv("mem_limit_kb")
        .prom_with("memory_limit", "the memory limit that binds the process tree (the limit label of provetop_memory_limit_info names it)"),
    Def::new(Metric::PsiMemorySome, "psi_memory_some", Unit::Percent, Read::Kernel(|k| psi_avg10(k, |p| p.memory.as_ref(), false)))
        .help("share of time some task of the tree's cgroup (or the host) stalled on memory, avg10 of the kernel's PSI")
        .csv("psi_memory_some")
        .prom_with("psi_memory_some", "share of time some task stalled on memory (PSI avg10; the tree's cgroup's where it has one, else the host's)"),
    Def::new(Metric::PsiMemoryFull, "psi_memory_full", Unit::Percent, Read::Kernel(|k| psi_avg10(k, |p| p.memory.as_ref(), true)))
        .help("share of time every task of the tree's cgroup (or the host) stalled on memory, avg10 of the kernel's PSI")
        .csv("psi_memory_full")
        .prom_with("psi_memory_full", "share of time all non-idle tasks stalled on memory (PSI avg10)"),
    Def::new(Metric::PsiCpuSome, "psi_cpu_some", Unit::Percent, Read::Kernel(|k| psi_avg10(k, |p| p.cpu.as_ref(), false)))
        .help("share of time some runnable task waited for a CPU, avg10 of the kernel's PSI")
        .csv("psi_cpu_some")
        .prom_with("psi_cpu_some", "share of time some runnable task waited for a CPU (PSI avg10)"),
    Def::new(Metric::PsiIoSome, "psi_io_some", Unit::Percent, Read::Kernel(|k| psi_avg10(k, |p| p.io.as_ref(), false)))
        .help("share of time some task stalled on I/O, avg10 of the kernel's PSI")
        .csv("psi_io_some")
        .prom_with("psi_io_some", "share of time some task stalled on I/O (PSI avg10)"),
    Def::new(Metric::PsiIoFull, "psi_io_full", Unit::Percent, Read::Kernel(|k| psi_avg10(k, |p| p.io.as_ref(), true)))
        .help("share of time every task stalled on I/O, avg10 of the kernel's PSI")
        .csv("psi_io_full")
        .prom_with("psi_io_full", "share of time all non-idle tasks stalled on I/O (PSI avg10)"),
    Def::new(Metric::GpuThrottled, "gpu_throttled", Unit::Count, Read::GpuUsage(|g| Some(g.slowdowns() as f64)))
        .help("clock slowdown reasons active on a GPU: power cap, thermal, hardware, sync boost (the most over the GPUs, or gpu_throttled[N])")
        .prom_with("gpu_throttled", "clock slowdown reasons active on the GPU (NVML throttle reasons other than idle and application clocks)"),
    Def::new(Metric::GpuEccUncorrected, "gpu_ecc_uncorrected", Unit::Count, Read::GpuUsage(|g| g.ecc_uncorrected.map(|v| v as f64)))
        .help("uncorrected ECC errors of a GPU since the driver loaded (the most over the GPUs, or gpu_ecc_uncorrected[N])")
        .prom_with("gpu_ecc_uncorrected_errors", "uncorrected ECC errors of the GPU since the driver loaded (volatile counter)"),
    Def::new(Metric::GpuPcieReplays, "gpu_pcie_replays", Unit::Count, Read::GpuUsage(|g| g.pcie_replays.map(|v| v as f64)))
        .help("PCIe replays of a GPU since the driver loaded (the most over the GPUs, or gpu_pcie_replays[N])")
        .prom_with("gpu_pcie_replays", "PCIe replays of the GPU since the driver loaded (link errors retried)"),
];
