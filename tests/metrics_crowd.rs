//! The metrics endpoint under slow and idle clients: a scraper is answered while many
//! connections send their request a byte a second (slow loris) on the same loopback address.
//! Nothing here reaches beyond loopback; every loop is bounded in count and time.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use provetop_testkit::bins::provetop;

/// A child process killed (and reaped) when the test ends, however it ends.
struct Reaped(Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `provetop run --headless --metrics 127.0.0.1:PORT -- sleep 120`, once it serves.
fn serving(dir: &std::path::Path) -> (Reaped, SocketAddr) {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let child = Command::new(provetop())
        .args(["run", "--headless", "--record"])
        .arg(dir.join("s.ptop"))
        .args(["--metrics", &addr.to_string(), "--", "sleep", "120"])
        .env("XDG_CONFIG_HOME", dir.join("config"))
        .env("XDG_CACHE_HOME", dir.join("cache"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start provetop");
    let child = Reaped(child);
    let start = Instant::now();
    while TcpStream::connect(addr).is_err() {
        assert!(start.elapsed() < Duration::from_secs(30), "no endpoint");
        std::thread::sleep(Duration::from_millis(50));
    }
    (child, addr)
}

/// `n` slow-loris clients on `addr` until `stop`: each sends its request head one byte a
/// second and, when closed, connects again at once. Returns how many reconnects they made.
fn slow_loris(addr: SocketAddr, n: usize, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<usize> {
    std::thread::spawn(move || {
        let head = b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaa\r\n";
        let connect = || TcpStream::connect(addr).ok();
        let mut conns: Vec<(Option<TcpStream>, usize)> = (0..n).map(|_| (connect(), 0)).collect();
        let mut reconnects = 0;
        while !stop.load(Ordering::Relaxed) {
            for (c, sent) in conns.iter_mut() {
                let alive = match c {
                    Some(s) => s.write_all(&head[*sent % head.len()..][..1]).is_ok(),
                    None => false,
                };
                *sent += 1;
                if !alive {
                    *c = connect();
                    *sent = 0;
                    reconnects += 1;
                }
            }
            std::thread::sleep(Duration::from_secs(1));
        }
        reconnects
    })
}

/// One plain HTTP/1.1 scrape, as a scraper sends it: whether a 200 with metrics came back
/// within `timeout`.
fn scrape(addr: SocketAddr, timeout: Duration) -> bool {
    let Ok(mut c) = TcpStream::connect_timeout(&addr, timeout) else {
        return false;
    };
    c.set_read_timeout(Some(timeout)).unwrap();
    c.set_write_timeout(Some(timeout)).unwrap();
    if c.write_all(b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/plain\r\n\r\n")
        .is_err()
    {
        return false;
    }
    let mut out = Vec::new();
    let _ = c.read_to_end(&mut out);
    let text = String::from_utf8_lossy(&out);
    text.starts_with("HTTP/1.1 200") && text.contains("provetop_samples_total")
}

#[test]
fn a_scraper_gets_99_percent_of_its_answers_while_64_slow_loris_clients_hold_connections_open() {
    let dir = tempfile::tempdir().unwrap();
    let (_pt, addr) = serving(dir.path());
    let stop = Arc::new(AtomicBool::new(false));
    // Twice the per-address share of waiting connections, so the longest waiting are closed
    // and the clients reconnect all along.
    let loris = slow_loris(addr, 64, stop.clone());
    std::thread::sleep(Duration::from_secs(3));
    let tries = 100;
    let mut answered = 0;
    for _ in 0..tries {
        if scrape(addr, Duration::from_secs(5)) {
            answered += 1;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    stop.store(true, Ordering::Relaxed);
    let reconnects = loris.join().unwrap();
    assert!(
        answered * 100 >= tries * 99,
        "only {answered} of {tries} scrapes answered beside 64 slow clients"
    );
    // The slow clients were really there all along: closed for waiting too long, they came back.
    assert!(reconnects >= 32, "{reconnects} reconnects");
}
