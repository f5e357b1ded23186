//! The readers of a long session in bounded memory (issue 33): `classify`, `export` and
//! `compare` of a flight session hours long (the testkit's generator) stay under 64 MiB of
//! peak RSS, measured by the kernel for the real binary, where loading it whole took several
//! times that; and what they print is what the whole-file readers print, on those sessions
//! and on every shipped recording. `replay --follow` of the same hours reads them a batch at a
//! time, within its live model's bounds.

use std::path::{Path, PathBuf};

use provetop::compare::summary::{summarize_store, summarize_stream, Selection};
use provetop::store::Store;
use provetop_shared::classify::Thresholds;
use provetop_shared::session::stream::Stream;
use provetop_shared::session::{SessionHeader, SessionWriter};
use provetop_testkit::flight::{Flight, FlightConfig};
use provetop_testkit::procs::cost_of;

/// Hours of the long session: 288,000 samples and their usage and output records, which the
/// whole-file readers held at several hundred bytes a record (several times the bound).
const HOURS: u64 = 4;
/// The bound, KiB.
const BOUND_KIB: u64 = 64 << 10;

/// Write a flight as the recorder does (a flush every 24 records, about a second).
fn write_flight(path: &Path, seconds: u64, seed: u64, compact: bool) {
    let h = SessionHeader::now(vec!["flight".into()], 20.0);
    let mut w = if compact {
        SessionWriter::create_compact(path, &h)
    } else {
        SessionWriter::create(path, &h)
    }
    .expect("create");
    let cfg = FlightConfig {
        seconds,
        seed,
        ..FlightConfig::default()
    };
    for (i, r) in Flight::new(cfg).enumerate() {
        w.append(&r).expect("append");
        if i % 24 == 23 {
            w.flush().expect("flush");
        }
    }
    w.sync().expect("sync");
}

/// Run provetop with `args`, its standard output to `out`; its cost.
fn run(args: &[&str], out: &Path) -> provetop_testkit::procs::Cost {
    let c = cost_of(
        &provetop_testkit::bins::provetop(),
        args,
        std::fs::File::create(out).expect("out"),
    );
    assert_eq!(c.code, Some(0), "provetop {args:?}");
    c
}

/// The whole-file readers' output and the streaming readers' output of `p`, in process.
fn same_as_whole(p: &Path) {
    let th = Thresholds::default();
    let store = Store::scan(p, th).expect("load");
    let src = Stream::open(p).expect("open").expect("a clean session");
    let name = p.display();
    match provetop::classify::render(&store, th) {
        Ok(whole) => {
            let streamed = provetop::classify::stream_render(p, &src, th).expect("stream");
            assert_eq!(streamed, whole, "classify of {name}");
        }
        Err(_) => assert!(provetop::classify::stream_render(p, &src, th).is_err()),
    }
    let (pre, _) = provetop::scan::Pre::of(&src).expect("pre");
    let (mut a, mut b) = (Vec::new(), Vec::new());
    provetop::export::write_csv(&store, &mut a).expect("csv");
    provetop::export::stream_csv(p, &src, &pre, &mut b).expect("stream csv");
    assert!(a == b, "export csv of {name} differs");
    let (mut a, mut b) = (Vec::new(), Vec::new());
    provetop::export::write_jsonl(&store, &mut a).expect("jsonl");
    provetop::export::stream_jsonl(&src, &pre, &mut b).expect("stream jsonl");
    assert!(a == b, "export jsonl of {name} differs");
    for sel in [
        Selection::default(),
        Selection {
            mode: None,
            range: Some((2, Some(3))),
        },
    ] {
        let whole = format!("{:?}", summarize_store(&store, &sel).unwrap());
        let streamed = format!("{:?}", summarize_stream(p, &src, &sel, th).expect("stream"));
        assert_eq!(streamed, whole, "compare summary of {name}, {sel:?}");
    }
}

#[test]
fn classify_export_and_compare_of_hours_of_flight_stay_under_64_mib() {
    let dir = tempfile::tempdir().expect("tempdir");
    let long = dir.path().join("long.ptop");
    let other = dir.path().join("other.ptop");
    write_flight(&long, HOURS * 3600, 1, true);
    write_flight(&other, 3600, 2, false);
    let out = dir.path().join("out");
    let l = long.to_str().expect("utf-8");
    let o = other.to_str().expect("utf-8");
    let mut jsonl_cpu = 0.0;
    for args in [
        vec!["classify", l],
        vec!["classify", "--table-only", l],
        vec!["export", "--format", "csv", l],
        vec!["export", "--format", "jsonl", l],
        vec!["compare", l, o],
    ] {
        let c = run(&args, &out);
        if args.get(2) == Some(&"jsonl") {
            jsonl_cpu = c.cpu_s;
        }
        eprintln!(
            "provetop {args:?}: peak {} KiB, {:.2} CPU s",
            c.peak_kib, c.cpu_s
        );
        assert!(
            c.peak_kib < BOUND_KIB,
            "provetop {args:?}: peak RSS {} KiB, over {BOUND_KIB} KiB",
            c.peak_kib
        );
    }
    // A reader that goes away (`| head`): the export stops reading there, not at the end.
    let (r, w) = nix::unistd::pipe().expect("pipe");
    drop(r);
    let c = cost_of(
        &provetop_testkit::bins::provetop(),
        &["export", "--format", "jsonl", l],
        std::fs::File::from(w),
    );
    assert_eq!(c.code, Some(0));
    assert!(
        c.cpu_s < jsonl_cpu / 3.0,
        "{} s CPU with its reader gone, {jsonl_cpu} s whole",
        c.cpu_s
    );
}

