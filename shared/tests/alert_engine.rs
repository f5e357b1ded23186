//! The engine over hand-made records: holds, forecasts, the watchdog, limits, usage and GPU
//! rules, and unknown readings.

use provetop_shared::alerts::AlertEngine;
use provetop_shared::protocol::{Event, ProverState};
use provetop_shared::{Alert, AlertLevel, AlertState, Record, RecordBody, Sample, Usage};
use provetop_testkit::fixtures::child_exited_ok;

const S: u64 = 1_000_000_000;

fn sample(t: u64, rss: u64) -> Record {
    Record::new(
        t,
        RecordBody::Sample(Sample {
            rss,
            mem_total: Some(1000),
            ..Sample::default()
        }),
    )
}

#[test]
fn fires_after_duration_and_clears() {
    let mut e = AlertEngine::new(vec!["rss > 100 for 2s".parse().unwrap()]);
    assert!(e.observe(&sample(0, 50)).is_empty());
    assert!(e.observe(&sample(S, 150)).is_empty());
    assert!(e.observe(&sample(2 * S, 150)).is_empty());
    // A dip resets the hold.
    assert!(e.observe(&sample(2 * S + 1, 90)).is_empty());
    assert!(e.observe(&sample(3 * S, 150)).is_empty());
    assert!(e.observe(&sample(4 * S + S / 2, 150)).is_empty());
    let a = e.observe(&sample(5 * S, 160));
    assert_eq!(a.len(), 1);
    assert_eq!(a[0].state, AlertState::Firing);
    assert_eq!(a[0].value, 160.0);
    assert_eq!(a[0].threshold, 100.0);
    assert_eq!(a[0].level, AlertLevel::Warn);
    // Stays firing without repeating.
    assert!(e.observe(&sample(6 * S, 170)).is_empty());
    assert!(e.is_firing(0));
    let a = e.observe(&sample(7 * S, 10));
    assert_eq!(a.len(), 1);
    assert_eq!(a[0].state, AlertState::Cleared);
    assert!(!e.is_firing(0));
}

/// The default forecast rule over a proof that would not fit: it fires while the second
/// proof of the shape runs with too little free, and clears, "no longer measured", when
/// that proof ends.
#[test]
fn predicted_free_fires_for_a_proof_that_will_not_fit() {
    use provetop_shared::protocol::BatchMode;
    use provetop_testkit::fixtures::{proof_finished as finished, proof_started as started};
    let mut e = AlertEngine::new(vec!["predicted_free < 0".parse().unwrap()]);
    let ev = |t, e: Event| Record::new(t, RecordBody::Event(e));
    let mem = |t, rss, avail| {
        Record::new(
            t,
            RecordBody::Sample(Sample {
                rss,
                mem_available: Some(avail),
                ..Sample::default()
            }),
        )
    };
    // Proof 1 peaks at 900 with plenty free: no forecast yet, nothing fires.
    e.observe(&ev(0, started(1, BatchMode::Single)));
    assert!(e.observe(&mem(S, 900, 1000)).is_empty());
    e.observe(&ev(2 * S, finished(1, true)));
    // Proof 2 starts at 100 with 500 free: it needs 800 more, 300 short.
    e.observe(&ev(3 * S, started(2, BatchMode::Single)));
    let a = e.observe(&mem(4 * S, 100, 500));
    assert_eq!(a.len(), 1);
    assert_eq!(a[0].state, AlertState::Firing);
    assert_eq!(a[0].value, -300.0);
    assert!(
        a[0].message.contains("proof 2 predicted to peak at 900 B"),
        "{}",
        a[0].message
    );
    assert!(a[0].message.contains("-300 B < 0 B"), "{}", a[0].message);
    e.observe(&ev(5 * S, finished(2, true)));
    let a = e.observe(&mem(6 * S, 100, 500));
    assert_eq!(a.len(), 1);
    assert_eq!(a[0].state, AlertState::Cleared);
    assert_eq!(a[0].message, "cleared: predicted_free: no longer measured");
}

