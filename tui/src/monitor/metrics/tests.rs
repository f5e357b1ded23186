//! The metric set, fed a record stream through the real reducer: what a scrape says.

use super::labels::PHASES;
use super::state::CGROUP_HELD_NS;
use super::*;
use provetop_shared::alerts::default_rules;
use provetop_shared::record::GpuReading;
use provetop_shared::units::GIB;
use provetop_shared::{
    Alert, AlertLevel, AlertState, BatchMode, Event, Mark, Phase, RecordBody, Sample,
};
use provetop_testkit::fixtures::{proof_finished, proof_started};

const S: u64 = 1_000_000_000;

/// A model and its metrics, fed as the pipeline feeds them.
struct Feed {
    model: Model,
    metrics: Metrics,
}

impl Feed {
    fn new(rules: &[Rule]) -> Self {
        Feed {
            model: Model::new(Default::default()),
            metrics: Metrics::new(rules),
        }
    }

    fn push(&mut self, t: u64, body: RecordBody) {
        let rec = Record::new(t, body);
        let fx = self.model.apply(&rec);
        self.metrics.observe(&rec, &fx, &self.model);
    }

    fn sample(&mut self, t: u64, rss: u64, peak: u64) {
        self.push(
            t,
            RecordBody::Sample(Sample {
                rss,
                peak: Some(peak),
                mem_available: Some(100 * GIB),
                mem_total: Some(128 * GIB),
                ..Sample::default()
            }),
        );
    }

    fn event(&mut self, t: u64, e: Event) {
        self.push(t, RecordBody::Event(e));
    }

    fn phase(&mut self, t: u64, phase: Phase, partition: Option<u32>, start: bool) {
        let e = if start {
            Event::PhaseStarted {
                proof_id: 1,
                phase,
                partition,
            }
        } else {
            Event::PhaseEnded {
                proof_id: 1,
                phase,
                partition,
                duration_s: 0.75,
            }
        };
        self.event(t, e);
    }

    fn scrape(&self) -> String {
        self.metrics.scrape(Format::Prometheus)
    }
}

/// The value of the series written exactly `series` (name and labels) in `text`.
fn value(text: &str, series: &str) -> Option<f64> {
    text.lines().find_map(|l| {
        let rest = l.strip_prefix(series)?.strip_prefix(' ')?;
        rest.split(' ').next()?.parse().ok()
    })
}

#[test]
fn the_interval_peak_is_the_highest_rss_since_the_previous_scrape_and_starts_anew() {
    let mut f = Feed::new(&[]);
    f.sample(S, GIB, GIB);
    // A 20 ms spike between two samples, seen only through the interval peak.
    f.sample(2 * S, GIB, 5 * GIB);
    f.sample(3 * S, 2 * GIB, 2 * GIB);
    let t = f.scrape();
    assert_eq!(value(&t, "provetop_rss_bytes"), Some((2 * GIB) as f64));
    assert_eq!(
        value(&t, "provetop_rss_interval_peak_bytes"),
        Some((5 * GIB) as f64),
        "{t}"
    );
    // Nothing sampled since: the interval starts at the RSS of the latest sample.
    let t = f.scrape();
    assert_eq!(
        value(&t, "provetop_rss_interval_peak_bytes"),
        Some((2 * GIB) as f64)
    );
    f.sample(4 * S, GIB, 3 * GIB);
    let t = f.scrape();
    assert_eq!(
        value(&t, "provetop_rss_interval_peak_bytes"),
        Some((3 * GIB) as f64)
    );
    assert_eq!(value(&t, "provetop_samples_total"), Some(4.0));
    assert_eq!(
        value(&t, "provetop_mem_available_bytes"),
        Some((100 * GIB) as f64)
    );
}

#[test]
fn an_unlimited_cgroups_usage_read_once_a_second_stands_in_the_gauge_between_its_reads() {
    let mut f = Feed::new(&[]);
    let cg = |t: u64, current: Option<u64>| {
        (
            t,
            RecordBody::Sample(Sample {
                rss: GIB,
                cgroup_current: current,
                ..Sample::default()
            }),
        )
    };
    let (t, b) = cg(S, Some(3 * GIB));
    f.push(t, b);
    // The samples between two reads carry no usage; the gauge keeps the latest read…
    let (t, b) = cg(S + S / 2, None);
    f.push(t, b);
    let text = f.scrape();
    assert_eq!(
        value(&text, "provetop_cgroup_memory_current_bytes"),
        Some((3 * GIB) as f64),
        "{text}"
    );
    // …but not once it is older than two of its periods (the cgroup went unreadable).
    let (t, b) = cg(S + CGROUP_HELD_NS + 1, None);
    f.push(t, b);
    let text = f.scrape();
    assert_eq!(
        value(&text, "provetop_cgroup_memory_current_bytes"),
        None,
        "{text}"
    );
}

