//! The per-process counters behind a [`Usage`](provetop_shared::record::Usage) reading:
//! `/proc/PID/stat` (CPU time, major faults, threads, parent), `/proc/PID/io` (storage
//! bytes) and `/proc/PID/comm`, each parsed from its text so the parsers can be tested on
//! real files.
//!
//! Contract: a field that is missing or unparsable makes its value `None` (never 0); `stat`'s
//! fields are read through [`StatFields`], which skips the command name by its last `)`.

use std::io;

use crate::procfile::{leading_u64, KeptOpen, StatFields};

/// What a [`Usage`](provetop_shared::record::Usage) reading takes from `/proc/PID/stat`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stat {
    /// Field 4.
    pub ppid: u32,
    /// utime + stime (fields 14 and 15), clock ticks, of every thread of the process.
    pub cpu_ticks: u64,
    /// Field 12: major page faults of the process.
    pub majflt: u64,
    /// Field 20.
    pub threads: u32,
}

/// Parse a `/proc/PID/stat` text; `None` when it is cut short or a field is not a number.
pub fn parse_stat(text: &[u8]) -> Option<Stat> {
    let f = StatFields::parse(text)?;
    Some(Stat {
        ppid: f.num(4)?,
        cpu_ticks: f.num::<u64>(14)?.checked_add(f.num(15)?)?,
        majflt: f.num(12)?,
        threads: f.num(20)?,
    })
}

/// `/proc/PID/io`'s storage counters: bytes the process made the kernel read from and write
/// to storage (page cache hits and tmpfs do not count; a write counts when it dirties a page).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Io {
    pub read_bytes: u64,
    pub write_bytes: u64,
}

/// Parse a `/proc/PID/io` text; `None` when either line is missing.
pub fn parse_io(text: &[u8]) -> Option<Io> {
    let (mut read, mut write) = (None, None);
    for line in text.split(|&b| b == b'\n') {
        if let Some(v) = line.strip_prefix(b"read_bytes:") {
            read = digits(v);
        } else if let Some(v) = line.strip_prefix(b"write_bytes:") {
            write = digits(v);
        }
    }
    Some(Io {
        read_bytes: read?,
        write_bytes: write?,
    })
}

/// The number after the whitespace, `None` when there is none.
fn digits(v: &[u8]) -> Option<u64> {
    let t = v.trim_ascii_start();
    t.first()
        .is_some_and(u8::is_ascii_digit)
        .then(|| leading_u64(t))
}

/// A comm text without its newline, invalid UTF-8 replaced (shown inert where it is drawn).
pub fn parse_comm(text: &[u8]) -> String {
    let t = text.strip_suffix(b"\n").unwrap_or(text);
    String::from_utf8_lossy(t).into_owned()
}

/// `/proc/PID/io`, which another user's process does not let us read.
#[derive(Debug)]
pub enum IoFile {
    Open(KeptOpen),
    /// The open or a read failed for want of permission: unknown for this process's life.
    Denied,
}

/// The files of one process, kept open: the open `stat` fd also pins the process's identity
/// (a read fails with ESRCH once it is gone, never reading a recycled pid).
#[derive(Debug)]
pub struct ProcFiles {
    stat: KeptOpen,
    io: IoFile,
    comm: KeptOpen,
}

impl ProcFiles {
    /// Open the files of `pid`; fails only when the process is gone (or `stat` cannot be read).
    pub fn open(pid: u32) -> io::Result<Self> {
        Self::open_at(&format!("/proc/{pid}"))
    }

    /// Open `dir/{stat,io,comm}` (a process directory; tests pass others).
    pub fn open_at(dir: &str) -> io::Result<Self> {
        let stat = KeptOpen::open(format!("{dir}/stat"), 1024)?;
        let comm = KeptOpen::open(format!("{dir}/comm"), 64)?;
        let io = match KeptOpen::open(format!("{dir}/io"), 512) {
            Ok(f) => IoFile::Open(f),
            Err(e) if denied(&e) => IoFile::Denied,
            Err(e) => return Err(e),
        };
        Ok(ProcFiles { stat, io, comm })
    }