#[test]
fn an_idle_or_paused_prover_is_not_hung_a_silent_working_one_is() {
    let ev = |t, e: Event| Record::new(t, RecordBody::Event(e));
    let state = |s| Event::State { state: s };
    let mut e = AlertEngine::new(vec!["event_age > 5s".parse().unwrap()]);
    // Idle, then silent for a minute: nothing.
    e.observe(&ev(0, state(ProverState::Idle)));
    assert!((1..60).all(|i| e.observe(&sample(i * S, 1)).is_empty()));
    // Paused: nothing either.
    e.observe(&ev(60 * S, state(ProverState::Paused)));
    assert!((61..120).all(|i| e.observe(&sample(i * S, 1)).is_empty()));
    // Paused with a proof still in flight: that proof should progress.
    e.observe(&ev(
        120 * S,
        Event::ProofStarted {
            proof_id: 7,
            mode: provetop_shared::protocol::BatchMode::Single,
            sectors: 1,
            partitions: 1,
            constraints: 1,
        },
    ));
    let fired: Vec<Alert> = (121..130)
        .flat_map(|i| e.observe(&sample(i * S, 1)))
        .collect();
    assert_eq!(fired.len(), 1, "{fired:?}");
    assert_eq!(fired[0].state, AlertState::Firing);
    // It finishes and the prover goes idle: cleared, and silence is fine again.
    let c = e.observe(&ev(
        130 * S,
        Event::ProofFinished {
            proof_id: 7,
            ok: true,
            verified: true,
            duration_s: 1.0,
            mode: provetop_shared::protocol::BatchMode::Single,
            phases: vec![],
            error: None,
            cancelled: false,
            requeued_as: vec![],
        },
    ));
    assert_eq!(c.len(), 1);
    assert_eq!(c[0].state, AlertState::Cleared);
    assert!((131..200).all(|i| e.observe(&sample(i * S, 1)).is_empty()));
    // Proving and silent: hung.
    e.observe(&ev(200 * S, state(ProverState::Proving)));
    let fired: Vec<Alert> = (201..210)
        .flat_map(|i| e.observe(&sample(i * S, 1)))
        .collect();
    assert_eq!(fired.len(), 1, "{fired:?}");
}

#[test]
fn percent_rules_use_the_limit_that_binds_at_each_sample() {
    let in_cgroup = |t: u64, rss: u64| {
        Record::new(
            t,
            RecordBody::Sample(Sample {
                rss,
                mem_total: Some(100_000),
                mem_available: Some(50_000),
                cgroup_current: Some(rss),
                cgroup_max: Some(1000),
                ..Sample::default()
            }),
        )
    };
    let mut e = AlertEngine::new(vec!["crit: rss > 90%".parse().unwrap()]);
    assert!(e.observe(&in_cgroup(0, 899)).is_empty());
    let a = e.observe(&in_cgroup(1, 901));
    assert_eq!(a[0].level, AlertLevel::Crit);
    assert_eq!(a[0].threshold, 900.0);
}

fn usage(t: u64, u: Usage) -> Record {
    Record::new(t, RecordBody::Usage(u))
}

fn cores(t: u64, c: Option<f64>) -> Record {
    usage(
        t,
        Usage {
            interval_ns: S / 2,
            cores: c,
            threads: 8,
            host_ncpu: 16,
            ..Usage::default()
        },
    )
}

fn gpus(t: u64, g: &[(u32, u8, u64, u64)]) -> Record {
    Record::new(
        t,
        RecordBody::Sample(Sample {
            rss: 1,
            gpus: g
                .iter()
                .map(
                    |&(index, util, used, total)| provetop_shared::record::GpuReading {
                        index,
                        util,
                        used,
                        total,
                        proc_used: used,
                    },
                )
                .collect(),
            ..Sample::default()
        }),
    )
}

#[test]
fn a_cpu_rule_fires_after_its_hold_on_usage_records_and_clears_when_the_load_drops() {
    let mut e = AlertEngine::new(vec!["cpu > 12 for 10s".parse().unwrap()]);
    // Samples carry no core count: they neither start nor break the hold.
    let mut fired = Vec::new();
    for i in 0..=24u64 {
        fired.extend(e.observe(&cores(i * S / 2, Some(13.5))));
        fired.extend(e.observe(&sample(i * S / 2 + 1, 50)));
    }
    assert_eq!(fired.len(), 1, "{fired:?}");
    assert_eq!(fired[0].state, AlertState::Firing);
    assert_eq!(fired[0].metric, "cpu");
    assert_eq!(fired[0].message, "cpu 13.5 cores > 12.0 cores for 10.0s");
    let c = e.observe(&cores(13 * S, Some(2.0)));
    assert_eq!(c.len(), 1);
    assert_eq!(c[0].state, AlertState::Cleared);
    assert_eq!(c[0].message, "cleared: cpu 2.0 cores");
}

#[test]
fn an_unknown_reading_never_fires_a_rule_and_clears_one_as_unknown_not_as_zero() {
    // "Below 1 core" would hold for a zero: an unknown reading must not look like one.
    let mut e = AlertEngine::new(vec![
        "cpu < 1".parse().unwrap(),
        "gpu_util < 10".parse().unwrap(),
        "major_faults < 5".parse().unwrap(),
        "gpu_temp < 30".parse().unwrap(),
    ]);
    for i in 0..100 {
        assert!(e.observe(&cores(i * S, None)).is_empty());
        // No GPU in the sample (no NVML): unknown utilisation.
        assert!(e.observe(&sample(i * S + 1, 5)).is_empty());
    }
    // Known and low: fires; then unknown again: cleared, "no longer measured".
    let a = e.observe(&cores(100 * S, Some(0.2)));
    assert_eq!(a.len(), 1);
    let c = e.observe(&cores(101 * S, None));
    assert_eq!(c.len(), 1);
    assert_eq!(c[0].state, AlertState::Cleared);
    assert!(c[0].value.is_nan());
    assert_eq!(c[0].message, "cleared: cpu: no longer measured");
}