#[test]
fn readings_the_session_does_not_have_are_left_out_not_zero() {
    let mut f = Feed::new(&[]);
    let t = f.scrape();
    assert!(!t.contains("provetop_rss_bytes"), "{t}");
    f.sample(S, GIB, GIB);
    let t = f.scrape();
    for absent in [
        "provetop_cgroup_memory_max_bytes",
        "provetop_predicted_free_bytes",
        "provetop_gpu_memory_used_bytes",
        "provetop_pinned_bytes",
        "provetop_last_proof_peak_bytes",
        "provetop_prover_info",
    ] {
        assert!(!t.contains(absent), "{absent} in\n{t}");
    }
}

#[test]
fn each_gpu_is_labelled_as_dcgm_exporter_labels_it() {
    let mut f = Feed::new(&[]);
    let gpu = |index, proc_used| GpuReading {
        index,
        proc_used,
        used: 2 * proc_used,
        total: 141 * GIB,
        util: 50,
    };
    f.push(
        S,
        RecordBody::Sample(Sample {
            rss: GIB,
            gpu_used: Some(3 * GIB),
            gpus: vec![gpu(0, GIB), gpu(1, 2 * GIB), gpu(9999, GIB)],
            ..Sample::default()
        }),
    );
    let t = f.scrape();
    assert_eq!(
        value(
            &t,
            "provetop_gpu_memory_used_bytes{gpu=\"1\",device=\"nvidia1\"}"
        ),
        Some((2 * GIB) as f64),
        "{t}"
    );
    assert_eq!(
        value(
            &t,
            "provetop_gpu_device_memory_total_bytes{gpu=\"0\",device=\"nvidia0\"}"
        ),
        Some((141 * GIB) as f64)
    );
    assert_eq!(
        value(
            &t,
            "provetop_gpu_utilization_ratio{gpu=\"0\",device=\"nvidia0\"}"
        ),
        Some(0.5)
    );
    // An index past the cap makes no label.
    assert!(!t.contains("9999"), "{t}");
}

#[test]
fn the_usage_gauges_are_the_latest_usage_records_and_absent_when_unknown() {
    use provetop_shared::record::{GpuDetail, Usage};
    let mut f = Feed::new(&[
        "cpu > 12 for 10s".parse().unwrap(),
        "gpu_temp[1] > 85".parse().unwrap(),
    ]);
    f.sample(S, GIB, GIB);
    // No usage record yet: no usage gauge, not a zero.
    let t = f.scrape();
    assert!(!t.contains("provetop_cpu_cores"), "{t}");
    assert!(!t.contains("provetop_threads"), "{t}");
    let detail = |index, temp: Option<u32>| GpuDetail {
        index,
        uuid: format!("GPU-{index}-aaaa"),
        name: "NVIDIA H200".into(),
        temp_c: temp,
        power_w: Some(412.5),
        sm_clock_mhz: Some(1980),
        ..GpuDetail::default()
    };
    let usage = |cores: Option<f64>, read: Option<f64>| Usage {
        interval_ns: S / 2,
        cores,
        threads: 48,
        ctx_switches: Some(1500.0),
        major_faults: Some(2.0),
        read_bps: read,
        write_bps: Some(4096.0),
        host_cores: Some(14.5),
        host_ncpu: 16,
        procs: vec![],
        gpus: vec![detail(0, Some(64)), detail(1, None)],
        nvml_calls: Vec::new(),
        nvml_backoff: None,
    };
    f.push(2 * S, RecordBody::Usage(usage(Some(3.0), None)));
    f.push(3 * S, RecordBody::Usage(usage(Some(11.25), Some(1e6))));
    let t = f.scrape();
    let v = |series: &str| value(&t, series);
    assert_eq!(v("provetop_cpu_cores"), Some(11.25), "{t}");
    assert_eq!(v("provetop_host_cpu_cores"), Some(14.5));
    assert_eq!(v("provetop_host_cpus"), Some(16.0));
    assert_eq!(v("provetop_threads"), Some(48.0));
    assert_eq!(v("provetop_read_bytes_per_second"), Some(1e6));
    assert_eq!(v("provetop_write_bytes_per_second"), Some(4096.0));
    assert_eq!(v("provetop_major_faults_per_second"), Some(2.0));
    assert_eq!(v("provetop_context_switches_per_second"), Some(1500.0));
    assert_eq!(
        v("provetop_gpu_temperature_celsius{gpu=\"0\",device=\"nvidia0\"}"),
        Some(64.0)
    );
    // GPU 1's temperature is unknown: no series for it, not 0 °C.
    assert!(
        !t.contains("provetop_gpu_temperature_celsius{gpu=\"1\""),
        "{t}"
    );
    assert_eq!(
        v("provetop_gpu_power_watts{gpu=\"1\",device=\"nvidia1\"}"),
        Some(412.5)
    );
    assert_eq!(
        v("provetop_gpu_sm_clock_hertz{gpu=\"0\",device=\"nvidia0\"}"),
        Some(1.98e9)
    );
    assert_eq!(
        v("provetop_gpu_info{gpu=\"1\",device=\"nvidia1\",uuid=\"GPU-1-aaaa\",name=\"NVIDIA H200\"}"),
        Some(1.0),
        "{t}"
    );
    // The PCIe readings are absent on every GPU: the family is left out whole.
    assert!(!t.contains("pcie"), "{t}");
    // The rule on one GPU is labelled as written.
    assert!(t.contains("metric=\"gpu_temp[1]\""), "{t}");
    // The child exits: its usage readings go.
    f.push(
        4 * S,
        RecordBody::Mark(Mark::ChildExited {
            pid: 1,
            code: Some(0),
            signal: None,
            oom_kill: false,
            reason: "exited 0".into(),
        }),
    );
    let t = f.scrape();
    assert!(!t.contains("provetop_cpu_cores"), "{t}");
    assert!(!t.contains("provetop_gpu_info"), "{t}");
}

