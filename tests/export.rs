//! `provetop export`: CSV (the seed's awk script runs on it unchanged) and JSON lines, golden
//! files, round trips and bad input.

use std::path::Path;

use provetop::export::csv_header;
use provetop_shared::session::{load, load_bytes};
use provetop_shared::{Record, RecordBody};
use provetop_testkit::bins::{run_provetop, Out};
use provetop_testkit::fixtures::*;

fn export(path: &Path, format: &str) -> Out {
    let out = run_provetop(&["export", path.to_str().unwrap(), "--format", format]);
    assert_eq!(out.code, 0, "stderr: {}", out.stderr);
    out
}

#[test]
fn session_csv_golden() {
    let dir = tempfile::tempdir().unwrap();
    let p = demo_session(dir.path());
    let out = export(&p, "csv");
    assert_eq!(out.stderr, "");
    check_golden("demo-session.export.csv", &out.stdout);
    let mut lines = out.stdout.lines();
    // The demo's one GPU (index 0) has its columns.
    let header = csv_header(&[0], false);
    assert_eq!(lines.next(), Some(header.as_str()));
    assert!(header.starts_with("timestamp,rss_kb,"));
    // Every row has every column; the phase column follows the prover's events.
    let cols = header.split(',').count();
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    assert_eq!(rows.len(), 60);
    assert!(rows.iter().all(|r| r.len() == cols));
    let at = |ts: &str| {
        rows.iter()
            .find(|r| r[0] == ts)
            .unwrap_or_else(|| panic!("{ts}"))
    };
    assert_eq!(at("1700000000.001")[11], "", "before the first event");
    assert_eq!(at("1700000007.001")[11], "synthesis ×2");
    assert_eq!(at("1700000009.001")[11], "synthesis p0");
    assert_eq!(at("1700000010.001")[11], "fft_h");
    assert_eq!(at("1700000011.001")[9], (30u64 << 20).to_string(), "gpu_kb");
    assert_eq!(at("1700000025.001")[11], "idle");
}

#[test]
fn session_jsonl_golden_and_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let p = demo_session(dir.path());
    let out = export(&p, "jsonl");
    check_golden("demo-session.export.jsonl", &out.stdout);
    let back: Vec<Record> = out
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).expect("each line is one Record"))
        .collect();
    assert_eq!(back, demo_records());
    // jq-friendly: every line is an object with "t" and "record".
    for l in out.stdout.lines() {
        let v: serde_json::Value = serde_json::from_str(l).unwrap();
        assert!(v["t"].is_u64() && v["record"].is_string(), "{l}");
    }
}

#[test]
fn seed_csv_export_runs_the_awk_script_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let out = export(&seed_csv(), "csv");
    let p = dir.path().join("export.csv");
    std::fs::write(&p, &out.stdout).unwrap();
    assert_eq!(seed_awk(&p), seed_awk(&seed_csv()));
    // The first two columns are the input, byte for byte.
    let orig = std::fs::read_to_string(seed_csv()).unwrap();
    for (a, b) in orig.lines().skip(1).zip(out.stdout.lines().skip(1)) {
        assert!(b.starts_with(&format!("{a},")), "{a} vs {b}");
    }
    check_golden("seed-baseline.export.csv", &out.stdout);
}

#[test]
fn csv_export_reads_back_as_the_same_series() {
    let dir = tempfile::tempdir().unwrap();
    let p = demo_session(dir.path());
    let out = export(&p, "csv");
    let back = load_bytes(Path::new("e.csv"), out.stdout.as_bytes()).unwrap();
    assert!(back.warnings.is_empty());
    let orig = load(&p).unwrap();
    let samples: Vec<(u64, u64)> = orig
        .records
        .iter()
        .filter_map(|r| match &r.body {
            RecordBody::Sample(s) => Some((r.t, s.rss)),
            _ => None,
        })
        .collect();
    let t0 = samples[0].0;
    let got: Vec<(u64, u64)> = back
        .records
        .iter()
        .map(|r| match &r.body {
            RecordBody::Sample(s) => (r.t, s.rss),
            _ => panic!("a CSV holds samples only"),
        })
        .collect();
    assert_eq!(got.len(), samples.len());
    for ((t, rss), (t2, rss2)) in samples.iter().zip(&got) {
        assert_eq!(rss, rss2);
        assert_eq!(t - t0, *t2, "times relative to the first row, ms precision");
    }
}