#[test]
fn gpu_rules_take_the_busiest_gpu_or_the_one_they_name() {
    let g = provetop_shared::units::GIB;
    let mut e = AlertEngine::new(vec![
        "gpu_util < 10 for 1s".parse().unwrap(),
        "gpu_mem > 75GiB".parse().unwrap(),
        "gpu_mem[0] > 90%".parse().unwrap(),
        "gpu_util[1] > 50".parse().unwrap(),
    ]);
    // GPU 0 idle, GPU 1 busy: "below 10 %" is false while any GPU works.
    let a = e.observe(&gpus(
        0,
        &[(0, 0, 80 * g, 141 * g), (1, 86, 10 * g, 80 * g)],
    ));
    let names: Vec<&str> = a.iter().map(|a| a.rule.as_str()).collect();
    assert_eq!(names, ["gpu_mem > 75GiB", "gpu_util[1] > 50"], "{a:?}");
    assert_eq!(a[0].message, "gpu_mem (GPU 0) 80.0 GiB > 75.0 GiB");
    assert_eq!(a[1].metric, "gpu_util[1]");
    assert_eq!(a[1].message, "gpu_util[1] 86% > 50%");
    assert!(e
        .observe(&gpus(
            S,
            &[(0, 0, 80 * g, 141 * g), (1, 86, 10 * g, 80 * g)]
        ))
        .is_empty());
    // Both idle for a second: the idle rule fires; GPU 1 busy no more clears its rule.
    e.observe(&gpus(
        2 * S,
        &[(0, 3, 80 * g, 141 * g), (1, 5, 10 * g, 80 * g)],
    ));
    let a = e.observe(&gpus(
        3 * S,
        &[(0, 3, 130 * g, 141 * g), (1, 5, 10 * g, 80 * g)],
    ));
    let got: Vec<(&str, AlertState)> = a.iter().map(|a| (a.rule.as_str(), a.state)).collect();
    assert_eq!(
        got,
        [
            ("gpu_util < 10 for 1s", AlertState::Firing),
            ("gpu_mem[0] > 90%", AlertState::Firing),
        ]
    );
    assert_eq!(a[0].value, 5.0, "the busiest GPU's utilisation");
    assert_eq!(
        a[1].threshold,
        141.0 * g as f64 * 0.9,
        "of GPU 0's own total"
    );
    // The GPUs go away (NVML failing): every GPU rule clears, unknown.
    let c = e.observe(&gpus(4 * S, &[]));
    assert_eq!(c.len(), 3, "{c:?}");
    assert!(c
        .iter()
        .all(|a| a.state == AlertState::Cleared && a.value.is_nan()));
}

#[test]
fn gpu_temperature_and_major_fault_rules_read_the_usage_records() {
    use provetop_shared::record::GpuDetail;
    let mut e = AlertEngine::new(vec![
        "crit: gpu_temp > 85".parse().unwrap(),
        "major_faults > 100/s for 1s".parse().unwrap(),
        "cpu > 50%".parse().unwrap(),
    ]);
    let u = |t, temp: Option<u32>, faults: Option<f64>, cores: f64| {
        usage(
            t,
            Usage {
                interval_ns: S / 2,
                cores: Some(cores),
                major_faults: faults,
                host_ncpu: 16,
                gpus: vec![
                    GpuDetail {
                        index: 0,
                        temp_c: Some(60),
                        ..GpuDetail::default()
                    },
                    GpuDetail {
                        index: 1,
                        temp_c: temp,
                        ..GpuDetail::default()
                    },
                ],
                ..Usage::default()
            },
        )
    };
    let a = e.observe(&u(0, Some(88), Some(500.0), 7.9));
    assert_eq!(a.len(), 1, "{a:?}");
    assert_eq!(a[0].message, "gpu_temp (GPU 1) 88 °C > 85 °C");
    assert_eq!(a[0].level, provetop_shared::AlertLevel::Crit);
    let a = e.observe(&u(S, Some(86), Some(300.0), 8.1));
    let names: Vec<&str> = a.iter().map(|a| a.metric.as_str()).collect();
    assert_eq!(names, ["major_faults", "cpu"], "{a:?}");
    assert_eq!(a[0].message, "major_faults 300/s > 100/s for 1.0s");
    assert_eq!(a[1].threshold, 8.0, "50 % of 16 cores");
    // GPU 1's temperature unknown: GPU 0's 60 °C is the hottest known; cleared.
    let c = e.observe(&u(2 * S, None, Some(300.0), 8.1));
    assert_eq!(c.len(), 1);
    assert_eq!(c[0].message, "cleared: gpu_temp (GPU 0) 60 °C");
    // The child exits: the usage readings go with it.
    let c = e.observe(&Record::new(3 * S, RecordBody::Mark(child_exited_ok(1))));
    assert_eq!(c.len(), 2, "{c:?}");
    assert!(c.iter().all(|a| a.message.ends_with("no longer measured")));
}
