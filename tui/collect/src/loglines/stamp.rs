//! A line's own timestamp, and where it lands on provetop's monotonic axis.
//!
//! Loggers write wall-clock time: UTC with `Z` (env_logger, tracing), an offset (GOLOG's
//! `+0100`, journald's `short-iso`), or local time without any offset (fil_logger, the logger
//! of lotus, curio and rust-fil-proofs; journald's `short`), which needs the local offset
//! *at that date* (`localtime_r`, so daylight saving is right).
//!
//! [`Stamp::to_mono`] maps the wall time onto `CLOCK_MONOTONIC` through the offset between
//! the two clocks when the line arrived. A line stamped no more coarsely than its arrival
//! tells gets its own time; a line that arrived within its stamp's precision of it (a live
//! line stamped to the second) gets its arrival time, which is finer; a stamp in the future
//! (another host's clock, a broken clock) is not believed and the arrival time is used.

/// A wall-clock instant read from a line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp {
    /// The time as written, read as if it were UTC, in nanoseconds since 1970.
    pub naive_ns: i128,
    /// Its offset from UTC in seconds east; `None` for local time (looked up only when the
    /// stamp is used: most lines' stamps never are).
    pub offset_s: Option<i64>,
    /// The stamp's resolution: 1 s for `…:44Z`, 1 ms for `…:14.971`.
    pub precision_ns: u64,
}

/// A stamp later than its arrival by more than this is a clock in the future.
pub const FUTURE_SLACK_NS: i128 = 2_000_000_000;

impl Stamp {
    /// Unix nanoseconds (UTC).
    pub fn unix_ns(&self) -> i128 {
        let off = match self.offset_s {
            Some(o) => o,
            None => local_offset(self.naive_ns.div_euclid(1_000_000_000) as i64),
        };
        self.naive_ns - off as i128 * 1_000_000_000
    }

    /// The monotonic time of this stamp for a line that arrived at `arrival` (monotonic ns)
    /// when the wall clock read `arrival_wall` (unix ns).
    pub fn to_mono(&self, arrival: u64, arrival_wall: i128) -> u64 {
        let age = arrival_wall - self.unix_ns();
        if age < -FUTURE_SLACK_NS {
            return arrival;
        }
        // Live, and no finer than the arrival: the arrival is the better clock.
        if age < self.precision_ns as i128 + 250_000_000 && self.precision_ns >= 1_000_000_000 {
            return arrival;
        }
        // The stamp's middle: a stamp truncated to milliseconds is on average half of one
        // early.
        let age = age - self.precision_ns as i128 / 2;
        if age <= 0 {
            return arrival;
        }
        let t = arrival as i128 - age;
        if t < 0 {
            // Before this machine booted: not on the axis; say when it arrived.
            return arrival;
        }
        t as u64
    }
}

/// Parse an ISO-8601 date-time at the start of `s`: `YYYY-MM-DD[T ]HH:MM:SS[.frac]` then
/// `Z`, `±HH:MM`, `±HHMM` or nothing (local time). Returns the stamp and the bytes used.
pub fn parse_iso(s: &str) -> Option<(Stamp, usize)> {
    let b = s.as_bytes();
    if b.len() < 19 {
        return None;
    }
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        let part = b.get(r)?;
        if part.iter().all(u8::is_ascii_digit) {
            std::str::from_utf8(part).ok()?.parse().ok()
        } else {
            None
        }
    };
    if b[4] != b'-' || b[7] != b'-' || !(b[10] == b'T' || b[10] == b' ') || b[13] != b':' {
        return None;
    }
    if b[16] != b':' {
        return None;
    }
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (h, mi, sec) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || sec > 60 {
        return None;
    }
    let mut i = 19;
    let mut frac_ns: i128 = 0;
    let mut precision_ns: u64 = 1_000_000_000;
    if b.get(i) == Some(&b'.') || b.get(i) == Some(&b',') {
        let start = i + 1;
        let mut j = start;
        while j < b.len() && b[j].is_ascii_digit() {
            j += 1;
        }
        let digits = &s[start..j];
        if digits.is_empty() {
            return None;
        }
        let keep = &digits[..digits.len().min(9)];
        frac_ns = keep.parse::<i128>().ok()? * 10i128.pow(9 - keep.len() as u32);
        precision_ns = 10u64.pow(9 - keep.len() as u32);
        i = j;
    }
    let naive = days_from_civil(y, mo, d) as i128 * 86_400 + (h * 3600 + mi * 60 + sec) as i128;
    let offset: Option<i64> = match b.get(i) {
        Some(b'Z') | Some(b'z') => {
            i += 1;
            Some(0)
        }
        Some(&c @ (b'+' | b'-')) => {
            let oh = num(i + 1..i + 3)?;
            let (om, used) = if b.get(i + 3) == Some(&b':') {
                (num(i + 4..i + 6)?, 6)
            } else if let Some(m) = num(i + 3..i + 5) {
                (m, 5)
            } else {
                (0, 3)
            };
            i += used;
            let o = oh * 3600 + om * 60;
            Some(if c == b'-' { -o } else { o })
        }
        _ => None,
    };
    Some((
        Stamp {
            naive_ns: naive * 1_000_000_000 + frac_ns,
            offset_s: offset,
            precision_ns,
        },
        i,
    ))
}

