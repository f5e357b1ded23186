//! `--metrics`: a real Prometheus (Debian's `prometheus` package, which `.ci/run` installs)
//! scrapes a real headless provetop supervising the bundled prover, and what Prometheus
//! holds is what the session file holds; `promtool` checks a scrape, the shipped rules and
//! the fleet config; bad requests are answered or dropped and the session goes on. Nothing
//! here reaches beyond loopback.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use provetop::model::Model;
use provetop::monitor::metrics::{Format, Metrics};
use provetop_shared::record::GpuReading;
use provetop_shared::session::{load, SessionHeader};
use provetop_shared::{AlertState, BatchMode, Event, Mark, Record, RecordBody, Sample};
use provetop_testkit::bins::{prover, provetop};
use provetop_testkit::fixtures::{proof_finished, proof_started, repo};

/// A program of Debian's `prometheus` package (`prometheus`, `promtool`): `None` after one
/// SKIPPED line when it is missing (a failure under `PROVETOP_REQUIRE_SYSTEM_TOOLS=1`, which
/// `.ci/run` sets after installing it).
fn need(program: &str) -> Option<PathBuf> {
    provetop_testkit::system::need(program, "prometheus")
}

/// A program the test checked with [`need`] first.
fn needed(program: &str) -> PathBuf {
    provetop_testkit::system::find(program).unwrap_or_else(|| panic!("{program} is gone"))
}

/// A loopback port free now.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A child process killed (and reaped) when the test ends, however it ends.
struct Reaped(Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// GET `url` (loopback only); the status and body.
fn get(url: &str, accept: Option<&str>) -> Result<(u16, String), String> {
    assert!(url.starts_with("http://127.0.0.1:"), "{url}");
    let mut req = ureq::get(url).timeout(Duration::from_secs(10));
    if let Some(a) = accept {
        req = req.set("Accept", a);
    }
    match req.call() {
        Ok(r) => Ok((r.status(), r.into_string().map_err(|e| e.to_string())?)),
        Err(ureq::Error::Status(code, r)) => Ok((code, r.into_string().unwrap_or_default())),
        Err(e) => Err(e.to_string()),
    }
}

/// A Prometheus server on a loopback port scraping `target` every `interval`.
struct Prometheus {
    _proc: Reaped,
    base: String,
}

impl Prometheus {
    fn start(dir: &Path, target: SocketAddr, interval: &str) -> Prometheus {
        let bin = needed("prometheus");
        let config = dir.join("prometheus.yml");
        std::fs::write(
            &config,
            format!(
                "global:\n  scrape_interval: {interval}\n  scrape_timeout: {interval}\n\
                 scrape_configs:\n  - job_name: provetop\n    static_configs:\n      \
                 - targets: [\"{target}\"]\n"
            ),
        )
        .unwrap();
        let port = free_port();
        let child = super::prometheus_proc::spawn(&bin, dir, &config, port);
        let p = Prometheus {
            _proc: Reaped(child),
            base: format!("http://127.0.0.1:{port}"),
        };
        let start = Instant::now();
        while !matches!(get(&format!("{}/-/ready", p.base), None), Ok((200, _))) {
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "prometheus not ready after 60 s: {}",
                std::fs::read_to_string(dir.join("prometheus.log")).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        p
    }

    /// `GET /api/v1/<what>` with `query`, its `data`.
    fn api(&self, what: &str, query: &[(&str, &str)]) -> serde_json::Value {
        let mut req = ureq::get(&format!("{}/api/v1/{what}", self.base));
        for (k, v) in query {
            req = req.query(k, v);
        }
        let body = req
            .call()
            .unwrap_or_else(|e| panic!("prometheus {what} {query:?}: {e}"))
            .into_string()
            .unwrap();
        let v: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(v["status"], "success", "{body}");
        v["data"].clone()
    }

    /// The raw samples Prometheus stored for `selector` over the last 10 minutes: per series,
    /// its labels and (unix seconds, value) pairs.
    fn raw(&self, selector: &str) -> Vec<(serde_json::Value, Vec<(f64, f64)>)> {
        let data = self.api("query", &[("query", &format!("{selector}[10m]"))]);
        data["result"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| {
                let points = s["values"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|p| {
                        (
                            p[0].as_f64().unwrap(),
                            p[1].as_str().unwrap().parse::<f64>().unwrap(),
                        )
                    })
                    .collect();
                (s["metric"].clone(), points)
            })
            .collect()
    }

    /// The one series of `selector`'s samples.
    fn points(&self, selector: &str) -> Vec<(f64, f64)> {
        let mut all = self.raw(selector);
        assert_eq!(all.len(), 1, "{selector}: {all:?}");
        all.remove(0).1
    }
}

/// The test's scrape interval, and how late a scrape may show a record: "within one scrape".
const INTERVAL: &str = "1s";
const LAG: f64 = 1.0;
/// How long after Prometheus's timestamp (the scrape's start) provetop may encode it.
const SLACK: f64 = 0.15;
/// How long a sample may wait for the front end's pump (every 50 ms) on a busy machine.
const PUMP_LAG: f64 = 0.35;

/// The session file's records with their wall times.
struct Session {
    header: SessionHeader,
    records: Vec<Record>,
}

impl Session {
    fn wall(&self, r: &Record) -> f64 {
        self.header.wall_secs(r.t)
    }

    fn samples(&self) -> impl Iterator<Item = (f64, &Sample)> + '_ {
        self.records.iter().filter_map(|r| match &r.body {
            RecordBody::Sample(s) => Some((self.wall(r), s)),
            _ => None,
        })
    }

    /// Proofs that finished ok by wall time `w`.
    fn ok_by(&self, w: f64) -> usize {
        self.records
            .iter()
            .filter(|r| {
                self.wall(r) <= w
                    && matches!(
                        r.body,
                        RecordBody::Event(Event::ProofFinished { ok: true, .. })
                    )
            })
            .count()
    }

    /// The merged wall-time intervals with a span of `phase` open.
    fn phase_open(&self, phase: &str) -> Vec<(f64, f64)> {
        let mut open = std::collections::HashMap::new();
        let mut spans = Vec::new();
        for r in &self.records {
            match &r.body {
                RecordBody::Event(Event::PhaseStarted {
                    proof_id,
                    phase: p,
                    partition,
                }) if p.as_str() == phase => {
                    open.insert((*proof_id, *partition), self.wall(r));
                }
                RecordBody::Event(Event::PhaseEnded {
                    proof_id,
                    phase: p,
                    partition,
                    ..
                }) if p.as_str() == phase => {
                    if let Some(s) = open.remove(&(*proof_id, *partition)) {
                        spans.push((s, self.wall(r)));
                    }
                }
                _ => {}
            }
        }
        spans.extend(open.into_values().map(|s| (s, f64::INFINITY)));
        spans.sort_by(|a, b| a.0.total_cmp(&b.0));
        let mut merged: Vec<(f64, f64)> = Vec::new();
        for (a, b) in spans {
            match merged.last_mut() {
                Some(last) if a <= last.1 => last.1 = last.1.max(b),
                _ => merged.push((a, b)),
            }
        }
        merged
    }
}

/// The metric families (names as Prometheus text writes them) of a scrape.
fn families(text: &str) -> std::collections::BTreeSet<String> {
    text.lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|l| l.split(' ').next())
        .map(str::to_string)
        .collect()
}

