//! Units: bytes and durations, formatted for people and parsed from rules and flags.

/// Bytes per KiB/MiB/GiB/TiB.
pub const KIB: u64 = 1024;
/// Bytes per MiB.
pub const MIB: u64 = 1024 * KIB;
/// Bytes per GiB.
pub const GIB: u64 = 1024 * MIB;
/// Bytes per TiB.
pub const TIB: u64 = 1024 * GIB;

/// `1536 MiB` → "1.5 GiB": binary units, one decimal from KiB up, so a 80-column screen
/// can hold a row of them.
pub fn fmt_bytes(b: u64) -> String {
    let f = b as f64;
    if b < KIB {
        format!("{b} B")
    } else if b < MIB {
        format!("{:.1} KiB", f / KIB as f64)
    } else if b < GIB {
        format!("{:.1} MiB", f / MIB as f64)
    } else if b < TIB {
        format!("{:.1} GiB", f / GIB as f64)
    } else {
        format!("{:.1} TiB", f / TIB as f64)
    }
}

/// GiB as a float (bytes / 2^30).
pub fn gib(b: u64) -> f64 {
    b as f64 / GIB as f64
}

/// "1.5 GiB" → (1.5, "GiB"); `what` names the value in the error.
fn number_and_unit<'a>(s: &'a str, what: &str) -> Result<(f64, &'a str), String> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: f64 = num
        .parse()
        .map_err(|_| format!("bad {what} {s:?}: expected a number with an optional unit"))?;
    Ok((n, unit.trim()))
}

/// Parse "180GiB", "1.5 GiB", "512MiB", "100M", "4096" (bytes), "10%"-free sizes.
pub fn parse_bytes(s: &str) -> Result<u64, String> {
    let (n, unit) = number_and_unit(s, "size")?;
    let mult = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => KIB,
        "m" | "mb" | "mib" => MIB,
        "g" | "gb" | "gib" => GIB,
        "t" | "tb" | "tib" => TIB,
        u => {
            return Err(format!(
                "bad size {s:?}: unknown unit {u:?} (use B, KiB, MiB, GiB, TiB)"
            ))
        }
    };
    let v = n * mult as f64;
    if !v.is_finite() || v < 0.0 || v > u64::MAX as f64 {
        return Err(format!("bad size {s:?}: out of range"));
    }
    Ok(v.round() as u64)
}

/// Parse "5s", "250ms", "2m", "1h", "1.5" (seconds).
pub fn parse_duration_s(s: &str) -> Result<f64, String> {
    let (n, unit) = number_and_unit(s, "duration")?;
    let mult = match unit {
        "" | "s" => 1.0,
        "ms" => 1e-3,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        u => {
            return Err(format!(
                "bad duration {s:?}: unknown unit {u:?} (use ms, s, m, h)"
            ))
        }
    };
    Ok(n * mult)
}

/// Seconds as "1h02m", "3m05s", "12.3s", "850ms".
pub fn fmt_secs(s: f64) -> String {
    if !s.is_finite() {
        return "-".into();
    }
    if s < 1.0 {
        format!("{:.0}ms", s * 1e3)
    } else if s < 60.0 {
        format!("{s:.1}s")
    } else if s < 3600.0 {
        format!("{}m{:02}s", (s / 60.0) as u64, (s % 60.0) as u64)
    } else {
        format!(
            "{}h{:02}m",
            (s / 3600.0) as u64,
            ((s % 3600.0) / 60.0) as u64
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes() {
        assert_eq!(parse_bytes("180GiB").unwrap(), 180 * GIB);
        assert_eq!(parse_bytes("1.5 GiB").unwrap(), 3 * GIB / 2);
        assert_eq!(parse_bytes("512M").unwrap(), 512 * MIB);
        assert_eq!(parse_bytes("4096").unwrap(), 4096);
        assert!(parse_bytes("12 parsecs").is_err());
        assert!(parse_bytes("GiB").is_err());
        assert_eq!(fmt_bytes(3 * GIB / 2), "1.5 GiB");
        assert_eq!(fmt_bytes(100), "100 B");
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration_s("5s").unwrap(), 5.0);
        assert_eq!(parse_duration_s("250ms").unwrap(), 0.25);
        assert_eq!(parse_duration_s("2m").unwrap(), 120.0);
        assert!(parse_duration_s("5 fortnights").is_err());
        assert_eq!(fmt_secs(0.85), "850ms");
        assert_eq!(fmt_secs(185.0), "3m05s");
    }
}
