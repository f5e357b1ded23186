//! Where a session's socket and lock live, what a session is called, and whether the
//! supervisor behind a socket still lives ([`probe`]: a stale socket is removed, never
//! connected to).

use std::path::{Path, PathBuf};

/// Where session sockets live: `$XDG_RUNTIME_DIR/provetop`, else the state directory's
/// `provetop/sockets`.
pub fn socket_dir() -> anyhow::Result<PathBuf> {
    if let Some(d) = std::env::var_os("XDG_RUNTIME_DIR").filter(|d| !d.is_empty()) {
        return Ok(PathBuf::from(d).join("provetop"));
    }
    let base =
        provetop_collect::xdg::base_dir("XDG_STATE_HOME", ".local/state").ok_or_else(|| {
            anyhow::anyhow!("neither XDG_RUNTIME_DIR, XDG_STATE_HOME nor HOME is set")
        })?;
    Ok(base.join("provetop").join("sockets"))
}

/// The socket of session `id` in `dir`.
pub fn socket_path(dir: &Path, id: &str) -> PathBuf {
    dir.join(format!("{id}.sock"))
}

/// The lock file beside session `id`'s socket, flocked for its supervisor's life.
pub(super) fn lock_path(dir: &Path, id: &str) -> PathBuf {
    dir.join(format!("{id}.lock"))
}

/// The id of the session this process records to `record`: the file's stem and the
/// supervisor's pid (`s-4242`), so that two sessions recording to `s.ptop` in two
/// directories differ. A default file name (`provetop-DATE-TIME-PID`, unique already) is
/// kept as it is.
pub fn session_id(record: &Path) -> String {
    let pid = std::process::id();
    let stem = record
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "provetop".into());
    // Only characters that need no quoting in a shell or a file name.
    let stem: String = stem
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    if stem.ends_with(&format!("-{pid}")) || is_default_name(&stem) {
        stem
    } else {
        format!("{stem}-{pid}")
    }
}

/// `provetop-20261202-013000-4242`: what [`crate::settings::default_session_path`] names.
fn is_default_name(stem: &str) -> bool {
    let Some(rest) = stem.strip_prefix("provetop-") else {
        return false;
    };
    let parts: Vec<&str> = rest.split('-').collect();
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    matches!(parts.as_slice(), [d, t, p] if d.len() == 8 && t.len() == 6 && digits(d) && digits(t) && digits(p))
}

/// What [`probe`] found at a session's socket.
#[derive(Debug)]
pub enum Probe {
    /// A live supervisor holds it.
    Live(PathBuf),
    /// Its supervisor is gone: the socket and lock were removed.
    Stale,
    /// No such session.
    Missing,
    /// It belongs to another user.
    Foreign { uid: u32 },
}

/// Whether session `id` in `dir` has a live supervisor. A stale socket is removed here and
/// never connected to.
pub fn probe(dir: &Path, id: &str) -> Probe {
    use std::os::unix::fs::MetadataExt;
    let sock = socket_path(dir, id);
    let lock = lock_path(dir, id);
    let Ok(meta) = std::fs::symlink_metadata(&sock) else {
        return Probe::Missing;
    };
    let me = nix::unistd::geteuid().as_raw();
    if meta.uid() != me {
        return Probe::Foreign { uid: meta.uid() };
    }
    let held = match std::fs::File::open(&lock) {
        Ok(f) => match nix::fcntl::Flock::lock(f, nix::fcntl::FlockArg::LockSharedNonblock) {
            Ok(_unlocked_on_drop) => false,
            Err((_, nix::errno::Errno::EWOULDBLOCK)) => true,
            Err(_) => false,
        },
        Err(_) => false,
    };
    if held {
        Probe::Live(sock)
    } else {
        let _ = std::fs::remove_file(&sock);
        let _ = std::fs::remove_file(&lock);
        Probe::Stale
    }
}
