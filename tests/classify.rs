//! `provetop classify`: the seed's table (golden, line for line against the seed document and
//! the seed's own awk script), the summary, the prover-phase table, bad input, and a property
//! test against an independent reference implementation.

use std::io::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};

use proptest::prelude::*;
use provetop::store::Store;
use provetop_shared::classify::Thresholds;
use provetop_shared::session::load_bytes;
use provetop_testkit::bins::{provetop, run_provetop, Out};
use provetop_testkit::fixtures::*;

/// The table printed in the seed document (its last line is cut off there).
const SEED_TABLE: &[&str] = &[
    "idle_pre: samples=3, min=0.0 GiB, max=0.0 GiB",
    "idle_post: samples=11, min=11.6 GiB, max=44.3 GiB",
    "gpu_or_transition: samples=1, min=66.1 GiB, max=66.1 GiB",
    "idle_post: samples=20, min=44.3 GiB, max=47.8 GiB",
    "gpu_or_transition: samples=16, min=51.1 GiB, max=98.2 GiB",
    "synth: samples=25, min=101.4 GiB, max=177.0 GiB",
    "peak_synth: samples=32, min=180.3 GiB, max=202.9 GiB",
    "synth: samples=4, min=100.5 GiB, max=162.4 GiB",
    "gpu_or_transition: samples=2, min=57.8 GiB, max=79.7 GiB",
    "idle_post: samples=221, min=45.0 GiB...",
];

fn classify(path: &Path) -> Out {
    run_provetop(&["classify", path.to_str().expect("utf-8 path")])
}

/// The table part of classify's output (up to the blank line).
fn table(stdout: &str) -> Vec<&str> {
    stdout.lines().take_while(|l| !l.is_empty()).collect()
}

/// `name: samples=N, min=X GiB, max=Y GiB` → (name, N, X, Y) as strings.
fn fields(line: &str) -> (String, String, String, String) {
    let (name, rest) = line.split_once(": samples=").expect("seed line");
    let (n, rest) = rest.split_once(", min=").expect("min");
    let (min, max) = rest.split_once(" GiB, max=").expect("max");
    (
        name.into(),
        n.into(),
        min.into(),
        max.trim_end_matches(" GiB").into(),
    )
}

#[test]
fn seed_baseline_golden() {
    let out = classify(&seed_csv());
    assert_eq!(out.code, 0, "stderr: {}", out.stderr);
    assert_eq!(out.stderr, "", "a clean CSV gives no warnings");
    check_golden("seed-baseline.classify.txt", &out.stdout);
}

#[test]
fn seed_baseline_matches_the_seed_document_line_for_line() {
    let out = classify(&seed_csv());
    let ours = table(&out.stdout);
    assert_eq!(ours.len(), SEED_TABLE.len());
    // First line: the seed's bug printed min=0.0 because awk's pmin started at 0. Here the
    // true minimum (415 KiB) also rounds to 0.0 GiB, so the fixed line reads the same; the
    // min fix itself is shown by `first_run_min_fix_differs_from_awk_only_in_that_min`.
    let (name, n, min, max) = fields(ours[0]);
    assert_eq!(
        (name.as_str(), n.as_str(), max.as_str()),
        ("idle_pre", "3", "0.0")
    );
    let true_min = 415.0 / 1048576.0;
    assert_eq!(min, format!("{true_min:.1}"));
    assert_eq!(ours[0], SEED_TABLE[0]);
    for (i, (a, b)) in ours.iter().zip(SEED_TABLE).enumerate().skip(1) {
        match b.strip_suffix("...") {
            Some(prefix) => assert!(a.starts_with(prefix), "line {}: {a:?} vs {b:?}", i + 1),
            None => assert_eq!(a, b, "line {}", i + 1),
        }
    }
    assert_eq!(
        ours[9],
        "idle_post: samples=221, min=45.0 GiB, max=46.2 GiB"
    );
}

