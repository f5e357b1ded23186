//! A rotating recording: parts end between records at a flush, read back as one timeline by
//! every reader (a proof cut in the middle included), followed from part to part, and
//! retention removes only whole finished parts (with their chunk indexes), never the one being
//! written.

use std::path::Path;
use std::time::Duration;

use provetop::follow::{Follower, Item};
use provetop::monitor::recorder::Recorder;
use provetop::monitor::rotation::Rotation;
use provetop_shared::session::parts::{part_path, parts, Retention};
use provetop_shared::session::{load, SessionHeader, SessionWriter};
use provetop_shared::{Record, RecordBody};
use provetop_testkit::flight::{Flight, FlightConfig};

/// Ten minutes of a flight: proofs with phases, output lines, usage.
fn flight() -> Vec<Record> {
    Flight::new(FlightConfig {
        seconds: 600,
        ..FlightConfig::default()
    })
    .collect()
}

/// Record `recs` to `base` rotating as `rot`, a flush between batches of two minutes of
/// records; `each` sees the recording after every batch.
fn record(base: &Path, recs: &[Record], rot: Rotation, mut each: impl FnMut(usize)) -> Vec<String> {
    let h = SessionHeader::now(vec!["flight".into()], 20.0);
    let mut r = Recorder::create(base, &h).unwrap();
    r.rotate(rot, h).unwrap();
    let mut said = Vec::new();
    let per = recs.len() / 5 + 1;
    for (i, batch) in recs.chunks(per).enumerate() {
        for rec in batch {
            assert!(r.record(rec).is_none());
        }
        std::thread::sleep(Duration::from_millis(510));
        if let Some(m) = r.tick() {
            said.push(format!("{m:?}"));
        }
        each(i);
    }
    assert_eq!(r.finish().unwrap(), base);
    said
}

#[test]
fn a_recording_rotated_in_the_middle_of_proofs_reads_back_whole_as_one_session() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join("fl.ptop");
    let recs = flight();
    let rot = Rotation::parse("100s", None, None).unwrap();
    record(&base, &recs, rot, |_| {});
    let p = parts(&base);
    assert!(p.len() >= 4, "{p:?}");
    assert!(!base.exists());
    // By the name it was recorded to, or by any part: the whole recording, in order.
    for name in [base.clone(), part_path(&base, 3)] {
        let l = load(&name).unwrap();
        assert!(l.warnings.is_empty(), "{:?}", l.warnings);
        assert!(
            l.records == recs,
            "{}: {} records",
            name.display(),
            l.records.len()
        );
    }
    // A proof runs across a part's end: its phases are all there, in the set as one.
    let first_part = load_one_part(&part_path(&base, 1));
    let started = |rs: &[Record]| {
        rs.iter()
            .filter(|r| {
                matches!(
                    &r.body,
                    RecordBody::Event(provetop_shared::Event::ProofStarted { .. })
                )
            })
            .count()
    };
    let finished = |rs: &[Record]| {
        rs.iter()
            .filter(|r| {
                matches!(
                    &r.body,
                    RecordBody::Event(provetop_shared::Event::ProofFinished { .. })
                )
            })
            .count()
    };
    assert_ne!(
        started(&first_part),
        finished(&first_part),
        "no proof crosses the first part's end"
    );
    // The classifier reads the set as one session.
    let out = std::process::Command::new(provetop_testkit::bins::provetop())
        .args(["classify", base.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// One part's records alone (the part read as a lone session file, by a copy elsewhere).
fn load_one_part(p: &Path) -> Vec<Record> {
    let dir = tempfile::tempdir().unwrap();
    let q = dir.path().join("alone.ptop");
    std::fs::copy(p, &q).unwrap();
    load(&q).unwrap().records
}

#[test]
fn a_follower_goes_from_part_to_part_and_misses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join("fo.ptop");
    let recs = flight();
    let rot = Rotation::parse("100s", None, None).unwrap();
    let mut f: Option<Follower> = None;
    let mut got = Vec::new();
    record(&base, &recs, rot, |_| {
        let f = f.get_or_insert_with(|| Follower::open(&base).unwrap());
        for i in f.read().unwrap() {
            match i {
                Item::Record(r) => got.push(r),
                Item::Warning(w) => panic!("{w}"),
            }
        }
    });
    let mut f = f.unwrap();
    // Whatever was left in the last part.
    for _ in 0..3 {
        for i in f.read().unwrap() {
            if let Item::Record(r) = i {
                got.push(r);
            }
        }
    }
    assert!(got == recs, "{} of {} records", got.len(), recs.len());
}

#[test]
fn retention_removes_whole_finished_parts_and_never_the_one_being_written() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join("re.ptop");
    let recs = flight();
    // Parts end at the flushes after 240 s and 480 s: the last part holds 480 s to the end.
    let mut rot = Rotation::parse("150s", None, None).unwrap();
    rot.keep = Retention {
        retain: None,
        max_bytes: Some(1),
    };
    let said = record(&base, &recs, rot, |_| {
        // At every moment, the part being written is there.
        assert!(!parts(&base).is_empty());
    });
    assert!(
        said.iter()
            .any(|s| s.contains("expired parts of the recording removed")),
        "{said:?}"
    );
    let left = parts(&base);
    assert_eq!(left.len(), 1, "{left:?}");
    // The removed parts' chunk indexes went with them; the part left keeps its own.
    let mut files: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    let index = provetop_shared::session::compact::sidecar::path_of(&left[0].1);
    assert_eq!(files, [left[0].1.clone(), index], "{files:?}");
    // What is left is a whole part: it reads cleanly, and is the end of the recording.
    let l = load(&base).unwrap();
    assert!(l.warnings.is_empty(), "{:?}", l.warnings);
    assert!(!l.records.is_empty() && recs.ends_with(&l.records));
}

