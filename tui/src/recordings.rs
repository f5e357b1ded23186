//! The recordings `provetop ls` lists: the files of the default session folder, and every
//! file a session recorded to with `--record` elsewhere, which each session registers when
//! it starts.
//!
//! Contract: the register is `$XDG_STATE_HOME/provetop/recordings`, one absolute path per
//! line, appended (`O_APPEND`, one write per line, so sessions starting together do not
//! mix their lines); once it holds more than [`KEEP`] lines the oldest are dropped (a
//! rewrite to a temporary file, renamed over it). A path whose file is gone is skipped when
//! listing. A path that is not UTF-8 or holds a newline is not registered (it could not be
//! read back as one line); the default folder's own files are never registered (they are
//! listed from the folder). Registering is best effort: a failure costs the session
//! nothing but its line in `ls`.

use std::io::Write;
use std::path::{Path, PathBuf};

use provetop_shared::session::parts;

/// Most paths the register keeps.
pub const KEEP: usize = 500;

/// A recording as `ls` lists it.
#[derive(Debug, Clone, PartialEq)]
pub struct Recording {
    pub path: PathBuf,
    pub size: u64,
    /// Seconds since its last change (whole seconds).
    pub age_s: f64,
    /// Its last change, unix seconds.
    pub modified_unix_s: u64,
}

/// The state folder of provetop, when there is one.
fn state_dir() -> Option<PathBuf> {
    Some(provetop_collect::xdg::base_dir("XDG_STATE_HOME", ".local/state")?.join("provetop"))
}

/// The default session folder, when there is one.
pub fn sessions_dir() -> Option<PathBuf> {
    Some(state_dir()?.join("sessions"))
}

fn register_path() -> Option<PathBuf> {
    Some(state_dir()?.join("recordings"))
}

/// Register `record` (a session about to record there) for `ls`.
pub fn remember(record: &Path) {
    let Some(reg) = register_path() else {
        return;
    };
    let abs = std::path::absolute(record).unwrap_or_else(|_| record.to_path_buf());
    if sessions_dir().is_some_and(|d| abs.parent() == Some(d.as_path())) {
        return;
    }
    let Some(text) = abs.to_str().filter(|t| !t.contains('\n')) else {
        return;
    };
    if let Some(dir) = reg.parent() {
        let _ = crate::settings::private_dir(dir);
    }
    let appended = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&reg)
        .and_then(|mut f| f.write_all(format!("{text}\n").as_bytes()));
    if appended.is_ok() {
        trim(&reg);
    }
}

/// Keep the register's last [`KEEP`] lines.
fn trim(reg: &Path) {
    let Ok(text) = std::fs::read_to_string(reg) else {
        return;
    };
    let lines: Vec<&str> = text.lines().collect();
    if lines.len() <= KEEP {
        return;
    }
    let kept = lines[lines.len() - KEEP..].join("\n") + "\n";
    let tmp = reg.with_extension(format!("{}.tmp", std::process::id()));
    if std::fs::write(&tmp, kept).is_ok() && std::fs::rename(&tmp, reg).is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
}

/// The registered paths (newest last), duplicates dropped.
fn registered() -> Vec<PathBuf> {
    let Some(text) = register_path().and_then(|r| std::fs::read_to_string(r).ok()) else {
        return Vec::new();
    };
    let mut seen = std::collections::HashSet::new();
    let mut v: Vec<PathBuf> = text
        .lines()
        .rev()
        .filter(|l| !l.is_empty() && seen.insert(*l))
        .map(PathBuf::from)
        .collect();
    v.reverse();
    v
}

/// The `n` most recently changed recordings: the default folder's `.ptop` files and the
/// registered ones that still exist, newest first.
pub fn recent(n: usize) -> Vec<Recording> {
    let mut paths: Vec<PathBuf> = sessions_dir()
        .and_then(|d| std::fs::read_dir(d).ok())
        .into_iter()
        .flat_map(|rd| rd.flatten())
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "ptop"))
        .collect();
    // A rotated recording was registered by its name; its files are its parts.
    paths.extend(registered().into_iter().flat_map(|p| {
        if p.exists() {
            vec![p]
        } else {
            parts::parts(&p).into_iter().map(|(_, q)| q).collect()
        }
    }));
    rows(paths, n)
}

/// The recordings of `paths` that exist, a rotated recording's parts as one, the `n` most
/// recently changed first.
fn rows(paths: Vec<PathBuf>, n: usize) -> Vec<Recording> {
    let now = std::time::SystemTime::now();
    let mut seen = std::collections::HashSet::new();
    let files: Vec<Recording> = paths
        .into_iter()
        .filter(|p| seen.insert(p.clone()))
        .filter_map(|path| {
            let m = std::fs::metadata(&path).ok()?;
            if !m.is_file() {
                return None;
            }
            let modified = m.modified().ok()?;
            let age_s = now
                .duration_since(modified)
                .unwrap_or_default()
                .as_secs_f64()
                .floor();
            let modified_unix_s = modified
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs());
            Some(Recording {
                path,
                size: m.len(),
                age_s,
                modified_unix_s,
            })
        })
        .collect();
    // The parts of a rotated recording are one row, named as it was recorded: their sizes
    // summed, the youngest part's age.
    let mut v: Vec<Recording> = Vec::new();
    for mut f in files {
        if let Some((base, _)) = parts::part_of(&f.path) {
            f.path = base;
        }
        match v.iter_mut().find(|r| r.path == f.path) {
            Some(r) => {
                r.size += f.size;
                r.age_s = r.age_s.min(f.age_s);
                r.modified_unix_s = r.modified_unix_s.max(f.modified_unix_s);
            }
            None => v.push(f),
        }
    }
    v.sort_by(|a, b| a.age_s.total_cmp(&b.age_s));
    v.truncate(n);
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_parts_of_a_rotated_recording_are_one_row_of_their_summed_size() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::write(d.join("r.0001.ptop"), [0u8; 100]).unwrap();
        std::fs::write(d.join("r.0002.ptop"), [0u8; 50]).unwrap();
        std::fs::write(d.join("x.ptop"), [0u8; 7]).unwrap();
        let paths = ["r.0001.ptop", "r.0002.ptop", "x.ptop", "gone.ptop"].map(|n| d.join(n));
        let mut rows: Vec<(PathBuf, u64)> = rows(paths.to_vec(), 10)
            .into_iter()
            .map(|r| (r.path, r.size))
            .collect();
        rows.sort();
        assert_eq!(rows, [(d.join("r.ptop"), 150), (d.join("x.ptop"), 7)]);
    }
}
