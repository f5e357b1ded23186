//! `provetop-cost PROGRAM [ARGS...]`: run a program to its end and write what it cost as the
//! last line of standard error, `provetop-cost: peak_kib=N cpu_s=X code=C` (code -1: killed
//! by a signal); the exit status is the program's.
//!
//! The peak is the kernel's `ru_maxrss` of a child forked from this small process. A test
//! process forking the program itself would lend it its own resident size: exec keeps the
//! high-water mark of the image it replaces, so the program's peak would read as at least the
//! test's.

use std::process::Command;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some((prog, rest)) = args.split_first() else {
        eprintln!("usage: provetop-cost PROGRAM [ARGS...]");
        std::process::exit(2);
    };
    let child = match Command::new(prog).args(rest).spawn() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("provetop-cost: {prog}: {e}");
            std::process::exit(127);
        }
    };
    let pid = child.id() as nix::libc::pid_t;
    let mut status = 0;
    // SAFETY: an all-zero `rusage` is a valid value of the plain C struct.
    let mut ru: nix::libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: wait4 writes only the status and the rusage this function owns; `pid` is our
    // own child, which `std` never waits for (the `Child` is dropped without waiting).
    let r = unsafe { nix::libc::wait4(pid, &mut status, 0, &mut ru) };
    if r != pid {
        eprintln!("provetop-cost: wait4: {}", std::io::Error::last_os_error());
        std::process::exit(125);
    }
    drop(child);
    let secs = |t: nix::libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    let code = if nix::libc::WIFEXITED(status) {
        nix::libc::WEXITSTATUS(status)
    } else {
        -1
    };
    eprintln!(
        "provetop-cost: peak_kib={} cpu_s={:.3} code={code}",
        ru.ru_maxrss,
        secs(ru.ru_utime) + secs(ru.ru_stime)
    );
    std::process::exit(code.max(0));
}