#[test]
fn output_file_and_its_errors() {
    let dir = tempfile::tempdir().unwrap();
    let p = demo_session(dir.path());
    let o = dir.path().join("out.jsonl");
    let out = run_provetop(&[
        "export",
        p.to_str().unwrap(),
        "--format",
        "jsonl",
        "-o",
        o.to_str().unwrap(),
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.stdout, "");
    assert_eq!(
        std::fs::read_to_string(&o).unwrap(),
        export(&p, "jsonl").stdout
    );
    let bad = dir.path().join("no/such/dir/out.csv");
    let out = run_provetop(&[
        "export",
        p.to_str().unwrap(),
        "--format",
        "csv",
        "-o",
        bad.to_str().unwrap(),
    ]);
    assert_eq!(out.code, 1);
    assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
    assert!(
        out.stderr.contains("cannot create") && out.stderr.contains("No such file or directory")
    );
}

#[test]
fn bad_input_is_one_line() {
    let out = run_provetop(&["export", "/nonexistent.ptop", "--format", "csv"]);
    assert_eq!(out.code, 1);
    assert_eq!(out.stdout, "");
    assert_eq!(
        out.stderr,
        "provetop: /nonexistent.ptop: No such file or directory (os error 2)\n"
    );
    let out = run_provetop(&["export", seed_csv().to_str().unwrap(), "--format", "xml"]);
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("invalid value 'xml'"));
}

#[test]
fn header_only_csv_exports_just_the_header() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("h.csv");
    std::fs::write(&p, "timestamp,rss_kb\n").unwrap();
    let out = export(&p, "csv");
    assert_eq!(out.stdout, format!("{}\n", csv_header(&[], false)));
    assert_eq!(export(&p, "jsonl").stdout, "");
}

#[test]
fn warnings_go_to_stderr_data_to_stdout() {
    let dir = tempfile::tempdir().unwrap();
    let full = std::fs::read(demo_session(dir.path())).unwrap();
    let p = dir.path().join("cut.ptop");
    std::fs::write(&p, &full[..full.len() - 3]).unwrap();
    let out = export(&p, "jsonl");
    assert_eq!(out.stderr.lines().count(), 1);
    assert!(out.stderr.contains("cut.ptop: byte ") && out.stderr.contains("cut off"));
    assert_eq!(out.stdout.lines().count(), demo_records().len() - 1);
}

/// The demo session with a foreign prover's phase whose name holds everything a CSV cell
/// must survive: a comma, quotes, a line break, a formula start.
fn session_with_a_hostile_phase(dir: &Path) -> std::path::PathBuf {
    use provetop_shared::Phase;
    let name = "=HYPERLINK(\"x\"),\nsecond line\r";
    let mut recs = demo_records();
    recs.push(phase_started(1.0, Phase::Other(name.into()), None));
    recs.push(phase_ended(12.0, Phase::Other(name.into()), None, 11.0));
    recs.sort_by_key(|r| r.t);
    let p = dir.join("hostile.ptop");
    write_session(&p, &recs);
    p
}

#[test]
fn exported_csv_with_a_hostile_phase_reads_back_as_the_same_classify_table() {
    let dir = tempfile::tempdir().unwrap();
    let p = session_with_a_hostile_phase(dir.path());
    let out = export(&p, "csv");
    // One line per sample: the line break inside the phase is shown, not written.
    assert_eq!(out.stdout.lines().count(), 61, "{}", out.stdout);
    assert!(
        out.stdout
            .contains(",\"'=HYPERLINK(\"\"x\"\"),\\nsecond line\\r\""),
        "{}",
        out.stdout
    );
    let csv = dir.path().join("back.csv");
    std::fs::write(&csv, &out.stdout).unwrap();
    let table = |f: &Path| {
        let o = run_provetop(&["classify", "--table-only", f.to_str().unwrap()]);
        assert_eq!(o.code, 0, "{}", o.stderr);
        o.stdout
    };
    let (from_session, from_csv) = (table(&p), table(&csv));
    assert!(from_session.contains("samples="), "{from_session}");
    assert_eq!(from_session, from_csv);
}