/// `promtool check metrics` on `text`: its output when it fails.
fn promtool_check_metrics(text: &str) -> Result<(), String> {
    let mut child = Command::new(needed("promtool"))
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    if out.status.success() && said.trim().is_empty() {
        Ok(())
    } else {
        Err(said)
    }
}

/// `provetop run --headless --metrics ADDR ARGS...`, recording to `session`.
fn provetop_serving(dir: &Path, session: &Path, addr: SocketAddr, args: &[&str]) -> Reaped {
    let child = Command::new(provetop())
        .args(["run", "--headless", "--hz", "20", "--record"])
        .arg(session)
        .arg("--metrics")
        .arg(addr.to_string())
        .args(args)
        .env("XDG_CONFIG_HOME", dir.join("config"))
        .env("XDG_CACHE_HOME", dir.join("cache"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(dir.join("provetop.err")).unwrap())
        .spawn()
        .expect("start provetop");
    let start = Instant::now();
    while TcpStream::connect(addr).is_err() {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "provetop does not serve {addr}: {}",
            std::fs::read_to_string(dir.join("provetop.err")).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    Reaped(child)
}

/// SIGTERM, then wait for the end (bounded).
fn stop(p: &mut Reaped) -> std::process::ExitStatus {
    use nix::sys::signal::{kill, Signal};
    kill(nix::unistd::Pid::from_raw(p.0.id() as i32), Signal::SIGTERM).unwrap();
    let start = Instant::now();
    loop {
        if let Some(st) = p.0.try_wait().unwrap() {
            return st;
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "provetop still running 60 s after SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_real_prometheus_scrapes_provetop_and_holds_the_rss_phase_and_proof_values_of_the_session_file()
{
    if need("prometheus").is_none() || need("promtool").is_none() {
        return;
    }
    prover();
    let dir = tempfile::tempdir().unwrap();
    let addr: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let prom = Prometheus::start(dir.path(), addr, INTERVAL);
    let session = dir.path().join("s.ptop");
    let mut pt = provetop_serving(
        dir.path(),
        &session,
        addr,
        &[
            "--partitions",
            "1",
            "--constraints",
            "40000",
            "--alert",
            "info: cpu > 0.5",
        ],
    );
    // Until Prometheus has seen three proofs finish (its first scrape may come 5 s after its
    // start: the scrape manager applies new targets every 5 s) and has scraped during a
    // phase at least once (a proof's phases are open for part of each 2 s idle cycle only,
    // so a few proofs may all fall between scrapes; CI once saw none in three).
    let start = Instant::now();
    let mut scrape = None;
    loop {
        let data = prom.api(
            "query",
            &[("query", "provetop_proofs_total{result=\"ok\"}")],
        );
        let ok = data["result"]
            .get(0)
            .map_or(0.0, |s| s["value"][1].as_str().unwrap().parse().unwrap());
        if scrape.is_none() && ok >= 1.0 {
            // One scrape of our own, mid-run, for promtool.
            scrape = Some(get(&format!("http://{addr}/metrics"), None).unwrap().1);
        }
        let in_phase = prom.api(
            "query",
            &[(
                "query",
                "max(max_over_time(provetop_phase{phase=~\"prove|msm_h|synthesis\"}[1h]))",
            )],
        )["result"]
            .get(0)
            .is_some_and(|s| s["value"][1].as_str() == Some("1"));
        if ok >= 3.0 && in_phase {
            break;
        }
        assert!(
            pt.0.try_wait().unwrap().is_none(),
            "provetop ended: {}",
            std::fs::read_to_string(dir.path().join("provetop.err")).unwrap()
        );
        assert!(
            start.elapsed() < Duration::from_secs(240),
            "Prometheus saw {ok} proofs in 240 s (scraped during a phase: {in_phase})"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    stop(&mut pt);
    let loaded = load(&session).unwrap();
    let s = Session {
        header: loaded.header,
        records: loaded.records,
    };

    // RSS: every scraped value is a sample of the session, taken within one scrape before.
    let rss = prom.points("provetop_rss_bytes");
    assert!(rss.len() >= 5, "{} scrapes", rss.len());
    for (w, v) in &rss {
        assert!(
            s.samples()
                .any(|(t, x)| t >= w - LAG && t <= w + SLACK && x.rss as f64 == *v),
            "provetop_rss_bytes {v} at {w}: no sample of the session holds it then"
        );
    }
    // The interval peak: the highest reading since the previous scrape, so no sample taken
    // between two scrapes is higher than what the second says.
    let peaks = prom.points("provetop_rss_interval_peak_bytes");
    for pair in peaks.windows(2) {
        let ((w0, _), (w1, v)) = (pair[0], pair[1]);
        let high = |x: &Sample| x.peak.unwrap_or(x.rss).max(x.rss) as f64;
        for (t, x) in s.samples() {
            if t > w0 + SLACK && t < w1 - PUMP_LAG {
                assert!(
                    high(x) <= v,
                    "sample {} at {t} above the interval peak {v} scraped at {w1}",
                    high(x)
                );
            }
        }
        assert!(
            s.samples().any(|(t, x)| t >= w0 - LAG
                && t <= w1 + SLACK
                && (high(x) == v || x.rss as f64 == v)),
            "interval peak {v} at {w1} is no reading of the session between {w0} and {w1}"
        );
    }

    // Proofs: the count at each scrape is the session's within one scrape.
    let ok = prom.points("provetop_proofs_total{result=\"ok\"}");
    for (w, v) in &ok {
        let (lo, hi) = (s.ok_by(w - LAG) as f64, s.ok_by(w + SLACK) as f64);
        assert!(
            lo <= *v && *v <= hi,
            "proofs ok {v} at {w}; the session says {lo} to {hi}"
        );
    }
    assert!(ok.iter().any(|(_, v)| *v >= 3.0));
    let durations = prom.points("provetop_proof_duration_seconds_count");
    assert_eq!(durations.last().unwrap().1, ok.last().unwrap().1);
    // The last proof's peak: the highest reading while it ran, from the session's samples.
    let mut running: Option<f64> = None;
    let mut finished: Vec<(f64, f64)> = Vec::new();
    for r in &s.records {
        match &r.body {
            RecordBody::Event(Event::ProofStarted { .. }) => running = Some(0.0),
            RecordBody::Event(Event::ProofFinished { .. }) => {
                finished.extend(running.take().map(|p| (s.wall(r), p)))
            }
            RecordBody::Sample(x) => {
                if let Some(p) = running.as_mut() {
                    *p = p.max(x.peak.unwrap_or(x.rss).max(x.rss) as f64);
                }
            }
            _ => {}
        }
    }
    let last_peak = prom.points("provetop_last_proof_peak_bytes");
    assert!(!last_peak.is_empty());
    for (w, v) in last_peak {
        let before = finished.iter().rev().find(|(t, _)| *t < w - LAG);
        let within = finished
            .iter()
            .filter(|(t, _)| *t >= w - LAG && *t <= w + SLACK);
        assert!(
            before.into_iter().chain(within).any(|(_, p)| *p == v),
            "last proof's peak {v} at {w}; the session's proofs: {finished:?}"
        );
    }

    // Phases: 1 exactly while the session has the phase open, within one scrape.
    let mut seen = [false, false];
    for phase in ["prove", "msm_h", "synthesis"] {
        let open = s.phase_open(phase);
        let covers = |a: f64, b: f64| open.iter().any(|(s, e)| *s <= a && b <= *e);
        let touches = |a: f64, b: f64| open.iter().any(|(s, e)| *s <= b && a <= *e);
        let pts = prom.points(&format!("provetop_phase{{phase=\"{phase}\"}}"));
        for (w, v) in pts {
            let (a, b) = (w - LAG, w + SLACK);
            if v == 1.0 {
                seen[0] = true;
                assert!(touches(a, b), "{phase} = 1 at {w}, not open in the session");
            } else {
                seen[1] |= phase == "prove";
                assert!(!covers(a, b), "{phase} = 0 at {w}, open in the session");
            }
        }
    }
    assert_eq!(seen, [true, true], "no scrape saw a phase open and closed");

    // Cores busy: every scraped value is a usage reading of the session, taken within one
    // scrape before (the bundled prover keeps a core or more busy, so some are above 0).
    let usage: Vec<(f64, f64)> = s
        .records
        .iter()
        .filter_map(|r| match &r.body {
            RecordBody::Usage(u) => Some((s.wall(r), u.cores?)),
            _ => None,
        })
        .collect();
    let cores = prom.points("provetop_cpu_cores");
    assert!(
        cores.len() >= 3,
        "{} scrapes of provetop_cpu_cores",
        cores.len()
    );
    for (w, v) in &cores {
        assert!(
            usage
                .iter()
                .any(|(t, c)| *t >= w - LAG - 0.5 && *t <= w + SLACK && c == v),
            "provetop_cpu_cores {v} at {w}: no usage reading of the session holds it then"
        );
    }
    assert!(cores.iter().any(|(_, v)| *v > 0.5), "{cores:?}");
    // The rule on cores busy fired on the session's own usage readings: each firing value is
    // a reading above 0.5 cores; the scrape said so.
    let fired: Vec<f64> = s
        .records
        .iter()
        .filter_map(|r| match &r.body {
            RecordBody::Alert(a) if a.metric == "cpu" && a.state == AlertState::Firing => {
                Some(a.value)
            }
            _ => None,
        })
        .collect();
    assert!(!fired.is_empty(), "cpu > 0.5 never fired");
    assert!(fired
        .iter()
        .all(|v| *v > 0.5 && usage.iter().any(|(_, c)| c == v)));
    let active = prom.points("provetop_alert_active{metric=\"cpu\"}");
    assert!(active.iter().any(|(_, v)| *v == 1.0), "{active:?}");
    let meta = prom.api("metadata", &[("metric", "provetop_cpu_cores")]);
    assert_eq!(meta["provetop_cpu_cores"][0]["unit"], "cores", "{meta}");

    // Prometheus asked for OpenMetrics and kept its units.
    let meta = prom.api("metadata", &[("metric", "provetop_rss_bytes")]);
    assert_eq!(meta["provetop_rss_bytes"][0]["unit"], "bytes", "{meta}");
    assert_eq!(meta["provetop_rss_bytes"][0]["type"], "gauge", "{meta}");

    // promtool on a scrape taken mid-run.
    let scrape = scrape.expect("a scrape mid-run");
    promtool_check_metrics(&scrape).unwrap_or_else(|e| panic!("promtool: {e}\n{scrape}"));
}

/// A model and metrics fed every kind of reading (GPUs, cgroup, a forecast, alerts), as the
/// pipeline feeds them.
fn full_scrape(format: Format) -> String {
    let rules = provetop_shared::alerts::default_rules();
    let metrics = Metrics::new(&rules);
    let mut model = Model::new(Default::default());
    let mut push = |t: u64, body: RecordBody| {
        let r = Record::new(t, body);
        let fx = model.apply(&r);
        metrics.observe(&r, &fx, &model);
    };
    let s = 1_000_000_000;
    let sample = |rss: u64| {
        RecordBody::Sample(Sample {
            rss,
            peak: Some(rss + (1 << 20)),
            anon: Some(rss / 2),
            file: Some(rss / 4),
            shmem: Some(rss / 4),
            swap: Some(0),
            locked: Some(0),
            vm_pin: Some(0),
            pinned: Some(1 << 30),
            pinned_reported: Some(1 << 30),
            gpu_used: Some(3 << 30),
            gpus: vec![GpuReading {
                index: 0,
                proc_used: 3 << 30,
                used: 4 << 30,
                total: 141 << 30,
                util: 87,
            }],
            mem_available: Some(20 << 30),
            mem_total: Some(64 << 30),
            cgroup_current: Some(rss),
            cgroup_max: Some(32 << 30),
            procs: 3,
        })
    };
    push(
        0,
        RecordBody::Mark(Mark::ChildStarted {
            pid: 1,
            command: vec!["p".into()],
        }),
    );
    for (i, id) in [1u64, 2].iter().enumerate() {
        let t0 = (i as u64 * 10 + 1) * s;
        push(t0, RecordBody::Event(proof_started(*id, BatchMode::Single)));
        push(
            t0 + 1,
            RecordBody::Event(Event::PhaseStarted {
                proof_id: *id,
                phase: provetop_shared::Phase::Synthesis,
                partition: Some(0),
            }),
        );
        push(t0 + s, sample(8 << 30));
        if i == 0 {
            push(
                t0 + 2 * s,
                RecordBody::Event(Event::PhaseEnded {
                    proof_id: *id,
                    phase: provetop_shared::Phase::Synthesis,
                    partition: Some(0),
                    duration_s: 2.0,
                }),
            );
            push(t0 + 3 * s, RecordBody::Event(proof_finished(*id, true)));
        }
    }
    // The second proof runs with a forecast from the first, and memory is short.
    push(15 * s, sample(30 << 30));
    push(
        15 * s + 1,
        RecordBody::Usage(provetop_shared::record::Usage {
            interval_ns: s / 2,
            cores: Some(11.3),
            threads: 40,
            ctx_switches: Some(1200.0),
            major_faults: Some(0.0),
            read_bps: Some(1e6),
            write_bps: Some(0.0),
            host_cores: Some(12.0),
            host_ncpu: 16,
            procs: vec![],
            gpus: vec![provetop_shared::record::GpuDetail {
                index: 0,
                uuid: "GPU-5c9f0f1e-0000-0000-0000-000000000000".into(),
                name: "NVIDIA H200".into(),
                temp_c: Some(61),
                power_w: Some(350.0),
                sm_clock_mhz: Some(1980),
                throttle: vec![],
                pcie_rx_bps: Some(1e9),
                pcie_tx_bps: Some(1e8),
                ecc_corrected: Some(2),
                ecc_uncorrected: Some(0),
                pcie_replays: Some(17),
                xid: Some(79),
                power_limit_w: Some(700.0),
                temp_slowdown_c: Some(87),
            }],
            nvml_calls: vec![{
                let mut c = provetop_shared::NvmlCalls::new("GetMemoryInfo");
                c.observe(42_000);
                c
            }],
            nvml_backoff: Some(2),
        }),
    );
    push(15 * s + 2, RecordBody::Kernel(Box::new(full_kernel())));
    push(
        15 * s + 3,
        RecordBody::Mark(Mark::OomKill {
            pid: Some(4242),
            command: Some("worker".into()),
            cgroup: Some("/system.slice/curio.service".into()),
            watched: false,
            text: "OOM kill of pid 4242 (worker)".into(),
        }),
    );
    let text = metrics.scrape(format);
    assert!(text.contains("provetop_predicted_free_bytes"), "{text}");
    assert!(text.contains("provetop_gpu_memory_used_bytes"), "{text}");
    assert!(text.contains("provetop_gpu_temperature_celsius"), "{text}");
    assert!(text.contains("provetop_cpu_cores 11.3"), "{text}");
    text
}

/// A kernel record with every reading: the binding cgroup, its breakdown and events, both
/// scopes of pressure.
fn full_kernel() -> provetop_shared::Kernel {
    use provetop_shared::{
        Binding, CgroupReading, Kernel, MemEvents, MemStat, Psi, PsiLine, PsiResource,
    };
    let line = |avg10: f64| PsiLine {
        avg10,
        rate: Some(avg10),
    };
    let res = |some: f64, full: Option<f64>| {
        Some(PsiResource {
            some: line(some),
            full: full.map(line),
        })
    };
    let psi = Psi {
        memory: res(12.5, Some(4.0)),
        cpu: res(30.0, None),
        io: res(1.0, Some(0.5)),
    };
    Kernel {
        cgroup: Some(CgroupReading {
            path: "/system.slice/curio.service".into(),
            version: 2,
            current: Some(30 << 30),
            peak: Some(31 << 30),
            max: Some(32 << 30),
            high: Some(31 << 30),
            low: None,
            min: None,
            soft: None,
            swap: Some(0),
            swap_max: Some(0),
            stat: MemStat {
                anon: Some(28 << 30),
                file: Some(1 << 30),
                shmem: Some(1 << 30),
                kernel: Some(100 << 20),
                pagetables: Some(60 << 20),
                sock: Some(0),
                ..MemStat::default()
            },
            events: MemEvents {
                low: Some(0),
                high: Some(12),
                max: Some(3),
                oom: Some(1),
                oom_kill: Some(1),
                oom_group_kill: Some(0),
                ..MemEvents::default()
            },
        }),
        binding: Some(Binding {
            name: "curio.service memory.high".into(),
            limit: 31 << 30,
            used: 30 << 30,
        }),
        psi_host: Some(psi.clone()),
        psi_cgroup: Some(psi),
    }
}

#[test]
fn promtool_check_metrics_passes_on_a_scrape_with_every_metric() {
    if need("promtool").is_none() {
        return;
    }
    let text = full_scrape(Format::Prometheus);
    promtool_check_metrics(&text).unwrap_or_else(|e| panic!("promtool: {e}\n{text}"));
    for want in [
        "provetop_memory_limit_bytes 33285996544",
        "provetop_memory_limit_info{limit=\"curio.service memory.high\",kind=\"cgroup\"} 1",
        "provetop_psi_memory_full_ratio 0.04",
        "provetop_pressure_avg10_ratio{scope=\"host\",resource=\"memory\",line=\"some\"} 0.125",
        "provetop_cgroup_memory_events_total{event=\"oom_kill\"} 1",
        "provetop_cgroup_memory_stat_bytes{item=\"pagetables\"} 62914560",
        "provetop_oom_kills_total 1",
    ] {
        assert!(text.contains(want), "{want} missing:\n{text}");
    }
}

#[test]
fn promtool_checks_the_shipped_rules_their_unit_tests_and_the_fleet_config() {
    let Some(promtool) = need("promtool") else {
        return;
    };
    let dir = repo().join("assets/prometheus");
    for args in [
        vec!["check", "rules", "provetop.rules.yml"],
        vec!["test", "rules", "provetop.rules.test.yml"],
        vec!["check", "config", "prometheus.yml"],
    ] {
        let out = Command::new(&promtool)
            .args(&args)
            .current_dir(&dir)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "promtool {args:?}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn the_dashboard_and_the_rules_name_only_metrics_provetop_serves() {
    let served = families(&full_scrape(Format::Prometheus));
    // Histograms and counters are queried by their sample names.
    let serves = |name: &str| {
        served.contains(name)
            || ["_bucket", "_sum", "_count"].iter().any(|suffix| {
                name.strip_suffix(suffix)
                    .is_some_and(|base| served.contains(base))
            })
    };
    let dir = repo().join("assets/prometheus");
    let dashboard = std::fs::read_to_string(dir.join("grafana-dashboard.json")).unwrap();
    let json: serde_json::Value = serde_json::from_str(&dashboard).expect("the dashboard is JSON");
    let mut exprs = Vec::new();
    fn walk(v: &serde_json::Value, out: &mut Vec<String>) {
        match v {
            serde_json::Value::Object(m) => {
                for (k, x) in m {
                    match (k.as_str(), x) {
                        ("expr" | "query", serde_json::Value::String(s)) => out.push(s.clone()),
                        _ => walk(x, out),
                    }
                }
            }
            serde_json::Value::Array(a) => a.iter().for_each(|x| walk(x, out)),
            _ => {}
        }
    }
    walk(&json, &mut exprs);
    let titles: Vec<&str> = json["panels"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p["title"].as_str())
        .collect();
    for want in ["Memory", "Phase", "GPU"] {
        assert!(titles.contains(&want), "no {want} panel in {titles:?}");
    }
    exprs.push(std::fs::read_to_string(dir.join("provetop.rules.yml")).unwrap());
    let names = regex_names(&exprs.join("\n"));
    assert!(names.len() > 15, "{names:?}");
    for n in &names {
        assert!(serves(n), "{n} is not served (served: {served:?})");
    }
}

/// Every `provetop_…` metric name in `text`.
fn regex_names(text: &str) -> std::collections::BTreeSet<String> {
    let mut out = std::collections::BTreeSet::new();
    let b = text.as_bytes();
    let mut i = 0;
    while let Some(at) = text[i..].find("provetop_") {
        let s = i + at;
        let before = s.checked_sub(1).map(|j| b[j]);
        let mut e = s;
        while e < b.len() && (b[e].is_ascii_alphanumeric() || b[e] == b'_') {
            e += 1;
        }
        if !before.is_some_and(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b'-') {
            out.insert(text[s..e].to_string());
        }
        i = e;
    }
    out
}

/// Send raw bytes and read what comes back (until close or 5 s).
fn raw_exchange(addr: SocketAddr, bytes: &[u8]) -> String {
    let mut c = TcpStream::connect(addr).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let _ = c.write_all(bytes);
    let mut out = Vec::new();
    let _ = c.read_to_end(&mut out);
    String::from_utf8_lossy(&out).into_owned()
}

#[test]
fn bad_paths_malformed_oversized_and_crowded_requests_are_answered_or_dropped_and_the_session_goes_on(
) {
    let dir = tempfile::tempdir().unwrap();
    let addr: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let session = dir.path().join("s.ptop");
    let mut pt = provetop_serving(dir.path(), &session, addr, &["--", "sleep", "60"]);
    let url = format!("http://{addr}/metrics");
    let samples = |text: &str| -> f64 {
        text.lines()
            .find_map(|l| l.strip_prefix("provetop_samples_total "))
            .unwrap()
            .parse()
            .unwrap()
    };
    let (code, body) = get(&url, None).unwrap();
    assert_eq!(code, 200);
    let before = samples(&body);

    assert_eq!(get(&format!("http://{addr}/"), None).unwrap().0, 404);
    assert_eq!(
        get(&format!("http://{addr}/metrics/x"), None).unwrap().0,
        404
    );
    let r = raw_exchange(
        addr,
        b"DELETE /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    );
    assert!(r.starts_with("HTTP/1.1 405"), "{r}");
    let r = raw_exchange(addr, b"\x16\x03\x01\x02\x00garbage\r\n\r\n");
    assert!(r.is_empty() || r.starts_with("HTTP/1.1 400"), "{r}");
    let mut huge = b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Long: ".to_vec();
    huge.extend(std::iter::repeat_n(b'a', 1 << 20));
    huge.extend(b"\r\n\r\n");
    let r = raw_exchange(addr, &huge);
    assert!(
        r.is_empty() || r.starts_with("HTTP/1.1 431") || r.starts_with("HTTP/1.1 400"),
        "{}",
        &r[..r.len().min(200)]
    );

    // Many connections of one address that never finish their request: beyond the share of
    // one address the longest waiting are closed at once, the rest when their head times out;
    // a scrape gets through all along.
    let crowd: Vec<TcpStream> = (0..64)
        .map(|_| {
            let mut c = TcpStream::connect(addr).unwrap();
            let _ = c.write_all(b"GET /metrics HTTP/1.1\r\n");
            c
        })
        .collect();
    std::thread::sleep(Duration::from_millis(500));
    let mut closed = 0;
    for mut c in crowd {
        c.set_read_timeout(Some(Duration::from_millis(10))).unwrap();
        let mut b = [0u8; 16];
        // Closed with the request unread: a reset, or an end.
        match c.read(&mut b) {
            Ok(0) => closed += 1,
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => closed += 1,
            _ => {}
        }
    }
    assert!(
        closed >= 64 - 32,
        "only {closed} of 64 idle connections were turned away"
    );
    let (code, body) = get(&url, None).unwrap();
    assert_eq!(code, 200);
    let rejected: f64 = body
        .lines()
        .find_map(|l| l.strip_prefix("provetop_metrics_rejected_connections_total "))
        .unwrap()
        .parse()
        .unwrap();
    assert!(rejected >= 32.0, "{rejected}");
    // The session went on sampling meanwhile, and ends as it should.
    assert!(samples(&body) > before, "{body}");
    stop(&mut pt);
    let l = load(&session).unwrap();
    assert!(l.records.iter().any(|r| matches!(
        &r.body,
        RecordBody::Mark(Mark::Note { text }) if text.contains(&format!("metrics served on http://{addr}/metrics"))
    )));
    assert!(l
        .records
        .iter()
        .any(|r| matches!(r.body, RecordBody::Mark(Mark::ChildExited { .. }))));
}

#[test]
fn a_metrics_port_already_taken_is_a_one_line_error_and_nothing_starts() {
    let dir = tempfile::tempdir().unwrap();
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap();
    let marker = dir.path().join("started");
    let session = dir.path().join("s.ptop");
    let out = Command::new(provetop())
        .args(["run", "--headless", "--record"])
        .arg(&session)
        .args(["--metrics", &addr.to_string(), "--", "touch"])
        .arg(&marker)
        .env("XDG_CONFIG_HOME", dir.path().join("config"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains(&format!("cannot serve metrics on {addr}")),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(!marker.exists(), "the child ran");
    assert!(!session.exists(), "a session file was left");
}

#[test]
fn a_20_ms_spike_between_two_scrapes_is_the_interval_peak_of_the_second_and_not_of_the_third() {
    let dir = tempfile::tempdir().unwrap();
    let addr: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let session = dir.path().join("s.ptop");
    let hog = provetop_testkit::bins::memhog();
    let hog = hog.to_str().unwrap();
    // Six spikes of 256 MiB held 20 ms, 500 ms apart, from the child's start: all of them
    // after the first scrape (taken before the child runs) and 2 s before the second.
    let mut pt = provetop_serving(
        dir.path(),
        &session,
        addr,
        &[
            "--",
            hog,
            "--spike",
            "256",
            "--hold-ms",
            "20",
            "--every-ms",
            "500",
            "--count",
            "6",
        ],
    );
    let url = format!("http://{addr}/metrics");
    let read = |text: &str, name: &str| -> f64 {
        text.lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(' '))
            .unwrap_or_else(|| panic!("no {name} in\n{text}"))
            .parse()
            .unwrap()
    };
    let _first = get(&url, None).unwrap().1;
    std::thread::sleep(Duration::from_millis(5000));
    let second = get(&url, None).unwrap().1;
    let third = get(&url, None).unwrap().1;
    stop(&mut pt);
    let mib = f64::from(1u32 << 20);
    // What the sampler saw, to say why when it fails.
    let seen: Vec<u64> = load(&session)
        .unwrap()
        .records
        .iter()
        .filter_map(|r| match &r.body {
            RecordBody::Sample(x) => x.peak.map(|p| p.saturating_sub(x.rss) >> 20),
            _ => None,
        })
        .filter(|d| *d > 0)
        .collect();
    let (peak, rss) = (
        read(&second, "provetop_rss_interval_peak_bytes"),
        read(&second, "provetop_rss_bytes"),
    );
    assert!(
        peak - rss >= 200.0 * mib,
        "the spike is not in the interval peak: peak {peak}, rss {rss}; the samples' peaks \
         above their RSS, MiB: {seen:?}"
    );
    let (peak3, rss3) = (
        read(&third, "provetop_rss_interval_peak_bytes"),
        read(&third, "provetop_rss_bytes"),
    );
    assert!(
        peak3 - rss3 < 100.0 * mib,
        "the scrape did not start the interval anew: peak {peak3}, rss {rss3}"
    );
}
