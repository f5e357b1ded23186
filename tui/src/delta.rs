//! The change from a baseline's value to another's: the difference and the ratio, and how
//! each reads ("+1.2 GiB", "+5.0%", "1.05×"). `compare`'s table and rules and the screen's
//! baseline overlay all write changes so.

/// The change from a baseline's value to another's.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Delta {
    /// other − baseline.
    pub diff: f64,
    /// other / baseline (None when the baseline is 0 and the other is not).
    pub ratio: Option<f64>,
}

impl Delta {
    /// The change in percent of the baseline (None where the ratio is).
    pub fn pct(&self) -> Option<f64> {
        self.ratio.map(|r| (r - 1.0) * 100.0)
    }
}

/// The difference of two values; equal values are 0 % (and 1×) even when both are 0.
pub fn delta(base: f64, other: f64) -> Delta {
    let ratio = if base == other {
        Some(1.0)
    } else if base != 0.0 {
        Some(other / base)
    } else {
        None
    };
    Delta {
        diff: other - base,
        ratio,
    }
}

/// "+5.0%", "-50.0%", "+0.0%"; "new" when the baseline is 0.
pub fn fmt_pct(d: &Delta) -> String {
    match d.pct() {
        Some(p) => format!("{:+.1}%", if p == 0.0 { 0.0 } else { p }),
        None => "new".into(),
    }
}

/// "1.00×", "0.06×"; "-" when the baseline is 0.
pub fn fmt_ratio(d: &Delta) -> String {
    match d.ratio {
        Some(r) if r != 0.0 && r.abs() < 0.01 => format!("{r:.4}×"),
        Some(r) => format!("{r:.2}×"),
        None => "-".into(),
    }
}

/// A signed difference: "+" or "-", then the magnitude as `mag` writes it ("+1.2 GiB").
pub fn fmt_signed(d: f64, mag: impl FnOnce(f64) -> String) -> String {
    let sign = if d < 0.0 { "-" } else { "+" };
    format!("{sign}{}", mag(d.abs()))
}
