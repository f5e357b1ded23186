//! The store: seeking (`model_at` equals a straight replay), phase/alert navigation, and the
//! session reader under damage — round trips of random records, every cut point, every
//! flipped byte, and arbitrary bytes fed to both readers.

use std::path::Path;

use proptest::prelude::*;
use provetop::model::Model;
use provetop::store::Store;
use provetop_shared::classify::Thresholds;
use provetop_shared::protocol::ProverState;
use provetop_shared::record::GpuReading;
use provetop_shared::session::{
    encode_payload, load_bytes, FrameItem, Frames, SessionWriter, MAGIC,
};
use provetop_shared::{
    Alert, AlertLevel, AlertState, Control, Event, Mark, Phase, Record, RecordBody, Sample,
};
use provetop_testkit::fixtures::*;

fn open_records(dir: &Path, recs: &[Record]) -> Store {
    let p = dir.join("s.ptop");
    write_session(&p, recs);
    let st = Store::open(&p).unwrap();
    assert!(st.warnings().is_empty(), "{:?}", st.warnings());
    st
}

/// The state at `t` the slow way: every record with reach ≤ t, from the start.
fn straight(recs: &[Record], t: u64) -> Model {
    let mut m = Model::new(Thresholds::default());
    let mut hi = 0;
    for r in recs {
        hi = hi.max(r.t);
        if hi > t {
            break;
        }
        m.apply(r);
    }
    m
}

/// The first `n` records of the long recording.
fn long_records(n: usize) -> Vec<Record> {
    long_session(at(0.0)).take(n).collect()
}

#[test]
fn model_at_equals_a_straight_replay() {
    let dir = tempfile::tempdir().unwrap();
    let recs = long_records(7000);
    let st = open_records(dir.path(), &recs);
    assert!(st.snapshots() > 3, "the file spans several snapshots");
    let (s, e) = (st.start(), st.end());
    let mut times = vec![0, s, s + 1, e, e + 1, u64::MAX];
    for k in 1..12 {
        times.push(s + (e - s) / 12 * k + k * 7_777_777);
    }
    // Right at and around snapshot boundaries.
    for i in [st.snapshot_every(), 2 * st.snapshot_every()] {
        let r = st.reach(i).unwrap();
        times.extend([r - 1, r, r + 1]);
    }
    for t in times {
        let a = st.model_at(t);
        let b = straight(&recs, t);
        assert_eq!(a.records(), b.records(), "t={t}");
        assert_eq!(format!("{a:?}"), format!("{b:?}"), "t={t}");
    }
}

#[test]
fn scan_has_the_same_answers_without_snapshots() {
    let dir = tempfile::tempdir().unwrap();
    let recs = long_records(3500);
    let p = dir.path().join("s.ptop");
    write_session(&p, &recs);
    let full = Store::open(&p).unwrap();
    let scan = Store::scan(&p, Thresholds::default()).unwrap();
    assert_eq!(scan.snapshots(), 1, "only the empty model");
    assert!(full.snapshots() > 1);
    assert_eq!(scan.phase_starts(), full.phase_starts());
    assert_eq!(scan.alert_times(), full.alert_times());
    assert_eq!(scan.spans(), full.spans());
    for i in [0, 1, 1000, recs.len() - 1] {
        assert_eq!(scan.phase_at_index(i), full.phase_at_index(i));
    }
    let t = full.start() + (full.end() - full.start()) / 3;
    assert_eq!(
        format!("{:?}", scan.model_at(t)),
        format!("{:?}", full.model_at(t))
    );
}

#[test]
fn start_end_and_index() {
    let dir = tempfile::tempdir().unwrap();
    let recs = demo_records();
    let st = open_records(dir.path(), &recs);
    assert_eq!(st.start(), at(0.0));
    assert_eq!(st.end(), at(29.9));
    assert_eq!(st.index_at(0), 0);
    assert_eq!(st.index_at(u64::MAX), recs.len());
    assert_eq!(st.index_at(at(0.0)), 1);
    assert_eq!(st.model_at(at(4.0)).current_phase_text(), "synthesis p0");
    assert_eq!(st.model_at(at(5.0)).current_phase_text(), "synthesis ×2");
    assert_eq!(st.model_at(at(10.0)).current_phase_text(), "fft_h");
    assert!(st.has_events());
}

