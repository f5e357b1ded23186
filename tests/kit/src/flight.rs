//! A flight-recorder session of any length: what `provetop serve` records beside a prover
//! for hours or weeks. 20 Hz samples whose memory walks in pages with noise (never a smooth
//! curve: compression is measured on it), proof after proof (idle gaps, partitions
//! synthesized while RSS climbs, the GPU steps while it falls), the prover's log lines as
//! output, an alert when RSS crosses a threshold, and usage readings at `usage_hz`.
//!
//! An iterator: a 30-day stream never sits in memory. Deterministic for a seed.

use crate::xorshift::Xorshift;
use provetop_shared::record::{GpuDetail, GpuReading, OutputLine, OutputSource, ProcUsage, Usage};
use provetop_shared::units::GIB;
use provetop_shared::{
    Alert, AlertLevel, AlertState, BatchMode, Event, Phase, Record, RecordBody, Sample,
};

/// 50 ms: 20 Hz.
const TICK: u64 = 50_000_000;

/// Shape of a flight.
#[derive(Debug, Clone)]
pub struct FlightConfig {
    /// Length, seconds.
    pub seconds: u64,
    /// Usage readings per second (0: none).
    pub usage_hz: u64,
    /// Time of the first record, ns.
    pub t0: u64,
    /// Seed.
    pub seed: u64,
}

