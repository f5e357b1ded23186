//! The memory forecast behind `predicted_free`, fed event by event.

use provetop_shared::forecast::Forecast;
use provetop_shared::protocol::BatchMode;
use provetop_shared::units::GIB;
use provetop_shared::Sample;
use provetop_testkit::fixtures::{proof_finished as finished, proof_started as started};

fn sample(rss: u64, peak: u64, avail: u64) -> Sample {
    Sample {
        rss,
        peak: Some(peak),
        mem_available: Some(avail),
        ..Sample::default()
    }
}

#[test]
fn predicts_from_the_last_proofs_of_the_same_shape() {
    let mut f = Forecast::default();
    f.event(&started(1, BatchMode::Single));
    // No proof of this shape has finished yet: no forecast.
    assert!(f.predicted_free(&sample(GIB, GIB, 10 * GIB)).is_none());
    f.sample(&sample(2 * GIB, 5 * GIB, 10 * GIB));
    f.sample(&sample(3 * GIB, 3 * GIB, 10 * GIB));
    f.event(&finished(1, true));
    // Proof 2, same shape, at 1 GiB with 3 GiB available: it will need 4 GiB more.
    f.event(&started(2, BatchMode::Single));
    let (free, what) = f.predicted_free(&sample(GIB, GIB, 3 * GIB)).unwrap();
    assert_eq!(free, -(GIB as f64));
    assert!(
        what.contains("proof 2") && what.contains("5.0 GiB"),
        "{what}"
    );
    // Past its peak, it needs nothing more.
    let (free, _) = f.predicted_free(&sample(6 * GIB, 6 * GIB, GIB)).unwrap();
    assert_eq!(free, GIB as f64);
    // A cgroup with less room than MemAvailable is the limit.
    let mut s = sample(GIB, GIB, 30 * GIB);
    s.cgroup_max = Some(8 * GIB);
    s.cgroup_current = Some(2 * GIB);
    assert_eq!(f.predicted_free(&s).unwrap().0, 2.0 * GIB as f64);
    // Another mode has no history yet.
    f.event(&finished(2, false));
    f.event(&started(3, BatchMode::Batch(2)));
    assert!(f.predicted_free(&sample(GIB, GIB, GIB)).is_none());
}

#[test]
fn failed_proofs_teach_nothing_and_the_last_few_count() {
    let mut f = Forecast::default();
    f.event(&started(1, BatchMode::Single));
    f.sample(&sample(9 * GIB, 9 * GIB, 0));
    f.event(&finished(1, false));
    f.event(&started(2, BatchMode::Single));
    assert!(f.predicted_free(&sample(0, 0, GIB)).is_none());
    // Peaks 8, 2, 2, 2: after three more, the 8 GiB one has aged out.
    for (id, peak) in [(2, 8), (3, 2), (4, 2), (5, 2)] {
        if id > 2 {
            f.event(&started(id, BatchMode::Single));
        }
        f.sample(&sample(peak * GIB, peak * GIB, 0));
        f.event(&finished(id, true));
    }
    f.event(&started(6, BatchMode::Single));
    let (free, _) = f.predicted_free(&sample(0, 0, 10 * GIB)).unwrap();
    assert_eq!(free, 8.0 * GIB as f64);
}
