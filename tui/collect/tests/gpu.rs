//! GPU readings on a real NVIDIA machine: NVML per-process memory summed over the tree, and
//! CUDA pinned host memory seen in smaps (`/dev/nvidia*` mappings).
//!
//! Needs an NVIDIA GPU and python3 with PyTorch, so it is ignored by default; run it there with
//! `cargo test -p provetop-collect --test collect gpu:: -- --ignored --nocapture`.

use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use provetop_collect::sampler::{self, SamplerConfig};
use provetop_shared::{Mark, RecordBody, Sample};

const GIB: u64 = 1 << 30;

const SCRIPT: &str = r#"
import os, time, torch
g = torch.empty(2 * 1024**3, dtype=torch.uint8, device="cuda"); g.fill_(1)
p = torch.empty(1024**3, dtype=torch.uint8, pin_memory=True); p.fill_(1)
torch.cuda.synchronize()
print("ready", os.getpid(), flush=True)
time.sleep(120)
"#;

#[test]
#[ignore = "needs an NVIDIA GPU and python3 with PyTorch"]
fn gpu_memory_and_pinned_host_memory_of_a_grandchild() {
    // sh stays the parent (the trailing `:` keeps it from exec'ing python), so the CUDA
    // context lives in a child of the sampled root.
    let mut top = Command::new("sh")
        .args(["-c", "python3 -c \"$0\"; :", SCRIPT])
        .stdout(Stdio::piped())
        .process_group(0)
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(top.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let py: u32 = line
        .trim()
        .strip_prefix("ready ")
        .unwrap_or_else(|| panic!("python said {line:?}"))
        .parse()
        .unwrap();
    let cfg = SamplerConfig {
        smaps_duty: 0.2,
        ..SamplerConfig::default()
    };
    let mut h = sampler::spawn(cfg, top.id()).unwrap();
    let mut all = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    let s: Sample = loop {
        std::thread::sleep(Duration::from_millis(100));
        h.drain(&mut all);
        let last = all.iter().rev().find_map(|r| match &r.body {
            RecordBody::Sample(s) => Some(s.clone()),
            _ => None,
        });
        if let Some(s) = last {
            if s.gpu_used.unwrap_or(0) >= 2 * GIB && s.pinned.unwrap_or(0) >= GIB {
                break s;
            }
            if Instant::now() > deadline {
                let notes: Vec<&Mark> = all
                    .iter()
                    .filter_map(|r| match &r.body {
                        RecordBody::Mark(m) => Some(m),
                        _ => None,
                    })
                    .collect();
                panic!("never saw the GPU memory: {s:#?}\nmarks: {notes:#?}");
            }
        }
    };
    eprintln!("python pid {py}, tree of {} processes", s.procs);
    eprintln!(
        "gpu_used {:.3} GiB, pinned (smaps /dev/nvidia*) {:.3} GiB, shmem {:.3} GiB, VmLck {:.3} GiB, VmPin {:.3} GiB, rss {:.3} GiB",
        s.gpu_used.unwrap() as f64 / GIB as f64,
        s.pinned.unwrap() as f64 / GIB as f64,
        s.shmem.unwrap() as f64 / GIB as f64,
        s.locked.unwrap() as f64 / GIB as f64,
        s.vm_pin.unwrap() as f64 / GIB as f64,
        s.rss as f64 / GIB as f64,
    );
    for g in &s.gpus {
        eprintln!(
            "GPU {}: tree uses {:.3} GiB, device {:.3} / {:.3} GiB used, util {} %",
            g.index,
            g.proc_used as f64 / GIB as f64,
            g.used as f64 / GIB as f64,
            g.total as f64 / GIB as f64,
            g.utilization()
                .map_or("unknown".to_string(), |u| u.to_string())
        );
    }
    assert!(s.procs >= 2);
    assert!(!s.gpus.is_empty());
    // 2 GiB of tensors plus the CUDA context; well below the device total.
    assert!(s.gpu_used.unwrap() < 4 * GIB);
    assert!(s
        .gpus
        .iter()
        .all(|g| g.total > g.used && g.used >= g.proc_used));
    // Pinned host memory: within 2 % above the 1 GiB asked for (plus small driver mappings).
    assert!(s.pinned.unwrap() < GIB + GIB / 50 + (64 << 20));
    h.stop();
    let _ = nix::sys::signal::killpg(
        nix::unistd::Pid::from_raw(top.id() as i32),
        nix::sys::signal::Signal::SIGKILL,
    );
    let _ = top.wait();
}
