//! `provetop ls`: the sessions on this machine. Live ones are asked for their status over
//! their control sockets (pid, what runs, uptime, proofs, alerts, attached screens); stale
//! sockets of dead supervisors are removed on the way and said; then the most recent
//! recordings of the session directory. A live session that does not answer (on its way out,
//! or stopped) is shown with what is known without it (id, pid, age, file) and said so; one
//! that ended meanwhile is left out.

use std::path::{Path, PathBuf};
use std::time::Duration;

use provetop_shared::units::{fmt_bytes, fmt_secs};

use crate::monitor::control::{self, Client, Probe, Status};

pub use crate::cli::LsArgs;

/// How long one live session's status is waited for.
const STATUS_TIMEOUT: Duration = Duration::from_secs(2);

/// `provetop ls`.
pub fn main(args: &LsArgs) -> anyhow::Result<i32> {
    let dir = control::socket_dir()?;
    let (live, stale) = live_sessions(&dir);
    let mut out = String::new();
    if live.is_empty() {
        out.push_str("no live sessions\n");
    } else {
        out.push_str("live sessions:\n");
        let rows: Vec<Vec<String>> = live
            .iter()
            .filter_map(|l| {
                match Client::connect(&l.socket, STATUS_TIMEOUT)
                    .map_err(anyhow::Error::from)
                    .and_then(|mut c| c.status())
                {
                    Ok(s) => Some(live_row(&s)),
                    Err(e) => unanswered_row(&dir, l, &e),
                }
            })
            .collect();
        let head = [
            "ID", "PID", "UPTIME", "PROOFS", "ALERTS", "SCREENS", "FILE", "COMMAND",
        ]
        .map(String::from)
        .to_vec();
        out.push_str(&table(&head, &rows));
    }
    for s in &stale {
        out.push_str(&format!(
            "removed the stale socket of {} (its supervisor is gone)\n",
            s.id
        ));
    }
    if let Some(sessions) = sessions_dir() {
        let recent = recent_files(&sessions, args.recent);
        if !recent.is_empty() {
            out.push_str(&format!("recent recordings ({}):\n", sessions.display()));
            let rows: Vec<Vec<String>> = recent
                .iter()
                .map(|(name, size, age)| {
                    vec![
                        name.clone(),
                        fmt_bytes(*size),
                        format!("{} ago", fmt_secs(*age)),
                    ]
                })
                .collect();
            let head = ["FILE", "SIZE", "MODIFIED"].map(String::from).to_vec();
            out.push_str(&table(&head, &rows));
        }
    }
    use std::io::Write;
    let _ = std::io::stdout().write_all(out.as_bytes());
    Ok(0)
}

fn live_row(s: &Status) -> Vec<String> {
    let proofs = if s.proofs_failed > 0 {
        format!("{} ({} failed)", s.proofs_done, s.proofs_failed)
    } else {
        s.proofs_done.to_string()
    };
    let mut what = s.prover.clone().unwrap_or_else(|| s.command.join(" "));
    if let Some(m) = &s.mode {
        what.push_str(&format!(" [{m}]"));
    }
    vec![
        s.id.clone(),
        s.pid.to_string(),
        fmt_secs(s.uptime_s.floor()),
        proofs,
        s.alerts.to_string(),
        s.clients.saturating_sub(1).to_string(),
        s.session.as_ref().map_or("-".into(), |p| {
            crate::text::inert(&p.display().to_string()).into_owned()
        }),
        crate::text::inert(&what).into_owned(),
    ]
}

/// The row of a live session that did not answer its status (a supervisor on its way out, or
/// stopped): what `ls` knows without it (its id, its supervisor's pid from the lock it holds,
/// its age, its file), and why the rest is missing. `None` when it has ended meanwhile.
fn unanswered_row(dir: &Path, l: &Found, e: &anyhow::Error) -> Option<Vec<String>> {
    let key = l.socket.file_stem()?.to_string_lossy().into_owned();
    if !matches!(control::probe_key(dir, &key), Probe::Live(_)) {
        return None;
    }
    let age = std::time::SystemTime::now()
        .duration_since(l.since)
        .map_or("-".into(), |d| fmt_secs(d.as_secs_f64().floor()));
    Some(vec![
        l.id.clone(),
        lock_holder(&l.socket.with_extension("lock")).map_or("-".into(), |p| p.to_string()),
        age,
        "-".into(),
        "-".into(),
        "-".into(),
        l.session.as_ref().map_or("-".into(), |p| {
            crate::text::inert(&p.display().to_string()).into_owned()
        }),
        format!("(not answering, exiting or stopped: {e:#})"),
    ])
}

/// The pid of the process holding the `flock` on `lock`, from `/proc/locks` (the file is
/// only looked at, never opened).
fn lock_holder(lock: &Path) -> Option<u32> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::symlink_metadata(lock).ok()?;
    if !m.file_type().is_file() {
        return None;
    }
    let dev = m.dev();
    let major = ((dev >> 8) & 0xfff) | ((dev >> 32) & !0xfff);
    let minor = (dev & 0xff) | ((dev >> 12) & !0xff);
    let want = format!("{major:02x}:{minor:02x}:{}", m.ino());
    let locks = std::fs::read_to_string("/proc/locks").ok()?;
    locks.lines().find_map(|line| {
        // `1: FLOCK  ADVISORY  WRITE 4242 00:1a:5678 0 EOF`; a waiter's line has `->`.
        let f: Vec<&str> = line.split_whitespace().collect();
        (f.get(1) == Some(&"FLOCK") && f.get(5) == Some(&want.as_str()))
            .then(|| f.get(4)?.parse().ok())
            .flatten()
    })
}

