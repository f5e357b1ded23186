//! `provetop attach HOST:SESSION` and `provetop ls HOST` through a real OpenSSH server
//! (Debian's `openssh-server`, which `.ci/run` installs) on 127.0.0.1: host and user keys
//! made by the test, only that key allowed, no password; the client is the system's `ssh`
//! with a config the test writes (`PROVETOP_SSH="ssh -F FILE"`). The live screen of a real
//! `serve` session, a mode switch that reaches its prover, `ls` over SSH, a killed `ssh` that
//! leaves the prover proving (and the screen reconnecting), and hosts that refuse, hang, or
//! run another provetop: one line each, in bounded time.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use provetop_testkit::bins::{prover, provetop};
use provetop_testkit::procs::wait_until;
use provetop_testkit::tmux::{have_tmux, sh_quote, Tmux};

use crate::fleet::{free_port, have, prometheus, serve, statuses, Reaped};

/// An sshd on a loopback port allowing one generated key, and the client's config for it.
struct Sshd {
    _proc: Reaped,
    port: u16,
    /// `ssh -F CONFIG`.
    ssh: String,
}

fn keygen(path: &Path) {
    let st = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-f"])
        .arg(path)
        .status()
        .unwrap();
    assert!(st.success());
}

fn sshd(bin: &Path, dir: &Path) -> Sshd {
    let d = dir.join("ssh");
    std::fs::create_dir_all(&d).unwrap();
    keygen(&d.join("host_key"));
    keygen(&d.join("user_key"));
    std::fs::copy(d.join("user_key.pub"), d.join("authorized_keys")).unwrap();
    // The privilege-separation directory sshd wants (a package's unit makes it at boot).
    let _ = std::fs::create_dir_all("/run/sshd");
    let port = free_port();
    let user = nix::unistd::User::from_uid(nix::unistd::geteuid())
        .unwrap()
        .unwrap()
        .name;
    let config = d.join("sshd_config");
    std::fs::write(
        &config,
        format!(
            "Port {port}\nListenAddress 127.0.0.1\nHostKey {h}\nAuthorizedKeysFile {a}\n\
             AllowUsers {user}\nPasswordAuthentication no\nKbdInteractiveAuthentication no\n\
             PubkeyAuthentication yes\nPermitRootLogin prohibit-password\nStrictModes no\n\
             UsePAM no\nPidFile none\n",
            h = d.join("host_key").display(),
            a = d.join("authorized_keys").display()
        ),
    )
    .unwrap();
    let log = std::fs::File::create(d.join("sshd.log")).unwrap();
    let child = Command::new(bin)
        .args(["-D", "-e", "-f"])
        .arg(&config)
        .stdin(Stdio::null())
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .expect("start sshd");
    let proc = Reaped(child);
    assert!(
        wait_until(Duration::from_secs(10), || std::net::TcpStream::connect((
            "127.0.0.1",
            port
        ))
        .is_ok()),
        "sshd does not listen: {}",
        std::fs::read_to_string(d.join("sshd.log")).unwrap_or_default()
    );
    let client = d.join("config");
    std::fs::write(
        &client,
        format!(
            "Host 127.0.0.1 refuses hangs\n  User {user}\n  IdentityFile {k}\n  IdentitiesOnly yes\n  \
             UserKnownHostsFile {kh}\n  GlobalKnownHostsFile /dev/null\n  StrictHostKeyChecking accept-new\n  \
             Host 127.0.0.1\n  Port {port}\n\
             Host refuses\n  HostName 127.0.0.1\n  Port {closed}\n\
             Host hangs\n  HostName 127.0.0.1\n",
            k = d.join("user_key").display(),
            kh = d.join("known_hosts").display(),
            closed = free_port(),
        ),
    )
    .unwrap();
    Sshd {
        _proc: proc,
        port,
        // A short connect timeout of the test's own (options given first win in ssh).
        ssh: format!("ssh -F {} -o ConnectTimeout=3", client.display()),
    }
}

