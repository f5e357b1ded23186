//! Units: bytes, durations, cores, percent, degrees Celsius and rates, formatted for people
//! and parsed from rules and flags. A parser takes a plain number or the number with its unit
//! (`12`, `12 cores`; `85`, `85C`, `85°C`; `100/s`; `1GiB/s`); a unit of another kind is an
//! error naming it.

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

/// Cores busy as "11.3 cores" (one decimal: 0.1 core is the sampler's resolution).
pub fn fmt_cores(c: f64) -> String {
    if !c.is_finite() {
        return "-".into();
    }
    format!("{c:.1} cores")
}

/// Percent as "86%" (whole percent; below 10, one decimal: "2.5%").
pub fn fmt_percent(p: f64) -> String {
    if !p.is_finite() {
        return "-".into();
    }
    if p.abs() < 10.0 && p.fract() != 0.0 {
        format!("{p:.1}%")
    } else {
        format!("{p:.0}%")
    }
}

/// Degrees Celsius as "85 °C".
pub fn fmt_celsius(c: f64) -> String {
    if !c.is_finite() {
        return "-".into();
    }
    format!("{c:.0} °C")
}

/// A rate as "12.5/s", "1234/s" (one decimal below 100).
pub fn fmt_rate(r: f64) -> String {
    if !r.is_finite() {
        return "-".into();
    }
    if r.abs() < 100.0 {
        format!("{r:.1}/s")
    } else {
        format!("{r:.0}/s")
    }
}

/// Bytes per second as "1.5 GiB/s".
pub fn fmt_bytes_rate(r: f64) -> String {
    if !r.is_finite() || r < 0.0 {
        return "-".into();
    }
    format!("{}/s", fmt_bytes(r.round() as u64))
}

/// A plain number with an optional unit out of `units` (compared without case); `what` and
/// `want` name the value and its units in the error. Negative numbers are refused (no
/// reading of these kinds goes below zero).
fn plain(s: &str, what: &str, units: &[&str], want: &str) -> Result<f64, String> {
    let (n, unit) = number_and_unit(s, what)?;
    let u = unit.to_lowercase();
    if !u.is_empty() && !units.contains(&u.as_str()) {
        return Err(format!(
            "bad {what} {s:?}: unknown unit {unit:?} (use {want})"
        ));
    }
    if !n.is_finite() {
        return Err(format!("bad {what} {s:?}: out of range"));
    }
    Ok(n)
}

/// Parse cores busy: "12", "1.5", "12 cores", "1 core".
pub fn parse_cores(s: &str) -> Result<f64, String> {
    plain(
        s,
        "core count",
        &["core", "cores"],
        "a number of cores, e.g. 12 or 12 cores",
    )
}

/// Parse percent: "10", "10%", "2.5 %" (0 to 100).
pub fn parse_percent(s: &str) -> Result<f64, String> {
    let v = plain(s, "percent", &["%"], "a percent, e.g. 10 or 10%")?;
    if v > 100.0 {
        return Err(format!("bad percent {s:?}: above 100"));
    }
    Ok(v)
}

/// Parse degrees Celsius: "85", "85C", "85°C", "85 °C".
pub fn parse_celsius(s: &str) -> Result<f64, String> {
    plain(
        s,
        "temperature",
        &["c", "°c", "°"],
        "degrees Celsius, e.g. 85 or 85C",
    )
}

/// Parse a rate per second: "100", "100/s", "2.5 /s".
pub fn parse_rate(s: &str) -> Result<f64, String> {
    plain(s, "rate", &["/s"], "a rate per second, e.g. 100 or 100/s")
}

/// Parse a count: "10000" (a whole number).
pub fn parse_count(s: &str) -> Result<f64, String> {
    let v = plain(s, "count", &[], "a whole number")?;
    if v.fract() != 0.0 {
        return Err(format!("bad count {s:?}: want a whole number"));
    }
    Ok(v)
}

/// Parse bytes per second: "1GiB/s", "500 MiB/s", "1GiB" (per second understood).
pub fn parse_bytes_rate(s: &str) -> Result<f64, String> {
    let t = s.trim();
    let size = t.strip_suffix("/s").unwrap_or(t);
    parse_bytes(size).map(|b| b as f64).map_err(|e| {
        if e.contains("unknown unit") {
            format!("bad rate {s:?}: want bytes per second, e.g. 1GiB/s or 500MiB/s")
        } else {
            e
        }
    })
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

    #[test]
    fn the_utilisation_units_format_and_parse_with_or_without_their_unit() {
        assert_eq!(fmt_cores(11.34), "11.3 cores");
        assert_eq!(fmt_percent(86.0), "86%");
        assert_eq!(fmt_percent(2.5), "2.5%");
        assert_eq!(fmt_celsius(85.0), "85 °C");
        assert_eq!(fmt_rate(12.34), "12.3/s");
        assert_eq!(fmt_rate(1234.4), "1234/s");
        assert_eq!(fmt_bytes_rate(1.5 * GIB as f64), "1.5 GiB/s");
        assert_eq!(fmt_cores(f64::NAN), "-");
        assert_eq!(parse_cores("12").unwrap(), 12.0);
        assert_eq!(parse_cores("1.5 cores").unwrap(), 1.5);
        assert!(parse_cores("12GiB")
            .unwrap_err()
            .contains("unknown unit \"GiB\""));
        assert_eq!(parse_percent("10%").unwrap(), 10.0);
        assert_eq!(parse_percent("10").unwrap(), 10.0);
        assert!(parse_percent("150%").is_err());
        assert_eq!(parse_celsius("85").unwrap(), 85.0);
        assert_eq!(parse_celsius("85°C").unwrap(), 85.0);
        assert_eq!(parse_celsius("85 C").unwrap(), 85.0);
        assert!(parse_celsius("85F").is_err());
        assert_eq!(parse_rate("100/s").unwrap(), 100.0);
        assert_eq!(parse_rate("100").unwrap(), 100.0);
        assert!(parse_rate("100/h").is_err());
        assert_eq!(parse_count("10000").unwrap(), 10000.0);
        assert!(parse_count("1.5").is_err());
        assert_eq!(parse_bytes_rate("1GiB/s").unwrap(), GIB as f64);
        assert_eq!(parse_bytes_rate("512MiB").unwrap(), (512 * MIB) as f64);
        assert!(parse_bytes_rate("5 parsecs/s").is_err());
        assert!(parse_cores("-3").is_err());
    }
}