#[test]
fn the_current_phase_is_one_series_per_phase_and_time_per_phase_adds_up() {
    let mut f = Feed::new(&[]);
    f.event(S, proof_started(1, BatchMode::Single));
    f.phase(S, Phase::Synthesis, Some(0), true);
    f.phase(S, Phase::Synthesis, Some(1), true);
    let t = f.scrape();
    assert_eq!(value(&t, "provetop_phase{phase=\"synthesis\"}"), Some(1.0));
    assert_eq!(value(&t, "provetop_phase{phase=\"msm_h\"}"), Some(0.0));
    assert_eq!(
        value(&t, "provetop_phase_open_spans{phase=\"synthesis\"}"),
        Some(2.0)
    );
    // Every phase label is there from the start, and a phase this build does not know is
    // `other` (the child's words never become a label).
    assert_eq!(
        t.lines()
            .filter(|l| l.starts_with("provetop_phase{"))
            .count(),
        PHASES
    );
    f.phase(2 * S, Phase::Synthesis, Some(0), false);
    f.sample(3 * S, GIB, GIB);
    let t = f.scrape();
    // One partition still open: still synthesis, and its time counts up to the newest record.
    assert_eq!(value(&t, "provetop_phase{phase=\"synthesis\"}"), Some(1.0));
    assert_eq!(
        value(&t, "provetop_phase_seconds_total{phase=\"synthesis\"}"),
        Some(2.0),
        "{t}"
    );
    f.phase(4 * S, Phase::Synthesis, Some(1), false);
    f.phase(4 * S, Phase::Other("tea_break".into()), None, true);
    f.sample(10 * S, GIB, GIB);
    let t = f.scrape();
    assert_eq!(value(&t, "provetop_phase{phase=\"synthesis\"}"), Some(0.0));
    assert_eq!(value(&t, "provetop_phase{phase=\"other\"}"), Some(1.0));
    assert!(!t.contains("tea_break"), "{t}");
    // Overlapping partitions count once: 1 s to 4 s.
    assert_eq!(
        value(&t, "provetop_phase_seconds_total{phase=\"synthesis\"}"),
        Some(3.0)
    );
    assert_eq!(
        value(&t, "provetop_phase_seconds_total{phase=\"other\"}"),
        Some(6.0)
    );
    // Two closed spans of 0.75 s (the prover's measure).
    assert_eq!(
        value(
            &t,
            "provetop_phase_duration_seconds_count{phase=\"synthesis\"}"
        ),
        Some(2.0)
    );
    assert_eq!(
        value(
            &t,
            "provetop_phase_duration_seconds_sum{phase=\"synthesis\"}"
        ),
        Some(1.5)
    );
    assert_eq!(
        value(
            &t,
            "provetop_phase_duration_seconds_bucket{phase=\"synthesis\",le=\"0.5\"}"
        ),
        Some(0.0)
    );
    assert_eq!(
        value(
            &t,
            "provetop_phase_duration_seconds_bucket{phase=\"synthesis\",le=\"1\"}"
        ),
        Some(2.0),
        "{t}"
    );
}

