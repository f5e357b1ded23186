//! The recorder: flush cadence, finish, file mode, errors at start.

use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

use provetop::monitor::recorder::Recorder;
use provetop_shared::session::{load, SessionHeader};
use provetop_shared::{Record, RecordBody, Sample};

fn sample(t: u64) -> Record {
    Record::new(
        t,
        RecordBody::Sample(Sample {
            rss: t * 4096,
            peak: Some(t * 4096 + 1),
            ..Sample::default()
        }),
    )
}

fn size(p: &std::path::Path) -> u64 {
    std::fs::metadata(p).unwrap().len()
}

#[test]
fn flushes_at_least_once_a_second_and_on_finish() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.ptsess");
    let header = SessionHeader::now(vec!["prover".into()], 20.0);
    let mut r = Recorder::create(&path, &header).unwrap();
    // The header is on disk at once: a session killed in its first second still loads.
    let header_len = size(&path);
    assert!(header_len > 8);
    assert_eq!(load(&path).unwrap().records.len(), 0);
    assert_eq!(
        std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
        0o600
    );

    for t in 1..=100 {
        assert!(r.record(&sample(t)).is_none());
    }
    assert!(r.tick().is_none());
    assert_eq!(size(&path), header_len, "flushed before a second passed");
    std::thread::sleep(Duration::from_millis(1050));
    assert!(r.tick().is_none());
    let on_disk = load(&path).unwrap();
    assert_eq!(on_disk.records.len(), 100, "not flushed after a second");

    for t in 101..=150 {
        r.record(&sample(t));
    }
    let p = r.finish().unwrap();
    assert_eq!(p, path);
    let l = load(&path).unwrap();
    assert_eq!(l.records.len(), 150);
    assert!(l.warnings.is_empty(), "{:?}", l.warnings);
    assert_eq!(l.records[149], sample(150));
}

#[test]
fn an_existing_path_or_a_missing_directory_at_start_is_a_clear_error() {
    let header = SessionHeader::now(vec![], 20.0);
    // Only a new file is ever written (tests/files.rs): an existing path, even /dev/full, is
    // refused by name.
    let e = Recorder::create(std::path::Path::new("/dev/full"), &header)
        .err()
        .unwrap();
    let msg = format!("{e:#}");
    assert!(
        msg.contains("/dev/full") && msg.contains("already exists"),
        "{msg}"
    );
    assert!(!msg.contains('\n'));
    let e = Recorder::create(std::path::Path::new("/nonexistent/dir/s.ptsess"), &header)
        .err()
        .unwrap();
    assert!(format!("{e:#}").contains("/nonexistent/dir/s.ptsess"));
}
