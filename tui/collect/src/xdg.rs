//! Where the XDG base directory spec puts provetop's files: `$VAR`, else `$HOME/<fallback>`
//! (an empty variable counts as unset, as the spec says).

use std::path::{Path, PathBuf};

/// `$var` when set and not empty, else `$HOME/home_relative`; None when neither is set.
pub fn base_dir(var: &str, home_relative: &str) -> Option<PathBuf> {
    std::env::var_os(var)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|v| !v.is_empty())
                .map(|h| PathBuf::from(h).join(home_relative))
        })
}

/// Create `dir` and its missing parents, each made 0700 whatever the umask, and return the
/// directories it created (parents first). Directories that exist already are left as they
/// are: `$XDG_RUNTIME_DIR` may be a shared one that is not ours to change.
pub fn create_private(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    let mut missing = Vec::new();
    let mut d = dir;
    while std::fs::symlink_metadata(d).is_err() {
        missing.push(d.to_path_buf());
        match d.parent() {
            Some(p) if !p.as_os_str().is_empty() => d = p,
            _ => break,
        }
    }
    missing.reverse();
    let mut made = Vec::new();
    for d in missing {
        match std::fs::DirBuilder::new().mode(0o700).create(&d) {
            // The umask may have taken bits the mode asked for; never added any.
            Ok(()) => std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o700))?,
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && d.is_dir() => continue,
            Err(e) => return Err(e),
        }
        made.push(d);
    }
    Ok(made)
}