#[test]
fn phase_and_alert_navigation() {
    let dir = tempfile::tempdir().unwrap();
    let st = open_records(dir.path(), &demo_records());
    // Synthesis of partition 1 starts while partition 0's is open: one stop, not two.
    let starts = [at(4.0), at(9.25), at(9.3), at(10.85), at(12.25)];
    assert_eq!(st.phase_starts(), starts);
    assert_eq!(st.next_phase_start(0), Some(at(4.0)));
    assert_eq!(st.next_phase_start(at(4.0)), Some(at(9.25)));
    assert_eq!(st.next_phase_start(at(12.25)), None);
    assert_eq!(st.prev_phase_start(at(9.25)), Some(at(4.0)));
    assert_eq!(st.prev_phase_start(at(4.0)), None);
    assert_eq!(st.prev_phase_start(u64::MAX), Some(at(12.25)));
    assert_eq!(st.alert_times(), [at(6.7)], "firing only, not cleared");
    assert_eq!(st.next_alert(at(1.0)), Some(at(6.7)));
    assert_eq!(st.next_alert(at(6.7)), None);
    assert_eq!(st.prev_alert(at(20.0)), Some(at(6.7)));
    assert_eq!(st.prev_alert(at(6.7)), None);
}

#[test]
fn csv_phase_starts_are_threshold_runs() {
    let st = Store::open(&seed_csv()).unwrap();
    assert!(!st.has_events());
    let secs: Vec<u64> = st
        .phase_starts()
        .iter()
        .map(|t| t / 1_000_000_000)
        .collect();
    // Run lengths 3, 11, 1, 20, 16, 25, 32, 4, 2, 221 of the seed table.
    assert_eq!(secs, [3, 14, 15, 35, 51, 76, 108, 112, 114]);
    assert_eq!(st.start(), 0);
    assert_eq!(st.end(), 334_000_000_000);
    assert_eq!(st.phase_at_index(0), None);
    assert!(provetop::store::phase_table(&st).is_none());
}

#[test]
fn non_monotonic_csv_seeks_by_reach_in_file_order() {
    let csv = "timestamp,rss_kb\n10,1\n11,2\n5,3\n12,4\n";
    let loaded = load_bytes(Path::new("n.csv"), csv.as_bytes()).unwrap();
    let st = Store::from_loaded(Path::new("n.csv"), loaded, Thresholds::default());
    // Times relative to the earliest row (5): 5, 6, 0, 7 s; reach 5, 6, 6, 7 s.
    assert_eq!(st.start(), 0);
    assert_eq!(st.end(), 7_000_000_000);
    assert_eq!(st.index_at(5_999_999_999), 1);
    assert_eq!(
        st.index_at(6_000_000_000),
        3,
        "the late row comes with the one before it"
    );
    assert_eq!(st.model_at(6_000_000_000).records(), 3);
    assert_eq!(st.warnings().len(), 1);
}

/// The demo session written to DIR/d.ptop: its path, records and bytes, and where its
/// records begin (after the magic, the header's length and the header).
fn demo_bytes(dir: &Path) -> (std::path::PathBuf, Vec<Record>, Vec<u8>, usize) {
    let recs = demo_records();
    let p = dir.join("d.ptop");
    write_session(&p, &recs);
    let full = std::fs::read(&p).unwrap();
    let hlen = u32::from_le_bytes(full[8..12].try_into().unwrap()) as usize;
    (p, recs, full, 12 + hlen)
}

#[test]
fn every_cut_point_keeps_every_complete_record() {
    let dir = tempfile::tempdir().unwrap();
    let (p, recs, full, body) = demo_bytes(dir.path());
    // Frame ends, to know how many records a cut keeps.
    let mut ends = Vec::new();
    let mut pos = body;
    for r in &recs {
        pos += 8 + encode_payload(r).len();
        ends.push(pos);
    }
    assert_eq!(pos, full.len());
    for cut in body..full.len() {
        let l = load_bytes(&p, &full[..cut]).unwrap();
        let keep = ends.iter().filter(|&&e| e <= cut).count();
        assert_eq!(l.records, recs[..keep], "cut at {cut}");
        let at_boundary = cut == body || ends.contains(&cut);
        assert_eq!(l.warnings.len(), usize::from(!at_boundary), "cut at {cut}");
        if let Some(w) = l.warnings.first() {
            let frame_start = if keep == 0 { body } else { ends[keep - 1] };
            assert_eq!(w.offset, Some(frame_start as u64));
            assert!(w.message.contains("cut off"), "{}", w.message);
        }
    }
    // Cut inside the header: a clear error, not a panic.
    for cut in 1..body {
        let e = load_bytes(&p, &full[..cut]).unwrap_err().to_string();
        assert!(e.contains("byte "), "{e}");
    }
}

