//! `provetop compare`: the shipped recordings against themselves and each other, the seed CSV
//! against a halved copy, the `--fail-if` gate, the output formats, and bad input (no proofs,
//! no samples, 10 Hz against 20 Hz, two machines, a damaged tail).

use std::path::{Path, PathBuf};

use provetop::store::Store;
use provetop_shared::session::{SessionHeader, SessionWriter};
use provetop_shared::units::fmt_bytes;
use provetop_shared::{Record, RecordBody};
use provetop_testkit::bins::{run_provetop, Out};
use provetop_testkit::fixtures::{repo, seed_csv};
use provetop_testkit::synth::{records, SynthConfig};

fn asset(name: &str) -> PathBuf {
    repo().join("assets").join(name)
}

const SUPRASEAL: &str = "h200-supraseal-all-modes-10x2p20.ptop";

fn compare(args: &[&str]) -> Out {
    let mut v = vec!["compare"];
    v.extend_from_slice(args);
    run_provetop(&v)
}

fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

/// `provetop compare P P ARGS`: one file against itself (selections, rules).
fn against_itself(p: &Path, args: &[&str]) -> Out {
    compare(&[&[s(p), s(p)], args].concat())
}

fn json(out: &Out) -> serde_json::Value {
    assert_eq!(out.code, 0, "stderr: {}", out.stderr);
    serde_json::from_str(&out.stdout).expect("compare --format json prints JSON")
}

/// The notes of a JSON comparison.
fn notes(j: &serde_json::Value) -> Vec<&str> {
    j["notes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect()
}

/// The row `metric` of a JSON comparison.
fn row<'a>(j: &'a serde_json::Value, metric: &str) -> &'a serde_json::Value {
    j["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["metric"] == metric)
        .unwrap_or_else(|| panic!("no row {metric} in {j:#}"))
}

/// A session file of `records` with a header naming `host`.
fn write(path: &Path, host: &str, hz: f64, recs: impl IntoIterator<Item = Record>) {
    let mut h = SessionHeader::now(vec!["provetop-prover".into()], hz);
    h.host = host.into();
    let mut w = SessionWriter::create(path, &h).unwrap();
    for r in recs {
        w.append(&r).unwrap();
    }
    w.sync().unwrap();
}

#[test]
fn the_h200_supraseal_session_against_itself_reads_zero_percent_everywhere() {
    let p = asset(SUPRASEAL);
    let j = json(&against_itself(&p, &["--format", "json"]));
    let rows = j["rows"].as_array().unwrap();
    assert!(
        rows.len() > 30,
        "memory, proofs, four modes, phases: {}",
        rows.len()
    );
    for r in rows {
        let o = &r["others"][0];
        assert!(r["baseline"].is_number(), "{r}");
        assert_eq!(o["value"], r["baseline"], "{r}");
        assert_eq!(o["diff"], 0.0, "{r}");
        assert_eq!(o["pct"], 0.0, "{r}");
        assert_eq!(o["ratio"], 1.0, "{r}");
    }
    // The terminal table says the same: every change is +0.0 %, every ratio 1.00×.
    let out = against_itself(&p, &[]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let changes: Vec<&str> = out.stdout.lines().filter(|l| l.starts_with("  ")).collect();
    assert_eq!(changes.len(), rows.len(), "{}", out.stdout);
    for l in changes {
        assert!(l.contains("(+0.0%)") && l.ends_with("1.00×"), "{l}");
    }
}

/// `above floor` of `mode` in classify's mode table, as printed.
fn classify_above_floor(stdout: &str, mode: &str) -> String {
    let line = stdout
        .lines()
        .skip_while(|l| !l.starts_with("batch modes"))
        .find(|l| l.split_whitespace().next() == Some(mode))
        .unwrap_or_else(|| panic!("no {mode} row in {stdout}"));
    let w: Vec<&str> = line.split_whitespace().collect();
    w[w.len() - 2..].join(" ")
}

#[test]
fn single_against_sps_gives_the_peak_above_floor_ratio_of_classify_mode_table() {
    let p = asset(SUPRASEAL);
    let j = json(&against_itself(
        &p,
        &["--mode", "single", "--mode", "sps", "--format", "json"],
    ));
    assert_eq!(j["baseline"]["selection"], "mode single");
    assert_eq!(j["others"][0]["selection"], "mode sps");
    let r = row(&j, "above_floor");
    let (single, sps) = (
        r["baseline"].as_f64().unwrap(),
        r["others"][0]["value"].as_f64().unwrap(),
    );
    // The same figures classify prints, to its precision...
    let c = run_provetop(&["classify", s(&p)]);
    assert_eq!(c.code, 0, "{}", c.stderr);
    assert_eq!(
        fmt_bytes(single as u64),
        classify_above_floor(&c.stdout, "single")
    );
    assert_eq!(
        fmt_bytes(sps as u64),
        classify_above_floor(&c.stdout, "sps")
    );
    // ...and exactly the mode table's numbers: median proof peak of the mode minus the floor.
    let store = Store::scan(&p, Default::default()).unwrap();
    let floor = store.srs_floor().unwrap();
    let finished: Vec<_> = store
        .finished_proofs()
        .iter()
        .map(|p| p.unwrap().finished())
        .collect();
    let rows = provetop::model::mode_rows(&finished);
    let above = |m: &str| {
        let r = rows.iter().find(|r| r.mode.to_string() == m).unwrap();
        (r.peak_median - floor) as f64
    };
    assert_eq!((single, sps), (above("single"), above("sps")));
    let ratio = r["others"][0]["ratio"].as_f64().unwrap();
    assert_eq!(ratio, above("sps") / above("single"));
    // On this recording sps holds about a sixteenth of single's working set.
    assert!((0.05..0.08).contains(&ratio), "{ratio}");
    let text = compare(&[s(&p), s(&p), "--mode", "single", "--mode", "sps"]).stdout;
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with("above_floor"))
        .unwrap();
    assert!(line.ends_with(&format!("{ratio:.2}×")), "{line}");
    // Only the selected proofs count: 19 single, 4 sps.
    assert_eq!(row(&j, "proofs")["baseline"], 19.0);
    assert_eq!(row(&j, "proofs")["others"][0]["value"], 4.0);
}