#[test]
fn a_csv_whose_text_column_is_quoted_over_lines_reads_back_whole() {
    // What another CSV writer makes of the same rows: RFC 4180 quotes with line breaks in.
    let dir = tempfile::tempdir().unwrap();
    let p = session_with_a_hostile_phase(dir.path());
    let out = export(&p, "csv");
    let quoted: String = out
        .stdout
        .lines()
        .enumerate()
        .map(|(i, l)| {
            let (nums, _) = l.split_at(l.find(",\"").unwrap_or(l.len()));
            if i == 0 {
                format!("{l}\r\n")
            } else {
                format!("{nums},\"a,\"\"b\"\"\r\nc\n\"\r\n")
            }
        })
        .collect();
    let csv = dir.path().join("quoted.csv");
    std::fs::write(&csv, &quoted).unwrap();
    let plain = dir.path().join("plain.csv");
    std::fs::write(&plain, &out.stdout).unwrap();
    let table = |f: &Path| {
        let o = run_provetop(&["classify", "--table-only", f.to_str().unwrap()]);
        assert_eq!(o.code, 0, "{}", o.stderr);
        assert_eq!(o.stderr, "");
        o.stdout
    };
    assert_eq!(table(&csv), table(&plain));
}

/// A session with usage records (2 Hz) between memory samples (20 Hz) on two GPUs, written by
/// the real session writer: the child starts at 0 s, the first usage reading (no rates) comes
/// at 0.5 s, readings with rates every 0.5 s to 2 s, the child exits at 2.2 s and one more
/// sample follows.
fn usage_session(dir: &Path) -> std::path::PathBuf {
    use provetop_shared::record::{GpuDetail, GpuReading, Sample, Usage};
    use provetop_shared::Mark;
    let mut recs = vec![Record::new(
        at(0.0),
        RecordBody::Mark(Mark::ChildStarted {
            pid: 7,
            command: vec!["prover".into()],
        }),
    )];
    for i in 1..=44u32 {
        let s = f64::from(i) * 0.05;
        if i % 10 == 0 {
            let first = i == 10;
            recs.push(Record::new(
                at(s),
                RecordBody::Usage(Usage {
                    interval_ns: if first { 0 } else { 500_000_000 },
                    cores: (!first).then_some(11.25),
                    threads: 40 + i,
                    ctx_switches: (!first).then_some(900.0),
                    major_faults: (!first).then_some(3.5),
                    read_bps: (!first).then_some(1_048_576.0),
                    write_bps: None,
                    host_cores: Some(12.5),
                    host_ncpu: 16,
                    procs: vec![],
                    gpus: vec![
                        GpuDetail {
                            index: 0,
                            uuid: "GPU-0".into(),
                            name: "NVIDIA H200".into(),
                            temp_c: Some(71),
                            ..GpuDetail::default()
                        },
                        GpuDetail {
                            index: 1,
                            uuid: "GPU-1".into(),
                            name: "NVIDIA H200".into(),
                            temp_c: None,
                            ..GpuDetail::default()
                        },
                    ],
                    nvml_calls: Vec::new(),
                    nvml_backoff: None,
                }),
            ));
        }
        let gpu = |index, util, used| GpuReading {
            index,
            proc_used: used / 2,
            used,
            total: 141 * GIB,
            util,
        };
        recs.push(Record::new(
            at(s + 0.001),
            RecordBody::Sample(Sample {
                rss: u64::from(i) * GIB,
                gpus: vec![gpu(0, 86, 3 * GIB), gpu(1, 5, GIB)],
                ..Sample::default()
            }),
        ));
        if i == 44 {
            recs.push(Record::new(
                at(2.2),
                RecordBody::Mark(Mark::ChildExited {
                    pid: 7,
                    code: Some(0),
                    signal: None,
                    oom_kill: false,
                    reason: "exited 0".into(),
                }),
            ));
            recs.push(Record::new(
                at(2.3),
                RecordBody::Sample(Sample {
                    rss: GIB,
                    ..Sample::default()
                }),
            ));
        }
    }
    let p = dir.join("usage.ptop");
    write_session(&p, &recs);
    p
}