    /// The current `stat`; an error once the process is gone.
    pub fn stat(&mut self) -> io::Result<Stat> {
        let t = self.stat.read()?;
        parse_stat(t).ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "short stat"))
    }

    /// The current I/O counters: `Ok(None)` when they cannot be read (permission, or a text
    /// without the counters), an error once the process is gone.
    pub fn io(&mut self) -> io::Result<Option<Io>> {
        let IoFile::Open(f) = &mut self.io else {
            return Ok(None);
        };
        match f.read() {
            Ok(t) => Ok(parse_io(t)),
            // The permission is checked again on every read (a setuid exec changes it).
            Err(e) if denied(&e) => {
                self.io = IoFile::Denied;
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }

    /// Treat `io` as refused from now on (as an EACCES does; for tests running as root).
    #[cfg(test)]
    pub(crate) fn deny_io(&mut self) {
        self.io = IoFile::Denied;
    }

    /// The current command name (it changes on exec).
    pub fn comm(&mut self) -> io::Result<String> {
        self.comm.read().map(parse_comm)
    }
}

fn denied(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::PermissionDenied
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A real stat line (a `provetop-prover` under `sh`), the comm rewritten per test.
    fn stat_of(comm: &str) -> Vec<u8> {
        format!(
            "4242 ({comm}) S 4200 4242 4200 34816 4242 4194560 18921 0 7 0 1234 56 0 0 20 0 \
             17 0 987654 9876543210 123456 18446744073709551615 1 1 0 0 0 0 0 4096 1260 0 0 0 \
             17 1 0 0 0 0 0\n"
        )
        .into_bytes()
    }

    #[test]
    fn a_stat_line_gives_the_parent_cpu_ticks_major_faults_and_threads() {
        let s = parse_stat(&stat_of("provetop-prover")).unwrap();
        assert_eq!(
            s,
            Stat {
                ppid: 4200,
                cpu_ticks: 1234 + 56,
                majflt: 7,
                threads: 17
            }
        );
    }

    #[test]
    fn a_comm_with_spaces_and_parentheses_does_not_shift_the_fields() {
        let want = parse_stat(&stat_of("p")).unwrap();
        for comm in [
            "a b",
            "x) S 1 2 3 (y",
            "))",
            "(",
            ") 9 9 9 9 9 9 9 9 9 9 9 9 9 9 9 9",
        ] {
            assert_eq!(parse_stat(&stat_of(comm)), Some(want), "{comm:?}");
        }
    }

    #[test]
    fn a_stat_line_cut_short_or_garbled_is_unknown_not_zero() {
        let full = stat_of("p");
        let cut = &full[..full.iter().position(|&b| b == b'1').unwrap() + 30];
        assert_eq!(parse_stat(cut), None);
        assert_eq!(parse_stat(b"4242 (p S 1 2"), None, "no closing parenthesis");
        assert_eq!(parse_stat(b""), None);
        let text = String::from_utf8(full).unwrap().replace(" 1234 ", " x ");
        assert_eq!(parse_stat(text.as_bytes()), None);
    }

    #[test]
    fn our_own_stat_file_parses_with_our_parent_and_threads() {
        let s = parse_stat(&std::fs::read("/proc/self/stat").unwrap()).unwrap();
        assert_eq!(s.ppid, std::os::unix::process::parent_id());
        assert!(s.threads >= 1);
    }

    #[test]
    fn an_io_file_gives_the_storage_bytes_not_the_syscall_bytes() {
        let text = b"rchar: 323934931\nwchar: 323929600\nsyscr: 632687\nsyscw: 632675\n\
                     read_bytes: 4096\nwrite_bytes: 323932160\ncancelled_write_bytes: 0\n";
        assert_eq!(
            parse_io(text),
            Some(Io {
                read_bytes: 4096,
                write_bytes: 323932160
            })
        );
    }

    #[test]
    fn an_io_file_without_its_storage_lines_is_unknown_not_zero() {
        assert_eq!(parse_io(b"rchar: 1\nwchar: 2\nsyscr: 3\nsyscw: 4\n"), None);
        assert_eq!(parse_io(b"read_bytes: 4096\n"), None);
        assert_eq!(parse_io(b"read_bytes: \nwrite_bytes: 5\n"), None);
        assert_eq!(parse_io(b""), None);
    }

    #[test]
    fn a_comm_loses_its_newline_and_keeps_its_spaces_and_parentheses() {
        assert_eq!(parse_comm(b"tokio (rt) 1\n"), "tokio (rt) 1");
        assert_eq!(parse_comm(b"\xffbad\n"), "\u{fffd}bad");
    }

    /// Reads pid 1's files as a user other than root: this process when it is not root, else
    /// one thread of it that gave up root through the raw `setresuid` syscall (credentials
    /// are per thread in Linux; libc's wrapper would change every thread).
    fn as_another_user<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
        std::thread::spawn(move || {
            // SAFETY: geteuid cannot fail and touches no memory.
            if unsafe { nix::libc::geteuid() } == 0 {
                let nobody = 65534 as nix::libc::c_long;
                // SAFETY: a plain syscall with integer arguments; it changes only this thread,
                // which ends right after.
                let r =
                    unsafe { nix::libc::syscall(nix::libc::SYS_setresuid, nobody, nobody, nobody) };
                assert_eq!(r, 0, "setresuid: {}", io::Error::last_os_error());
            }
            f()
        })
        .join()
        .unwrap()
    }

    #[test]
    fn another_users_io_file_is_unknown_while_its_stat_and_comm_still_read() {
        let (stat, comm, io) = as_another_user(|| {
            let mut f = ProcFiles::open(1).expect("pid 1's stat and comm are world-readable");
            (f.stat(), f.comm(), f.io())
        });
        assert_eq!(stat.unwrap().ppid, 0, "pid 1's parent");
        assert!(!comm.unwrap().is_empty());
        assert_eq!(io.unwrap(), None, "EACCES is unknown, not zero");
    }

    #[test]
    fn our_own_process_files_read_and_fail_once_the_process_is_gone() {
        let mut f = ProcFiles::open(std::process::id()).unwrap();
        assert!(f.stat().unwrap().cpu_ticks < u64::MAX);
        assert!(!f.comm().unwrap().is_empty());
        assert!(f.io().unwrap().is_some(), "our own io file is readable");
        let mut child = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .unwrap();
        let mut g = ProcFiles::open(child.id()).unwrap();
        // Until the child has exec'd, its comm is still the forking thread's name.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while g.comm().unwrap() != "sleep" && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert_eq!(g.comm().unwrap(), "sleep");
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(g.stat().is_err(), "a reaped process reads as gone");
    }
}
