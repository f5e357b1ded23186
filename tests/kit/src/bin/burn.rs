//! `provetop-burn`: a test helper that uses known amounts of CPU and storage I/O, so the
//! sampler's usage readings can be checked against ground truth.
//!
//! It prints each step's bounds on stdout as `STEP START_NS END_NS` (CLOCK_MONOTONIC, the
//! clock of provetop's records), e.g. `burn 123 456`, `write 789 1011` and `read 1213 1415`,
//! and with --report-ms its own CPU time as it goes, `cpu MONO_NS CPU_NS`
//! (CLOCK_PROCESS_CPUTIME_ID): the ground truth for any interval of its life, whatever else
//! competes for the cores.

use std::fs::{self, File, OpenOptions};
use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use clap::Parser;
use nix::fcntl::{posix_fadvise, PosixFadviseAdvice};
use nix::time::{clock_gettime, ClockId};

/// Use known amounts of CPU and storage I/O, for testing provetop's usage readings.
///
/// In order: sleep --before-ms; with --cores, spin --cores threads for --secs seconds (each
/// busy --duty of every 10 ms); with --io-mib and --dir, write that many MiB to a new file in
/// --dir, fsync it, drop it from the page cache and read it back whole (so both count as
/// storage bytes in /proc/self/io), then delete it; then sleep --after-ms and exit 0.
#[derive(Parser, Debug)]
#[command(name = "provetop-burn", verbatim_doc_comment)]
struct Args {
    /// Spinning threads.
    #[arg(long, default_value_t = 0)]
    cores: u32,
    /// How long they spin.
    #[arg(long, default_value_t = 2.0)]
    secs: f64,
    /// Share of each 10 ms a thread spins (the rest it sleeps).
    #[arg(long, default_value_t = 1.0)]
    duty: f64,
    /// MiB written then read back.
    #[arg(long, default_value_t = 0)]
    io_mib: usize,
    /// Directory for the file (on a real disk: tmpfs counts no storage bytes).
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Sleep before the first step (so a sampler sees the process before it starts).
    #[arg(long, default_value_t = 1000)]
    before_ms: u64,
    /// Sleep after the last step (so a sampler reads the counters once more).
    #[arg(long, default_value_t = 1500)]
    after_ms: u64,
    /// Print `cpu MONO_NS CPU_NS` this often, from start to exit (0: never).
    #[arg(long, default_value_t = 0)]
    report_ms: u64,
}

fn now_ns() -> u64 {
    let t = clock_gettime(ClockId::CLOCK_MONOTONIC).expect("CLOCK_MONOTONIC");
    t.tv_sec() as u64 * 1_000_000_000 + t.tv_nsec() as u64
}

fn cpu_ns() -> u64 {
    let t = clock_gettime(ClockId::CLOCK_PROCESS_CPUTIME_ID).expect("CLOCK_PROCESS_CPUTIME_ID");
    t.tv_sec() as u64 * 1_000_000_000 + t.tv_nsec() as u64
}

fn report() {
    let (cpu, t) = (cpu_ns(), now_ns());
    let mut out = std::io::stdout().lock();
    writeln!(out, "cpu {t} {cpu}").expect("stdout");
    out.flush().expect("stdout");
}

fn say(step: &str, start: u64, end: u64) {
    let mut out = std::io::stdout().lock();
    writeln!(out, "{step} {start} {end}").expect("stdout");
    out.flush().expect("stdout");
}

fn spin(secs: f64, duty: f64) {
    let end = Instant::now() + Duration::from_secs_f64(secs);
    let slot = Duration::from_millis(10);
    let busy = slot.mul_f64(duty.clamp(0.0, 1.0));
    let mut x = 0u64;
    loop {
        let s = Instant::now();
        if s >= end {
            break;
        }
        while s.elapsed() < busy {
            x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
        }
        if busy < slot {
            std::thread::sleep(slot - s.elapsed().min(slot));
        }
    }
}

fn io(dir: PathBuf, mib: usize) {
    let path = dir.join(format!("provetop-burn-{}.bin", std::process::id()));
    let chunk = vec![0x5au8; 1 << 20];
    let start = now_ns();
    let mut f = OpenOptions::new()
        .create_new(true)
        .write(true)
        .open(&path)
        .expect("create the file");
    for _ in 0..mib {
        f.write_all(&chunk).expect("write");
    }
    f.sync_all().expect("fsync");
    say("write", start, now_ns());
    posix_fadvise(f.as_raw_fd(), 0, 0, PosixFadviseAdvice::POSIX_FADV_DONTNEED).expect("fadvise");
    drop(f);
    let start = now_ns();
    let mut f = File::open(&path).expect("open the file");
    let mut buf = vec![0u8; 1 << 20];
    let mut n = 0;
    loop {
        let k = f.read(&mut buf).expect("read");
        if k == 0 {
            break;
        }
        n += k;
    }
    assert_eq!(n, mib << 20);
    say("read", start, now_ns());
    fs::remove_file(&path).expect("remove the file");
}

fn main() {
    let a = Args::parse();
    if a.report_ms > 0 {
        let every = Duration::from_millis(a.report_ms);
        std::thread::spawn(move || loop {
            report();
            std::thread::sleep(every);
        });
    }
    std::thread::sleep(Duration::from_millis(a.before_ms));
    if a.cores > 0 {
        let start = now_ns();
        let threads: Vec<_> = (0..a.cores)
            .map(|_| {
                let (secs, duty) = (a.secs, a.duty);
                std::thread::spawn(move || spin(secs, duty))
            })
            .collect();
        for t in threads {
            t.join().expect("a spinning thread");
        }
        say("burn", start, now_ns());
    }
    if a.io_mib > 0 {
        io(a.dir.expect("--io-mib needs --dir"), a.io_mib);
    }
    std::thread::sleep(Duration::from_millis(a.after_ms));
    if a.report_ms > 0 {
        report();
    }
}
