//! The events pipe under a burst of open partitions: a real child (`cat` of a prepared file)
//! writes a proof of 10^5 partitions — `proof_started`, then `phase_started` and
//! `phase_ended` for each partition, 200,001 events, ~19 MB — to fd 3 as fast as the pipe
//! takes it, through the real supervisor into a channel drained every 50 ms (the monitor's
//! `TICK`; live, a backlog also wakes the monitor at once). Reports the time to read it all,
//! and checks nothing was dropped.
//!
//! `cargo bench -p provetop-collect --bench events`. Then, once, a python3 child (when there
//! is one) that times each of its writes says the longest time it was blocked on the pipe.

use std::path::Path;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};
use provetop_collect::supervisor::{self, ChildSpec};
use provetop_shared::{Mark, RecordBody};
use tokio::sync::mpsc;

const PARTITIONS: u32 = 100_000;
/// The monitor's channel and pump (`RECORD_CHANNEL`; tui/src/monitor: TICK).
const CHANNEL: usize = provetop_collect::supervisor::RECORD_CHANNEL;
const TICK: Duration = Duration::from_millis(50);

fn burst(path: &Path) -> u64 {
    let mut text = String::with_capacity(PARTITIONS as usize * 200);
    text.push_str(&format!(
        "{{\"ts\":1,\"type\":\"proof_started\",\"proof_id\":1,\"mode\":\"single\",\"sectors\":1,\"partitions\":{PARTITIONS},\"constraints\":{PARTITIONS}}}\n"
    ));
    for p in 0..PARTITIONS {
        text.push_str(&format!(
            "{{\"ts\":1,\"type\":\"phase_started\",\"proof_id\":1,\"phase\":\"synthesis\",\"partition\":{p}}}\n"
        ));
        text.push_str(&format!(
            "{{\"ts\":1,\"type\":\"phase_ended\",\"proof_id\":1,\"phase\":\"synthesis\",\"partition\":{p},\"duration_s\":0.001}}\n"
        ));
    }
    std::fs::write(path, &text).expect("write the burst");
    text.len() as u64
}

/// Run `argv` under the supervisor, draining as the monitor does; (events, dropped, time).
fn run(rt: &tokio::runtime::Runtime, argv: Vec<String>) -> (u64, u64, Duration) {
    rt.block_on(async move {
        let (tx, mut rx) = mpsc::channel(CHANNEL);
        let t = Instant::now();
        let mut h = supervisor::spawn(
            ChildSpec {
                argv,
                ..ChildSpec::default()
            },
            tx,
        )
        .await
        .expect("spawn the child");
        let drain = tokio::spawn(async move {
            let (mut events, mut dropped) = (0u64, 0u64);
            let mut tick = tokio::time::interval(TICK);
            loop {
                tick.tick().await;
                loop {
                    match rx.try_recv() {
                        Ok(r) => match r.body {
                            RecordBody::Event(_) => events += 1,
                            RecordBody::Mark(Mark::Dropped { count, .. }) => dropped += count,
                            _ => {}
                        },
                        Err(mpsc::error::TryRecvError::Empty) => break,
                        Err(mpsc::error::TryRecvError::Disconnected) => return (events, dropped),
                    }
                }
            }
        });
        h.wait().await;
        let took = t.elapsed();
        drop(h);
        let (events, dropped) = drain.await.expect("drain");
        (events, dropped, took)
    })
}

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("burst.ndjson");
    let bytes = burst(&file);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let cat = vec![
        "sh".to_string(),
        "-c".to_string(),
        format!("cat '{}' >&3", file.display()),
    ];
    let want = 2 * PARTITIONS as u64 + 1;
    let (events, dropped, took) = run(&rt, cat.clone());
    eprintln!(
        "burst: {PARTITIONS} partitions, {want} events, {:.1} MB: {events} read, {dropped} dropped, {:.0} ms",
        bytes as f64 / 1e6,
        took.as_secs_f64() * 1e3
    );
    assert_eq!(
        (events, dropped),
        (want, 0),
        "the burst was not read in full"
    );
    let mut g = c.benchmark_group("events");
    g.sample_size(10).measurement_time(Duration::from_secs(40));
    g.bench_function(
        "burst of 10^5 partitions (200,001 events) read in full",
        |b| {
            b.iter(|| {
                let (events, dropped, _) = run(&rt, cat.clone());
                assert_eq!((events, dropped), (want, 0));
            })
        },
    );
    g.finish();
    blocked(&rt, &file);
}

/// How long the child was blocked on the pipe at most: a python3 child writes the same file
/// in 64 KiB writes and times each.
fn blocked(rt: &tokio::runtime::Runtime, file: &Path) {
    let out = dir_of(file).join("blocked.txt");
    let script = format!(
        "import os, time\n\
         data = open({f:?}, 'rb').read()\n\
         worst = 0; n = 0\n\
         for i in range(0, len(data), 65536):\n\
         \x20   t = time.monotonic_ns(); os.write(3, data[i:i + 65536]); d = time.monotonic_ns() - t\n\
         \x20   worst = max(worst, d); n += 1\n\
         open({o:?}, 'w').write(f'{{worst}} {{n}}')\n",
        f = file.display().to_string(),
        o = out.display().to_string()
    );
    if std::process::Command::new("python3")
        .arg("-c")
        .arg("pass")
        .status()
        .map_or(true, |s| !s.success())
    {
        eprintln!("blocked: no python3, not measured");
        return;
    }
    let (events, dropped, took) = run(rt, vec!["python3".into(), "-c".into(), script]);
    let said = std::fs::read_to_string(&out).unwrap_or_default();
    let mut it = said.split(' ').filter_map(|v| v.parse::<u64>().ok());
    let (worst, writes) = (it.next().unwrap_or(0), it.next().unwrap_or(0));
    eprintln!(
        "blocked: python3 child, {writes} writes of 64 KiB, longest {:.1} ms; {events} read, {dropped} dropped, {:.0} ms",
        worst as f64 / 1e6,
        took.as_secs_f64() * 1e3
    );
}

fn dir_of(p: &Path) -> &Path {
    p.parent().expect("a file in a directory")
}

criterion_group!(benches, bench);
criterion_main!(benches);
