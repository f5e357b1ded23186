//! The units metrics are in: how a value is written ("1.2 GiB", "1m30s", "11.3 cores"), how a
//! rule's value is read ("180GiB", "30s", "85C"), an example for a rule's error, and the unit
//! of a Prometheus family.

use crate::units::{
    fmt_bytes, fmt_bytes_rate, fmt_celsius, fmt_cores, fmt_percent, fmt_rate, fmt_secs,
};

/// What a metric's values are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    Bytes,
    Seconds,
    /// Cores busy (CPU seconds per second).
    Cores,
    /// Percent, 0 to 100.
    Percent,
    /// Degrees Celsius.
    Celsius,
    /// Events per second.
    PerSecond,
    /// Bytes per second.
    BytesPerSecond,
    /// A plain count.
    Count,
}

impl Unit {
    /// A value in words: "1.2 GiB", "-300 B" (short), "1m30s", "11.3 cores", "86%".
    pub fn fmt(self, v: f64) -> String {
        match self {
            Unit::Seconds => fmt_secs(v),
            // Only predicted_free goes below zero: short by that much.
            Unit::Bytes if v < 0.0 => format!("-{}", fmt_bytes(-v as u64)),
            Unit::Bytes => fmt_bytes(v as u64),
            Unit::Cores => fmt_cores(v),
            Unit::Percent => fmt_percent(v),
            Unit::Celsius => fmt_celsius(v),
            Unit::PerSecond => fmt_rate(v),
            Unit::BytesPerSecond => fmt_bytes_rate(v),
            Unit::Count => format!("{v:.0}"),
        }
    }

    /// A rule's value in this unit ("180GiB", "30s", "12", "12 cores", "85C", "100/s").
    pub fn parse(self, s: &str) -> Result<f64, String> {
        use crate::units::*;
        match self {
            Unit::Bytes => parse_bytes(s).map(|b| b as f64),
            Unit::Seconds => parse_duration_s(s),
            Unit::Cores => parse_cores(s),
            Unit::Percent => parse_percent(s),
            Unit::Celsius => parse_celsius(s),
            Unit::PerSecond => parse_rate(s),
            Unit::BytesPerSecond => parse_bytes_rate(s),
            Unit::Count => parse_count(s),
        }
    }

    /// The unit's name in a Prometheus family's name and `# UNIT` line, and what a reading is
    /// divided by to be in it (a percent is exported as a ratio, 0 to 1); no name for a plain
    /// count.
    pub fn prometheus(self) -> (Option<&'static str>, f64) {
        match self {
            Unit::Bytes => (Some("bytes"), 1.0),
            Unit::Seconds => (Some("seconds"), 1.0),
            Unit::Cores => (Some("cores"), 1.0),
            Unit::Percent => (Some("ratio"), 100.0),
            Unit::Celsius => (Some("celsius"), 1.0),
            Unit::PerSecond => (Some("per_second"), 1.0),
            Unit::BytesPerSecond => (Some("bytes_per_second"), 1.0),
            Unit::Count => (None, 1.0),
        }
    }

    /// An example value, for errors.
    pub fn example(self) -> &'static str {
        match self {
            Unit::Bytes => "a size such as 10GiB",
            Unit::Seconds => "a duration such as 30s",
            Unit::Cores => "a number of cores such as 12",
            Unit::Percent => "a percent such as 10",
            Unit::Celsius => "degrees Celsius such as 85",
            Unit::PerSecond => "a rate such as 100/s",
            Unit::BytesPerSecond => "a rate such as 100MiB/s",
            Unit::Count => "a whole number such as 1000",
        }
    }
}
