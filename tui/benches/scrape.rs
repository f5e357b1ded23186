//! One scrape of `--metrics`: the CPU time of encoding the whole metric set, in both formats,
//! while a real 20 Hz sampler runs and its samples are fed through the model into the metrics
//! as the pipeline feeds them (the state a busy session's scrape sees: an hour of a prover's
//! events behind it, histograms filled, every alert rule exported). Goal: under 1 ms of CPU
//! per scrape. A second group times a whole `GET /metrics` over loopback through the hyper
//! endpoint (wall time, client included).
//!
//! `cargo bench -p provetop --bench scrape`

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use nix::time::{clock_gettime, ClockId};
use provetop::model::Model;
use provetop::monitor::metrics::{Endpoint, Format, Metrics};
use provetop_collect::sampler::{self, SamplerConfig};
use provetop_shared::alerts::default_rules;
use provetop_shared::Record;
use provetop_testkit::synth::{Synth, SynthConfig};

/// CPU time of this thread.
fn thread_cpu() -> Duration {
    let t = clock_gettime(ClockId::CLOCK_THREAD_CPUTIME_ID).expect("thread CPU clock");
    Duration::new(t.tv_sec() as u64, t.tv_nsec() as u32)
}

/// Metrics after an hour of a synthetic prover session, and a thread feeding them the real
/// sampler's 20 Hz samples of this process until `stop`.
fn busy_metrics() -> (Metrics, Arc<AtomicBool>, std::thread::JoinHandle<()>) {
    let rules = default_rules();
    let metrics = Metrics::new(&rules);
    let model = Arc::new(Mutex::new(Model::new(Default::default())));
    {
        let mut m = model.lock().unwrap();
        let cfg = SynthConfig {
            seconds: 3600.0,
            hz: 20.0,
            proof_s: 30.0,
            ..SynthConfig::default()
        };
        for r in Synth::new(cfg) {
            let fx = m.apply(&r);
            metrics.observe(&r, &fx, &m);
        }
    }
    let stop = Arc::new(AtomicBool::new(false));
    let feeder = {
        let (metrics, stop) = (metrics.clone(), stop.clone());
        std::thread::spawn(move || {
            let cfg = SamplerConfig {
                hz: 20.0,
                ..SamplerConfig::default()
            };
            let mut s = sampler::spawn(cfg, std::process::id()).expect("start the sampler");
            let mut buf: Vec<Record> = Vec::new();
            let mut m = model.lock().unwrap();
            while !stop.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(50));
                buf.clear();
                s.drain(&mut buf);
                for r in &buf {
                    // The synthetic hour ran on its own clock; the sampler's records are
                    // folded in as they come, like the pipeline's.
                    let fx = m.apply(r);
                    metrics.observe(r, &fx, &m);
                }
            }
            s.stop();
        })
    };
    (metrics, stop, feeder)
}

fn bench(c: &mut Criterion) {
    let (metrics, stop, feeder) = busy_metrics();
    // Let the sampler deliver a few samples first.
    std::thread::sleep(Duration::from_millis(300));
    let mut g = c.benchmark_group("scrape, 20 Hz sampler running");
    for (name, format) in [
        ("prometheus text, CPU", Format::Prometheus),
        ("openmetrics, CPU", Format::OpenMetrics),
    ] {
        g.bench_function(name, |b| {
            b.iter_custom(|iters| {
                let t0 = thread_cpu();
                for _ in 0..iters {
                    std::hint::black_box(metrics.scrape(format));
                }
                thread_cpu() - t0
            })
        });
    }
    let bytes = metrics.scrape(Format::OpenMetrics).len();
    println!("one scrape: {bytes} bytes of OpenMetrics text");

    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let endpoint = rt
        .block_on(async { Endpoint::start("127.0.0.1:0".parse().unwrap(), metrics.clone()) })
        .unwrap();
    let url = format!("http://{}/metrics", endpoint.addr());
    let agent = ureq::AgentBuilder::new().build();
    g.bench_function("GET /metrics over loopback, wall", |b| {
        b.iter(|| {
            let r = agent
                .get(&url)
                .set("Accept", "application/openmetrics-text;version=1.0.0")
                .call()
                .unwrap();
            std::hint::black_box(r.into_string().unwrap());
        })
    });
    g.finish();
    drop(endpoint);
    stop.store(true, Ordering::Relaxed);
    feeder.join().unwrap();
}

criterion_group!(benches, bench);
criterion_main!(benches);