#[test]
fn seed_baseline_matches_the_seed_awk_script() {
    let out = classify(&seed_csv());
    let theirs = seed_awk(&seed_csv());
    let theirs: Vec<&str> = theirs.lines().collect();
    let ours = table(&out.stdout);
    assert_eq!(ours.len(), theirs.len());
    // Every line but the first run's min is the script's output byte for byte.
    for (i, (a, b)) in ours.iter().zip(&theirs).enumerate() {
        if i == 0 {
            let (fa, fb) = (fields(a), fields(b));
            assert_eq!((fa.0, fa.1, fa.3), (fb.0, fb.1, fb.3));
        } else {
            assert_eq!(a, b, "line {}", i + 1);
        }
    }
}

#[test]
fn table_only_prints_what_the_seed_script_printed() {
    let out = run_provetop(&["classify", "--table-only", seed_csv().to_str().unwrap()]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    // On this file the fixed first-run min also reads 0.0, so the output is the script's,
    // byte for byte.
    assert_eq!(out.stdout, seed_awk(&seed_csv()));
}

#[test]
fn first_run_min_fix_differs_from_awk_only_in_that_min() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("warm.csv");
    // Starts at 20 GiB (idle_post), so the seed script prints min=0.0 for the first run.
    let rows = [20.25, 30.0, 45.0, 120.0, 190.0, 47.5, 46.0];
    let mut s = String::from("timestamp,rss_kb\n");
    for (i, g) in rows.iter().enumerate() {
        s += &format!("{},{}\n", 1_700_000_000 + i, (g * 1048576.0) as u64);
    }
    std::fs::write(&p, s).unwrap();
    let theirs = seed_awk(&p);
    let theirs: Vec<&str> = theirs.lines().collect();
    let out = classify(&p);
    let ours = table(&out.stdout);
    assert_eq!(theirs[0], "idle_post: samples=3, min=0.0 GiB, max=45.0 GiB");
    assert_eq!(ours[0], "idle_post: samples=3, min=20.2 GiB, max=45.0 GiB");
    assert_eq!(ours[1..], theirs[1..]);
}

/// Deterministic pseudo-random CSVs through both the seed's awk and provetop.
#[test]
fn random_csvs_match_the_seed_awk_script() {
    let dir = tempfile::tempdir().unwrap();
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for case in 0..25 {
        let n = 1 + next() % 300;
        let mut s = String::from("timestamp,rss_kb\n");
        let mut kb: i64 = (next() % (8 << 20)) as i64;
        for i in 0..n {
            // A walk with jumps, including exact ties of the one-decimal rounding (x.x5 GiB).
            kb += (next() % (40 << 20)) as i64 - (20 << 20);
            if next() % 7 == 0 {
                kb = ((next() % 4000) as i64) * (1 << 20) / 20;
            }
            kb = kb.clamp(0, 250 << 20);
            s += &format!("{},{}\n", 1_700_000_000 + i, kb);
        }
        let p = dir.path().join(format!("r{case}.csv"));
        std::fs::write(&p, &s).unwrap();
        let theirs = seed_awk(&p);
        let theirs: Vec<&str> = theirs.lines().collect();
        let out = classify(&p);
        assert_eq!(out.code, 0, "{}", out.stderr);
        let ours = table(&out.stdout);
        assert_eq!(ours.len(), theirs.len(), "case {case}");
        for (i, (a, b)) in ours.iter().zip(&theirs).enumerate() {
            if i == 0 {
                let (fa, fb) = (fields(a), fields(b));
                assert_eq!((fa.0, fa.1, fa.3), (fb.0, fb.1, fb.3), "case {case}");
            } else {
                assert_eq!(a, b, "case {case} line {}", i + 1);
            }
        }
    }
}

