//! The sessions shipped in `assets/` were recorded from the real prover (on the lent H200 and
//! on the 2-core VM). They must stay readable by this build: every record intact, every proof
//! that ran verified, and classify/export/replay-ready.

use std::path::{Path, PathBuf};
use std::process::Command;

use assert_cmd::cargo::CommandCargoExt as _;
use provetop_shared::protocol::{BatchMode, Event};
use provetop_shared::session::load;
use provetop_shared::RecordBody;

fn sessions() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(asset(""))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "ptop"))
        .collect();
    v.sort();
    v
}

#[test]
fn shipped_sessions_load_cleanly_and_every_proof_verified() {
    let all = sessions();
    assert!(all.len() >= 3, "assets/ ships real sessions: {all:?}");
    for path in all {
        let l = load(&path).unwrap();
        assert!(
            l.warnings.is_empty(),
            "{}: {:?}",
            path.display(),
            l.warnings
        );
        let mut hello = false;
        let mut finished = 0;
        let mut samples = 0;
        for r in &l.records {
            match &r.body {
                RecordBody::Event(Event::Hello { .. }) => hello = true,
                // Still queued when the session ended: never ran, nothing to verify.
                RecordBody::Event(e) if e.is_cancelled_proof() => {}
                RecordBody::Event(Event::ProofFinished { ok, verified, .. }) => {
                    assert!(
                        *ok && *verified,
                        "{}: a proof did not verify",
                        path.display()
                    );
                    finished += 1;
                }
                RecordBody::Sample(s) => {
                    samples += 1;
                    assert!(s.rss > 0);
                }
                _ => {}
            }
        }
        assert!(hello, "{}: no hello", path.display());
        assert!(finished >= 1, "{}: no finished proof", path.display());
        assert!(samples > 100, "{}: only {samples} samples", path.display());
    }
}

#[test]
fn classify_shows_the_prover_phases_of_shipped_sessions() {
    for path in sessions() {
        let out = Command::cargo_bin("provetop")
            .unwrap()
            .arg("classify")
            .arg(&path)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}: {:?}", path.display(), out);
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(text.contains("prover phases (from events)"), "{text}");
        // SupraSeal's proving call is opaque (no multiexp sub-phases).
        let opaque = backend_of(&path) == "supraseal";
        let phases: &[&str] = if opaque {
            &["synthesis", "prove", "verify"]
        } else {
            &["synthesis", "prove", "msm_h", "verify"]
        };
        for phase in phases {
            assert!(
                text.contains(phase),
                "{}: no {phase} in\n{text}",
                path.display()
            );
        }
    }
}

fn backend_of(path: &Path) -> String {
    load(path)
        .unwrap()
        .records
        .iter()
        .find_map(|r| match &r.body {
            RecordBody::Event(Event::Hello { backend, .. }) => Some(backend.to_string()),
            _ => None,
        })
        .unwrap()
}

fn asset(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../assets")
        .join(name)
}

/// The supraseal daemon on the H200: the SRS loaded once, pinned (the smaps series shows it,
/// the prover reports it, within 5 % of the SRS), GPU memory and phases present.
#[test]
fn supraseal_resident_session_keeps_the_srs_pinned_across_proofs() {
    let l = load(&asset("h200-supraseal-10x2p18-resident.ptop")).unwrap();
    let mut proofs = 0;
    let mut srs_loads = 0;
    let mut srs_events_after_first_proof = 0;
    let mut reported_pinned = Vec::new();
    let mut srs_bytes = 0;
    let mut pinned_series = 0u64;
    let mut gpu_peak = 0u64;
    let mut backend = String::new();
    for r in &l.records {
        match &r.body {
            RecordBody::Event(e) => match e {
                Event::Hello { backend: b, .. } => backend = b.to_string(),
                Event::SrsLoading { .. } => {
                    srs_loads += 1;
                    if proofs > 0 {
                        srs_events_after_first_proof += 1;
                    }
                }
                Event::ProofFinished { verified, .. } => {
                    assert!(verified);
                    proofs += 1;
                }
                Event::MemoryReport {
                    pinned_bytes,
                    srs_bytes: s,
                    ..
                } => {
                    reported_pinned.push(*pinned_bytes);
                    srs_bytes = *s;
                }
                _ => {}
            },
            RecordBody::Sample(s) => {
                pinned_series = pinned_series.max(s.pinned.unwrap_or(0));
                gpu_peak = gpu_peak.max(s.gpu_used.unwrap_or(0));
            }
            _ => {}
        }
    }
    assert_eq!(backend, "supraseal");
    assert!(proofs >= 5, "at least five proofs, got {proofs}");
    assert_eq!((srs_loads, srs_events_after_first_proof), (1, 0));
    assert!(reported_pinned.len() > proofs);
    // The same pinned amount after every proof: resident, never reloaded.
    assert!(reported_pinned.windows(2).all(|w| w[0] == w[1]));
    let pinned = reported_pinned[0] as f64;
    assert!(
        (pinned / srs_bytes as f64 - 1.0).abs() < 0.05,
        "prover pins its SRS: {pinned} vs {srs_bytes}"
    );
    // The monitor's own reading (smaps) holds at least the pinned SRS.
    assert!(
        pinned_series as f64 >= pinned,
        "smaps pinned {pinned_series} < reported {pinned}"
    );
    assert!(gpu_peak > 256 << 20, "GPU memory {gpu_peak}");
}