/// Columns padded to their widest cell, two spaces apart, indented by two.
fn table(head: &[String], rows: &[Vec<String>]) -> String {
    let n = head.len();
    let mut w = vec![0; n];
    for r in std::iter::once(head).chain(rows.iter().map(|r| r.as_slice())) {
        for (i, c) in r.iter().enumerate().take(n) {
            w[i] = w[i].max(c.chars().count());
        }
    }
    let mut out = String::new();
    for r in std::iter::once(head).chain(rows.iter().map(|r| r.as_slice())) {
        let mut line = String::from(" ");
        for (i, c) in r.iter().enumerate().take(n) {
            line.push(' ');
            line.push_str(c);
            if i + 1 < n {
                line.push_str(&" ".repeat(w[i] - c.chars().count() + 1));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// The default session directory, when there is one.
fn sessions_dir() -> Option<PathBuf> {
    let base = provetop_collect::xdg::base_dir("XDG_STATE_HOME", ".local/state")?;
    Some(base.join("provetop").join("sessions"))
}

/// The `n` most recently modified session files in `dir`: name, size, age in seconds (a
/// rotated recording's parts as one).
fn recent_files(dir: &std::path::Path, n: usize) -> Vec<(String, u64, f64)> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let now = std::time::SystemTime::now();
    let mut v: Vec<(String, u64, f64)> = rd
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            if !name.ends_with(".ptop") {
                return None;
            }
            let m = e.metadata().ok()?;
            let age = now
                .duration_since(m.modified().ok()?)
                .unwrap_or_default()
                .as_secs_f64()
                .floor();
            // The parts of a rotated recording are one row, named as it was recorded.
            let name = provetop_shared::session::parts::part_of(&dir.join(&name))
                .and_then(|(base, _)| base.file_name().map(|b| b.to_string_lossy().into_owned()))
                .unwrap_or(name);
            Some((crate::text::inert(&name).into_owned(), m.len(), age))
        })
        .collect();
    v.sort_by(|a, b| a.0.cmp(&b.0).then(a.2.total_cmp(&b.2)));
    // One row a name: the sizes summed, the youngest part's age.
    v.dedup_by(|later, first| {
        let same = later.0 == first.0;
        if same {
            first.1 += later.1;
        }
        same
    });
    v.sort_by(|a, b| a.2.total_cmp(&b.2));
    v.truncate(n);
    v
}

/// A session found in the socket directory.
#[derive(Debug, Clone)]
pub struct Found {
    pub id: String,
    pub socket: PathBuf,
    /// When its socket was made (the session's start).
    pub since: std::time::SystemTime,
    /// The file it records to, as its supervisor named it.
    pub session: Option<PathBuf>,
}

/// Every live session in `dir`; stale sockets found on the way are removed and returned
/// second. A session's id and file come from its lock file, else (its lock file deleted) from
/// its supervisor, else its socket's name stands for it.
pub fn live_sessions(dir: &Path) -> (Vec<Found>, Vec<Found>) {
    let mut live = Vec::new();
    let mut stale = Vec::new();
    let Ok(rd) = std::fs::read_dir(dir) else {
        return (live, stale);
    };
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(key) = name.strip_suffix(".sock") else {
            continue;
        };
        let described = control::described(dir, key);
        let socket = dir.join(&name);
        let since = std::fs::symlink_metadata(&socket)
            .and_then(|m| m.modified())
            .unwrap_or(std::time::UNIX_EPOCH);
        let mut found = Found {
            id: described
                .as_ref()
                .map_or_else(|| key.to_string(), |d| d.id.clone()),
            session: described.as_ref().and_then(|d| d.session.clone()),
            socket,
            since,
        };
        match control::probe_key(dir, key) {
            Probe::Live(_) => {
                if described.is_none() {
                    if let Ok(s) = Client::connect(&found.socket, STATUS_TIMEOUT)
                        .map_err(anyhow::Error::from)
                        .and_then(|mut c| c.status())
                    {
                        found.id = s.id;
                        found.session = s.session;
                    }
                }
                live.push(found)
            }
            Probe::Stale => stale.push(found),
            Probe::Missing | Probe::Foreign { .. } => {}
        }
    }
    live.sort_by_key(|l| l.since);
    (live, stale)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_parts_of_a_rotated_recording_are_one_row_of_their_summed_size() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("r.0001.ptop"), [0u8; 100]).unwrap();
        std::fs::write(dir.path().join("r.0002.ptop"), [0u8; 50]).unwrap();
        std::fs::write(dir.path().join("x.ptop"), [0u8; 7]).unwrap();
        let mut rows = recent_files(dir.path(), 10);
        rows.sort_by(|a, b| a.0.cmp(&b.0));
        let rows: Vec<(String, u64)> = rows.into_iter().map(|(n, s, _)| (n, s)).collect();
        assert_eq!(
            rows,
            [("r.ptop".to_string(), 150), ("x.ptop".to_string(), 7)]
        );
    }

    #[test]
    fn a_table_pads_its_columns_to_the_widest_cell() {
        let t = table(
            &["ID".into(), "PID".into()],
            &[vec!["long-id".into(), "1".into()]],
        );
        assert_eq!(t, "  ID       PID\n  long-id  1\n");
    }
}