/// A script run as the remote provetop: the test's provetop with the test's directories
/// (sshd gives the remote command a fresh environment).
fn remote_provetop(dir: &Path) -> PathBuf {
    let p = dir.join("remote-provetop");
    std::fs::write(
        &p,
        format!(
            "#!/bin/sh\nexport XDG_RUNTIME_DIR={} XDG_STATE_HOME={}\nexec {} \"$@\"\n",
            sh_quote(&dir.join("run").display().to_string()),
            sh_quote(&dir.join("state").display().to_string()),
            sh_quote(&provetop().display().to_string())
        ),
    )
    .unwrap();
    std::fs::set_permissions(&p, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    p
}

fn local(dir: &Path, ssh: &str, args: &[&str]) -> Output {
    Command::new(provetop())
        .args(args)
        .env("PROVETOP_SSH", ssh)
        .env("XDG_STATE_HOME", dir.join("local-state"))
        .env("XDG_RUNTIME_DIR", dir.join("local-run"))
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// The pids of `ssh` clients whose command line names `marker`.
fn ssh_clients(marker: &str) -> Vec<i32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| {
            let pid: i32 = e.file_name().to_str()?.parse().ok()?;
            let cmd = std::fs::read(e.path().join("cmdline")).ok()?;
            let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
            (cmd.starts_with("ssh ") && cmd.contains(marker) && cmd.contains("remote-bridge"))
                .then_some(pid)
        })
        .collect()
}

fn ready(root: bool) -> Option<PathBuf> {
    let sshd = have("sshd", "openssh-server")?;
    if !root {
        eprintln!("SKIPPED: needs root (the test runs its own sshd)");
        return None;
    }
    Some(sshd)
}

#[test]
fn attach_over_ssh_shows_the_live_screen_switches_the_mode_lists_and_survives_a_killed_connection()
{
    let Some(bin) = ready(nix::unistd::geteuid().is_root()) else {
        return;
    };
    if !have_tmux("remote") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let s = sshd(&bin, dir);
    let rp = remote_provetop(dir);
    let metrics = free_port();
    let _session = serve(
        dir,
        "remote",
        metrics,
        &[
            "--",
            prover().to_str().unwrap(),
            "--daemon",
            "--repeat-every",
            "0.2",
            "--partitions",
            "2",
            "--constraints",
            "1000",
        ],
    );
    assert!(
        wait_until(Duration::from_secs(10), || !statuses(dir).is_empty()),
        "the session never answered"
    );
    let id = statuses(dir)
        .into_keys()
        .next()
        .expect("the session is live");
    // ls over SSH.
    let out = local(
        dir,
        &s.ssh,
        &["ls", "127.0.0.1", "--remote-provetop", rp.to_str().unwrap()],
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("live sessions on 127.0.0.1:") && text.contains(&id),
        "{text}"
    );
    // From the fleet screen: `a` on the row attaches over ssh, read-only; d comes back.
    if let Some(prom_bin) = have("prometheus", "prometheus") {
        let prom = prometheus(&prom_bin, dir, &[metrics], false);
        let cmd = format!(
            "PROVETOP_SSH={} PROVETOP_REMOTE_PROVETOP={} XDG_STATE_HOME={} {} fleet --prometheus {} \
             --refresh 1; sleep 60",
            sh_quote(&s.ssh),
            sh_quote(&rp.display().to_string()),
            sh_quote(&dir.join("local-state").display().to_string()),
            sh_quote(&provetop().display().to_string()),
            prom.url
        );
        let f = Tmux::start("remote-fleet", 160, 30, &cmd);
        f.wait_for("the session's row", Duration::from_secs(20), |x| {
            x.contains(&id)
        });
        f.keys(&["a"]);
        f.wait_for("the attached screen", Duration::from_secs(20), |x| {
            x.contains(&format!("attached to 127.0.0.1:{id} over ssh (read-only"))
        });
        f.keys(&["d"]);
        f.wait_for("the fleet again", Duration::from_secs(10), |x| {
            x.contains("provetop fleet ·")
        });
    }
    // The live screen, with controls.
    let cmd = format!(
        "PROVETOP_SSH={} XDG_STATE_HOME={} {} attach 127.0.0.1:{id} --control --remote-provetop {}; sleep 60",
        sh_quote(&s.ssh),
        sh_quote(&dir.join("local-state").display().to_string()),
        sh_quote(&provetop().display().to_string()),
        sh_quote(&rp.display().to_string())
    );
    let t = Tmux::start("remote", 100, 30, &cmd);
    let screen = t.wait_for("the attached screen", Duration::from_secs(20), |x| {
        x.contains("proof") && x.contains("─ memory ─") && x.contains("over ssh")
    });
    assert!(
        screen.contains(&format!("attached to 127.0.0.1:{id} over ssh")),
        "{screen}"
    );
    t.keys(&["3"]);
    let switched = wait_until(Duration::from_secs(15), || {
        statuses(dir)
            .get(&id)
            .and_then(|st| st.mode.clone())
            .as_deref()
            == Some("sps")
    });
    assert!(
        switched,
        "the mode switch did not reach the prover: {}",
        t.capture()
    );
    t.wait_for("the switch said", Duration::from_secs(5), |x| {
        x.contains("sent: set mode sps")
    });
    // Kill the SSH connection: the prover goes on proving, the screen says so and reconnects.
    let clients = ssh_clients(&s.ssh[7..s.ssh.find(" -o").unwrap_or(s.ssh.len())]);
    assert_eq!(clients.len(), 1, "{clients:?}");
    let done = statuses(dir)[&id].proofs_done;
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(clients[0]),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    t.wait_for(
        "the dropped connection said",
        Duration::from_secs(10),
        |x| x.contains("the remote prover goes on") || x.contains("reconnected to 127.0.0.1"),
    );
    let proving = wait_until(Duration::from_secs(20), || {
        statuses(dir)
            .get(&id)
            .is_some_and(|st| st.proofs_done >= done + 2)
    });
    assert!(
        proving,
        "the prover stopped proving after the connection dropped"
    );
    t.wait_for("the reconnection", Duration::from_secs(20), |x| {
        x.contains("reconnected to 127.0.0.1")
    });
    t.keys(&["d"]);
    // Detached: the prover still runs.
    std::thread::sleep(Duration::from_millis(500));
    assert!(statuses(dir).contains_key(&id));
    let _ = s.port;
}

