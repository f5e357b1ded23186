//! A deterministic synthetic record stream shaped like a prover run: hello, SRS load, then
//! proof after proof (partitions synthesized in parallel while RSS climbs, then the GPU/CPU
//! proving steps while it falls back to the SRS floor), with samples at a fixed rate.
//!
//! Used by snapshot and replay tests and by benchmarks, where a real prover would make the output depend
//! on the machine. It is an iterator, so a 24-hour stream never sits in memory at once.

use std::path::Path;

use provetop_shared::protocol::{ProverConfig, ProverState, KNOWN_PHASES};
use provetop_shared::session::{SessionHeader, SessionWriter};
use provetop_shared::units::{GIB, MIB};
use provetop_shared::{Backend, BatchMode, Event, Phase, Record, RecordBody, Sample, SrsSource};

use crate::xorshift::Xorshift;

/// Shape of the synthetic run.
#[derive(Debug, Clone)]
pub struct SynthConfig {
    /// Samples per second.
    pub hz: f64,
    /// Length, seconds.
    pub seconds: f64,
    /// Partitions per proof.
    pub partitions: u32,
    /// Seconds per proof cycle (synthesis ≈ 45 %, proving ≈ 45 %, idle 10 %).
    pub proof_s: f64,
    /// Idle floor (SRS resident), bytes.
    pub floor: u64,
    /// Peak RSS of a proof, bytes.
    pub peak: u64,
    /// Emit prover events (else samples only: a child that does not speak the protocol).
    pub events: bool,
    /// Time of the first record, ns.
    pub t0: u64,
}

impl Default for SynthConfig {
    fn default() -> Self {
        SynthConfig {
            hz: 20.0,
            seconds: 60.0,
            partitions: 4,
            proof_s: 8.0,
            floor: 45 * GIB,
            peak: 200 * GIB,
            events: true,
            t0: 1_000_000_000_000,
        }
    }
}

/// The proving steps after the GPU's setup, in the known phases' order (FFT, the MSMs, verify).
fn prove_steps() -> &'static [Phase] {
    let from = KNOWN_PHASES
        .iter()
        .position(|p| *p == Phase::FftH)
        .unwrap_or(0);
    &KNOWN_PHASES[from..]
}

/// The stream.
pub struct Synth {
    cfg: SynthConfig,
    i: u64,
    n: u64,
    pending: std::collections::VecDeque<Record>,
    rng: Xorshift,
    proofs: u64,
    started: bool,
}

impl Synth {
    /// A stream for `cfg`.
    pub fn new(cfg: SynthConfig) -> Self {
        let n = (cfg.seconds * cfg.hz).round() as u64;
        Synth {
            cfg,
            i: 0,
            n,
            pending: Default::default(),
            rng: Xorshift::new(0x9E37_79B9_7F4A_7C15),
            proofs: 0,
            started: false,
        }
    }

    fn noise(&mut self) -> f64 {
        (self.rng.next_u64() % 10_000) as f64 / 10_000.0
    }

    fn ev(&mut self, t: u64, e: Event) {
        if self.cfg.events {
            self.pending.push_back(Record::new(t, RecordBody::Event(e)));
        }
    }

    /// Events due in the sample interval ending at `t` (cycle position `x` in [0,1)).
    fn events_at(&mut self, t: u64, prev_x: f64, x: f64, cycle: u64) {
        let id = cycle + 1;
        let parts = self.cfg.partitions;
        // An edge is crossed when the cycle position passes it (also across a wrap).
        let cross = |edge: f64| x >= edge && (prev_x < edge || prev_x > x);
        let wrap = prev_x > x;
        if wrap || (cycle == 0 && self.i == 2) {
            self.ev(
                t,
                Event::ProofStarted {
                    proof_id: id,
                    mode: BatchMode::Single,
                    sectors: 1,
                    partitions: parts,
                    constraints: parts as u64 * 1000,
                },
            );
            self.ev(
                t,
                Event::State {
                    state: ProverState::Proving,
                },
            );
            for p in 0..parts {
                self.ev(
                    t,
                    Event::PhaseStarted {
                        proof_id: id,
                        phase: Phase::Synthesis,
                        partition: Some(p),
                    },
                );
            }
        }
        // Partitions end one after another between 0.35 and 0.45.
        for p in 0..parts {
            let edge = 0.35 + 0.1 * (p + 1) as f64 / parts as f64;
            if cross(edge) {
                self.ev(
                    t,
                    Event::PhaseEnded {
                        proof_id: id,
                        phase: Phase::Synthesis,
                        partition: Some(p),
                        duration_s: edge * self.cfg.proof_s,
                    },
                );
            }
        }
        for (k, ph) in prove_steps().iter().enumerate() {
            let s = 0.45 + 0.075 * k as f64;
            let e = s + 0.075;
            if cross(s) {
                self.ev(
                    t,
                    Event::PhaseStarted {
                        proof_id: id,
                        phase: ph.clone(),
                        partition: None,
                    },
                );
            }
            if cross(e) {
                self.ev(
                    t,
                    Event::PhaseEnded {
                        proof_id: id,
                        phase: ph.clone(),
                        partition: None,
                        duration_s: 0.075 * self.cfg.proof_s,
                    },
                );
            }
        }
        if cross(0.9) {
            self.proofs += 1;
            self.ev(
                t,
                Event::ProofFinished {
                    proof_id: id,
                    ok: true,
                    verified: true,
                    duration_s: 0.9 * self.cfg.proof_s,
                    mode: BatchMode::Single,
                    phases: vec![],
                    error: None,
                    cancelled: false,
                    requeued_as: vec![],
                },
            );
            self.ev(
                t,
                Event::State {
                    state: ProverState::Idle,
                },
            );
        }
    }

