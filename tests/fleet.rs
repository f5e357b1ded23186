//! `provetop fleet`: a real Prometheus (Debian's `prometheus`, which `.ci/run` installs)
//! scraping three real `provetop serve --metrics` sessions (the bundled prover proving, one
//! idle, one whose child was OOM-killed by its v1 memory cgroup's limit); `fleet --once
//! --format json` against each session's own `status`; the screen at 80×24 and 200×60 in
//! tmux; Prometheus stopped mid-run; and a URL that answers garbage, HTML, or nothing.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use provetop::monitor::control::{Client, Status};
use provetop_testkit::bins::{memhog, prover, provetop};
use provetop_testkit::procs::wait_until;
use provetop_testkit::tmux::{have_tmux, sh_quote, Tmux};
use serde_json::Value;

/// A program, or `None` after one `SKIPPED` line naming the Debian package (a failure where
/// CI requires it).
pub use provetop_testkit::system::need as have;

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A child killed and reaped when the test ends, however it ends.
pub struct Reaped(pub Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// One `provetop serve --metrics` session, with its own runtime and state directories under
/// `dir` (so `ls` and the control socket see this test's sessions only).
pub fn serve(dir: &Path, name: &str, port: u16, args: &[&str]) -> Reaped {
    let run = dir.join("run");
    std::fs::create_dir_all(&run).unwrap();
    std::fs::set_permissions(&run, std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();
    let err = dir.join(format!("{name}.err"));
    let child = Command::new(provetop())
        .args(["serve", "--hz", "10", "--record"])
        .arg(dir.join(format!("{name}.ptop")))
        .args(["--metrics", &port.to_string()])
        .args(args)
        .env("XDG_RUNTIME_DIR", &run)
        .env("XDG_STATE_HOME", dir.join("state"))
        .env("XDG_CONFIG_HOME", dir.join("config"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&err).unwrap())
        .spawn()
        .expect("start provetop serve");
    assert!(
        wait_until(Duration::from_secs(30), || TcpStream::connect((
            "127.0.0.1",
            port
        ))
        .is_ok()),
        "{name} does not serve metrics: {}",
        std::fs::read_to_string(&err).unwrap_or_default()
    );
    Reaped(child)
}

/// The statuses of the live sessions under `dir`, by id.
pub fn statuses(dir: &Path) -> std::collections::BTreeMap<String, Status> {
    let (live, _) = provetop::sessions::live_sessions(&dir.join("run").join("provetop"));
    live.iter()
        .filter_map(|l| {
            let mut c = Client::connect(&l.socket, Duration::from_secs(3)).ok()?;
            Some((l.id.clone(), c.status().ok()?))
        })
        .collect()
}

/// A real Prometheus scraping `targets` every second; with `hostile`, the first target with a
/// hostile `host` label (an escape sequence and a bidirectional override).
pub struct Prometheus {
    pub proc: Reaped,
    pub url: String,
}

pub fn prometheus(bin: &Path, dir: &Path, targets: &[u16], hostile: bool) -> Prometheus {
    let list = |ps: &[u16]| {
        ps.iter()
            .map(|p| format!("\"127.0.0.1:{p}\""))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let config = dir.join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n  - job_name: provetop\n    \
             static_configs:\n      - targets: [{}]\n{}      \
             - targets: [{}]\n",
            list(&targets[..1]),
            if hostile {
                "        labels:\n          host: \"evil\\e[2J\\u202e\"\n"
            } else {
                ""
            },
            list(&targets[1..])
        ),
    )
    .unwrap();
    let port = free_port();
    let child = super::prometheus_proc::spawn(bin, dir, &config, port);
    let url = format!("http://127.0.0.1:{port}");
    let ready = wait_until(Duration::from_secs(60), || {
        ureq::get(&format!("{url}/-/ready")).call().is_ok()
    });
    assert!(
        ready,
        "prometheus not ready: {}",
        std::fs::read_to_string(dir.join("prometheus.log")).unwrap_or_default()
    );
    Prometheus {
        proc: Reaped(child),
        url,
    }
}

fn fleet(args: &[&str]) -> Output {
    Command::new(provetop())
        .arg("fleet")
        .args(args)
        .output()
        .unwrap()
}

fn fleet_json(url: &str) -> Value {
    let out = fleet(&["--prometheus", url, "--once", "--format", "json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Cgroup directories made by the test, their members killed and the directories removed on
/// drop.
struct Cgroup(PathBuf);

impl Drop for Cgroup {
    fn drop(&mut self) {
        let procs = std::fs::read_to_string(self.0.join("cgroup.procs")).unwrap_or_default();
        for pid in procs
            .split_whitespace()
            .filter_map(|p| p.parse::<i32>().ok())
        {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
        wait_until(Duration::from_secs(5), || {
            std::fs::remove_dir(&self.0).is_ok() || !self.0.exists()
        });
    }
}

const MIB: u64 = 1 << 20;

/// A v1 memory cgroup limited to 64 MiB (the VM's and CI's controller), or `None`.
fn oom_cgroup() -> Option<Cgroup> {
    let dir = PathBuf::from(format!(
        "/sys/fs/cgroup/memory/provetop-test-fleet-{}",
        std::process::id()
    ));
    std::fs::create_dir(&dir).ok()?;
    let cg = Cgroup(dir);
    std::fs::write(cg.0.join("memory.limit_in_bytes"), (64 * MIB).to_string()).ok()?;
    let _ = std::fs::write(
        cg.0.join("memory.memsw.limit_in_bytes"),
        (64 * MIB).to_string(),
    );
    Some(cg)
}

fn row<'a>(doc: &'a Value, session: &str) -> &'a Value {
    doc["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["session"] == session)
        .unwrap_or_else(|| panic!("no row of {session}: {doc:#}"))
}

#[test]
fn fleet_lists_a_proving_an_idle_and_an_oom_killed_session_as_their_own_status_says_and_says_when_prometheus_stops(
) {
    let (Some(prom_bin), true) = (have("prometheus", "prometheus"), have_tmux("fleet")) else {
        return;
    };
    let Some(cg) = oom_cgroup() else {
        eprintln!(
            "SKIPPED: no writable v1 memory cgroup here (needs root and /sys/fs/cgroup/memory)"
        );
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let ports = [free_port(), free_port(), free_port()];
    let _ = prover();
    // Prometheus first, so it sees the OOM-kill counter at 0 before the kill (an increase).
    let prom = prometheus(&prom_bin, dir, &ports, true);
    let proving = serve(
        dir,
        "proving",
        ports[0],
        &["--partitions", "2", "--constraints", "3000"],
    );
    let idle = serve(
        dir,
        "idle",
        ports[1],
        &[
            "--",
            prover().to_str().unwrap(),
            "--daemon",
            "--partitions",
            "1",
            "--constraints",
            "500",
        ],
    );
    // The child's shell joins the limited cgroup; once Prometheus has seen it (the trigger),
    // its memhog (256 MiB against 64) is killed.
    let trigger = dir.join("trigger");
    let script = format!(
        "echo $$ > {}/cgroup.procs && while [ ! -e {} ]; do sleep 0.1; done && {{ {} --anon 256; exec sleep 600; }}",
        sh_quote(&cg.0.display().to_string()),
        sh_quote(&trigger.display().to_string()),
        sh_quote(&memhog().display().to_string())
    );
    let oom = serve(dir, "oom", ports[2], &["--", "sh", "-c", &script]);
    // Until every row has its session, the OOM kill is counted and the prover has proved.
    let mut doc = Value::Null;
    // A session serves metrics a moment before its socket answers (and a loaded machine
    // answers late): its id is asked until all three answer.
    let id_of = |st: &std::collections::BTreeMap<String, Status>, n: &str| {
        st.values()
            .find(|s| {
                s.session
                    .as_ref()
                    .is_some_and(|f| f.ends_with(format!("{n}.ptop")))
            })
            .map(|s| s.id.clone())
    };
    let mut st = statuses(dir);
    let answered = wait_until(Duration::from_secs(30), || {
        st = statuses(dir);
        ["proving", "idle", "oom"]
            .iter()
            .all(|n| id_of(&st, n).is_some())
    });
    assert!(answered, "not every session answered its socket: {st:?}");
    let ids: Vec<String> = ["proving", "idle", "oom"]
        .iter()
        .filter_map(|n| id_of(&st, n))
        .collect();
    let listed = |doc: &Value| {
        doc["rows"].as_array().map_or(0, Vec::len) == 3
            && ids.iter().all(|id| {
                doc["rows"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|r| r["session"] == id.as_str())
            })
    };
    // The kill only once the OOM session reads the cgroup its child joined (its limit binds):
    // a kill before the sampler sees the move is of a cgroup it does not watch yet.
    let cg_name = cg.0.file_name().unwrap().to_string_lossy().into_owned();
    let seen = wait_until(Duration::from_secs(30), || {
        doc = fleet_json(&prom.url);
        listed(&doc)
            && row(&doc, &ids[2])["limit_name"]
                .as_str()
                .is_some_and(|n| n.starts_with(&cg_name))
    });
    assert!(
        seen,
        "fleet never listed the three sessions, the OOM one in its cgroup: {doc:#}"
    );
    std::fs::write(&trigger, "").unwrap();
    let ready = wait_until(Duration::from_secs(60), || {
        doc = fleet_json(&prom.url);
        listed(&doc)
            && row(&doc, &ids[2])["oom_kills"].as_f64() == Some(1.0)
            && row(&doc, &ids[0])["proofs_ok"].as_f64().unwrap_or(0.0) >= 1.0
    });
    if !ready {
        let read = |f: &str| std::fs::read_to_string(cg.0.join(f)).unwrap_or_default();
        let ps = Command::new("ps")
            .args(["-eo", "pid,ppid,stat,rss,cmd"])
            .output();
        panic!(
            "fleet never showed the three sessions: {doc:#}\ncgroup procs {:?} usage {} oom_control {:?} failcnt {}\noom session's stderr: {}\n{}",
            read("cgroup.procs"),
            read("memory.usage_in_bytes"),
            read("memory.oom_control"),
            read("memory.failcnt"),
            std::fs::read_to_string(dir.join("oom.err")).unwrap_or_default(),
            ps.map(|o| String::from_utf8_lossy(&o.stdout).into_owned()).unwrap_or_default()
        );
    }
    let before = statuses(dir);
    doc = fleet_json(&prom.url);
    let after = statuses(dir);
    assert_eq!(doc["health"], serde_json::json!(["ok"]), "{doc:#}");
    // The proving prover: its proofs between the two statuses (Prometheus's counter is as of its
    // last scrape, up to a second and a few short proofs behind), its mode, its state.
    let p = row(&doc, &ids[0]);
    let n = p["proofs_ok"].as_f64().unwrap();
    assert!(
        before[&ids[0]].proofs_done as f64 - 3.0 <= n && n <= after[&ids[0]].proofs_done as f64,
        "{n} proofs vs {:?} .. {:?}",
        before[&ids[0]].proofs_done,
        after[&ids[0]].proofs_done
    );
    assert_eq!(p["mode"].as_str(), after[&ids[0]].mode.as_deref());
    assert!(
        ["proving", "idle"].contains(&p["state"].as_str().unwrap()),
        "{p}"
    );
    assert_eq!(
        p["host"], "evil\u{1b}[2J\u{202e}",
        "the label is data, kept as it is"
    );
    // The idle daemon: idle, no proof, its mode.
    let i = row(&doc, &ids[1]);
    assert_eq!(i["state"].as_str(), after[&ids[1]].state.as_deref());
    assert_eq!(i["state"], "idle");
    assert_eq!(
        i["proofs_ok"].as_f64(),
        Some(after[&ids[1]].proofs_done as f64)
    );
    assert_eq!(i["mode"].as_str(), after[&ids[1]].mode.as_deref());
    assert!(i["red"].as_array().unwrap().is_empty(), "{i}");
    // The OOM-killed child: its shell runs on, in the cgroup whose 64 MiB limit binds; red.
    let o = row(&doc, &ids[2]);
    assert_eq!(o["state"], "running", "{o}");
    assert_eq!(after[&ids[2]].state, None);
    assert!(after[&ids[2]].child_pid.is_some());
    assert_eq!(o["limit_bytes"].as_f64(), Some((64 * MIB) as f64), "{o}");
    assert!(
        o["red"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r == "ProvetopOOMKill"),
        "{o}"
    );
    for (id, r) in ids.iter().zip([p, i, o]) {
        assert_eq!(
            r["alerts_firing"].as_f64(),
            Some(after[id].alerts as f64),
            "{id}: {r}"
        );
        assert!(r["rss_bytes"].as_f64().unwrap() > 0.0, "{r}");
        assert!(r["scrape_age_s"].as_f64().unwrap() < 5.0, "{r}");
    }
    // The table: the hostile label made inert, no escape byte on the terminal.
    let t = fleet(&["--prometheus", &prom.url, "--once", "--sort", "host"]);
    let text = String::from_utf8(t.stdout).unwrap();
    assert!(
        !text.contains('\u{1b}') && !text.contains('\u{202e}'),
        "{text}"
    );
    assert!(
        text.contains("evil\\x1b[2J\\u{202e}") && text.contains(&ids[1]),
        "{text}"
    );

    // The screen, 80×24 then 200×60; then Prometheus stops.
    let cmd = format!(
        "{} fleet --prometheus {} --refresh 1 --timeout 2; sleep 60",
        sh_quote(&provetop().display().to_string()),
        prom.url
    );
    let t = Tmux::start("fleet", 80, 24, &cmd);
    let narrow = t.wait_for("three rows at 80x24", Duration::from_secs(20), |s| {
        s.contains("Prometheus ok")
            && ids.iter().filter(|id| s.contains(id.as_str())).count() == 0
            && s.matches("127.0.0.1:").count() >= 2
    });
    std::fs::write(dir.join("fleet-80x24.txt"), &narrow).unwrap();
    assert!(
        narrow.lines().count() <= 24 && narrow.lines().all(|l| l.chars().count() <= 80),
        "{narrow}"
    );
    assert!(
        // (The RSS column's head is cut to its cells' width when the alerts column is wide.)
        narrow.contains("RSS/LIM") && narrow.contains("running") && narrow.contains("idle"),
        "{narrow}"
    );
    t.resize(200, 60);
    let wide = t.wait_for("sessions at 200x60", Duration::from_secs(10), |s| {
        ids.iter().all(|id| s.contains(id.as_str()))
    });
    assert!(
        wide.contains("SESSION") && wide.contains("PINNED") && wide.contains("GPU%"),
        "{wide}"
    );
    // Enter: the selected row's history from range queries, on the live screen's chart; q
    // comes back to the fleet.
    t.keys(&["Enter"]);
    let history = t.wait_for("the history", Duration::from_secs(15), |s| {
        s.contains("─ memory ─")
    });
    assert!(
        history.contains("history from Prometheus") || history.contains("Prometheus http://"),
        "{history}"
    );
    t.keys(&["q"]);
    t.wait_for("the fleet again", Duration::from_secs(10), |s| {
        s.contains("provetop fleet ·")
    });
    let mut prom = prom;
    let _ = prom.proc.0.kill();
    let _ = prom.proc.0.wait();
    let stopped = Instant::now();
    let down = t.wait_for("Prometheus DOWN", Duration::from_secs(10), |s| {
        s.contains("Prometheus DOWN")
    });
    // One refresh (1 s) and the refused connection: well within a refresh and a timeout.
    assert!(
        stopped.elapsed() < Duration::from_secs(4),
        "{:?}: {down}",
        stopped.elapsed()
    );
    assert!(
        down.contains("rows from") && ids.iter().all(|id| down.contains(id.as_str())),
        "{down}"
    );
    t.keys(&["q"]);
    drop((proving, idle, oom));
}

/// A server on a loopback port that answers every connection with `answer` (or nothing).
fn fake_server(answer: Option<&'static [u8]>) -> (u16, std::thread::JoinHandle<()>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let h = std::thread::spawn(move || {
        let mut held = Vec::new();
        l.set_nonblocking(false).unwrap();
        let t0 = Instant::now();
        while t0.elapsed() < Duration::from_secs(20) {
            let Ok((mut s, _)) = l.accept() else { return };
            let mut b = [0u8; 4096];
            let _ = s.set_read_timeout(Some(Duration::from_millis(200)));
            let _ = s.read(&mut b);
            match answer {
                Some(a) => {
                    let _ = s.write_all(a);
                }
                None => held.push(s),
            }
            if held.len() > 64 {
                return;
            }
        }
    });
    (port, h)
}

#[test]
fn a_prometheus_url_that_answers_html_garbage_or_nothing_is_one_line_within_the_timeout() {
    let html: &'static [u8] = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nConnection: close\r\n\r\n<html><body>Sign in</body></html>";
    let garbage: &'static [u8] = b"\x1b[2J\x00\xff garbage \x07\r\n\r\n";
    let json: &'static [u8] = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\",\"result\":[]}}";
    for (answer, want) in [
        (
            Some(html),
            "not the Prometheus API: HTTP 200, text/html, body starts \"<html><body>Sign in",
        ),
        (Some(garbage), "cannot query"),
        (Some(json), "answer of type \"matrix\", want \"vector\""),
        (None, "no answer within 2s"),
    ] {
        let (port, _h) = fake_server(answer);
        let t0 = Instant::now();
        let out = fleet(&[
            "--prometheus",
            &format!("http://127.0.0.1:{port}"),
            "--once",
            "--timeout",
            "2",
        ]);
        let took = t0.elapsed();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(out.stdout.is_empty());
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(
            err.contains("Prometheus DOWN") && err.contains(want),
            "{want}: {err}"
        );
        assert!(!err.contains('\u{1b}'), "{err}");
        assert!(took < Duration::from_secs(6), "{took:?}: {err}");
    }
    let out = fleet(&["--prometheus", "https://prometheus:9090", "--once"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("want an http:// URL") && err.lines().count() == 1,
        "{err}"
    );
}

/// The shipped rules file's alerts: name and expression (whitespace folded).
fn shipped_alerts() -> Vec<(String, String)> {
    let text = std::fs::read_to_string(
        provetop_testkit::fixtures::repo().join("assets/prometheus/provetop.rules.yml"),
    )
    .unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        let Some(name) = l.trim().strip_prefix("- alert: ") else {
            continue;
        };
        let (j, e) = lines[i..]
            .iter()
            .enumerate()
            .find_map(|(k, x)| x.trim().strip_prefix("expr:").map(|e| (i + k, e.trim())))
            .unwrap();
        let mut expr = e.to_string();
        if expr == "|" {
            let indent = |s: &str| s.len() - s.trim_start().len();
            let base = indent(lines[j]);
            expr = lines[j + 1..]
                .iter()
                .take_while(|x| indent(x) > base && !x.trim().is_empty())
                .map(|x| x.trim())
                .collect::<Vec<_>>()
                .join(" ");
        }
        out.push((
            name.trim().to_string(),
            expr.split_whitespace().collect::<Vec<_>>().join(" "),
        ));
    }
    out
}

#[test]
fn a_fleet_row_turns_red_on_the_shipped_alerts_own_expressions() {
    let shipped = shipped_alerts();
    for (name, expr) in provetop::fleet::rows::RED {
        let s = shipped
            .iter()
            .find(|(n, _)| n == name)
            .unwrap_or_else(|| panic!("{name} is not shipped"));
        assert_eq!(s.1, expr, "{name}");
    }
    // Every shipped alert is a red rule of the fleet (ProvetopDown: a row that is down).
    for (n, _) in &shipped {
        assert!(
            n == "ProvetopDown" || provetop::fleet::rows::RED.iter().any(|(r, _)| r == n),
            "{n}"
        );
    }
}
