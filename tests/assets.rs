//! The sessions shipped in `assets/` were recorded from the real prover (on the lent H200 and
//! on the 2-core VM). They must stay readable by this build: every record intact, every proof
//! verified, and classify/export/replay-ready.

use std::path::{Path, PathBuf};
use std::process::Command;

use assert_cmd::cargo::CommandCargoExt as _;
use provetop_shared::protocol::Event;
use provetop_shared::session::load;
use provetop_shared::RecordBody;

fn sessions() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../assets");
    let mut v: Vec<PathBuf> = std::fs::read_dir(&dir)
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
        for phase in ["synthesis", "prove", "msm_h", "verify"] {
            assert!(
                text.contains(phase),
                "{}: no {phase} in\n{text}",
                path.display()
            );
        }
    }
}

#[test]
fn gpu_sessions_carry_gpu_memory_and_the_gpu_backend() {
    let cuda = Path::new(env!("CARGO_MANIFEST_DIR")).join("../assets/h200-cuda-10x2p20.ptop");
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