#[test]
fn thresholds_flag() {
    let out = run_provetop(&[
        "classify",
        seed_csv().to_str().unwrap(),
        "--thresholds",
        "40,60,150,200",
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    // The seed script with the same boundaries agrees (but for the first run's min).
    let script = SEED_AWK
        .replace("gb < 10", "gb < 40")
        .replace("gb > 180", "gb > 200")
        .replace("gb > 100", "gb > 150")
        .replace("gb > 50", "gb > 60");
    let o = Command::new("awk")
        .args(["-F,", &script])
        .arg(seed_csv())
        .output()
        .unwrap();
    let theirs = String::from_utf8(o.stdout).unwrap();
    let ours = table(&out.stdout);
    assert_eq!(ours.len(), 24);
    assert_eq!(ours[0], "idle_pre: samples=13, min=0.0 GiB, max=39.8 GiB");
    assert_eq!(ours[1..], theirs.lines().skip(1).collect::<Vec<_>>()[..]);
    assert!(out.stdout.contains("thresholds 40/60/150/200 GiB"));
    let bad = run_provetop(&[
        "classify",
        seed_csv().to_str().unwrap(),
        "--thresholds",
        "1,2",
    ]);
    assert_eq!(bad.code, 2);
    assert!(
        bad.stderr.contains("expected 4 comma-separated GiB values"),
        "{}",
        bad.stderr
    );
}

#[test]
fn session_with_events_golden() {
    let dir = tempfile::tempdir().unwrap();
    let p = demo_session(dir.path());
    let out = classify(&p);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.stderr, "");
    check_golden(
        "demo-session.classify.txt",
        &out.stdout.replace(p.to_str().unwrap(), "demo.ptop"),
    );
    // The prover-phase table comes from events, not thresholds.
    assert!(out.stdout.contains("prover phases (from events):"));
    let syn = out
        .stdout
        .lines()
        .find(|l| l.trim_start().starts_with("synthesis"))
        .expect("synthesis row");
    assert!(syn.contains(" 2 "), "two partition spans: {syn}");
}

#[test]
fn csv_has_no_prover_phase_table() {
    let out = classify(&seed_csv());
    assert!(!out.stdout.contains("prover phases"));
}

// ---- bad input: one clear line each --------------------------------------------------------

fn one_line_error(out: &Out, want: &str) {
    assert_eq!(out.code, 1, "stdout: {} stderr: {}", out.stdout, out.stderr);
    assert_eq!(out.stdout, "");
    assert_eq!(out.stderr.lines().count(), 1, "one line: {:?}", out.stderr);
    assert!(out.stderr.starts_with("provetop: "), "{:?}", out.stderr);
    assert!(
        out.stderr.contains(want),
        "{:?} should contain {want:?}",
        out.stderr
    );
    assert!(!out.stderr.contains("panicked"));
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> std::path::PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

#[test]
fn missing_file() {
    let out = run_provetop(&["classify", "/nonexistent/run.ptop"]);
    one_line_error(&out, "/nonexistent/run.ptop: No such file or directory");
    assert_eq!(
        out.stderr,
        "provetop: /nonexistent/run.ptop: No such file or directory (os error 2)\n"
    );
}

#[test]
fn empty_file() {
    let dir = tempfile::tempdir().unwrap();
    let out = classify(&write(dir.path(), "e.csv", b""));
    one_line_error(&out, "e.csv: empty file");
}

#[test]
fn unreadable_file() {
    // Tests run as root, so permissions do not stop a read; a directory does.
    let dir = tempfile::tempdir().unwrap();
    let out = classify(dir.path());
    one_line_error(&out, "a directory");
    assert_eq!(
        out.stderr,
        format!(
            "provetop: {}: a directory, not a file (provetop reads regular files only)\n",
            dir.path().display()
        )
    );
}

#[test]
fn wrong_format() {
    let dir = tempfile::tempdir().unwrap();
    let out = classify(&write(dir.path(), "w.txt", b"time,rss\n1,2\n"));
    one_line_error(&out, "w.txt: byte 0: not a provetop session file");
    let out = classify(&write(
        dir.path(),
        "w.bin",
        &[0x7f, b'E', b'L', b'F', 2, 1, 1, 0],
    ));
    one_line_error(&out, "not a provetop session file");
}

#[test]
fn garbage_row_names_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(
        dir.path(),
        "g.csv",
        b"timestamp,rss_kb\n1,1024\n2,2048\n3,lots\n4,1\n",
    );
    one_line_error(&classify(&p), "g.csv: line 4: bad rss_kb \"lots\"");
    let p = write(dir.path(), "g2.csv", b"timestamp,rss_kb\n1,1024\nhello\n");
    one_line_error(
        &classify(&p),
        "g2.csv: line 3: expected \"timestamp,rss_kb\"",
    );
    let p = write(dir.path(), "g3.csv", b"timestamp,rss_kb\n1,1024\n2,-5\n");
    one_line_error(&classify(&p), "line 3: negative rss_kb");
}

#[test]
fn header_only_csv_has_nothing_to_classify() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(dir.path(), "h.csv", b"timestamp,rss_kb\n");
    one_line_error(&classify(&p), "h.csv: no memory samples to classify");
}