/// The memory wave at tens of GiB on the H200 (768 partitions × 2^18, two proofs 8 s of idle
/// apart): each proof starts from the SRS floor, synthesis climbs past 20 GiB, the peak tops
/// 30 GiB while the GPU proves, and RSS falls back to the floor once the proof is over.
#[test]
fn wave_session_has_a_floor_a_synthesis_climb_and_a_fall() {
    let l = load(&asset("h200-supraseal-wave-768x2p18.ptop")).unwrap();
    let gib = 1u64 << 30;
    #[derive(Debug, Default)]
    struct Proof {
        at_start: u64,
        at_prove: u64,
        peak: u64,
        /// Lowest RSS after `proof_finished`, until the next proof starts.
        after: Option<u64>,
    }
    let mut proofs: Vec<Proof> = Vec::new();
    let mut last_rss = 0;
    let mut gpu_while_proving = 0u64;
    let mut proving = false;
    for r in &l.records {
        match &r.body {
            RecordBody::Event(Event::ProofStarted { .. }) => proofs.push(Proof {
                at_start: last_rss,
                ..Default::default()
            }),
            RecordBody::Event(Event::PhaseStarted { phase, .. })
                if phase.to_string() == "prove" =>
            {
                proofs.last_mut().unwrap().at_prove = last_rss;
                proving = true;
            }
            RecordBody::Event(Event::PhaseEnded { phase, .. }) if phase.to_string() == "prove" => {
                proving = false
            }
            RecordBody::Event(Event::ProofFinished { .. }) => {
                proofs.last_mut().unwrap().after = Some(u64::MAX)
            }
            RecordBody::Sample(s) => {
                last_rss = s.rss;
                if let Some(p) = proofs.last_mut() {
                    p.peak = p.peak.max(s.peak.unwrap_or(s.rss));
                    if let Some(a) = &mut p.after {
                        *a = (*a).min(s.rss);
                    }
                }
                if proving {
                    gpu_while_proving = gpu_while_proving.max(s.gpu_used.unwrap_or(0));
                }
            }
            _ => {}
        }
    }
    assert_eq!(proofs.len(), 2, "{proofs:?}");
    for p in &proofs {
        assert!(p.at_start < gib, "starts from the SRS floor: {p:?}");
        assert!(p.at_prove > 20 * gib, "synthesis climbed: {p:?}");
        assert!(p.peak > 30 * gib, "peak: {p:?}");
        assert!(p.after.unwrap() < gib, "falls back to the floor: {p:?}");
    }
    assert!(gpu_while_proving > 512 << 20, "GPU memory while proving");
}

#[test]
fn gpu_sessions_carry_gpu_memory_and_the_gpu_backend() {
    let cuda = asset("h200-cuda-10x2p20.ptop");
    let l = load(&cuda).unwrap();
    let backend = l.records.iter().find_map(|r| match &r.body {
        RecordBody::Event(Event::Hello { backend, gpus, .. }) => Some((*backend, gpus.clone())),
        _ => None,
    });
    let (backend, gpus) = backend.unwrap();
    assert_eq!(backend.to_string(), "cuda");
    assert_eq!(gpus[0].name, "NVIDIA H200");
    assert_eq!(gpus[0].compute_capability.as_deref(), Some("9.0"));
    let gpu_peak = l
        .records
        .iter()
        .filter_map(|r| match &r.body {
            RecordBody::Sample(s) => s.gpu_used,
            _ => None,
        })
        .max()
        .unwrap();
    assert!(
        gpu_peak > 1 << 30,
        "GPU memory over 1 GiB while proving, got {gpu_peak}"
    );
}

