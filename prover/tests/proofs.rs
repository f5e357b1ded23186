//! Library-level checks with real proofs: verification rejects wrong public inputs, the SRS
//! cache file detects damage.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use blstrs::Scalar as Fr;
use provetop_prover::backend::Backend;
use provetop_prover::circuit::{Layout, PartitionCircuit, PartitionWitness};
use provetop_prover::events::Emitter;
use provetop_prover::phases::{Call, CallTracker};
use provetop_prover::sector::Sector;
use provetop_prover::srs::{self, cache, SrsOptions};
use provetop_shared::protocol::{Event, SrsSource};

fn backend(layout: &Layout, cache_dir: Option<std::path::PathBuf>) -> (Backend, Emitter) {
    let e = Emitter::memory();
    let srs = srs::obtain(
        layout,
        &SrsOptions {
            cache_dir,
            progress_line: false,
        },
        &e,
        &AtomicBool::new(false),
    )
    .unwrap();
    (Backend::new(srs).unwrap(), e)
}

#[test]
fn proofs_verify_and_wrong_public_inputs_are_rejected() {
    let layout = Layout::for_constraints(1024).unwrap();
    let (b, e) = backend(&layout, None);
    // bellperson's step markers reach the tracker through the log bridge.
    provetop_prover::logbridge::install(e.clone());
    let sector = Arc::new(Sector::generate(9, 0, layout.depth));
    let witnesses: Vec<PartitionWitness> = (0..2)
        .map(|p| PartitionWitness::new(&layout, sector.clone(), 9, p))
        .collect();
    let tracker = CallTracker::new(Call {
        emitter: e.clone(),
        proof_id: 1,
        partition: None,
        circuits: 2,
        steps: b.substeps(),
        abort: Arc::new(AtomicBool::new(false)),
    });
    let circuits = witnesses
        .iter()
        .map(|w| PartitionCircuit::new(layout, w.clone(), Some(tracker.clone())))
        .collect();
    let proofs = b.prove(circuits, &tracker).unwrap();
    assert_eq!(proofs.len(), 2);
    for (proof, w) in proofs.iter().zip(&witnesses) {
        let inputs = w.public_inputs(&layout);
        assert_eq!(inputs.len(), layout.public_inputs());
        assert!(b.verify(proof, &inputs).unwrap());
        // Another root.
        let mut wrong = inputs.clone();
        wrong[0] += Fr::from(1u64);
        assert!(!b.verify(proof, &wrong).unwrap());
        // Other challenged leaves.
        let mut wrong = inputs.clone();
        wrong[1] += Fr::from(2u64);
        assert!(!b.verify(proof, &wrong).unwrap());
    }
    // Partition 0's proof does not verify with partition 1's inputs.
    assert!(!b
        .verify(&proofs[0], &witnesses[1].public_inputs(&layout))
        .unwrap());
    // Measured totals include synthesis and the prove sub-steps.
    let t = tracker.totals();
    assert!(t.len() >= 7, "{t:?}");
    // Every multiexp task was seen finishing: no MSM phase had to be closed by the fallback.
    assert_eq!(
        tracker.forced(),
        Vec::<provetop_shared::protocol::Phase>::new()
    );
    assert!(e.taken().iter().any(|m| matches!(
        m.event,
        Event::SrsLoading {
            source: SrsSource::Generated,
            ..
        }
    )));
}

#[test]
fn cache_file_round_trip_and_damage() {
    let layout = Layout::for_constraints(1024).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (b, _) = backend(&layout, Some(dir.path().to_path_buf()));
    let path = srs::cache_path(dir.path(), &layout);
    let shape = layout.shape_id();
    let p = cache::load(&path, &shape, None).unwrap();
    assert!(&p == b.params());
    assert_eq!(srs::resident_bytes(&p), b.srs_bytes());
    // The payload is bellperson's own encoding (readable without our trailer).
    let raw = std::fs::read(&path).unwrap();
    let t = cache::read_trailer(&path).unwrap();
    let plain = bellperson::groth16::Parameters::<blstrs::Bls12>::read(
        &raw[..t.payload_len as usize],
        true,
    )
    .unwrap();
    assert!(&plain == b.params());

    assert!(matches!(
        cache::load(&path, "other-shape", None),
        Err(cache::CacheError::Corrupt(m)) if m.contains("shape")
    ));
    let damaged = dir.path().join("d.params");
    for (i, what) in [(10usize, "checksum"), (raw.len() - 3, "magic")] {
        let mut b2 = raw.clone();
        b2[i] ^= 1;
        std::fs::write(&damaged, &b2).unwrap();
        match cache::load(&damaged, &shape, None) {
            Err(cache::CacheError::Corrupt(m)) => assert!(m.contains(what), "{m}"),
            other => panic!("{what}: {:?}", other.map(|_| ())),
        }
    }
    std::fs::write(&damaged, &raw[..raw.len() - 100]).unwrap();
    assert!(matches!(
        cache::load(&damaged, &shape, None),
        Err(cache::CacheError::Corrupt(_))
    ));
    std::fs::write(&damaged, b"").unwrap();
    assert!(matches!(
        cache::load(&damaged, &shape, None),
        Err(cache::CacheError::Corrupt(_))
    ));
    assert!(matches!(
        cache::load(&dir.path().join("nope"), &shape, None),
        Err(cache::CacheError::Missing)
    ));
}