#[test]
fn truncated_last_line_is_skipped_with_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(
        dir.path(),
        "t.csv",
        b"timestamp,rss_kb\n1,1048576\n2,2097152\n3,31",
    );
    // "3,31" parses: a last line without newline that parses is kept.
    let out = classify(&p);
    assert_eq!(out.code, 0);
    assert!(
        out.stdout.starts_with("idle_pre: samples=3,"),
        "{}",
        out.stdout
    );
    let p = write(
        dir.path(),
        "t2.csv",
        b"timestamp,rss_kb\n1,1048576\n2,2097152\n3,",
    );
    let out = classify(&p);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out
        .stdout
        .starts_with("idle_pre: samples=2, min=1.0 GiB, max=2.0 GiB\n"));
    assert_eq!(
        out.stderr.trim_end(),
        format!(
            "provetop: warning: {}: line 4: last line is cut off (bad rss_kb \"\" (want an integer number of KiB)); skipped",
            p.display()
        )
    );
}

#[test]
fn non_monotonic_timestamps_warn_and_keep_file_order() {
    let dir = tempfile::tempdir().unwrap();
    let gib = 1048576;
    let csv = format!(
        "timestamp,rss_kb\n10,{}\n11,{}\n5,{}\n12,{}\n",
        60 * gib,
        120 * gib,
        60 * gib,
        20 * gib
    );
    let p = write(dir.path(), "n.csv", csv.as_bytes());
    let out = classify(&p);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
    assert!(
        out.stderr
            .contains("n.csv: line 4: timestamp 5 goes back in time"),
        "{}",
        out.stderr
    );
    // File order: gpu, synth, gpu, idle_post — not sorted by time.
    assert_eq!(
        table(&out.stdout),
        [
            "gpu_or_transition: samples=1, min=60.0 GiB, max=60.0 GiB",
            "synth: samples=1, min=120.0 GiB, max=120.0 GiB",
            "gpu_or_transition: samples=1, min=60.0 GiB, max=60.0 GiB",
            "idle_post: samples=1, min=20.0 GiB, max=20.0 GiB",
        ]
    );
}

#[test]
fn last_row_earlier_than_the_first() {
    // The span is latest minus earliest, whatever the order (this used to underflow).
    let dir = tempfile::tempdir().unwrap();
    let p = write(
        dir.path(),
        "back.csv",
        b"timestamp,rss_kb\n100,1048576\n40,2097152\n",
    );
    let out = classify(&p);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout.contains("summary: 2 samples over 1m00s"),
        "{}",
        out.stdout
    );
    assert!(out
        .stderr
        .contains("back.csv: line 3: timestamp 40 goes back in time"));
}

#[test]
fn absurd_values() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(
        dir.path(),
        "a.csv",
        b"timestamp,rss_kb\n1,1024\n2,99999999999999999\n",
    );
    one_line_error(
        &classify(&p),
        "a.csv: line 3: absurd rss_kb 99999999999999999 (more than 1 PiB)",
    );
    let p = write(dir.path(), "a2.csv", b"timestamp,rss_kb\n1,1024\nNaN,5\n");
    one_line_error(&classify(&p), "line 3: bad timestamp NaN");
    let p = write(dir.path(), "a3.csv", b"timestamp,rss_kb\n1,1024\n1e300,5\n");
    one_line_error(&classify(&p), "line 3: absurd timestamp 1e300");
    // Milliseconds instead of seconds: kept, with a warning (the table does not use time).
    let p = write(
        dir.path(),
        "ms.csv",
        b"timestamp,rss_kb\n1700000000000,1048576\n1700000001000,1048576\n",
    );
    let out = classify(&p);
    assert_eq!(out.code, 0);
    assert_eq!(out.stderr.lines().count(), 1);
    assert!(out
        .stderr
        .contains("ms.csv: line 2: timestamp 1700000000000 is after the year 5000"));
    assert!(out
        .stdout
        .starts_with("idle_pre: samples=2, min=1.0 GiB, max=1.0 GiB\n"));
}

