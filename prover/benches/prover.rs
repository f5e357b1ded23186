//! Benchmarks of the real `provetop-prover` binary, driven the way a monitor drives it
//! (daemon, control lines on stdin, events on stdout, memory from /proc).
//!
//! ```text
//! cargo bench -p provetop-prover --bench prover -- [srs] [phases] [modes] [--quick]
//!     [--partitions P --constraints N --sectors S --rounds R] [--modes M,M…]
//!     [--srs-cache DIR]
//! ```
//!
//! The flags size the `modes` workload; `--modes` picks the modes (default: all five).
//! `PROVETOP_PROVER_BIN` runs another build of the prover (a `cuda` or `supraseal` one on a
//! GPU machine: build this bench with `--no-run`, carry both binaries).
//!
//! * `srs`: SRS generate vs load from the disk cache vs resident (the next proof's wait).
//! * `phases`: proof time split by phase for three circuit sizes, peak RSS.
//! * `modes`: the same workload in every batch mode, one mode after another: seconds per
//!   sector, sectors per hour, peak RSS above the SRS floor.
//!
//! Peak RSS is the child's `VmHWM`, reset through `clear_refs` once the SRS is resident, so
//! "above floor" is the working set of the proofs alone. Each configuration runs in a fresh
//! daemon (freed heap kept by the allocator would otherwise leak into the next one's floor).
//! Output: markdown tables on stdout.

#[path = "../tests/common/mod.rs"]
mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use common::{workload, Daemon};
use provetop_shared::protocol::{BatchMode, Event, EventMsg, Phase, SrsSource};
use provetop_shared::units::fmt_bytes;

const BUILT_BIN: &str = env!("CARGO_BIN_EXE_provetop-prover");

fn bin() -> String {
    std::env::var("PROVETOP_PROVER_BIN").unwrap_or_else(|_| BUILT_BIN.to_string())
}

/// What the bench reads of a daemon beyond its events.
impl Daemon {
    fn start(args: &[String], cache: &Path) -> Daemon {
        Daemon::spawn_from(Command::new(bin()), args, cache, Duration::from_secs(1800))
    }

    /// The next event matching `f`, telling on stderr every error the prover reports.
    fn next_event(&mut self, f: impl Fn(&Event) -> bool) -> EventMsg {
        self.wait_for("the next prover event", |e| {
            if let Event::Error { message, .. } = e {
                eprintln!("prover error: {message}");
            }
            f(e)
        })
    }

    fn rss(&self) -> u64 {
        self.status_kb("VmRSS:").unwrap_or(0) * 1024
    }

    fn hwm(&self) -> u64 {
        self.status_kb("VmHWM:").unwrap_or(0) * 1024
    }

    /// CPU seconds (user + system, all threads) the process has used so far.
    fn cpu_s(&self) -> f64 {
        let stat =
            std::fs::read_to_string(format!("/proc/{}/stat", self.pid())).unwrap_or_default();
        // Fields after the parenthesized command name; utime and stime are the 12th and 13th.
        let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
        let f: Vec<u64> = rest
            .split_whitespace()
            .map(|x| x.parse().unwrap_or(0))
            .collect();
        // USER_HZ is 100 on Linux for /proc.
        (f.get(11).copied().unwrap_or(0) + f.get(12).copied().unwrap_or(0)) as f64 / 100.0
    }

    fn reset_hwm(&self) {
        let _ = std::fs::write(format!("/proc/{}/clear_refs", self.pid()), "5");
    }

