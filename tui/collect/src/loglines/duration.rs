//! Durations as provers print them: Rust's `Debug` of `Duration` (`1.607111608s`, `850ms`,
//! `12.5µs`, `100ns`), tracing's timings (`1.21s`, `25.1µs`), plain milliseconds.

/// Seconds of `s`, a number and a unit (`s`, `ms`, `µs`/`us`, `ns`, `m`, `h`); `None` when it
/// is not one, or negative, or not finite.
pub fn parse_secs(s: &str) -> Option<f64> {
    let s = s.trim();
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let v: f64 = num.parse().ok()?;
    // Divide by the unit's count per second: `100ns` is then exactly 1e-7 s.
    let secs = match unit {
        "s" => v,
        "ms" => v / 1e3,
        "µs" | "us" | "μs" => v / 1e6,
        "ns" => v / 1e9,
        "m" | "min" => v * 60.0,
        "h" => v * 3600.0,
        _ => return None,
    };
    (secs.is_finite() && secs >= 0.0).then_some(secs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rust_and_tracing_durations_read() {
        assert_eq!(parse_secs("1.607111608s"), Some(1.607111608));
        assert_eq!(parse_secs("850ms"), Some(0.85));
        assert!((parse_secs("25.1µs").unwrap() - 25.1e-6).abs() < 1e-12);
        assert_eq!(parse_secs("100ns"), Some(1e-7));
        assert_eq!(parse_secs("1.2.3s"), None);
        assert_eq!(parse_secs("s"), None);
        assert_eq!(parse_secs("12 parsecs"), None);
    }
}