#[test]
fn session_cut_mid_record_keeps_complete_records() {
    let dir = tempfile::tempdir().unwrap();
    let full = std::fs::read(demo_session(dir.path())).unwrap();
    let whole = Store::from_loaded(
        Path::new("x"),
        load_bytes(Path::new("x"), &full).unwrap(),
        Thresholds::default(),
    );
    let cut = write(dir.path(), "cut.ptop", &full[..full.len() - 5]);
    let out = classify(&cut);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
    let st = Store::open(&cut).unwrap();
    assert_eq!(st.records(), &whole.records()[..whole.records().len() - 1]);
    let off = st.warnings()[0].offset.unwrap();
    assert!(
        out.stderr.contains(&format!(
            "cut.ptop: byte {off}: file cut off inside a record"
        )),
        "{}",
        out.stderr
    );
}

#[test]
fn corruption_in_the_middle_reports_byte_offset() {
    let dir = tempfile::tempdir().unwrap();
    let mut data = std::fs::read(demo_session(dir.path())).unwrap();
    let mid = data.len() / 2;
    for b in &mut data[mid..mid + 40] {
        *b ^= 0x5a;
    }
    let p = write(dir.path(), "bad.ptop", &data);
    let out = classify(&p);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
    assert!(out.stderr.contains("bad.ptop: byte "), "{}", out.stderr);
    assert!(out.stderr.contains("damaged record"), "{}", out.stderr);
    assert!(out.stdout.contains("summary:"));
    // A damaged length field in the middle is damage, not the end of the file.
    let mut data = std::fs::read(dir.path().join("demo.ptop")).unwrap();
    let st = Store::open(&dir.path().join("demo.ptop")).unwrap();
    let n = st.records().len();
    let hlen = u32::from_le_bytes(data[8..12].try_into().unwrap()) as usize;
    let first_frame = 12 + hlen;
    data[first_frame + 2] = 0x7f; // length now ~8 MB: runs past the end
    let p = write(dir.path(), "len.ptop", &data);
    let st = Store::open(&p).unwrap();
    assert_eq!(st.records().len(), n - 1, "only the damaged record is lost");
    assert_eq!(st.warnings().len(), 1);
    assert_eq!(st.warnings()[0].offset, Some(first_frame as u64));
    assert!(st.warnings()[0].message.contains("runs past the end"));
}

