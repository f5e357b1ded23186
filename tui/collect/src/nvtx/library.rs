//! Finding the injection library and checking, before the child is started, that the
//! child's NVTX could load it: a 64-bit ELF shared object of this machine's architecture.
//! A library that fails the check is not injected and the session says why (the child runs
//! as it would without provetop).

use std::io::Read;
use std::path::{Path, PathBuf};

/// The library's file name (cargo's name for the `provetop-nvtx` cdylib).
pub const LIBRARY: &str = "libprovetop_nvtx.so";

/// `libprovetop_nvtx.so` next to the running binary (where the build and the packages put
/// it, as they put `provetop-prover`), or why there is none.
pub fn find_library() -> Result<PathBuf, String> {
    let exe =
        std::env::current_exe().map_err(|e| format!("cannot find provetop's own path: {e}"))?;
    let dir = exe
        .parent()
        .ok_or_else(|| format!("{} has no directory", exe.display()))?;
    let p = dir.join(LIBRARY);
    if p.is_file() {
        Ok(p)
    } else {
        Err(format!(
            "{LIBRARY} is not next to provetop ({}); build it (`cargo build -p provetop-nvtx`)",
            dir.display()
        ))
    }
}

/// ELF `e_machine` of the architecture this binary runs on.
const fn host_machine() -> (u16, &'static str) {
    if cfg!(target_arch = "x86_64") {
        (62, "x86_64")
    } else if cfg!(target_arch = "aarch64") {
        (183, "aarch64")
    } else if cfg!(target_arch = "riscv64") {
        (243, "riscv64")
    } else if cfg!(target_arch = "powerpc64") {
        (21, "powerpc64")
    } else {
        (0, std::env::consts::ARCH)
    }
}

fn machine_name(m: u16) -> String {
    match m {
        3 => "i386".into(),
        8 => "mips".into(),
        20 => "powerpc".into(),
        21 => "powerpc64".into(),
        40 => "arm".into(),
        62 => "x86_64".into(),
        183 => "aarch64".into(),
        243 => "riscv".into(),
        other => format!("machine {other}"),
    }
}

/// Why the child's NVTX could not load `path`, or `None` when it looks loadable.
pub fn library_problem(path: &Path) -> Option<String> {
    let shown = path.display();
    let mut head = [0u8; 20];
    let read = std::fs::File::open(path).and_then(|mut f| f.read_exact(&mut head));
    if let Err(e) = read {
        return Some(match e.kind() {
            std::io::ErrorKind::NotFound => format!("{shown} does not exist"),
            std::io::ErrorKind::UnexpectedEof => {
                format!("{shown} is too short to be a shared library (under 20 bytes)")
            }
            _ => format!("cannot read {shown}: {e}"),
        });
    }
    if &head[..4] != b"\x7fELF" {
        return Some(format!(
            "{shown} is not an ELF shared library (bytes 0..4 are {:02x?})",
            &head[..4]
        ));
    }
    if head[4] != 2 {
        return Some(format!(
            "{shown} is a 32-bit library (ELF class {} at byte 4); NVTX_INJECTION64_PATH needs a 64-bit one",
            head[4]
        ));
    }
    let le = head[5] == 1;
    let half = |i: usize| {
        let b = [head[i], head[i + 1]];
        if le {
            u16::from_le_bytes(b)
        } else {
            u16::from_be_bytes(b)
        }
    };
    let (want, want_name) = host_machine();
    let machine = half(18);
    if machine != want {
        return Some(format!(
            "{shown} is built for {} (ELF machine at byte 18), not for this machine's {want_name}",
            machine_name(machine)
        ));
    }
    // ET_DYN: a shared object (an executable or an object file cannot be dlopen'ed).
    if half(16) != 3 {
        return Some(format!(
            "{shown} is not a shared library (ELF type {} at byte 16)",
            half(16)
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_library_of_another_architecture_is_named_with_its_machine() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("lib.so");
        let mut h = vec![0x7f, b'E', b'L', b'F', 2, 1, 1, 0];
        h.resize(16, 0);
        h.extend_from_slice(&3u16.to_le_bytes());
        let other = if host_machine().0 == 183 { 62u16 } else { 183 };
        h.extend_from_slice(&other.to_le_bytes());
        h.resize(64, 0);
        std::fs::write(&p, &h).unwrap();
        let why = library_problem(&p).unwrap();
        assert!(
            why.contains("built for") && why.contains("byte 18"),
            "{why}"
        );
        std::fs::write(&p, b"#!/bin/sh\necho not a library\n").unwrap();
        assert!(library_problem(&p).unwrap().contains("not an ELF"));
        assert!(library_problem(&dir.path().join("none.so"))
            .unwrap()
            .contains("does not exist"));
        // This test binary itself is an ELF of this machine, but an executable... or a
        // position-independent one, which is ET_DYN too: either way not refused for its arch.
        let me = std::env::current_exe().unwrap();
        let said = library_problem(&me);
        assert!(
            said.as_deref().is_none_or(|s| s.contains("ELF type")),
            "{said:?}"
        );
    }
}
