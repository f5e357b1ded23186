//! Rotated sessions: a recording split into parts, read as one timeline.
//!
//! A recording to `DIR/NAME.ptop` that rotates writes its parts as `DIR/NAME.0001.ptop`,
//! `DIR/NAME.0002.ptop`, … (numbered from 1, four digits or more), each a whole session file
//! with the recording's header (one clock anchor: the parts' times are one timeline), each
//! finished (synced) before the next is created. Every reader takes any of these paths, or
//! `DIR/NAME.ptop` itself when only parts exist, as the whole set: the parts still there, in
//! order ([`set_of`]). Retention removes whole parts, oldest first, never the one being
//! written ([`expired`]).

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// The path of part `n` (from 1) of the recording at `base` (`DIR/NAME.ptop`).
pub fn part_path(base: &Path, n: u32) -> PathBuf {
    let stem = base
        .file_stem()
        .map_or_else(String::new, |s| s.to_string_lossy().into_owned());
    base.with_file_name(format!("{stem}.{n:04}.ptop"))
}

/// When `path` names a part (`DIR/NAME.NNNN.ptop`): the recording's base path and the part's
/// number.
pub fn part_of(path: &Path) -> Option<(PathBuf, u32)> {
    let name = path.file_name()?.to_str()?;
    let stem = name.strip_suffix(".ptop")?;
    let (base, num) = stem.rsplit_once('.')?;
    if num.len() < 4 || !num.bytes().all(|b| b.is_ascii_digit()) || base.is_empty() {
        return None;
    }
    let n: u32 = num.parse().ok()?;
    (n >= 1).then(|| (path.with_file_name(format!("{base}.ptop")), n))
}

/// The parts of the recording at `base` that exist, in order: (number, path).
pub fn parts(base: &Path) -> Vec<(u32, PathBuf)> {
    let dir = match base.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let Ok(rd) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let want = base.file_name();
    let mut v: Vec<(u32, PathBuf)> = rd
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let p = dir.join(e.file_name());
            let (b, n) = part_of(&p)?;
            (b.file_name() == want).then_some((n, p))
        })
        .collect();
    v.sort();
    v
}

/// The files that make up the session named `path`: the parts of its set when it is a part,
/// or when it does not exist and parts of it do; else `path` alone.
pub fn set_of(path: &Path) -> Vec<PathBuf> {
    let base = match part_of(path) {
        Some((base, _)) => base,
        None if !path.exists() => path.to_path_buf(),
        None => return vec![path.to_path_buf()],
    };
    let v: Vec<PathBuf> = parts(&base).into_iter().map(|(_, p)| p).collect();
    if v.is_empty() {
        vec![path.to_path_buf()]
    } else {
        v
    }
}

/// What retention keeps: parts younger than `retain` (by their last write) and, oldest
/// first removed, at most `max_bytes` in all (each part with its chunk index).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Retention {
    /// Age past which a finished part is removed.
    pub retain: Option<Duration>,
    /// Most bytes the parts may take together.
    pub max_bytes: Option<u64>,
}

/// When a recording rotates and what it keeps.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Rotation {
    /// A part spans at most this much record time, ns.
    pub every_ns: Option<u64>,
    /// A part's file takes at most about this many bytes.
    pub bytes: Option<u64>,
    /// What retention keeps.
    pub keep: Retention,
}

impl Rotation {
    /// From `--rotate` (a duration such as `1d`, `6h`, or a size such as `2GiB`), `--retain`
    /// (a duration) and `--max-disk` (a size); each error names the option.
    pub fn parse(
        rotate: &str,
        retain: Option<&str>,
        max_disk: Option<&str>,
    ) -> Result<Rotation, String> {
        use crate::units::parse_bytes;
        let mut r = Rotation::default();
        match (parse_duration_s(rotate), parse_bytes(rotate)) {
            (Ok(s), _) if s >= 1.0 => r.every_ns = Some((s * 1e9) as u64),
            (_, Ok(b)) if b >= 1 << 20 => r.bytes = Some(b),
            _ => {
                return Err(format!(
                    "rotate {rotate:?}: a duration of a second or more (30m, 6h, 1d) or a size of 1MiB or more (512MiB, 2GiB)"
                ))
            }
        }
        if let Some(s) = retain {
            let secs = parse_duration_s(s)
                .ok()
                .filter(|&d| d >= 1.0)
                .ok_or_else(|| format!("retain {s:?}: a duration such as 14d or 12h"))?;
            r.keep.retain = Some(std::time::Duration::from_secs_f64(secs));
        }
        if let Some(s) = max_disk {
            r.keep.max_bytes = Some(
                parse_bytes(s)
                    .map_err(|e| format!("max_disk {s:?}: a size such as 20GiB ({e})"))?,
            );
        }
        Ok(r)
    }
}