    fn stop(mut self) {
        self.send(r#"{"ts":0,"type":"shutdown"}"#);
        let _ = self.finish();
    }
}

/// A daemon with its SRS resident and the peak window reset.
struct Ready {
    d: Daemon,
    srs_source: SrsSource,
    srs_seconds: f64,
    srs_bytes: u64,
    floor: u64,
}

fn ready(args: &[String], cache: &Path) -> Ready {
    let mut d = Daemon::start(args, cache);
    let r = d.next_event(|e| matches!(e, Event::SrsReady { .. }));
    let Event::SrsReady {
        source,
        duration_s,
        bytes,
        ..
    } = r.event
    else {
        unreachable!()
    };
    d.next_event(|e| matches!(e, Event::State { .. }));
    std::thread::sleep(Duration::from_millis(200));
    d.reset_hwm();
    let floor = d.rss();
    Ready {
        d,
        srs_source: source,
        srs_seconds: duration_s,
        srs_bytes: bytes,
        floor,
    }
}

#[derive(Debug, Default, Clone)]
struct Proved {
    proofs: u32,
    verified: u32,
    wall_s: f64,
    phases: BTreeMap<Phase, f64>,
    per_proof_s: Vec<f64>,
    srs_events_while_proving: usize,
    first_start_latency_s: f64,
    /// Largest working set the prover counted on its heap (bytes above the start of a proof).
    heap_peak: u64,
}

/// The prover's own heap count, from its "proof N: working set X B …" log line.
fn working_set(e: &Event) -> Option<u64> {
    match e {
        Event::Log { message, .. } => message
            .split_once("working set ")
            .and_then(|(_, r)| r.split(' ').next())
            .and_then(|n| n.parse().ok()),
        _ => None,
    }
}

/// Ask for `sectors` sectors; wait until every queued proof finished.
fn prove(d: &mut Daemon, sectors: u32) -> Proved {
    let t0 = Instant::now();
    let before = d.seen.len();
    d.send(&format!(r#"{{"ts":0,"type":"prove","count":{sectors}}}"#));
    let mut queued = 0;
    let mut finished = 0;
    let mut p = Proved::default();
    let mut first_start = None;
    while queued == 0 || finished < queued {
        let m = d.next_event(|_| true);
        match m.event {
            Event::ProofQueued { .. } => queued += 1,
            Event::ProofStarted { .. } if first_start.is_none() => {
                first_start = Some(t0.elapsed().as_secs_f64())
            }
            ref e if working_set(e).is_some() => {
                p.heap_peak = p.heap_peak.max(working_set(e).unwrap_or(0));
            }
            Event::ProofFinished {
                verified,
                duration_s,
                phases,
                ..
            } => {
                finished += 1;
                p.proofs += 1;
                p.verified += verified as u32;
                p.per_proof_s.push(duration_s);
                for ph in phases {
                    *p.phases.entry(ph.phase).or_default() += ph.duration_s;
                }
            }
            _ => {}
        }
    }
    // (Each proof's working-set line comes just before its proof_finished.)
    p.wall_s = t0.elapsed().as_secs_f64();
    p.first_start_latency_s = first_start.unwrap_or(0.0);
    p.srs_events_while_proving = d.seen[before..]
        .iter()
        .filter(|m| {
            matches!(
                m.event,
                Event::SrsLoading { .. } | Event::SrsProgress { .. } | Event::SrsReady { .. }
            )
        })
        .count();
    p
}

fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .map(|l| l.split(':').nth(1).unwrap_or("").trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(0);
    let mem = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|s| {
            s.lines().next().and_then(|l| {
                l.split_whitespace()
                    .nth(1)
                    .and_then(|k| k.parse::<u64>().ok())
            })
        })
        .unwrap_or(0)
        * 1024;
    format!("{cores} cores ({cpu}), {} RAM", fmt_bytes(mem))
}

fn load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

fn s(v: f64) -> String {
    format!("{v:.2}")
}

fn srs_section(cache: &Path, sizes: &[u64]) {
    println!("\n### SRS: generate vs load from disk vs resident\n");
    println!("| constraints/partition | SRS resident | generate | load from disk | resident: next proof waits | SRS events after the first proof |");
    println!("|---|---|---|---|---|---|");
    for &n in sizes {
        let a = workload(1, n, &[]);
        let mut g = ready(&a, cache);
        assert_eq!(g.srs_source, SrsSource::Generated);
        prove(&mut g.d, 1);
        let second = prove(&mut g.d, 1);
        g.d.stop();
        let l = ready(&a, cache);
        assert_eq!(l.srs_source, SrsSource::Disk);
        l.d.stop();
        println!(
            "| {n} | {} | {} s | {} s | {} ms (no load) | {} |",
            fmt_bytes(g.srs_bytes),
            s(g.srs_seconds),
            format_args!("{:.3}", l.srs_seconds),
            format_args!("{:.1}", second.first_start_latency_s * 1e3),
            second.srs_events_while_proving
        );
    }
}

const SUB: [Phase; 8] = [
    Phase::Synthesis,
    Phase::FftH,
    Phase::MsmH,
    Phase::MsmL,
    Phase::MsmAB1,
    Phase::MsmB2,
    Phase::Prove,
    Phase::Verify,
];

fn phases_section(cache: &Path, p: u32, sizes: &[u64], reps: u32) {
    println!("\n### Proof time by phase (mode single, {p} partitions, mean of {reps} proofs)\n");
    println!("Seconds summed over partitions; on the CPU bellperson runs the multiexps concurrently, so the msm columns overlap each other (their sum can exceed `prove`).\n");
    print!("| constraints/partition | proof s |");
    for ph in SUB {
        print!(" {ph} |");
    }
    println!(" verified | SRS | peak RSS | peak above SRS floor | peak heap working set | per constraint |");
    println!(
        "|---|---|{}---|---|---|---|---|---|",
        "---|".repeat(SUB.len())
    );
    for &n in sizes {
        let mut r = ready(&workload(p, n, &[]), cache);
        let pr = prove(&mut r.d, reps);
        let hwm = r.d.hwm();
        r.d.stop();
        print!(
            "| {n} | {} |",
            s(pr.per_proof_s.iter().sum::<f64>() / pr.proofs as f64)
        );
        for ph in SUB {
            print!(
                " {} |",
                s(pr.phases.get(&ph).copied().unwrap_or(0.0) / pr.proofs as f64)
            );
        }
        println!(
            " {}/{} | {} | {} | {} | {} | {:.0} B |",
            pr.verified,
            pr.proofs,
            fmt_bytes(r.srs_bytes),
            fmt_bytes(hwm),
            fmt_bytes(hwm.saturating_sub(r.floor)),
            fmt_bytes(pr.heap_peak),
            pr.heap_peak as f64 / (p as u64 * n) as f64
        );
    }
}

#[derive(Default, Clone, Copy)]
struct ModeRow {
    proofs: u32,
    wall: f64,
    cpu: f64,
    synth: f64,
    prove: f64,
    peak: u64,
    heap: u64,
    verified: bool,
    runs: u32,
}

fn modes_section(cache: &Path, p: u32, n: u64, sectors: u32, rounds: u32, modes: &[BatchMode]) {
    println!(
        "\n### Batch modes: {sectors} sectors × {p} partitions × {n} constraints per mode, best of {rounds} interleaved rounds\n"
    );
    // Generate the SRS once; every mode then loads it from disk.
    ready(&workload(p, n, &[]), cache).d.stop();
    let mut rows: Vec<ModeRow> = vec![ModeRow::default(); modes.len()];
    for _ in 0..rounds {
        for (i, &mode) in modes.iter().enumerate() {
            let mode_s = mode.to_string();
            let mut r = ready(&workload(p, n, &["--mode", &mode_s]), cache);
            let cpu0 = r.d.cpu_s();
            let pr = prove(&mut r.d, sectors);
            let cpu = r.d.cpu_s() - cpu0;
            let peak = r.d.hwm().saturating_sub(r.floor);
            r.d.stop();
            let row = &mut rows[i];
            let per = pr.wall_s / sectors as f64;
            if row.runs == 0 || per < row.wall {
                row.wall = per;
                row.synth =
                    pr.phases.get(&Phase::Synthesis).copied().unwrap_or(0.0) / sectors as f64;
                row.prove = pr.phases.get(&Phase::Prove).copied().unwrap_or(0.0) / sectors as f64;
            }
            let cpu_per = cpu / sectors as f64;
            if row.runs == 0 || cpu_per < row.cpu {
                row.cpu = cpu_per;
            }
            row.peak = row.peak.max(peak);
            row.heap = row.heap.max(pr.heap_peak);
            row.proofs = pr.proofs;
            row.verified = (row.runs == 0 || row.verified) && pr.verified == pr.proofs;
            row.runs += 1;
        }
    }
    println!("| mode | proofs per run | s/sector (wall) | sectors/hour | CPU s/sector | synthesis s/sector | prove s/sector | peak RSS above SRS floor | vs single | peak heap working set | vs single | all verified |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|");
    let single = modes.iter().position(|m| *m == BatchMode::Single);
    let single_peak = single.map(|i| rows[i].peak);
    let single_heap = single.map(|i| rows[i].heap);
    for (mode, r) in modes.iter().zip(&rows) {
        println!(
            "| {mode} | {} | {} | {:.0} | {} | {} | {} | {} | {} | {} | {} | {} |",
            r.proofs,
            s(r.wall),
            3600.0 / r.wall,
            s(r.cpu),
            s(r.synth),
            s(r.prove),
            fmt_bytes(r.peak),
            single_peak
                .map(|sp| format!("{:.2}×", r.peak as f64 / sp.max(1) as f64))
                .unwrap_or_else(|| "–".into()),
            fmt_bytes(r.heap),
            single_heap
                .map(|sh| format!("{:.2}×", r.heap as f64 / sh.max(1) as f64))
                .unwrap_or_else(|| "–".into()),
            r.verified
        );
    }
}

fn main() {
    let mut named: Vec<String> = Vec::new();
    let mut opt: BTreeMap<String, String> = BTreeMap::new();
    let mut quick = false;
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--bench" => {}
            "--quick" => quick = true,
            "--partitions" | "--constraints" | "--sectors" | "--rounds" | "--srs-cache"
            | "--modes" => {
                let v = it.next().unwrap_or_else(|| panic!("{a} needs a value"));
                opt.insert(a.trim_start_matches("--").to_string(), v);
            }
            _ if a.starts_with("--") => panic!("unknown flag {a}"),
            _ => named.push(a),
        }
    }
    let want = |s: &str| named.is_empty() || named.iter().any(|a| a == s);
    let num = |k: &str| -> Option<u64> {
        opt.get(k).map(|v| {
            v.parse()
                .unwrap_or_else(|_| panic!("--{k} {v}: not a number"))
        })
    };
    println!("## provetop-prover benchmarks\n");
    println!("Machine: {}. Load average at start: {}.", machine(), load());
    println!("Binary: {}", bin());
    let t0 = Instant::now();
    // One cache for the run, empty at start: the first use of a shape measures generation.
    let dir = tempfile::tempdir().expect("tempdir");
    let cache = opt
        .get("srs-cache")
        .map(Path::new)
        .unwrap_or_else(|| dir.path());
    if want("srs") {
        let sizes: &[u64] = if quick {
            &[1 << 12]
        } else {
            &[1 << 12, 1 << 14, 1 << 16]
        };
        srs_section(cache, sizes);
    }
    if want("phases") {
        let sizes: &[u64] = if quick {
            &[1 << 11, 1 << 12, 1 << 13]
        } else {
            &[1 << 12, 1 << 14, 1 << 16]
        };
        phases_section(cache, 4, sizes, if quick { 1 } else { 2 });
    }
    if want("modes") {
        let modes: Vec<BatchMode> = match opt.get("modes") {
            Some(list) => list
                .split(',')
                .map(|m| {
                    m.parse()
                        .unwrap_or_else(|e| panic!("--modes {list}: {m:?}: {e}"))
                })
                .collect(),
            None => vec![
                BatchMode::Single,
                BatchMode::Batch(2),
                BatchMode::Batch(4),
                BatchMode::Sps,
                BatchMode::Pipelined(2),
            ],
        };
        let (p, n, sectors, rounds) = if quick {
            (8, 2048, 2, 1)
        } else {
            (8, 8192, 4, 2)
        };
        modes_section(
            cache,
            num("partitions").map_or(p, |v| v as u32),
            num("constraints").unwrap_or(n),
            num("sectors").map_or(sectors, |v| v as u32),
            num("rounds").map_or(rounds, |v| v as u32),
            &modes,
        );
    }
    println!(
        "\nTotal {:.0} s. Load average at end: {}.",
        t0.elapsed().as_secs_f64(),
        load()
    );
}