/// A set kept long (hundreds of parts: replay holds each part's file open, and its chunk
/// heads' spill past a block) opens in replay where the soft limit of open files is below
/// its parts: replay raises the soft limit to the hard one.
#[test]
fn replay_opens_a_set_of_more_parts_than_the_soft_open_file_limit() {
    if !provetop_testkit::tmux::have_tmux("replay_opens_a_set_of_more_parts") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join("long.ptop");
    let h = SessionHeader::now(vec!["flight".into()], 20.0);
    let recs: Vec<Record> = Flight::new(FlightConfig {
        seconds: 1_200,
        ..FlightConfig::default()
    })
    .collect();
    let n = 160;
    for (i, part) in recs.chunks(recs.len().div_ceil(n)).enumerate() {
        let mut w = SessionWriter::create_compact(&part_path(&base, i as u32 + 1), &h).unwrap();
        for (k, r) in part.iter().enumerate() {
            w.append(r).unwrap();
            if k % 24 == 23 {
                w.flush().unwrap();
            }
        }
        w.sync().unwrap();
    }
    assert_eq!(parts(&base).len(), n);
    let q = |p: &Path| provetop_testkit::tmux::sh_quote(&p.display().to_string());
    let cmd = format!(
        "ulimit -Sn 64; {} replay --speed 64 {} 2>{}; echo REPLAY-EXIT=$?; sleep 600",
        q(&provetop_testkit::bins::provetop()),
        q(&base),
        q(&dir.path().join("err"))
    );
    let tmux = provetop_testkit::tmux::Tmux::start("replay-many-parts", 120, 30, &cmd);
    let t = Duration::from_secs(30);
    tmux.keys(&["G"]);
    tmux.wait_for("the end", t, |s| {
        s.contains("end") || s.contains("REPLAY-EXIT=")
    });
    tmux.keys(&["q"]);
    let s = tmux.wait_for("exit", t, |s| s.contains("REPLAY-EXIT="));
    let err = std::fs::read_to_string(dir.path().join("err")).unwrap();
    assert!(s.contains("REPLAY-EXIT=0"), "{s}\n{err}");
    assert!(!err.contains("open files"), "{err}");
}