/// The seed CSV with every sample halved.
fn halved_seed(dir: &Path) -> PathBuf {
    let text = std::fs::read_to_string(seed_csv()).unwrap();
    let mut out = String::new();
    for (i, line) in text.lines().enumerate() {
        if i == 0 {
            out.push_str(line);
        } else {
            let (t, kb) = line.split_once(',').unwrap();
            out.push_str(&format!("{t},{}", kb.trim().parse::<u64>().unwrap() / 2));
        }
        out.push('\n');
    }
    let p = dir.join("halved.csv");
    std::fs::write(&p, out).unwrap();
    p
}

#[test]
fn the_seed_csv_against_a_halved_copy_reads_minus_fifty_percent_peak() {
    let dir = tempfile::tempdir().unwrap();
    let half = halved_seed(dir.path());
    let seed = seed_csv();
    let out = compare(&[s(&seed), s(&half)]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    for key in ["rss", "peak"] {
        let line = out
            .stdout
            .lines()
            .find(|l| l.split_whitespace().next() == Some(key))
            .unwrap_or_else(|| panic!("{key} in {}", out.stdout));
        assert!(line.contains("202.9 GiB"), "{line}");
        assert!(
            line.contains("101.4 GiB") && line.contains("(-50.0%)"),
            "{line}"
        );
        assert!(line.ends_with("0.50×"), "{line}");
    }
    // A CSV has no proofs: that row says so rather than 0, and the threshold phases stand in.
    let j = json(&compare(&[s(&seed), s(&half), "--format", "json"]));
    assert!(row(&j, "proofs")["baseline"].is_null());
    assert_eq!(row(&j, "proofs")["baseline_missing"], "no prover events");
    assert_eq!(
        row(&j, "phase_peak[peak_synth]")["baseline"]
            .as_f64()
            .map(|b| fmt_bytes(b as u64)),
        Some("202.9 GiB".into())
    );
    // Halved, the seed never reaches the 180 GiB peak_synth line.
    assert_eq!(
        row(&j, "phase_peak[peak_synth]")["others"][0]["missing"],
        "no peak_synth phase"
    );
    let notes = notes(&j);
    assert!(
        notes.iter().any(|n| n.contains("no prover events (a CSV)")),
        "{notes:?}"
    );
}

#[test]
fn a_fail_if_rule_that_holds_fails_the_run_with_the_rule_and_the_numbers() {
    let dir = tempfile::tempdir().unwrap();
    let half = halved_seed(dir.path());
    let seed = seed_csv();
    // The halved copy as the baseline: the seed is 100 % above it.
    let out = compare(&[s(&half), s(&seed), "--fail-if", "peak > +5%"]);
    assert_eq!(
        out.code, 3,
        "stdout: {}\nstderr: {}",
        out.stdout, out.stderr
    );
    assert_eq!(
        out.stderr.trim(),
        "provetop: compare: seed-baseline.csv fails --fail-if 'peak > +5%': peak 202.9 GiB against 101.4 GiB in halved.csv (+101.4 GiB, +100.0%)"
    );
    assert!(
        out.stdout
            .contains("rule peak > +5%: seed-baseline.csv: FAILED"),
        "{}",
        out.stdout
    );
}

#[test]
fn fail_if_rules_that_do_not_hold_pass_the_run() {
    let p = asset(SUPRASEAL);
    let out = against_itself(
        &p,
        &[
            "--fail-if",
            "peak > +5%",
            "--fail-if",
            "s_per_sector > +3%",
            "--fail-if",
            "rss < 100GiB",
        ],
    );
    // The third holds (5.5 GiB is under 100 GiB): it fails, the first two pass.
    assert_eq!(out.code, 3, "{}", out.stderr);
    assert!(out
        .stdout
        .contains("rule peak > +5%: h200-supraseal-all-modes-10x2p20.ptop: ok"));
    assert!(out
        .stdout
        .contains("rule s_per_sector > +3%: h200-supraseal-all-modes-10x2p20.ptop: ok"));
    assert!(
        out.stderr
            .contains("fails --fail-if 'rss < 100GiB': rss 5.5 GiB against 5.5 GiB"),
        "{}",
        out.stderr
    );
    let out = against_itself(
        &p,
        &[
            "--fail-if",
            "peak > +5%",
            "--fail-if",
            "s_per_sector[sps] > +3%",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.stderr, "");
}

#[test]
fn a_fail_if_rule_naming_an_unknown_metric_is_an_error_before_anything_is_read() {
    // The files do not exist: the rule is refused first.
    let out = compare(&[
        "/nonexistent/a.ptop",
        "/nonexistent/b.ptop",
        "--fail-if",
        "pek > +5%",
    ]);
    assert_eq!(out.code, 1);
    assert!(out.stdout.is_empty());
    let err = out.stderr.trim();
    assert!(
        err.starts_with("provetop: bad --fail-if rule \"pek > +5%\": unknown metric \"pek\" (want one of rss, peak, floor"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
    let out = compare(&[
        "/nonexistent/a.ptop",
        "/nonexistent/b.ptop",
        "--fail-if",
        "mem_available < 5%",
    ]);
    assert!(
        out.stderr.contains("mem_available is an alert metric"),
        "{}",
        out.stderr
    );
}

#[test]
fn a_rule_on_a_row_one_side_lacks_cannot_pass() {
    let p = asset(SUPRASEAL);
    let seed = seed_csv();
    let out = compare(&[s(&p), s(&seed), "--fail-if", "s_per_sector > +3%"]);
    out.assert_fails(3, &["cannot check: s_per_sector: no prover events"]);
}

#[test]
fn markdown_json_and_csv_carry_the_same_rows() {
    let p = asset(SUPRASEAL);
    let q = asset("h200-supraseal-10x2p18-resident.ptop");
    let j = json(&compare(&[s(&p), s(&q), "--format", "json"]));
    let n = j["rows"].as_array().unwrap().len();
    let md = compare(&[s(&p), s(&q), "--format", "markdown"]);
    assert_eq!(md.code, 0);
    assert!(md
        .stdout
        .contains("| metric | what | baseline | 1 | 1 change | 1 ratio |"));
    assert_eq!(
        md.stdout.lines().filter(|l| l.starts_with("| `")).count(),
        n
    );
    let csv = compare(&[s(&p), s(&q), "--format", "csv"]);
    assert_eq!(csv.code, 0);
    let mut lines = csv.stdout.lines();
    assert_eq!(
        lines.next(),
        Some("metric,unit,baseline_file,baseline,other_file,other,diff,ratio,missing")
    );
    assert_eq!(lines.count(), n);
    // The other session has only single proofs: the other modes' rows say so.
    let r = row(&j, "s_per_sector[sps]");
    assert_eq!(r["others"][0]["missing"], "no sps proofs");
    assert!(md.stdout.contains("| `s_per_sector[sps]` |"));
    assert!(csv.stdout.contains("s_per_sector[sps],seconds,"));
    assert!(csv.stdout.contains(",no sps proofs\n"));
}

#[test]
fn several_others_each_get_value_change_and_ratio() {
    let p = asset(SUPRASEAL);
    let q = asset("h200-supraseal-10x2p18-resident.ptop");
    let out = compare(&[s(&p), s(&q), s(&p)]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let head = out
        .stdout
        .lines()
        .find(|l| l.starts_with("metric"))
        .unwrap();
    assert!(
        head.contains("1 change") && head.contains("2 ratio"),
        "{head}"
    );
    assert!(out.stdout.contains("2: ") && out.stdout.contains("baseline: "));
}

#[test]
fn selections_by_range_count_only_those_proofs() {
    let p = asset(SUPRASEAL);
    let j = json(&against_itself(
        &p,
        &["--proofs", "1..3", "--proofs", "4", "--format", "json"],
    ));
    assert_eq!(row(&j, "proofs")["baseline"], 3.0);
    assert_eq!(row(&j, "proofs")["others"][0]["value"], 1.0);
    let out = compare(&[s(&p), s(&p), s(&p), "--mode", "sps", "--mode", "single"]);
    assert_eq!(out.code, 1);
    assert!(
        out.stderr.contains("--mode given 2 times for 3 files"),
        "{}",
        out.stderr
    );
    let out = compare(&[s(&p), s(&p), "--proofs", "0"]);
    assert!(out.stderr.contains("numbered from 1"), "{}", out.stderr);
}

#[test]
fn a_session_without_proofs_or_samples_is_compared_as_far_as_it_goes() {
    let dir = tempfile::tempdir().unwrap();
    let base = synth_of(dir.path(), "base.ptop", 40.0);
    // Samples only: the child spoke no protocol.
    let no_proofs = dir.path().join("no-proofs.ptop");
    synth_session(
        &no_proofs,
        SynthConfig {
            seconds: 40.0,
            events: false,
            ..SynthConfig::default()
        },
        "h",
    );
    // Events only: no sampler.
    let no_samples = dir.path().join("no-samples.ptop");
    let recs = records(SynthConfig {
        seconds: 40.0,
        ..SynthConfig::default()
    })
    .into_iter()
    .filter(|r| !matches!(r.body, RecordBody::Sample(_)));
    write(&no_samples, "h", 20.0, recs);
    let j = json(&compare(&[
        s(&base),
        s(&no_proofs),
        s(&no_samples),
        "--format",
        "json",
    ]));
    let proofs = row(&j, "proofs");
    assert!(proofs["baseline"].as_f64().unwrap() >= 4.0);
    assert_eq!(proofs["others"][0]["missing"], "no prover events");
    assert!(proofs["others"][1]["value"].as_f64().unwrap() >= 4.0);
    let rss = row(&j, "rss");
    assert!(rss["others"][0]["value"].is_number());
    assert_eq!(rss["others"][1]["missing"], "no samples");
    let notes = notes(&j);
    assert!(
        notes
            .iter()
            .any(|n| n.starts_with("no-samples.ptop: no memory samples")),
        "{notes:?}"
    );
    assert!(
        notes
            .iter()
            .any(|n| n.starts_with("no-proofs.ptop: no prover events")),
        "{notes:?}"
    );
}

#[test]
fn a_session_whose_prover_finished_no_proof_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let base = synth_of(dir.path(), "base.ptop", 40.0);
    // Three seconds: the SRS is loaded and the first proof is still synthesizing.
    let early = synth_of(dir.path(), "early.ptop", 3.0);
    let j = json(&compare(&[s(&base), s(&early), "--format", "json"]));
    assert_eq!(row(&j, "proofs")["others"][0]["value"], 0.0);
    assert_eq!(row(&j, "s_per_sector")["others"][0]["missing"], "no proofs");
    assert!(row(&j, "rss")["others"][0]["value"].is_number());
    let notes = notes(&j);
    assert!(
        notes.contains(&"early.ptop: no proof finished in this recording"),
        "{notes:?}"
    );
    // A selection that matches nothing says what there was.
    let out = against_itself(&base, &["--mode", "single", "--mode", "sps"]);
    out.assert_says(&["note: base.ptop: no proof matches mode sps ("]);
}

fn synth_session(path: &Path, cfg: SynthConfig, host: &str) {
    let hz = cfg.hz;
    write(path, host, hz, records(cfg));
}

/// DIR/NAME: `seconds` of the default synthetic session, recorded on host "h".
fn synth_of(dir: &Path, name: &str, seconds: f64) -> PathBuf {
    let p = dir.join(name);
    synth_session(
        &p,
        SynthConfig {
            seconds,
            ..SynthConfig::default()
        },
        "h",
    );
    p
}

#[test]
fn ten_hertz_against_twenty_hertz_on_two_machines_is_compared_with_notes() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.ptop");
    let b = dir.path().join("b.ptop");
    synth_session(
        &a,
        SynthConfig {
            hz: 10.0,
            seconds: 80.0,
            ..SynthConfig::default()
        },
        "alpha",
    );
    synth_session(
        &b,
        SynthConfig {
            hz: 20.0,
            seconds: 80.0,
            t0: 9_000_000_000_000_000,
            ..SynthConfig::default()
        },
        "beta",
    );
    let out = compare(&[s(&a), s(&b)]);
    out.assert_says(&[
        "note: a.ptop is sampled every 100ms and b.ptop every 50ms",
        "note: a.ptop was recorded on alpha and b.ptop on beta: two clocks",
    ]);
    // Same shape, other clock and rate: durations compare, the clocks' offset does not leak in.
    let j = json(&compare(&[s(&a), s(&b), "--format", "json"]));
    let spp = row(&j, "s_per_proof");
    let pct = spp["others"][0]["pct"].as_f64().unwrap();
    assert!(pct.abs() < 5.0, "{spp}");
    let oom = row(&j, "oom_window");
    assert!(
        oom["others"][0]["pct"].as_f64().unwrap().abs() < 25.0,
        "{oom}"
    );
}

#[test]
fn a_damaged_tail_is_compared_up_to_the_damage_with_a_note() {
    let dir = tempfile::tempdir().unwrap();
    let a = synth_of(dir.path(), "whole.ptop", 60.0);
    let bytes = std::fs::read(&a).unwrap();
    let b = dir.path().join("cut.ptop");
    // Cut mid-frame, as a kill -9 leaves it.
    std::fs::write(&b, &bytes[..bytes.len() * 2 / 3 + 5]).unwrap();
    let out = compare(&[s(&a), s(&b)]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let note = out
        .stdout
        .lines()
        .find(|l| l.starts_with("note: cut.ptop:"))
        .unwrap_or_else(|| panic!("{}", out.stdout));
    assert!(
        note.contains("byte") && note.ends_with("compared as far as it goes"),
        "{note}"
    );
    let j = json(&compare(&[s(&a), s(&b), "--format", "json"]));
    let proofs = row(&j, "proofs");
    assert!(proofs["others"][0]["value"].as_f64() < proofs["baseline"].as_f64());
}

#[test]
fn an_unreadable_file_is_a_one_line_error() {
    let p = asset(SUPRASEAL);
    let out = compare(&[s(&p), "/nonexistent/other.ptop"]);
    out.assert_fails(1, &["/nonexistent/other.ptop"]);
    assert_eq!(out.stderr.trim().lines().count(), 1, "{}", out.stderr);
}

#[test]
fn a_csv_and_a_session_mix_with_threshold_phases_on_both_sides() {
    let seed = seed_csv();
    let p = asset(SUPRASEAL);
    let j = json(&compare(&[s(&seed), s(&p), "--format", "json"]));
    // The seed's threshold phases, and the session's by the same thresholds (all idle_pre:
    // it never passes 10 GiB).
    let peak_synth = row(&j, "phase_peak[peak_synth]");
    assert_eq!(
        peak_synth["baseline"].as_f64().map(|b| fmt_bytes(b as u64)),
        Some("202.9 GiB".into())
    );
    assert_eq!(peak_synth["others"][0]["missing"], "no peak_synth phase");
    assert!(row(&j, "phase_median[idle_pre]")["others"][0]["value"].is_number());
    // The prover's phases: only the session has them.
    let synth = row(&j, "phase_median[synthesis]");
    assert_eq!(synth["baseline_missing"], "no synthesis phase");
    assert!(synth["others"][0]["value"].is_number());
    // Proof cycles: counted by thresholds for the CSV only.
    assert_eq!(row(&j, "cycles")["baseline"], 1.0);
    assert_eq!(
        row(&j, "cycles")["others"][0]["missing"],
        "counted only without prover events (see proofs)"
    );
}

/// A kernel record every second of `recs`'s span: a cgroup bound at `limit` with memory
/// pressure `psi` (avg10, percent).
fn with_kernel(mut recs: Vec<Record>, limit: u64, psi: f64) -> Vec<Record> {
    use provetop_shared::{Binding, Kernel, Psi, PsiLine, PsiResource};
    let (t0, t1) = (recs[0].t, recs[recs.len() - 1].t);
    let mut t = t0;
    while t < t1 {
        let line = PsiLine {
            avg10: psi,
            rate: None,
        };
        recs.push(Record::new(
            t,
            RecordBody::Kernel(Box::new(Kernel {
                binding: Some(Binding {
                    name: "job memory.max".into(),
                    limit,
                    used: limit / 2,
                }),
                psi_host: Some(Psi {
                    memory: Some(PsiResource {
                        some: line.clone(),
                        full: Some(line),
                    }),
                    ..Psi::default()
                }),
                ..Kernel::default()
            })),
        ));
        t += 1_000_000_000;
    }
    recs.sort_by_key(|r| r.t);
    recs
}

#[test]
fn the_kernel_rows_compare_the_binding_limit_oom_kills_and_pressure_and_gate_on_them() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = || SynthConfig {
        seconds: 20.0,
        ..SynthConfig::default()
    };
    let a = dir.path().join("calm.ptop");
    let b = dir.path().join("squeezed.ptop");
    write(&a, "h", 20.0, with_kernel(records(cfg()), 256 << 30, 0.5));
    let mut squeezed = with_kernel(records(cfg()), 200 << 30, 35.0);
    let end = squeezed.last().unwrap().t;
    squeezed.push(Record::new(
        end,
        RecordBody::Mark(provetop_shared::Mark::OomKill {
            pid: Some(77),
            command: Some("worker".into()),
            cgroup: Some("/job".into()),
            watched: false,
            text: "OOM kill of pid 77 (worker) in /job".into(),
        }),
    ));
    write(&b, "h", 20.0, squeezed);
    let j = json(&compare(&[s(&a), s(&b), "--format", "json"]));
    assert_eq!(row(&j, "mem_limit")["baseline"], (256u64 << 30) as f64);
    assert_eq!(
        row(&j, "mem_limit")["others"][0]["value"],
        (200u64 << 30) as f64
    );
    assert_eq!(row(&j, "oom_kills")["others"][0]["value"], 1.0);
    assert_eq!(row(&j, "psi_memory_some_max")["others"][0]["value"], 35.0);
    let text = compare(&[s(&a), s(&b)]).stdout;
    assert!(text.contains("kernel"), "{text}");
    assert!(text.contains("35.0%"), "{text}");
    // The gate: pressure in its own unit, OOM kills as a count.
    let out = compare(&[s(&a), s(&b), "--fail-if", "psi_memory_some_max > 10%"]);
    assert_eq!(
        out.code,
        provetop::compare::REGRESSION_EXIT,
        "{}",
        out.stderr
    );
    let out = compare(&[s(&a), s(&b), "--fail-if", "oom_kills > 0"]);
    assert_eq!(
        out.code,
        provetop::compare::REGRESSION_EXIT,
        "{}",
        out.stderr
    );
    let out = compare(&[s(&a), s(&a), "--fail-if", "psi_memory_some_max > 10%"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    // A session without kernel records says so in the row.
    let old = synth_of(dir.path(), "old.ptop", 20.0);
    let j = json(&compare(&[s(&old), s(&b), "--format", "json"]));
    assert!(
        row(&j, "oom_kills")["baseline_missing"]
            .as_str()
            .is_some_and(|m| m.contains("no kernel readings")),
        "{}",
        row(&j, "oom_kills")
    );
}