/// The live screen on a supraseal daemon on the H200 (10 × 2^20, synthesis on 8 threads), the
/// mode keys pressed in turn: every mode proved and verified, each switch at a proof boundary
/// with the waiting queue cut anew (batch:2 proves two sectors a call), and pipelined delivers
/// sectors at least 1.5× as fast as single.
#[test]
fn h200_all_modes_session_switches_live_and_pipelined_outruns_single() {
    let l = load(&asset("h200-supraseal-all-modes-10x2p20.ptop")).unwrap();
    let mut switches = Vec::new();
    let mut sectors_of = std::collections::HashMap::new();
    // Per mode: (finish time ns, sectors) of its proofs, in order.
    let mut ends: Vec<(BatchMode, Vec<(u64, u32)>)> = Vec::new();
    let mut running = 0i32;
    let mut requeued = 0;
    let mut pinned = 0u64;
    let mut gpu = 0u64;
    for r in &l.records {
        match &r.body {
            RecordBody::Event(e) if e.is_cancelled_proof() => {
                if let Event::ProofFinished { requeued_as, .. } = e {
                    requeued += usize::from(!requeued_as.is_empty());
                }
            }
            RecordBody::Event(Event::ProofStarted {
                proof_id, sectors, ..
            }) => {
                running += 1;
                sectors_of.insert(*proof_id, *sectors);
            }
            RecordBody::Event(Event::ProofFinished {
                proof_id,
                verified,
                mode,
                ..
            }) => {
                assert!(verified);
                running -= 1;
                let end = (r.t, sectors_of[proof_id]);
                match ends.iter_mut().find(|(m, _)| m == mode) {
                    Some((_, v)) => v.push(end),
                    None => ends.push((*mode, vec![end])),
                }
            }
            RecordBody::Event(Event::ModeChanged { from, to }) => {
                // At a boundary: nothing in flight.
                assert_eq!(running, 0, "switch {from} → {to} with a proof in flight");
                switches.push((*from, *to));
            }
            RecordBody::Sample(s) => {
                pinned = pinned.max(s.pinned.unwrap_or(0));
                gpu = gpu.max(s.gpu_used.unwrap_or(0));
            }
            _ => {}
        }
    }
    use BatchMode::*;
    assert_eq!(
        switches,
        [
            (Single, Batch(2)),
            (Batch(2), Sps),
            (Sps, Pipelined(2)),
            (Pipelined(2), Single)
        ]
    );
    assert!(requeued > 10, "each switch cut the queue anew: {requeued}");
    let proofs = |mode: BatchMode| &ends.iter().find(|(m, _)| *m == mode).unwrap().1;
    assert!(proofs(Batch(2)).iter().all(|p| p.1 == 2));
    // Seconds per sector over a mode's first stretch: from its first finish to its last
    // before a gap (single runs twice), over the sectors finished after the first.
    let per_sector = |mode: BatchMode| {
        let v = proofs(mode);
        let n = 1 + v
            .windows(2)
            .take_while(|w| w[1].0 - w[0].0 < 10_000_000_000)
            .count();
        assert!(n >= 4, "{mode}: {n} proofs");
        let sectors: u32 = v[1..n].iter().map(|p| p.1).sum();
        (v[n - 1].0 - v[0].0) as f64 / 1e9 / sectors as f64
    };
    let (single, pipelined) = (per_sector(Single), per_sector(Pipelined(2)));
    assert!(
        single / pipelined >= 1.5,
        "pipelined {pipelined:.2} s/sector vs single {single:.2}"
    );
    assert!(pinned > 256 << 20, "pinned series {pinned}");
    assert!(gpu > 256 << 20, "GPU memory {gpu}");
}