#[test]
fn proofs_are_counted_by_result_with_their_duration_and_the_last_ones_peak() {
    let mut f = Feed::new(&[]);
    f.event(S, proof_started(1, BatchMode::Single));
    f.sample(S + 1, 3 * GIB, 7 * GIB);
    f.sample(S + 2, 2 * GIB, 2 * GIB);
    let t = f.scrape();
    assert_eq!(value(&t, "provetop_proofs_running"), Some(1.0));
    f.event(2 * S, proof_finished(1, true));
    f.event(3 * S, proof_started(2, BatchMode::Single));
    f.sample(3 * S + 1, GIB, GIB);
    f.event(4 * S, proof_finished(2, false));
    let t = f.scrape();
    assert_eq!(value(&t, "provetop_proofs_total{result=\"ok\"}"), Some(1.0));
    assert_eq!(
        value(&t, "provetop_proofs_total{result=\"failed\"}"),
        Some(1.0)
    );
    assert_eq!(
        value(&t, "provetop_proofs_total{result=\"cancelled\"}"),
        Some(0.0)
    );
    assert_eq!(
        value(&t, "provetop_proof_duration_seconds_count"),
        Some(2.0)
    );
    assert_eq!(value(&t, "provetop_proof_duration_seconds_sum"), Some(2.0));
    assert_eq!(value(&t, "provetop_proofs_running"), Some(0.0));
    assert_eq!(
        value(&t, "provetop_last_proof_peak_bytes"),
        Some(GIB as f64),
        "the last proof saw 1 GiB only\n{t}"
    );
}

#[test]
fn configured_rules_are_exported_inactive_and_follow_their_alerts() {
    let rules = default_rules();
    let mut f = Feed::new(&rules);
    let rss_rule = rules[0].text.clone();
    let series = |level: &str, metric: &str, rule: &str| {
        format!("provetop_alert_active{{rule=\"{rule}\",level=\"{level}\",metric=\"{metric}\"}}")
    };
    let t = f.scrape();
    assert_eq!(
        value(&t, &series("warn", "rss", &rss_rule)),
        Some(0.0),
        "{t}"
    );
    let alert = |state| Alert {
        rule: rss_rule.clone(),
        level: AlertLevel::Warn,
        state,
        metric: "rss".into(),
        value: 95.0 * GIB as f64,
        threshold: 90.0 * GIB as f64,
        message: "m".into(),
    };
    f.push(S, RecordBody::Alert(alert(AlertState::Firing)));
    let t = f.scrape();
    assert_eq!(value(&t, &series("warn", "rss", &rss_rule)), Some(1.0));
    assert_eq!(
        value(&t, "provetop_alerts_fired_total{level=\"warn\"}"),
        Some(1.0)
    );
    f.push(2 * S, RecordBody::Alert(alert(AlertState::Cleared)));
    let t = f.scrape();
    assert_eq!(value(&t, &series("warn", "rss", &rss_rule)), Some(0.0));
}

#[test]
fn restarts_oom_kills_and_drops_are_counted_from_the_marks() {
    let mut f = Feed::new(&[]);
    let exited = |oom_kill| {
        RecordBody::Mark(Mark::ChildExited {
            pid: 7,
            code: None,
            signal: Some(9),
            oom_kill,
            reason: "killed".into(),
        })
    };
    f.push(
        S,
        RecordBody::Mark(Mark::ChildStarted {
            pid: 7,
            command: vec!["p".into()],
        }),
    );
    assert_eq!(value(&f.scrape(), "provetop_child_running"), Some(1.0));
    f.push(2 * S, exited(true));
    f.push(
        3 * S,
        RecordBody::Mark(Mark::Restart {
            attempt: 1,
            backoff_s: 1.0,
        }),
    );
    f.push(4 * S, exited(false));
    for (what, count) in [("samples", 3), ("events", 5), ("events", 1)] {
        f.push(
            5 * S,
            RecordBody::Mark(Mark::Dropped {
                what: what.into(),
                count,
            }),
        );
    }
    f.metrics.recorder_warning(true);
    let t = f.scrape();
    assert_eq!(value(&t, "provetop_oom_kills_total"), Some(1.0));
    assert_eq!(value(&t, "provetop_restarts_total"), Some(1.0));
    assert_eq!(value(&t, "provetop_child_running"), Some(0.0));
    assert_eq!(
        value(&t, "provetop_dropped_total{what=\"samples\"}"),
        Some(3.0)
    );
    assert_eq!(
        value(&t, "provetop_dropped_total{what=\"events\"}"),
        Some(6.0)
    );
    assert_eq!(value(&t, "provetop_recorder_warnings_total"), Some(1.0));
    assert_eq!(value(&t, "provetop_recording_failing"), Some(1.0));
}