#[test]
fn every_flipped_byte_is_survived() {
    let dir = tempfile::tempdir().unwrap();
    let (p, recs, full, body) = demo_bytes(dir.path());
    for i in body..full.len() {
        let mut data = full.clone();
        data[i] ^= 0x20;
        let l = load_bytes(&p, &data).unwrap();
        // Exactly one record is lost (the damaged one) and the rest are intact and in order.
        assert_eq!(l.records.len(), recs.len() - 1, "flip at {i}");
        let mut it = recs.iter();
        for r in &l.records {
            assert!(
                it.any(|x| x == r),
                "flip at {i}: a record that was not written"
            );
        }
        assert_eq!(l.warnings.len(), 1, "flip at {i}: {:?}", l.warnings);
        let off = l.warnings[0].offset.unwrap() as usize;
        assert!(off <= i, "flip at {i} reported at {off}");
        Store::from_loaded(&p, l, Thresholds::default());
    }
}

#[test]
fn parallel_decode_equals_the_sequential_reader_under_damage() {
    // Large enough for the multi-threaded fast path; damage in each thread's share.
    let dir = tempfile::tempdir().unwrap();
    let recs = long_records(23_000);
    let p = dir.path().join("big.ptop");
    write_session(&p, &recs);
    let full = std::fs::read(&p).unwrap();
    let hlen = u32::from_le_bytes(full[8..12].try_into().unwrap()) as usize;
    let sequential = |data: &[u8]| {
        let mut r = Vec::new();
        let mut w = Vec::new();
        for item in Frames::new(data, 12 + hlen) {
            match item {
                FrameItem::Record(_, x) => r.push(x),
                FrameItem::Warning(x) => w.push(x),
            }
        }
        (r, w)
    };
    let n = full.len();
    let cases: Vec<Vec<usize>> = vec![
        vec![],
        vec![n / 10],
        vec![n * 6 / 10],
        vec![n / 5, n / 2, n * 9 / 10],
        vec![n - 3],
    ];
    for flips in cases {
        for cut in [n, n - 17] {
            let mut data = full[..cut].to_vec();
            for &f in &flips {
                if f < data.len() {
                    data[f] ^= 0x41;
                }
            }
            let l = load_bytes(&p, &data).unwrap();
            let (r, w) = sequential(&data);
            assert_eq!(l.records, r, "flips {flips:?} cut {cut}");
            assert_eq!(l.warnings, w, "flips {flips:?} cut {cut}");
        }
    }
    assert_eq!(load_bytes(&p, &full).unwrap().records, recs);
}

// ---- property tests ------------------------------------------------------------------------

fn opt_u64() -> impl Strategy<Value = Option<u64>> {
    prop::option::of(any::<u64>())
}

fn sample() -> impl Strategy<Value = Sample> {
    (
        any::<u64>(),
        prop::collection::vec(opt_u64(), 14),
        prop::collection::vec(
            (
                any::<u32>(),
                any::<u64>(),
                any::<u64>(),
                any::<u64>(),
                any::<u8>(),
            ),
            0..3,
        ),
        any::<u32>(),
    )
        .prop_map(|(rss, o, gpus, procs)| Sample {
            rss,
            peak: o[0],
            anon: o[1],
            file: o[2],
            shmem: o[3],
            swap: o[4],
            locked: o[5],
            vm_pin: o[6],
            pinned: o[7],
            pinned_reported: o[8],
            gpu_used: o[9],
            gpus: gpus
                .into_iter()
                .map(|(index, proc_used, used, total, util)| GpuReading {
                    index,
                    proc_used,
                    used,
                    total,
                    util,
                })
                .collect(),
            mem_available: o[10],
            mem_total: o[11],
            cgroup_current: o[12],
            cgroup_max: o[13],
            procs,
        })
}

fn finite() -> impl Strategy<Value = f64> {
    any::<f64>().prop_filter("finite", |x| x.is_finite())
}

fn phase() -> impl Strategy<Value = Phase> {
    prop_oneof![
        Just(Phase::Synthesis),
        Just(Phase::MsmH),
        "[a-z_]{1,12}".prop_map(Phase::from),
    ]
}