impl Default for FlightConfig {
    fn default() -> Self {
        FlightConfig {
            seconds: 3600,
            usage_hz: 2,
            t0: 1_000_000_000_000,
            seed: 1,
        }
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Stage {
    Idle,
    Synth(u32),
    Gpu(usize),
}

/// The stream of records.
pub struct Flight {
    cfg: FlightConfig,
    tick: u64,
    rng: Xorshift,
    rss: u64,
    gpu: u64,
    stage: Stage,
    /// Ticks left in the stage (or in this partition).
    left: u64,
    proof: u64,
    alerted: bool,
    out: std::collections::VecDeque<Record>,
}

const STEPS: [Phase; 3] = [Phase::FftH, Phase::MsmH, Phase::MsmL];
const FLOOR: u64 = 45 * GIB;

impl Flight {
    /// A flight of `cfg`.
    pub fn new(cfg: FlightConfig) -> Self {
        Flight {
            rng: Xorshift::new(cfg.seed.wrapping_mul(0x9e37_79b9_7f4a_7c15)),
            cfg,
            tick: 0,
            rss: FLOOR,
            gpu: 30 * GIB,
            stage: Stage::Idle,
            left: 200,
            proof: 0,
            alerted: false,
            out: Default::default(),
        }
    }

    fn rand(&mut self) -> u64 {
        self.rng.next_u64()
    }

    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.rand() % (hi - lo)
    }

    fn event(&mut self, t: u64, e: Event) {
        self.out.push_back(Record::new(t, RecordBody::Event(e)));
    }

    fn line(&mut self, t: u64, text: String) {
        let r = RecordBody::Output(OutputLine {
            source: OutputSource::Stderr,
            text,
            cut: None,
        });
        self.out.push_back(Record::new(t, r));
    }

    /// Move the proof along at time `t`.
    fn advance(&mut self, t: u64) {
        if self.left > 0 {
            self.left -= 1;
            return;
        }
        let id = self.proof;
        match self.stage {
            Stage::Idle => {
                self.proof += 1;
                self.alerted = false;
                let id = self.proof;
                self.event(
                    t,
                    Event::ProofStarted {
                        proof_id: id,
                        mode: BatchMode::Single,
                        sectors: 1,
                        partitions: 10,
                        constraints: 1_300_000_000,
                    },
                );
                self.event(
                    t,
                    Event::PhaseStarted {
                        proof_id: id,
                        phase: Phase::Synthesis,
                        partition: Some(0),
                    },
                );
                self.stage = Stage::Synth(0);
                self.left = self.range(100, 400);
            }
            Stage::Synth(p) => {
                let d = self.range(1000, 9000) as f64 / 1000.0;
                self.event(
                    t,
                    Event::PhaseEnded {
                        proof_id: id,
                        phase: Phase::Synthesis,
                        partition: Some(p),
                        duration_s: d,
                    },
                );
                if p < 9 {
                    self.event(
                        t,
                        Event::PhaseStarted {
                            proof_id: id,
                            phase: Phase::Synthesis,
                            partition: Some(p + 1),
                        },
                    );
                    self.stage = Stage::Synth(p + 1);
                    self.left = self.range(100, 400);
                } else {
                    self.event(
                        t,
                        Event::PhaseStarted {
                            proof_id: id,
                            phase: STEPS[0].clone(),
                            partition: None,
                        },
                    );
                    self.stage = Stage::Gpu(0);
                    self.left = self.range(100, 400);
                }
            }
            Stage::Gpu(k) => {
                let d = self.range(1000, 20000) as f64 / 1000.0;
                self.event(
                    t,
                    Event::PhaseEnded {
                        proof_id: id,
                        phase: STEPS[k].clone(),
                        partition: None,
                        duration_s: d,
                    },
                );
                if k + 1 < STEPS.len() {
                    self.event(
                        t,
                        Event::PhaseStarted {
                            proof_id: id,
                            phase: STEPS[k + 1].clone(),
                            partition: None,
                        },
                    );
                    self.stage = Stage::Gpu(k + 1);
                    self.left = self.range(100, 400);
                } else {
                    let d = self.range(60_000, 200_000) as f64 / 1000.0;
                    self.event(
                        t,
                        Event::ProofFinished {
                            proof_id: id,
                            ok: true,
                            verified: true,
                            duration_s: d,
                            mode: BatchMode::Single,
                            phases: vec![],
                            error: None,
                            cancelled: false,
                            requeued_as: vec![],
                        },
                    );
                    self.stage = Stage::Idle;
                    self.left = self.range(100, 1200);
                }
            }
        }
    }

    fn sample(&mut self, t: u64) -> Record {
        // Memory walks in pages: up while synthesizing, down on the GPU, noise always.
        let pages = match self.stage {
            Stage::Synth(_) => self.range(0, 24_000) as i64 - 8_000,
            Stage::Gpu(_) => self.range(0, 24_000) as i64 - 16_000,
            Stage::Idle => self.range(0, 400) as i64 - 200,
        };
        let rss = (self.rss as i64 + pages * 4096).clamp(FLOOR as i64, (400 * GIB) as i64) as u64;
        self.rss = rss;
        let jitter = self.range(0, 64) * 4096;
        // GPU memory: the SRS resident, and on the GPU steps buffers coming and going in
        // 2 MiB pages.
        let step = self.range(0, 64) as i64 - 32;
        self.gpu = match self.stage {
            Stage::Gpu(_) => (self.gpu as i64 + step * (2 << 20))
                .clamp((30 * GIB) as i64, (120 * GIB) as i64) as u64,
            _ => 30 * GIB,
        };
        let gpu = self.gpu;
        let util = if matches!(self.stage, Stage::Gpu(_)) {
            self.range(60, 101) as u8
        } else {
            0
        };
        Record::new(
            t,
            RecordBody::Sample(Sample {
                rss,
                peak: Some(rss + jitter),
                anon: Some(rss - 41 * GIB + jitter),
                file: Some(GIB + self.range(0, 16) * 4096),
                shmem: Some(40 * GIB),
                swap: Some(0),
                locked: Some(0),
                vm_pin: Some(0),
                pinned: Some(40 * GIB),
                pinned_reported: None,
                gpu_used: Some(gpu),
                gpus: vec![GpuReading {
                    index: 0,
                    proc_used: gpu,
                    used: gpu + GIB,
                    total: 141 * GIB,
                    util,
                }],
                mem_available: Some(1000 * GIB - rss - self.range(0, 256) * 4096),
                mem_total: Some(1024 * GIB),
                cgroup_current: (self.tick % 10 == 0).then_some(rss + 2 * GIB),
                cgroup_max: None,
                procs: 3,
            }),
        )
    }

    fn usage(&mut self, t: u64) -> Record {
        let busy = matches!(self.stage, Stage::Synth(_));
        let cores = if busy {
            self.range(40_000, 64_000)
        } else {
            self.range(0, 2_000)
        } as f64
            / 1000.0;
        let rss = self.rss;
        let temp = self.range(40, 80) as u32;
        let mut f = |lo: u64, hi: u64| self.range(lo, hi) as f64 / 997.0;
        let procs = vec![ProcUsage {
            pid: 4242,
            ppid: 1,
            command: "cuzk-daemon".into(),
            rss,
            anon: rss - 41 * GIB,
            file: GIB,
            shmem: 40 * GIB,
            pinned: Some(40 * GIB),
            cores: Some(cores),
            threads: 130,
            major_faults: Some(0.0),
            read_bps: Some(f(0, 1 << 20)),
            write_bps: Some(0.0),
            gpu_mem: vec![(0, 30 * GIB)],
        }];
        let gpus = vec![GpuDetail {
            index: 0,
            uuid: "GPU-5d3c2a1b-0000-1111-2222-333344445555".into(),
            name: "NVIDIA H200".into(),
            temp_c: Some(temp),
            power_w: Some(f(100_000, 700_000)),
            sm_clock_mhz: Some(1980),
            throttle: vec![],
            pcie_rx_bps: Some(f(0, 1 << 30)),
            pcie_tx_bps: Some(f(0, 1 << 28)),
            ..GpuDetail::default()
        }];
        Record::new(
            t + 3,
            RecordBody::Usage(Usage {
                interval_ns: 500_000_000,
                cores: Some(cores),
                threads: 130,
                ctx_switches: Some(f(1000, 50_000)),
                major_faults: Some(0.0),
                read_bps: Some(f(0, 1 << 20)),
                write_bps: Some(0.0),
                host_cores: Some(cores + 1.5),
                host_ncpu: 64,
                procs,
                gpus,
                ..Usage::default()
            }),
        )
    }

    fn tick(&mut self) {
        let t = self.cfg.t0 + self.tick * TICK;
        let s = self.sample(t);
        self.out.push_back(s);
        self.advance(t + 1);
        if self.stage != Stage::Idle && self.tick % 40 == 7 {
            let n = self.tick;
            self.line(t + 2, format!("2026-12-06T05:{:02}:{:02}.{:03}Z INFO cuzk::prove: partition progress {n} constraints synthesized", (n / 1200) % 60, (n / 20) % 60, (n % 20) * 50));
        }
        if self.rss > 300 * GIB && !self.alerted {
            self.alerted = true;
            let a = Alert {
                rule: "rss > 300GiB".into(),
                level: AlertLevel::Warn,
                state: AlertState::Firing,
                metric: "rss".into(),
                value: self.rss as f64,
                threshold: (300 * GIB) as f64,
                message: "rss above 300 GiB".into(),
            };
            self.out.push_back(Record::new(t + 4, RecordBody::Alert(a)));
        }
        if self.cfg.usage_hz > 0 && self.tick % (20 / self.cfg.usage_hz.min(20)) == 0 {
            let u = self.usage(t);
            self.out.push_back(u);
        }
        self.tick += 1;
    }
}

impl Iterator for Flight {
    type Item = Record;
    fn next(&mut self) -> Option<Record> {
        while self.out.is_empty() {
            if self.tick * TICK >= self.cfg.seconds * 1_000_000_000 {
                return None;
            }
            self.tick();
        }
        self.out.pop_front()
    }
}
