//! A supervised child never outlives provetop: not after a panic (the app's panic hook calls
//! `kill_all_children`), not after provetop is SIGKILLed (parent-death signal).
//!
//! Its own test binary: `kill_all_children` and the panic hook are process-wide.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use provetop_collect::supervisor::{self, ChildSpec};
use provetop_testkit::procs::{alive, wait_until};
use tokio::sync::mpsc;

/// Whether `pid` is gone (or a zombie) within 3 s.
fn wait_dead(pid: u32) -> bool {
    wait_until(Duration::from_secs(3), || !alive(pid))
}

fn sleeper() -> ChildSpec {
    ChildSpec {
        argv: vec!["sleep".into(), "1000".into()],
        ..ChildSpec::default()
    }
}

#[test]
fn panic_hook_kills_every_child() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let (tx, _rx) = mpsc::channel(64);
    let (h1, h2) = rt.block_on(async {
        (
            supervisor::spawn(sleeper(), tx.clone()).await.unwrap(),
            supervisor::spawn(sleeper(), tx).await.unwrap(),
        )
    });
    let pids = [h1.pid().unwrap(), h2.pid().unwrap()];
    let old = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| provetop_collect::kill_all_children()));
    let r = std::thread::spawn(|| panic!("UI bug")).join();
    std::panic::set_hook(old);
    assert!(r.is_err());
    for pid in pids {
        assert!(wait_dead(pid), "child {pid} survived the panic");
    }
    // Handles still behave after their children were killed under them.
    rt.block_on(async {
        let mut h1 = h1;
        let info = tokio::time::timeout(Duration::from_secs(5), h1.wait())
            .await
            .unwrap();
        assert_eq!(info.signal, Some(9));
    });
}

/// Entry point of the helper process for `child_dies_with_its_supervisor`.
#[test]
#[ignore = "helper process, started by child_dies_with_its_supervisor"]
fn pdeathsig_helper() {
    if std::env::var_os("PROVETOP_PDEATH_HELPER").is_none() {
        return;
    }
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let (tx, _rx) = mpsc::channel(64);
        let h = supervisor::spawn(sleeper(), tx).await.unwrap();
        println!("CHILD {}", h.pid().unwrap());
        tokio::time::sleep(Duration::from_secs(1000)).await;
    });
}

#[test]
fn child_dies_with_its_supervisor() {
    let mut helper = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "pdeathsig_helper",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("PROVETOP_PDEATH_HELPER", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let out = BufReader::new(helper.stdout.take().unwrap());
    let mut child = None;
    for line in out.lines() {
        let line = line.unwrap();
        if let Some(p) = line.split_whitespace().skip_while(|w| *w != "CHILD").nth(1) {
            child = Some(p.parse::<u32>().unwrap());
            break;
        }
    }
    let child = child.expect("helper never reported its child");
    assert!(alive(child));
    // kill -9: no destructor, no panic hook; only the parent-death signal is left.
    helper.kill().unwrap();
    helper.wait().unwrap();
    assert!(
        wait_dead(child),
        "child {child} outlived its SIGKILLed supervisor"
    );
}