#[test]
fn the_prover_is_an_info_series_with_its_words_cut_short() {
    let mut f = Feed::new(&[]);
    f.event(
        S,
        Event::Hello {
            protocol: "1.1".into(),
            prover_version: "v".repeat(500),
            pid: 42,
            backend: provetop_shared::Backend::Cpu,
            gpus: vec![],
            config: provetop_shared::protocol::ProverConfig {
                partitions: 2,
                constraints: 1000,
                circuit: "mimc".into(),
                mode: BatchMode::Single,
                threads: None,
            },
        },
    );
    f.event(2 * S, proof_started(1, BatchMode::Pipelined(2)));
    let t = f.scrape();
    let want = format!(
        "provetop_prover_info{{prover_version=\"{}\",backend=\"cpu\",protocol=\"1.1\",circuit=\"mimc\",mode=\"pipelined:2\"}} 1",
        "v".repeat(MAX_LABEL_CHARS)
    );
    assert!(t.lines().any(|l| l == want), "{want}\n{t}");
    assert!(t.contains(&format!(
        "provetop_build_info{{version=\"{}\"}} 1",
        env!("CARGO_PKG_VERSION")
    )));
}

#[test]
fn openmetrics_has_units_and_an_eof_and_prometheus_text_names_counters_with_total() {
    let mut f = Feed::new(&[]);
    f.sample(S, GIB, GIB);
    let om = f.metrics.scrape(Format::OpenMetrics);
    assert!(om.ends_with("# EOF\n"), "{om}");
    assert!(om.contains("# UNIT provetop_rss_bytes bytes\n"), "{om}");
    assert!(om.contains("# TYPE provetop_samples counter\n"), "{om}");
    assert!(om.contains("\nprovetop_samples_total 1\n"), "{om}");
    let text = f.metrics.scrape(Format::Prometheus);
    assert!(!text.contains("# EOF"), "{text}");
    assert!(
        text.contains("# TYPE provetop_samples_total counter\n"),
        "{text}"
    );
    assert!(
        text.contains("# HELP provetop_rss_bytes resident memory"),
        "{text}"
    );
    // Every family has its help and type.
    let types = text.lines().filter(|l| l.starts_with("# TYPE ")).count();
    let helps = text.lines().filter(|l| l.starts_with("# HELP ")).count();
    assert_eq!(types, helps);
    assert!(types > 20, "{types} families");
}

#[test]
fn the_format_follows_the_scrapers_accept_header() {
    // What Prometheus 2.x sends.
    let prom = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;\
                version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";
    assert_eq!(Format::from_accept(Some(prom)), Format::OpenMetrics);
    assert_eq!(Format::from_accept(None), Format::Prometheus);
    assert_eq!(Format::from_accept(Some("*/*")), Format::Prometheus);
    assert_eq!(
        Format::from_accept(Some("text/plain;q=0.9, application/openmetrics-text;q=0.5")),
        Format::Prometheus
    );
    assert_eq!(
        Format::from_accept(Some("application/openmetrics-text; version=1.0.0")),
        Format::OpenMetrics
    );
    assert_eq!(
        Format::from_accept(Some("application/openmetrics-text;q=0")),
        Format::Prometheus
    );
    assert_eq!(Format::from_accept(Some(",,;;q=x")), Format::Prometheus);
}

#[test]
fn a_bad_path_is_404_and_another_method_405() {
    let m = Metrics::new(&[]);
    let r = endpoint::answer(&m, &hyper::Method::GET, "/", None);
    assert_eq!(r.status(), hyper::StatusCode::NOT_FOUND);
    let r = endpoint::answer(&m, &hyper::Method::POST, "/metrics", None);
    assert_eq!(r.status(), hyper::StatusCode::METHOD_NOT_ALLOWED);
    let r = endpoint::answer(&m, &hyper::Method::GET, "/metrics", None);
    assert_eq!(r.status(), hyper::StatusCode::OK);
    assert_eq!(
        r.headers()["content-type"],
        "text/plain; version=0.0.4; charset=utf-8"
    );
}

