//! The kernel's figures: what bound the tree and how hard it pushed back, from the session's
//! kernel records and marks (the whole recording: the kernel's view is of the tree, not of a
//! proof). The tightest binding limit seen, the OOM kills, the limit and throttling events,
//! and the memory, CPU and I/O pressure (highest avg10, and memory's mean). A session without
//! kernel records (an older one, a CSV) has none of these rows; beside one that has them,
//! the row says so.

use provetop_shared::metric::Metric;
use provetop_shared::{Mark, Record, RecordBody};

use super::figure::{Figures, Section, Unit};

/// The kernel records and marks folded so far (the whole recording, one at a time).
#[derive(Debug, Clone)]
pub(super) struct KernelFold {
    limit: Option<u64>,
    psi: Vec<(Metric, f64, f64, u64)>,
    readings: u64,
    kills: u64,
    named_kill: Option<u32>,
    at_limit: u64,
    throttled: u64,
}

impl KernelFold {
    pub(super) fn new() -> Self {
        KernelFold {
            limit: None,
            psi: PRESSURE.iter().map(|m| (*m, 0.0, 0.0, 0)).collect(),
            readings: 0,
            kills: 0,
            named_kill: None,
            at_limit: 0,
            throttled: 0,
        }
    }

    /// The next record, in file order.
    pub(super) fn feed(&mut self, r: &Record) {
        match &r.body {
            RecordBody::Kernel(k) => {
                self.readings += 1;
                if let Some(b) = &k.binding {
                    self.limit = Some(self.limit.map_or(b.limit, |l| l.min(b.limit)));
                }
                for (m, max, sum, n) in self.psi.iter_mut() {
                    if let Some(v) = m.of_kernel(k) {
                        *max = max.max(v);
                        *sum += v;
                        *n += 1;
                    }
                }
            }
            RecordBody::Mark(Mark::OomKill { pid, .. }) => {
                self.kills += 1;
                self.named_kill = *pid;
            }
            // An exit the kernel log did not name is a kill all the same.
            RecordBody::Mark(Mark::ChildExited { pid, oom_kill, .. })
                if *oom_kill && self.named_kill != Some(*pid) =>
            {
                self.kills += 1;
            }
            RecordBody::Mark(Mark::MemoryEvent { counter, delta, .. }) => match counter.as_str() {
                "high" => self.throttled += delta,
                "max" | "failcnt" => self.at_limit += delta,
                _ => {}
            },
            _ => {}
        }
    }
}

/// Push the kernel section's figures of what `fold` read.
pub(super) fn kernel_figures(f: &mut Figures, fold: &KernelFold) {
    let KernelFold {
        limit,
        ref psi,
        readings,
        kills,
        at_limit,
        throttled,
        ..
    } = *fold;
    let psi = psi.clone();
    // Without kernel records there are no rows: a session that has them says what the other
    // lacks.
    if readings == 0 {
        return;
    }
    let none = "no kernel readings (an older session, or a CSV)";
    let known = |v: f64| -> Result<f64, String> { Ok(v) };
    let k = Section::Kernel;
    f.push(
        "mem_limit",
        "tightest limit that bound the tree",
        k,
        Unit::Bytes,
        limit
            .map(|l| l as f64)
            .ok_or_else(|| "no binding limit named".to_string()),
        none,
        false,
    );
    f.push(
        "oom_kills",
        "OOM kills",
        k,
        Unit::Count,
        known(kills as f64),
        none,
        false,
    );
    f.push(
        "limit_events",
        "times usage hit memory.max (v1 failcnt)",
        k,
        Unit::Count,
        known(at_limit as f64),
        none,
        false,
    );
    f.push(
        "high_events",
        "times throttled over memory.high",
        k,
        Unit::Count,
        known(throttled as f64),
        none,
        false,
    );
    for (m, max, sum, n) in psi {
        let value = if n > 0 {
            Ok(max)
        } else {
            Err("no pressure readings (a kernel without PSI)".to_string())
        };
        f.push(
            format!("{}_max", m.name()),
            format!("highest {} (avg10)", m.name()),
            k,
            Unit::Percent,
            value,
            none,
            false,
        );
        if m == Metric::PsiMemorySome {
            let mean = if n > 0 {
                Ok(sum / n as f64)
            } else {
                Err("no pressure readings (a kernel without PSI)".to_string())
            };
            f.push(
                "psi_memory_some_mean",
                "mean psi_memory_some (avg10)",
                k,
                Unit::Percent,
                mean,
                none,
                false,
            );
        }
    }
}

/// The pressure metrics compared.
const PRESSURE: [Metric; 4] = [
    Metric::PsiMemorySome,
    Metric::PsiMemoryFull,
    Metric::PsiCpuSome,
    Metric::PsiIoSome,
];
