//! The disk fills up while recording: one warning, monitoring goes on, recording recovers
//! when space comes back, and the file has no torn frames.
//!
//! The write errors are real kernel errors: a file-size limit (RLIMIT_FSIZE, EFBIG) stands in
//! for a full disk because it can be lifted again without root. Its own test binary, as the
//! limit is process-wide.

use std::time::Duration;

use provetop::monitor::recorder::Recorder;
use provetop_shared::session::{load, SessionHeader};
use provetop_shared::{Mark, Record, RecordBody, Sample};

fn sample(t: u64) -> Record {
    Record::new(
        t,
        RecordBody::Sample(Sample {
            rss: t,
            anon: Some(t),
            ..Sample::default()
        }),
    )
}

fn set_fsize(limit: u64) {
    use nix::sys::resource::{setrlimit, Resource, RLIM_INFINITY};
    setrlimit(Resource::RLIMIT_FSIZE, limit, RLIM_INFINITY).unwrap();
}

/// The file-size limit is process-wide: one test at a time sets it.
static LIMIT: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn ignore_sigxfsz() {
    // SAFETY: SIG_IGN installs no handler code.
    unsafe {
        nix::sys::signal::signal(
            nix::sys::signal::Signal::SIGXFSZ,
            nix::sys::signal::SigHandler::SigIgn,
        )
        .unwrap();
    }
}

#[test]
fn a_full_disk_when_a_part_should_end_keeps_recording_in_it_and_rotates_once_space_is_back() {
    let _one = LIMIT.lock().unwrap_or_else(|e| e.into_inner());
    ignore_sigxfsz();
    use provetop::monitor::rotation::Rotation;
    use provetop_shared::session::compact::tail_block;
    use provetop_shared::session::parts::parts;
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join("r.ptop");
    let h = SessionHeader::now(vec![], 20.0);
    let mut r = Recorder::create(&base, &h).unwrap();
    r.rotate(Rotation::parse("100s", None, None).unwrap(), h)
        .unwrap();
    let at = |i: u64| sample(1 + i * 50_000_000);
    for i in 0..1000 {
        assert!(r.record(&at(i)).is_none());
    }
    std::thread::sleep(Duration::from_millis(510));
    assert!(r.tick().is_none());
    // The part is due at the next flush; its records fit, ending the part does not.
    let part1 = parts(&base)[0].1.clone();
    let mut fits = std::fs::metadata(&part1).unwrap().len() + 100;
    for i in 1000..2100 {
        assert!(r.record(&at(i)).is_none());
        fits += tail_block(0, &at(i)).len() as u64;
    }
    set_fsize(fits);
    std::thread::sleep(Duration::from_millis(510));
    let m = r.tick().expect("a warning");
    set_fsize(u64::MAX);
    let Mark::Warning { text } = &m else {
        panic!("{m:?}")
    };
    assert!(
        text.contains("cannot start the next part") && text.contains("File too large"),
        "{text}"
    );
    assert_eq!(parts(&base).len(), 1);
    // Recording goes on in the part; once space is back, the next part starts.
    for i in 2100..2200 {
        assert!(r.record(&at(i)).is_none());
    }
    std::thread::sleep(Duration::from_millis(1010));
    let m = r.tick().expect("a note");
    assert!(
        format!("{m:?}").contains("recording goes on in the next part"),
        "{m:?}"
    );
    for i in 2200..2300 {
        assert!(r.record(&at(i)).is_none());
    }
    r.finish().unwrap();
    assert_eq!(parts(&base).len(), 2);
    let l = load(&base).unwrap();
    assert!(l.warnings.is_empty(), "{:?}", l.warnings);
    let ts: Vec<u64> = l.records.iter().map(|r| r.t).collect();
    assert_eq!(
        ts,
        (0..2300).map(|i| 1 + i * 50_000_000).collect::<Vec<_>>()
    );
}

#[test]
fn disk_full_while_recording_warns_once_and_recovers() {
    let _one = LIMIT.lock().unwrap_or_else(|e| e.into_inner());
    // Writing past the limit raises SIGXFSZ, which would kill the process: ignore it so the
    // write fails with EFBIG instead.
    // SAFETY: SIG_IGN installs no handler code.
    unsafe {
        nix::sys::signal::signal(
            nix::sys::signal::Signal::SIGXFSZ,
            nix::sys::signal::SigHandler::SigIgn,
        )
        .unwrap();
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.ptsess");
    let mut r = Recorder::create(&path, &SessionHeader::now(vec![], 20.0)).unwrap();
    set_fsize(64 << 10);

    let mut warnings = Vec::new();
    let mut t = 0u64;
    // ~5 records a tick, a tick "every second" (waiting is simulated by sleeping a little
    // more than a second only where it matters).
    while !r.is_failing() {
        t += 1;
        if let Some(m) = r.record(&sample(t)) {
            warnings.push(m);
        }
        if t % 2000 == 0 {
            std::thread::sleep(Duration::from_millis(1010));
            if let Some(m) = r.tick() {
                warnings.push(m);
            }
        }
        assert!(t < 1_000_000, "writes never failed");
    }
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    let Mark::Warning { text } = &warnings[0] else {
        panic!("{warnings:?}")
    };
    assert!(
        text.contains("File too large") && text.contains("monitoring continues"),
        "{text}"
    );

    // Monitoring goes on: more records, more ticks, no more warnings.
    for _ in 0..500 {
        t += 1;
        assert!(r.record(&sample(t)).is_none());
    }
    std::thread::sleep(Duration::from_millis(1010));
    assert!(r.tick().is_none());

    // Space comes back.
    set_fsize(u64::MAX);
    std::thread::sleep(Duration::from_millis(1010));
    let m = r.tick().expect("no recovery mark");
    let Mark::Warning { text } = &m else {
        panic!("{m:?}")
    };
    assert!(text.contains("works again; nothing was lost"), "{text}");
    assert!(!r.is_failing());
    for _ in 0..10 {
        t += 1;
        assert!(r.record(&sample(t)).is_none());
    }
    r.finish().unwrap();

    let l = load(&path).unwrap();
    assert!(l.warnings.is_empty(), "torn frames: {:?}", l.warnings);
    let ts: Vec<u64> = l.records.iter().map(|r| r.t).collect();
    assert_eq!(ts, (1..=t).collect::<Vec<_>>(), "records lost or reordered");
}