fn body() -> impl Strategy<Value = RecordBody> {
    prop_oneof![
        4 => sample().prop_map(RecordBody::Sample),
        1 => (any::<u64>(), phase(), prop::option::of(any::<u32>()), finite()).prop_map(
            |(proof_id, phase, partition, duration_s)| RecordBody::Event(Event::PhaseEnded {
                proof_id,
                phase,
                partition,
                duration_s
            })
        ),
        1 => ".{0,40}".prop_map(|message| RecordBody::Event(Event::Log {
            level: "info".into(),
            target: "t".into(),
            message
        })),
        1 => Just(RecordBody::Event(Event::State { state: ProverState::Paused })),
        1 => (finite(), finite(), ".{0,20}").prop_map(|(value, threshold, rule)| {
            RecordBody::Alert(Alert {
                rule,
                level: AlertLevel::Warn,
                state: AlertState::Firing,
                metric: "rss".into(),
                value,
                threshold,
                message: "m".into(),
            })
        }),
        1 => (1u32..5).prop_map(|count| RecordBody::Control(Control::Prove { count })),
        1 => ".{0,40}".prop_map(|text| RecordBody::Mark(Mark::Note { text })),
    ]
}

fn record() -> impl Strategy<Value = Record> {
    (any::<u64>(), body()).prop_map(|(t, body)| Record { t, body })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn session_write_read_round_trip(recs in prop::collection::vec(record(), 0..40)) {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("r.ptop");
        let mut w = SessionWriter::create(&p, &header()).unwrap();
        for r in &recs {
            w.append(r).unwrap();
        }
        w.sync().unwrap();
        let l = provetop_shared::session::load(&p).unwrap();
        prop_assert!(l.warnings.is_empty());
        prop_assert_eq!(&l.header, &header());
        prop_assert_eq!(&l.records, &recs);
        // The store indexes anything the reader returns, and classify and export take any
        // values (u64::MAX bytes, times far apart) without panicking.
        let st = Store::from_loaded(&p, l, Thresholds::default());
        let _ = st.model_at(st.end() / 2);
        let _ = provetop::classify::render(&st, Thresholds::default());
        let mut sink = Vec::new();
        provetop::export::write_csv(&st, &mut sink).unwrap();
        provetop::export::write_jsonl(&st, &mut sink).unwrap();
    }

    #[test]
    fn any_bytes_never_panic(data in prop::collection::vec(any::<u8>(), 0..600)) {
        let p = Path::new("fuzz");
        let _ = load_bytes(p, &data);
        let mut s = MAGIC.to_vec();
        s.extend_from_slice(&(2u32).to_le_bytes());
        s.extend_from_slice(b"{}");
        s.extend_from_slice(&data);
        let _ = load_bytes(p, &s);
        let mut c = b"timestamp,rss_kb\n".to_vec();
        c.extend_from_slice(&data);
        if let Ok(l) = load_bytes(p, &c) {
            let st = Store::from_loaded(p, l, Thresholds::default());
            let _ = st.model_at(st.end());
        }
    }

    #[test]
    fn csv_text_never_panics(text in "[0-9eE.,+\\-naifNI \\r\\n]{0,300}") {
        let p = Path::new("fuzz.csv");
        let mut c = String::from("timestamp,rss_kb\n");
        c.push_str(&text);
        if let Ok(l) = load_bytes(p, c.as_bytes()) {
            let st = Store::from_loaded(p, l, Thresholds::default());
            let _ = provetop::classify::render(&st, Thresholds::default());
        }
    }

    #[test]
    fn valid_frames_with_garbage_payloads_never_panic(
        payloads in prop::collection::vec((1u8..=5, prop::collection::vec(any::<u8>(), 8..80)), 1..8)
    ) {
        let h = serde_json::to_vec(&header()).unwrap();
        let mut s = MAGIC.to_vec();
        s.extend_from_slice(&(h.len() as u32).to_le_bytes());
        s.extend_from_slice(&h);
        for (kind, rest) in &payloads {
            let mut p = vec![*kind];
            p.extend_from_slice(rest);
            s.extend_from_slice(&(p.len() as u32).to_le_bytes());
            s.extend_from_slice(&crc32fast::hash(&p).to_le_bytes());
            s.extend_from_slice(&p);
        }
        let l = load_bytes(Path::new("g.ptop"), &s).unwrap();
        prop_assert!(l.records.len() + l.warnings.len() >= 1);
        let st = Store::from_loaded(Path::new("g.ptop"), l, Thresholds::default());
        let _ = st.model_at(u64::MAX);
    }
}