/// `classify` compares the modes of a session: on the H200 all-modes recording its per-mode
/// table has the four modes in the order they ran, batch:2 proofs of two sectors, pipelined
/// at least 1.5× single's rate and sps at most a quarter of single's memory above the floor.
#[test]
fn classify_compares_the_modes_of_the_all_modes_session() {
    let out = Command::cargo_bin("provetop")
        .unwrap()
        .arg("classify")
        .arg(asset("h200-supraseal-all-modes-10x2p20.ptop"))
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let table: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.starts_with("batch modes (from events), SRS floor "))
        .skip(2)
        .take_while(|l| !l.is_empty())
        .collect();
    let rows: Vec<Vec<&str>> = table
        .iter()
        .map(|l| l.split_whitespace().collect())
        .collect();
    let modes: Vec<&str> = rows.iter().map(|r| r[0]).collect();
    assert_eq!(modes, ["single", "batch:2", "sps", "pipelined:2"], "{text}");
    let num = |mode: &str, col: usize| -> f64 {
        rows.iter().find(|r| r[0] == mode).unwrap()[col]
            .parse()
            .unwrap()
    };
    // Columns: mode proofs sectors busy s/sector sectors/h …
    assert_eq!(num("batch:2", 2), 2.0 * num("batch:2", 1));
    assert!(num("single", 4) >= 1.5 * num("pipelined:2", 4), "{text}");
    let above = |mode: &str| {
        let r = rows.iter().find(|r| r[0] == mode).unwrap();
        let (v, unit) = (r[r.len() - 2], r[r.len() - 1]);
        let v: f64 = v.parse().unwrap();
        v * match unit {
            "GiB" => 1024.0,
            "MiB" => 1.0,
            "KiB" => 1.0 / 1024.0,
            u => panic!("unit {u}"),
        }
    };
    assert!(above("sps") * 4.0 <= above("single"), "{text}");
}

/// The live screen on a supraseal daemon on the H200 (10 × 2^20, synthesis on all 16 cores),
/// every mode switched live, with CPU and GPU usage readings: replayed through the model the
/// screen draws, pipelined:2 keeps the cores and the GPU busy together for a larger share of
/// its busy time than single, and its GPU is busier (single leaves it idle while it
/// synthesizes). SupraSeal's own host threads keep 7 of the 16 cores busy while it proves, so
/// single's overlap is not small (docs/usage.md#against-nvidia-smi-by-batch-mode).
#[test]
fn h200_usage_session_shows_pipelined_overlapping_cpu_and_gpu_more_than_single() {
    use provetop::model::Model;
    let l = load(&asset("h200-supraseal-all-modes-usage-10x2p20.ptop")).unwrap();
    let mut m = Model::new(Default::default());
    for r in &l.records {
        m.apply(r);
    }
    let single = m
        .usage
        .overlap_of(BatchMode::Single)
        .expect("single's overlap");
    let pipelined = m
        .usage
        .overlap_of(BatchMode::Pipelined(2))
        .expect("pipelined's overlap");
    eprintln!("overlap: single {single:.3}, pipelined:2 {pipelined:.3}");
    assert!(
        pipelined > single + 0.02,
        "single {single}, pipelined {pipelined}"
    );
    // GPU utilisation per mode, from the samples after the SRS load.
    let mut mode = BatchMode::Single;
    let mut ready = false;
    let mut util: Vec<(BatchMode, f64, u32)> = Vec::new();
    for r in &l.records {
        match &r.body {
            RecordBody::Event(Event::SrsReady { .. }) => ready = true,
            RecordBody::Event(Event::ModeChanged { to, .. }) => mode = *to,
            RecordBody::Sample(s) if ready => {
                if let Some(u) = s.gpus.first().and_then(|g| g.utilization()) {
                    match util.iter_mut().find(|(m, ..)| *m == mode) {
                        Some((_, sum, n)) => {
                            *sum += f64::from(u);
                            *n += 1;
                        }
                        None => util.push((mode, f64::from(u), 1)),
                    }
                }
            }
            _ => {}
        }
    }
    let mean = |want: BatchMode| {
        let (_, sum, n) = util.iter().find(|(m, ..)| *m == want).unwrap();
        sum / f64::from(*n)
    };
    let (us, up) = (mean(BatchMode::Single), mean(BatchMode::Pipelined(2)));
    eprintln!("GPU utilisation: single {us:.1} %, pipelined:2 {up:.1} %");
    assert!(up > us + 8.0, "single {us}, pipelined {up}");
    assert!(m.usage.gpu(0).is_some(), "GPU 0's series");
    assert!(m.usage.readings_len() > 100);
}