#[test]
fn a_watched_process_counts_as_running_until_its_end_is_recorded() {
    let mut f = Feed::new(&[]);
    assert_eq!(value(&f.scrape(), "provetop_child_running"), Some(0.0));
    f.metrics.watching();
    assert_eq!(value(&f.scrape(), "provetop_child_running"), Some(1.0));
    f.push(
        S,
        RecordBody::Mark(Mark::ChildExited {
            pid: 9,
            code: None,
            signal: None,
            oom_kill: false,
            reason: "exited (watched: status unknown)".into(),
        }),
    );
    assert_eq!(value(&f.scrape(), "provetop_child_running"), Some(0.0));
}

#[test]
fn the_srs_load_is_a_phase_of_its_own_while_it_runs() {
    use provetop_shared::SrsSource;
    let mut f = Feed::new(&[]);
    f.event(
        S,
        Event::SrsLoading {
            source: SrsSource::Generated,
            bytes: None,
        },
    );
    f.sample(2 * S, GIB, GIB);
    let t = f.scrape();
    assert_eq!(
        value(&t, "provetop_phase{phase=\"srs_generate\"}"),
        Some(1.0),
        "{t}"
    );
    f.event(
        3 * S,
        Event::SrsReady {
            bytes: GIB,
            pinned_bytes: 0,
            source: SrsSource::Generated,
            duration_s: 2.0,
        },
    );
    let t = f.scrape();
    assert_eq!(
        value(&t, "provetop_phase{phase=\"srs_generate\"}"),
        Some(0.0)
    );
    assert_eq!(
        value(&t, "provetop_phase_seconds_total{phase=\"srs_generate\"}"),
        Some(2.0)
    );
    assert_eq!(
        value(
            &t,
            "provetop_phase_duration_seconds_count{phase=\"srs_generate\"}"
        ),
        Some(1.0)
    );
}

#[test]
fn time_to_oom_is_served_while_rss_grows_and_left_out_once_it_levels_off() {
    let mut f = Feed::new(&[]);
    // 1 GiB/s for 5 s, with 100 GiB available: about 100 s to go.
    for i in 0..=10 {
        f.sample(i * S / 2, (1 + i / 2) * GIB + (i % 2) * GIB / 2, GIB);
    }
    let t = f.scrape();
    let secs = value(&t, "provetop_time_to_oom_seconds").expect("served while growing");
    assert!((90.0..=110.0).contains(&secs), "{secs} in\n{t}");
    // Flat for the trend's window: no forecast, so no series (not a zero).
    for i in 11..=40 {
        f.sample(i * S / 2, 6 * GIB, GIB);
    }
    let t = f.scrape();
    assert_eq!(value(&t, "provetop_time_to_oom_seconds"), None, "{t}");
}

#[test]
fn nvml_call_times_are_a_histogram_per_call_and_the_backoff_a_gauge() {
    use provetop_shared::record::Usage;
    use provetop_shared::NvmlCalls;
    let mut f = Feed::new(&[]);
    f.sample(S, GIB, GIB);
    f.push(2 * S, RecordBody::Usage(Usage::default()));
    let t = f.scrape();
    assert!(!t.contains("nvml"), "no NVML, no series: {t}");
    let mut mem = NvmlCalls::new("GetMemoryInfo");
    mem.observe(30_000);
    mem.observe(3_000_000);
    let mut procs = NvmlCalls::new("GetComputeRunningProcesses");
    procs.observe(4_500_000);
    let u = Usage {
        nvml_calls: vec![mem, procs],
        nvml_backoff: Some(4),
        ..Usage::default()
    };
    f.push(3 * S, RecordBody::Usage(u));
    let t = f.scrape();
    let v = |series: &str| value(&t, series);
    assert_eq!(
        v("provetop_nvml_call_seconds_bucket{call=\"GetMemoryInfo\",le=\"5e-05\"}"),
        Some(1.0),
        "{t}"
    );
    assert_eq!(
        v("provetop_nvml_call_seconds_count{call=\"GetMemoryInfo\"}"),
        Some(2.0)
    );
    assert_eq!(
        v("provetop_nvml_call_seconds_sum{call=\"GetComputeRunningProcesses\"}"),
        Some(0.0045)
    );
    assert_eq!(v("provetop_nvml_backoff"), Some(4.0), "{t}");
}
