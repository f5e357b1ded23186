//! Where a session's socket and lock live, what a session is called, and whether the
//! supervisor behind a socket still lives ([`probe`]: a dead one's socket is removed).
//!
//! A session's files are named by [`key`], a hash of its id, so that a descriptive session
//! name never makes the socket's path longer than a Unix socket allows; the lock file holds
//! the id and the session file ([`Described`]), so that `ls` and `attach` can name them.

use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// The longest path a Unix socket can be bound to on Linux (`sun_path` less its NUL).
const SUN_PATH_MAX: usize = 107;

/// Where session sockets live: `$XDG_RUNTIME_DIR/provetop`, else the state directory's
/// `provetop/sockets`. An existing directory is checked ([`check_dir`]): one that is not
/// this user's, or that others may write to, is an error.
pub fn socket_dir() -> anyhow::Result<PathBuf> {
    let dir = socket_dir_path()?;
    if std::fs::symlink_metadata(&dir).is_ok() {
        check_dir(&dir)?;
    }
    Ok(dir)
}

fn socket_dir_path() -> anyhow::Result<PathBuf> {
    if let Some(d) = std::env::var_os("XDG_RUNTIME_DIR").filter(|d| !d.is_empty()) {
        return Ok(PathBuf::from(d).join("provetop"));
    }
    let base =
        provetop_collect::xdg::base_dir("XDG_STATE_HOME", ".local/state").ok_or_else(|| {
            anyhow::anyhow!("neither XDG_RUNTIME_DIR, XDG_STATE_HOME nor HOME is set")
        })?;
    Ok(base.join("provetop").join("sockets"))
}

/// Create the socket directory `dir` and its missing parents, each made 0700 whatever the
/// umask; directories that exist already are not changed (`$XDG_RUNTIME_DIR` may be a
/// shared one), except `dir` itself when it is ours and readable by others. Then
/// [`check_dir`].
pub fn make_dir(dir: &Path) -> anyhow::Result<()> {
    provetop_collect::xdg::create_private(dir).map_err(|e| {
        anyhow::anyhow!("cannot create the socket directory {}: {e}", dir.display())
    })?;
    check_dir(dir)?;
    let m = std::fs::symlink_metadata(dir)?;
    if m.mode() & 0o077 != 0 {
        // Ours and not a link (checked): an older provetop made it under the umask.
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
            .map_err(|e| anyhow::anyhow!("cannot make {} private: {e}", dir.display()))?;
    }
    Ok(())
}

/// Refuse a socket directory that is a link, not a directory, not this user's, or writable
/// by its group or others: anyone who can write there could delete a live socket or plant
/// one.
pub fn check_dir(dir: &Path) -> anyhow::Result<()> {
    let refuse =
        |why: String| anyhow::anyhow!("refusing the socket directory {}: {why}", dir.display());
    let m = std::fs::symlink_metadata(dir).map_err(|e| refuse(e.to_string()))?;
    if m.file_type().is_symlink() {
        return Err(refuse("it is a symbolic link".into()));
    }
    if !m.is_dir() {
        return Err(refuse("it is not a directory".into()));
    }
    let me = nix::unistd::geteuid().as_raw();
    if m.uid() != me {
        return Err(refuse(format!(
            "it belongs to uid {}, not to this user (uid {me})",
            m.uid()
        )));
    }
    if m.mode() & 0o022 != 0 {
        return Err(refuse(format!(
            "others can write to it (mode {:04o}); it must be this user's alone (chmod 700)",
            m.mode() & 0o7777
        )));
    }
    Ok(())
}

/// The name session `id`'s files go by in the socket directory: 16 hex digits of its
/// FNV-1a hash, short whatever the id (a socket's path has at most [`SUN_PATH_MAX`] bytes),
/// and the same from one build to the next (unlike std's hasher).
pub fn key(id: &str) -> String {
    let h = id.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    });
    format!("{h:016x}")
}

/// The socket of session `id` in `dir`.
pub fn socket_path(dir: &Path, id: &str) -> PathBuf {
    key_socket(dir, &key(id))
}