    fn rss_at(&self, x: f64) -> u64 {
        let (f, p) = (self.cfg.floor as f64, self.cfg.peak as f64);
        let v = if x < 0.4 {
            f + (p - f) * (x / 0.4)
        } else if x < 0.45 {
            p
        } else if x < 0.9 {
            f + (p - f) * 0.35 * (1.0 - (x - 0.45) / 0.45)
        } else {
            f
        };
        v as u64
    }
}

impl Iterator for Synth {
    type Item = Record;
    fn next(&mut self) -> Option<Record> {
        if let Some(r) = self.pending.pop_front() {
            return Some(r);
        }
        let dt = 1e9 / self.cfg.hz;
        if !self.started {
            self.started = true;
            let t = self.cfg.t0;
            self.ev(
                t,
                Event::Hello {
                    protocol: "1.0".into(),
                    prover_version: "synthetic".into(),
                    pid: 4242,
                    backend: Backend::Cpu,
                    gpus: vec![],
                    config: ProverConfig {
                        partitions: self.cfg.partitions,
                        constraints: 1000,
                        circuit: "synthetic".into(),
                        mode: BatchMode::Single,
                        threads: Some(2),
                    },
                },
            );
            self.ev(
                t,
                Event::SrsReady {
                    bytes: self.cfg.floor,
                    pinned_bytes: self.cfg.floor / 2,
                    source: SrsSource::Disk,
                    duration_s: 1.5,
                },
            );
            if let Some(r) = self.pending.pop_front() {
                return Some(r);
            }
        }
        if self.i >= self.n {
            return None;
        }
        let i = self.i;
        self.i += 1;
        let t = self.cfg.t0 + (i as f64 * dt) as u64;
        let secs = i as f64 / self.cfg.hz;
        let cycle = (secs / self.cfg.proof_s) as u64;
        let x = (secs / self.cfg.proof_s).fract();
        let prev_secs = (i.max(1) - 1) as f64 / self.cfg.hz;
        let prev_x = if i == 0 {
            0.99
        } else {
            (prev_secs / self.cfg.proof_s).fract()
        };
        if i > 0 {
            self.events_at(t, prev_x, x, cycle);
        }
        let jitter = (self.noise() * 0.02 * self.cfg.floor as f64) as u64;
        let rss = self.rss_at(x) + jitter;
        let spike = if i % 97 == 0 { self.cfg.peak / 20 } else { 0 };
        let sample = Sample {
            rss,
            peak: Some(rss + spike + MIB),
            anon: Some(rss.saturating_sub(self.cfg.floor / 2 + 64 * MIB)),
            file: Some(64 * MIB),
            shmem: Some(self.cfg.floor / 2),
            swap: Some(0),
            locked: Some(0),
            vm_pin: Some(0),
            pinned: Some(self.cfg.floor / 2),
            pinned_reported: None,
            gpu_used: Some(if (0.45..0.9).contains(&x) {
                self.cfg.floor / 4
            } else {
                MIB * 300
            }),
            gpus: vec![],
            mem_available: Some(512 * GIB - rss),
            mem_total: Some(512 * GIB),
            cgroup_current: None,
            cgroup_max: None,
            procs: 1,
        };
        self.pending
            .push_back(Record::new(t, RecordBody::Sample(sample)));
        self.pending.pop_front()
    }
}

/// Collect a whole synthetic run.
pub fn records(cfg: SynthConfig) -> Vec<Record> {
    Synth::new(cfg).collect()
}

/// A whole synthetic run written to a session file (header as if recorded now).
pub fn write_session(path: &Path, cfg: SynthConfig) {
    let header = SessionHeader::now(vec!["provetop-prover".into()], cfg.hz);
    let mut w = SessionWriter::create(path, &header).expect("create session");
    for r in Synth::new(cfg) {
        w.append(&r).expect("append");
    }
    w.sync().expect("sync");
}