#[test]
fn the_usage_and_gpu_columns_follow_the_phase_carried_forward_and_empty_when_unknown() {
    let dir = tempfile::tempdir().unwrap();
    let p = usage_session(dir.path());
    let out = export(&p, "csv");
    let mut lines = out.stdout.lines();
    let header = lines.next().unwrap();
    assert_eq!(header, csv_header(&[0, 1], false));
    assert_eq!(
        header,
        "timestamp,rss_kb,peak_kb,anon_kb,file_kb,shmem_kb,swap_kb,locked_kb,pinned_kb,gpu_kb,\
         mem_available_kb,phase,cores,host_cores,threads,read_bps,write_bps,major_faults,\
         gpu0_util,gpu0_mem_kb,gpu0_temp_c,gpu1_util,gpu1_mem_kb,gpu1_temp_c"
    );
    let names: Vec<&str> = header.split(',').collect();
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    assert_eq!(rows.len(), 45);
    assert!(rows.iter().all(|r| r.len() == names.len()));
    let cell =
        |row: &[&str], name: &str| row[names.iter().position(|n| *n == name).unwrap()].to_string();
    let usage_cols = [
        "cores",
        "host_cores",
        "threads",
        "read_bps",
        "write_bps",
        "major_faults",
        "gpu0_temp_c",
        "gpu1_temp_c",
    ];
    let usage = |row: &[&str]| usage_cols.map(|c| cell(row, c));
    // Before the first usage reading: unknown, not zero; the GPU's sample readings are there.
    assert_eq!(usage(&rows[0]), ["", "", "", "", "", "", "", ""]);
    assert_eq!(cell(&rows[0], "gpu0_util"), "86");
    assert_eq!(cell(&rows[0], "gpu0_mem_kb"), (3 * GIB / 1024).to_string());
    assert_eq!(cell(&rows[0], "gpu1_util"), "5");
    // The first reading has no rates: threads and the host are known, the rest is not.
    assert_eq!(usage(&rows[9]), ["", "12.50", "50", "", "", "", "71", ""]);
    // A reading with rates, carried forward to every sample until the next.
    for row in &rows[19..29] {
        assert_eq!(
            usage(row),
            ["11.25", "12.50", "60", "1048576", "", "3.5", "71", ""],
            "{row:?}"
        );
    }
    assert_eq!(cell(&rows[29], "threads"), "70");
    // After the child exited: the tree's readings are gone (and this sample has no GPUs).
    let last = rows.last().unwrap();
    assert_eq!(usage(last), ["", "", "", "", "", "", "", ""]);
    assert_eq!(cell(last, "gpu0_util"), "");
    assert_eq!(cell(last, "rss_kb"), (GIB / 1024).to_string());
    // The seed's awk script reads only the first two columns: its output is that of the
    // two-column CSV of the same samples.
    let exported = dir.path().join("usage.csv");
    std::fs::write(&exported, &out.stdout).unwrap();
    let two: String = out
        .stdout
        .lines()
        .map(|l| l.split(',').take(2).collect::<Vec<_>>().join(",") + "\n")
        .collect();
    let two_col = dir.path().join("two.csv");
    std::fs::write(&two_col, two).unwrap();
    let awk = seed_awk(&exported);
    let samples: u32 = awk
        .lines()
        .map(|l| {
            l.split("samples=")
                .nth(1)
                .unwrap()
                .split(',')
                .next()
                .unwrap()
        })
        .map(|n| n.parse::<u32>().unwrap())
        .sum();
    assert_eq!(samples, 45, "every row read: {awk}");
    assert_eq!(awk, seed_awk(&two_col));
}

#[test]
fn jsonl_carries_the_usage_records_whole() {
    let dir = tempfile::tempdir().unwrap();
    let p = usage_session(dir.path());
    let out = export(&p, "jsonl");
    let back: Vec<Record> = out
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).expect("each line is one Record"))
        .collect();
    assert_eq!(back, load(&p).unwrap().records);
    let usage: Vec<&str> = out
        .stdout
        .lines()
        .filter(|l| l.contains(r#""record":"usage""#))
        .collect();
    assert_eq!(usage.len(), 4);
    assert!(usage[1].contains(r#""uuid":"GPU-1""#), "{}", usage[1]);
    assert!(usage[1].contains(r#""ctx_switches":900.0"#), "{}", usage[1]);
}