#[test]
fn the_streaming_readers_print_what_the_whole_file_readers_print() {
    let dir = tempfile::tempdir().expect("tempdir");
    let compact = dir.path().join("compact.ptop");
    let frames = dir.path().join("frames.ptop");
    // Two hours: more closed spans than a spill block (compare reads them back from its file).
    write_flight(&compact, 7200, 3, true);
    write_flight(&frames, 1200, 3, false);
    let spilled = Store::scan(&compact, Thresholds::default()).expect("load");
    assert!(spilled.span_digest().closed.on_disk() > 0);
    drop(spilled);
    let mut files: Vec<PathBuf> = vec![compact, frames];
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    for d in ["assets", "tests/golden/loglines/h200"] {
        let Ok(rd) = std::fs::read_dir(root.join(d)) else {
            continue;
        };
        let mut v: Vec<PathBuf> = rd
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "ptop"))
            .collect();
        v.sort();
        files.extend(v);
    }
    assert!(files.len() > 5, "{files:?}");
    for p in &files {
        same_as_whole(p);
    }
}

/// Run provetop to its end; its standard output, failing with its standard error.
fn provetop_out(args: &[&str]) -> Vec<u8> {
    let o = std::process::Command::new(provetop_testkit::bins::provetop())
        .args(args)
        .output()
        .expect("run provetop");
    assert!(
        o.status.success(),
        "provetop {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    o.stdout
}

#[test]
fn an_export_imported_exports_the_same_lines_and_rows() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let flight = dir.path().join("flight.ptop");
    write_flight(&flight, 600, 4, false);
    for (i, src) in [
        flight,
        root.join("assets/h200-supraseal-all-modes-usage-10x2p20.ptop"),
        root.join("tests/golden/loglines/h200/supraseal.ptop"),
    ]
    .iter()
    .enumerate()
    {
        let s = src.to_str().expect("utf-8");
        let jsonl = dir.path().join(format!("{i}.jsonl"));
        std::fs::write(&jsonl, provetop_out(&["export", "--format", "jsonl", s])).expect("write");
        let j = jsonl.to_str().expect("utf-8");
        let again = dir.path().join(format!("{i}.ptop"));
        let a = again.to_str().expect("utf-8");
        provetop_out(&["import", j, "-o", a, "--like", s]);
        let lines = std::fs::read(&jsonl).expect("read");
        assert!(
            provetop_out(&["export", "--format", "jsonl", a]) == lines,
            "jsonl of {s} imported"
        );
        assert!(
            provetop_out(&["export", "--format", "csv", a])
                == provetop_out(&["export", "--format", "csv", s]),
            "csv of {s} imported"
        );
        // Without --like: the same records, anchored at 1970.
        let plain = dir.path().join(format!("{i}-plain.ptop"));
        let p = plain.to_str().expect("utf-8");
        provetop_out(&["import", j, "-o", p]);
        assert!(provetop_out(&["export", "--format", "jsonl", p]) == lines);
    }
    // A line that is not a record: one line naming it, and no half-written session.
    let bad = dir.path().join("bad.jsonl");
    std::fs::write(&bad, "{\"t\":1,\"body\":{\"Nope\":1}}\n").expect("write");
    let out = dir.path().join("bad.ptop");
    let o = std::process::Command::new(provetop_testkit::bins::provetop())
        .args(["import", bad.to_str().expect("utf-8"), "-o"])
        .arg(&out)
        .output()
        .expect("run");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        !o.status.success() && err.contains("line 1: not a provetop record"),
        "{err}"
    );
    assert!(!out.exists());
}

#[test]
fn replay_follow_catches_up_with_hours_of_flight_a_batch_at_a_time_within_the_live_models_bounds() {
    use provetop_testkit::tmux::{have_tmux, sh_quote, Tmux};
    if !have_tmux("replay_follow_catches_up") {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let long = dir.path().join("long.ptop");
    write_flight(&long, HOURS * 3600, 5, true);
    // `exec`: the pane's process is provetop itself.
    let cmd = format!(
        "exec {} replay --follow {}",
        sh_quote(&provetop_testkit::bins::provetop().display().to_string()),
        sh_quote(&long.display().to_string())
    );
    let tmux = Tmux::start("follow_long", 100, 30, &cmd);
    let pid: u32 = tmux.format("#{pane_pid}").trim().parse().expect("pane pid");
    // The session's end is on the screen once its history is read.
    let s = tmux.wait_for("caught up", std::time::Duration::from_secs(120), |s| {
        s.contains(&format!("up {}h59m", HOURS - 1))
    });
    let peak = provetop_testkit::procs::status_kb(pid, "VmHWM").expect("VmHWM");
    // The live model's own bounds (its series, histories, log): not the records read.
    assert!(
        peak < FOLLOW_BOUND_KIB,
        "replay --follow: peak RSS {peak} KiB, over {FOLLOW_BOUND_KIB} KiB\n{s}"
    );
    tmux.keys(&["q"]);
}

/// What following the long session may take, KiB: the live screen's model of hours at
/// 20 Hz. Holding the file's records at once took several times that.
const FOLLOW_BOUND_KIB: u64 = 128 << 10;