#[test]
fn ssh_hosts_that_refuse_hang_or_run_another_provetop_are_one_line_each_in_bounded_time() {
    let Some(bin) = ready(nix::unistd::geteuid().is_root()) else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let s = sshd(&bin, dir);
    // A host that accepts and never says a word.
    let silent = TcpListener::bind("127.0.0.1:0").unwrap();
    let hang_port = silent.local_addr().unwrap().port();
    let cfg = dir.join("ssh").join("config");
    let mut c = std::fs::read_to_string(&cfg).unwrap();
    c.push_str(&format!("  Port {hang_port}\n"));
    std::fs::write(&cfg, c).unwrap();
    let script = |name: &str, body: &str| {
        let p = dir.join(name);
        std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&p, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        p.display().to_string()
    };
    let newer = script(
        "newer",
        r#"echo 'provetop-bridge {"proto":1,"version":"9.9.9"}'; cat >/dev/null"#,
    );
    let older = script("older", "echo \"error: unrecognized subcommand 'remote-bridge'\" >&2; echo >&2; echo \"For more information, try '--help'.\" >&2; exit 2");
    for (args, want) in [
        (vec!["ls", "refuses"], "Connection refused"),
        (vec!["ls", "hangs"], "timed out"),
        (
            vec!["ls", "127.0.0.1", "--remote-provetop", &newer],
            "version 9.9.9",
        ),
        (
            vec!["ls", "127.0.0.1", "--remote-provetop", &older],
            "unrecognized subcommand 'remote-bridge'",
        ),
        (
            vec!["attach", "127.0.0.1:s-1", "--remote-provetop", &older],
            "unrecognized subcommand",
        ),
        (
            vec!["ls", "127.0.0.1", "--remote-provetop", "/no/such/provetop"],
            "No such file",
        ),
        (vec!["attach", "--", "-oProxyCommand=x:s-1"], "bad host"),
    ] {
        let t0 = Instant::now();
        let out = local(dir, &s.ssh, &args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: want {want:?}: {err}");
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "{args:?}: {:?}",
            t0.elapsed()
        );
    }
    drop(silent);
}