#[test]
fn closed_stdout_is_not_an_error() {
    let mut child = Command::new(provetop())
        .args(["classify", seed_csv().to_str().unwrap()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let o = child.wait_with_output().unwrap();
    assert!(o.status.code().is_some(), "not killed by a signal");
    assert!(!String::from_utf8_lossy(&o.stderr).contains("panicked"));
}

// ---- property test: provetop vs an independent reference -------------------------------------

/// The seed's awk script, ported line by line, with the first run's min fixed (and no 999 GiB
/// cap on later ones). Rounding is done on exact integers, independent of any float
/// formatting: GiB = KiB / 2^20 exactly, so one decimal is ⌊10·KiB / 2^20⌉, ties to even
/// (C's printf on an exact binary tie).
fn reference(rows_kb: &[u64], th: [f64; 4]) -> Vec<String> {
    fn one_decimal(kb: u64) -> String {
        let num = 10u128 * kb as u128;
        let (q, r) = (num >> 20, num & ((1 << 20) - 1));
        let half = 1u128 << 19;
        let q = if r > half || (r == half && q % 2 == 1) {
            q + 1
        } else {
            q
        };
        format!("{}.{}", q / 10, q % 10)
    }
    let mut out = Vec::new();
    let mut last_phase = "";
    let (mut count, mut pmin, mut pmax) = (0u64, u64::MAX, 0u64);
    for &kb in rows_kb {
        let gb = kb as f64 / 1048576.0;
        let phase = if gb < th[0] {
            "idle_pre"
        } else if gb > th[3] {
            "peak_synth"
        } else if gb > th[2] {
            "synth"
        } else if gb > th[1] {
            "gpu_or_transition"
        } else {
            "idle_post"
        };
        if phase != last_phase && !last_phase.is_empty() {
            out.push(format!(
                "{last_phase}: samples={count}, min={} GiB, max={} GiB",
                one_decimal(pmin),
                one_decimal(pmax)
            ));
            (count, pmin, pmax) = (0, u64::MAX, 0);
        }
        last_phase = phase;
        count += 1;
        pmin = pmin.min(kb);
        pmax = pmax.max(kb);
    }
    if !last_phase.is_empty() {
        out.push(format!(
            "{last_phase}: samples={count}, min={} GiB, max={} GiB",
            one_decimal(pmin),
            one_decimal(pmax)
        ));
    }
    out
}

fn kb_strategy() -> impl Strategy<Value = u64> {
    prop_oneof![
        0u64..(300 << 20),
        // Exact ties of the rounding: multiples of 0.05 GiB.
        (0u64..6000).prop_map(|k| k * (1 << 20) / 20),
        // Right at the boundaries.
        prop::sample::select(vec![10u64, 50, 100, 180])
            .prop_flat_map(|g| { ((g << 20) - 2..=(g << 20) + 2).prop_map(|x| x) }),
        // Huge (above the seed's 999 GiB reset value).
        (1000u64 << 20)..(1u64 << 40),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn classify_matches_reference(
        rows in prop::collection::vec(kb_strategy(), 1..200),
        thresholds in prop::sample::select(vec![[10.0, 50.0, 100.0, 180.0], [1.0, 2.5, 2.5, 7.75], [0.0, 0.0, 0.0, 0.0]]),
    ) {
        let mut csv = String::from("timestamp,rss_kb\n");
        for (i, kb) in rows.iter().enumerate() {
            csv += &format!("{},{kb}\n", 1_700_000_000 + i);
        }
        let th = Thresholds { idle: thresholds[0], gpu: thresholds[1], synth: thresholds[2], peak: thresholds[3] };
        let loaded = load_bytes(Path::new("p.csv"), csv.as_bytes()).unwrap();
        let store = Store::from_loaded(Path::new("p.csv"), loaded, th);
        let text = provetop::classify::render(&store, th).unwrap();
        let ours: Vec<&str> = table(&text);
        let want = reference(&rows, thresholds);
        prop_assert_eq!(ours, want.iter().map(String::as_str).collect::<Vec<_>>());
    }
}

#[test]
fn reference_rounding_agrees_with_awk_on_ties() {
    // 0.25, 0.75 and 1.25 GiB are exact binary ties: C's printf rounds them to even.
    let rows = [262_144u64, 786_432, 1_310_720, 47_710_208];
    let r = reference(&rows, [10.0, 50.0, 100.0, 180.0]);
    assert_eq!(
        r,
        [
            "idle_pre: samples=3, min=0.2 GiB, max=1.2 GiB",
            "idle_post: samples=1, min=45.5 GiB, max=45.5 GiB"
        ]
    );
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("ties.csv");
    let mut f = std::fs::File::create(&p).unwrap();
    writeln!(f, "timestamp,rss_kb").unwrap();
    for (i, kb) in rows.iter().enumerate() {
        writeln!(f, "{i},{kb}").unwrap();
    }
    drop(f);
    let theirs = seed_awk(&p);
    // awk's first-run min is 0.0 (the seed's bug); everything else is identical.
    assert_eq!(theirs.lines().nth(1), Some(r[1].as_str()));
    assert!(theirs.starts_with("idle_pre: samples=3, min=0.0 GiB, max=1.2 GiB\n"));
}

/// The utilisation cells of the prover-phase table, by row name: (cores, host, per-GPU util).
fn utilisation(stdout: &str) -> Vec<(String, Vec<String>)> {
    let mut lines = stdout
        .lines()
        .skip_while(|l| !l.starts_with("prover phases"))
        .skip(1);
    let header = lines.next().expect("the phase table's header");
    let extra = 2 + header.matches(" util").count();
    assert!(header.contains("  cores   host"), "{header}");
    lines
        .take_while(|l| !l.is_empty())
        .map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            let name = if l.trim_start().starts_with("(no phase open)") {
                "(no phase open)".to_string()
            } else {
                w[0].to_string()
            };
            (
                name,
                w[w.len() - extra..].iter().map(|s| s.to_string()).collect(),
            )
        })
        .collect()
}

#[test]
fn the_phase_table_shows_cores_and_gpu_utilisation_per_phase_from_usage_records() {
    use provetop_shared::protocol::{BatchMode, Phase};
    use provetop_shared::record::{GpuReading, Sample, Usage};
    use provetop_shared::{Record, RecordBody};
    // Synthesis from 1 s to 3 s on 8 cores with the GPUs idle; proving from 3 s to 5 s on one
    // core with GPU 0 at 80 % and GPU 1 at 40 %; half a core outside, to 6 s.
    let mut recs = vec![Record::new(
        at(0.0),
        RecordBody::Event(proof_started(1, BatchMode::Single)),
    )];
    recs.push(phase_started(1.0, Phase::Synthesis, None));
    recs.push(phase_ended(3.0, Phase::Synthesis, None, 2.0));
    recs.push(phase_started(3.0, Phase::Prove, None));
    recs.push(phase_ended(5.0, Phase::Prove, None, 2.0));
    for i in 1..=12u32 {
        let t = f64::from(i) * 0.5;
        let cores = match t {
            t if t > 1.0 && t <= 3.0 => 8.0,
            t if t > 3.0 && t <= 5.0 => 1.0,
            _ => 0.5,
        };
        recs.push(Record::new(
            at(t),
            RecordBody::Usage(Usage {
                interval_ns: 500_000_000,
                cores: Some(cores),
                host_cores: Some(cores + 2.0),
                host_ncpu: 16,
                threads: 10,
                ..Usage::default()
            }),
        ));
    }
    for i in 0..120u32 {
        let t = f64::from(i) * 0.05 + 0.025;
        let proving = t > 3.0 && t < 5.0;
        let gpu = |index, util| GpuReading {
            index,
            proc_used: GIB,
            used: 2 * GIB,
            total: 141 * GIB,
            util: if proving { util } else { 0 },
        };
        recs.push(Record::new(
            at(t),
            RecordBody::Sample(Sample {
                rss: (10 + u64::from(i)) * GIB,
                gpus: vec![gpu(0, 80), gpu(1, 40)],
                ..Sample::default()
            }),
        ));
    }
    recs.sort_by_key(|r| r.t);
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("usage.ptop");
    write_session(&p, &recs);
    let out = classify(&p);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let cells = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    assert_eq!(
        utilisation(&out.stdout),
        [
            ("synthesis".to_string(), cells(&["8.0", "10.0", "0%", "0%"])),
            ("prove".to_string(), cells(&["1.0", "3.0", "80%", "40%"])),
            (
                "(no phase open)".to_string(),
                cells(&["0.5", "2.5", "0%", "0%"])
            ),
        ],
        "{}",
        out.stdout
    );
    assert!(out.stdout.contains("gpu0 util gpu1 util"), "{}", out.stdout);
}

#[test]
fn a_session_recorded_before_usage_records_shows_unknown_cores_not_zero() {
    // Recorded on the H200 before the sampler read CPU time: GPU readings, no usage records.
    let p = repo().join("assets/h200-cuda-10x2p20.ptop");
    let out = classify(&p);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let rows = utilisation(&out.stdout);
    assert!(rows.len() >= 3, "{}", out.stdout);
    for (name, c) in &rows {
        assert_eq!((c[0].as_str(), c[1].as_str()), ("-", "-"), "{name}: {c:?}");
    }
    // Its samples have the GPU's utilisation: the GPU phases show it.
    let gpu_busy = rows
        .iter()
        .any(|(_, c)| c[2..].iter().any(|u| u != "-" && u != "0%"));
    assert!(gpu_busy, "{}", out.stdout);
}