/// Seconds of a duration: the units' (`30m`, `6h`, `90s`) and days and weeks (`14d`, `2w`).
fn parse_duration_s(s: &str) -> Result<f64, String> {
    let t = s.trim();
    for (suffix, secs) in [("d", 86_400.0), ("w", 604_800.0)] {
        if let Some(n) = t.strip_suffix(suffix) {
            return n
                .trim()
                .parse::<f64>()
                .ok()
                .filter(|v| v.is_finite() && *v >= 0.0)
                .map(|v| v * secs)
                .ok_or_else(|| format!("bad duration {s:?}"));
        }
    }
    crate::units::parse_duration_s(t)
}

/// The finished parts of the recording at `base` that retention removes now: never part
/// `current` (being written) or a later one, whole parts only, oldest first.
pub fn expired(base: &Path, current: u32, keep: Retention, now: SystemTime) -> Vec<PathBuf> {
    let mut all: Vec<(u32, PathBuf, u64, SystemTime)> = parts(base)
        .into_iter()
        .filter_map(|(n, p)| {
            let m = std::fs::metadata(&p).ok()?;
            // Its chunk index counts with it (removed with it).
            let ix = std::fs::metadata(super::compact::sidecar::path_of(&p)).map_or(0, |m| m.len());
            Some((n, p, m.len() + ix, m.modified().ok()?))
        })
        .collect();
    let mut total: u64 = all.iter().map(|a| a.2).sum();
    all.retain(|a| a.0 < current);
    let mut out = Vec::new();
    for (_, p, len, modified) in all {
        let old = keep
            .retain
            .is_some_and(|r| now.duration_since(modified).is_ok_and(|age| age > r));
        let over = keep.max_bytes.is_some_and(|m| total > m);
        if old || over {
            total -= len;
            out.push(p);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rotation_takes_durations_in_days_or_sizes() {
        let r = Rotation::parse("1d", Some("2w"), Some("20GiB")).unwrap();
        assert_eq!(r.every_ns, Some(86_400_000_000_000));
        assert_eq!(r.keep.retain, Some(Duration::from_secs(14 * 86_400)));
        assert_eq!(r.keep.max_bytes, Some(20 << 30));
        assert_eq!(
            Rotation::parse("6h", None, None).unwrap().every_ns,
            Some(21_600_000_000_000)
        );
        assert_eq!(
            Rotation::parse("2GiB", None, None).unwrap().bytes,
            Some(2 << 30)
        );
        assert!(Rotation::parse("soon", None, None).is_err());
        assert!(Rotation::parse("1d", Some("x"), None)
            .unwrap_err()
            .starts_with("retain"));
    }

    #[test]
    fn part_names_round_trip_and_other_names_are_not_parts() {
        let b = Path::new("/d/run.ptop");
        assert_eq!(part_path(b, 3), Path::new("/d/run.0003.ptop"));
        assert_eq!(
            part_of(Path::new("/d/run.0003.ptop")),
            Some((b.to_path_buf(), 3))
        );
        assert_eq!(
            part_of(Path::new("/d/run.12345.ptop")),
            Some((b.to_path_buf(), 12345))
        );
        for not in [
            "/d/run.ptop",
            "/d/run.03.ptop",
            "/d/run.0000.ptop",
            "/d/.0001.ptop",
            "/d/a.0x01.ptop",
        ] {
            assert_eq!(part_of(Path::new(not)), None, "{not}");
        }
    }

    #[test]
    fn retention_removes_whole_old_parts_oldest_first_and_never_the_current_one() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().join("r.ptop");
        for n in 1..=5 {
            std::fs::write(part_path(&base, n), vec![0u8; 1000]).unwrap();
        }
        std::fs::write(dir.path().join("other.0001.ptop"), b"x").unwrap();
        let now = SystemTime::now();
        // By size: 5000 bytes, at most 2500 kept: parts 1, 2 and 3 go.
        let keep = Retention {
            retain: None,
            max_bytes: Some(2500),
        };
        let names = |v: Vec<PathBuf>| -> Vec<String> {
            v.iter()
                .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
                .collect()
        };
        assert_eq!(
            names(expired(&base, 5, keep, now)),
            ["r.0001.ptop", "r.0002.ptop", "r.0003.ptop"]
        );
        // However small the limit, the part being written stays.
        let keep = Retention {
            retain: None,
            max_bytes: Some(0),
        };
        assert_eq!(expired(&base, 5, keep, now).len(), 4);
        // By age: everything is older than a day from now + 2 days; still not the current.
        let later = now + Duration::from_secs(2 * 86_400);
        let keep = Retention {
            retain: Some(Duration::from_secs(86_400)),
            max_bytes: None,
        };
        assert_eq!(expired(&base, 3, keep, later).len(), 2);
        assert!(expired(&base, 3, keep, now).is_empty());
        assert_eq!(set_of(&base).len(), 5);
        assert_eq!(set_of(&part_path(&base, 4)).len(), 5);
    }
}
