//! The one clock every record is stamped with.
//!
//! `CLOCK_MONOTONIC` is system-wide on Linux, so the prover and the monitor (separate
//! processes) stamp their messages on the same time axis without any handshake, and a wall
//! clock step (NTP) never reorders a recording.

use nix::time::{clock_gettime, ClockId};

/// Nanoseconds on the system-wide monotonic clock.
pub fn mono_ns() -> u64 {
    ns(ClockId::CLOCK_MONOTONIC)
}

/// Nanoseconds since the Unix epoch (wall clock), used only to anchor a session in real time.
pub fn wall_ns() -> u64 {
    ns(ClockId::CLOCK_REALTIME)
}

fn ns(clock: ClockId) -> u64 {
    // Fails only for a clock the kernel lacks; these two exist on every Linux.
    let ts = clock_gettime(clock).expect("clock_gettime");
    ts.tv_sec() as u64 * 1_000_000_000 + ts.tv_nsec() as u64
}

/// Days since 1970-01-01 → (year, month 1–12, day 1–31) in the proleptic Gregorian calendar
/// (Howard Hinnant's `civil_from_days`; no time zone database, the same on every machine).
pub fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m as u32, d as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(-1), (1969, 12, 31));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
        assert_eq!(civil_from_days(19_675), (2023, 11, 14));
        assert_eq!(civil_from_days(47_482), (2100, 1, 1));
        assert_eq!(civil_from_days(-719_468), (0, 3, 1));
    }
}