pub(super) fn key_socket(dir: &Path, key: &str) -> PathBuf {
    dir.join(format!("{key}.sock"))
}

fn key_lock(dir: &Path, key: &str) -> PathBuf {
    dir.join(format!("{key}.lock"))
}

/// The lock file beside session `id`'s socket, flocked for its supervisor's life.
pub(super) fn lock_path(dir: &Path, id: &str) -> PathBuf {
    key_lock(dir, &key(id))
}

/// Whether `path` fits in a Unix socket address; a one-line error saying what to do if not.
pub(super) fn check_length(path: &Path) -> anyhow::Result<()> {
    let n = path.as_os_str().len();
    if n > SUN_PATH_MAX {
        anyhow::bail!(
            "{}: {n} bytes, longer than a Unix socket's path may be ({SUN_PATH_MAX}): set \
             XDG_RUNTIME_DIR to a shorter directory",
            path.display()
        );
    }
    Ok(())
}

/// Open `path` without following a link at it (`O_NOFOLLOW`), creating it 0600 if asked; it
/// must then be a regular file of this user with no other name (not a planted hard link).
pub(super) fn open_private(path: &Path, create: bool) -> std::io::Result<std::fs::File> {
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(create)
        .create(create)
        .truncate(false)
        .mode(0o600)
        .custom_flags(nix::fcntl::OFlag::O_NOFOLLOW.bits() | nix::fcntl::OFlag::O_CLOEXEC.bits())
        .open(path)?;
    let m = f.metadata()?;
    let me = nix::unistd::geteuid().as_raw();
    if !m.is_file() || m.uid() != me || m.nlink() != 1 {
        return Err(std::io::Error::other(
            "not a private regular file of this user (a planted file or link?)",
        ));
    }
    Ok(f)
}

/// What a supervisor writes in its lock file: its session's id and file.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct Described {
    pub id: String,
    pub session: Option<PathBuf>,
}

/// What the lock file of the session named `key` says, when there is one to read.
pub fn described(dir: &Path, key: &str) -> Option<Described> {
    use std::io::Read;
    let f = open_private(&key_lock(dir, key), false).ok()?;
    let mut s = String::new();
    f.take(64 * 1024).read_to_string(&mut s).ok()?;
    serde_json::from_str(&s).ok()
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

/// Whether session `id` in `dir` has a live supervisor; see [`probe_key`].
pub fn probe(dir: &Path, id: &str) -> Probe {
    probe_key(dir, &key(id))
}

/// Whether the session whose files are named `key` in `dir` has a live supervisor: its lock
/// is held, or (the lock file lost: deleted by a cleaner) its socket accepts a connection.
/// Only a socket that is neither is removed, with its lock: a live supervisor's never is.
pub fn probe_key(dir: &Path, key: &str) -> Probe {
    let sock = key_socket(dir, key);
    let lock = key_lock(dir, key);
    let Ok(meta) = std::fs::symlink_metadata(&sock) else {
        return Probe::Missing;
    };
    let me = nix::unistd::geteuid().as_raw();
    if meta.uid() != me {
        return Probe::Foreign { uid: meta.uid() };
    }
    let held = match open_private(&lock, false) {
        Ok(f) => match nix::fcntl::Flock::lock(f, nix::fcntl::FlockArg::LockSharedNonblock) {
            Ok(_unlocked_on_drop) => false,
            Err((_, nix::errno::Errno::EWOULDBLOCK)) => true,
            Err(_) => false,
        },
        Err(_) => false,
    };
    use std::os::unix::fs::FileTypeExt;
    // A connection is tried only at a real socket of ours whose lock is not held: a
    // refused one (nobody listens) means its supervisor died.
    let accepting =
        || meta.file_type().is_socket() && std::os::unix::net::UnixStream::connect(&sock).is_ok();
    if held || accepting() {
        Probe::Live(sock)
    } else {
        let _ = std::fs::remove_file(&sock);
        let _ = std::fs::remove_file(&lock);
        Probe::Stale
    }
}