/// Days from 1970-01-01 to the civil date (proleptic Gregorian; H. Hinnant's algorithm).
pub fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The local UTC offset (seconds east) for a local time given as if it were UTC: the
/// offset at `naive - offset` is found by asking the zone about `naive` and then once more
/// about the corrected instant (exact except within a daylight-saving change's hour).
pub fn local_offset(naive: i64) -> i64 {
    let first = offset_at(naive);
    offset_at(naive - first)
}

fn offset_at(unix: i64) -> i64 {
    let t: nix::libc::time_t = unix as nix::libc::time_t;
    // SAFETY: `tm` is plain data that localtime_r fills in; both pointers are valid for the
    // call and localtime_r keeps neither.
    unsafe {
        let mut tm: nix::libc::tm = std::mem::zeroed();
        if nix::libc::localtime_r(&t, &mut tm).is_null() {
            return 0;
        }
        tm.tm_gmtoff
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: i128 = 1_000_000_000;

    #[test]
    fn utc_offsets_and_fractions_are_read() {
        let (a, n) = parse_iso("2026-03-14T17:52:44Z INFO").unwrap();
        assert_eq!(n, 20);
        assert_eq!(a.unix_ns(), 1_773_510_764 * S);
        assert_eq!(a.precision_ns, 1_000_000_000);
        let (b, _) = parse_iso("2026-03-14T18:52:44.250+0100").unwrap();
        assert_eq!(b.unix_ns(), 1_773_510_764 * S + 250_000_000);
        assert_eq!(b.precision_ns, 1_000_000);
        let (c, _) = parse_iso("2026-03-14T12:52:44.123456789-05:00").unwrap();
        assert_eq!(c.unix_ns(), 1_773_510_764 * S + 123_456_789);
        assert!(parse_iso("2026-13-14T12:52:44Z").is_none());
        assert!(parse_iso("not a date at all, no").is_none());
    }

    #[test]
    fn a_stamp_without_offset_is_local_time() {
        let (l, _) = parse_iso("2026-02-25T23:02:14.971").unwrap();
        let naive = days_from_civil(2026, 2, 25) as i128 * 86_400 + 23 * 3600 + 2 * 60 + 14;
        let off = local_offset(naive as i64) as i128;
        assert_eq!(l.offset_s, None);
        assert_eq!(l.unix_ns(), (naive - off) * S + 971_000_000);
    }

    #[test]
    fn mapping_prefers_the_finer_clock_and_refuses_the_future() {
        let wall = 1_000_000 * S;
        let arrival = 50 * S as u64;
        let utc = |unix_ns: i128, precision_ns: u64| Stamp {
            naive_ns: unix_ns,
            offset_s: Some(0),
            precision_ns,
        };
        let ms = |age_ns: i128| utc(wall - age_ns, 1_000_000);
        // Millisecond stamps: their own time (its middle).
        assert_eq!(ms(3 * S).to_mono(arrival, wall), 47 * S as u64 + 500_000);
        // Second stamps of a live line: the arrival.
        let sec = utc(wall - S / 2, 1_000_000_000);
        assert_eq!(sec.to_mono(arrival, wall), arrival);
        // An old line stamped to the second: its own time.
        let old = utc(wall - 20 * S, 1_000_000_000);
        assert_eq!(old.to_mono(arrival, wall), 30 * S as u64 + 500_000_000);
        // The future, and before boot: the arrival.
        assert_eq!(ms(-3600 * S).to_mono(arrival, wall), arrival);
        assert_eq!(ms(3600 * S).to_mono(arrival, wall), arrival);
    }
}
