//! How the sampler runs: rates and budgets, each default one constant (the settings merge
//! flags and the config file over them), each range one [`Bounds`].

use std::io;

/// Samples per second unless the flag or the config file says otherwise.
pub const DEFAULT_HZ: f64 = 20.0;
/// Share of one core the smaps cross-check of pinned memory may use by default: the pinned
/// series itself comes from the mapping table; smaps only checks it (a pass costs about a
/// second at 64 GiB of RSS, so this is one pass every quarter of an hour there:
/// docs/measurements.md#pinned-memory-from-the-mapping-table).
pub const DEFAULT_SMAPS_DUTY: f64 = 0.001;
/// NVML readings per second by default.
pub const DEFAULT_GPU_HZ: f64 = 2.0;
/// Usage readings (CPU, threads, faults, I/O, host load, GPU details) per second by default.
pub const DEFAULT_USAGE_HZ: f64 = 2.0;

/// Sample rates the sampler accepts: at most 100 s between samples (the schedule
/// `start + period·k` stays far from `Instant`'s limits), at least 1 ms.
pub const HZ_BOUNDS: Bounds = Bounds::new(0.01, 1000.0);
/// smaps duty: 0 turns the reader off.
pub const SMAPS_DUTY_BOUNDS: Bounds = Bounds::or_off(0.0, 1.0);
/// GPU rates: 0 turns GPU sampling off; otherwise at most 100 s between readings.
pub const GPU_HZ_BOUNDS: Bounds = Bounds::or_off(0.01, 100.0);

/// Usage rates: 0 turns usage readings off; otherwise at most 100 s between readings (the
/// reading runs inside the sample tick, so it never comes more often than the sample rate).
pub const USAGE_HZ_BOUNDS: Bounds = Bounds::or_off(0.01, 1000.0);

/// The values a float setting may take: finite, `lo..=hi`, and 0 when 0 means "off".
///
/// The one place a setting's range is written: the flags, the config file and
/// [`SamplerConfig`]'s own check all use it, so a value that passes cannot make a `Duration`
/// panic later.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bounds {
    pub lo: f64,
    pub hi: f64,
    /// 0 is also accepted (it turns the reader off).
    pub zero_is_off: bool,
}

impl Bounds {
    /// Values from `lo` to `hi`.
    pub const fn new(lo: f64, hi: f64) -> Bounds {
        Bounds {
            lo,
            hi,
            zero_is_off: false,
        }
    }

    /// Values from `lo` to `hi`, or 0 for off.
    pub const fn or_off(lo: f64, hi: f64) -> Bounds {
        Bounds {
            lo,
            hi,
            zero_is_off: true,
        }
    }

    /// `x` when it is in range, else "out of range (LO to HI)".
    pub fn check(&self, x: f64) -> Result<f64, String> {
        let ok =
            x.is_finite() && ((self.zero_is_off && x == 0.0) || (self.lo..=self.hi).contains(&x));
        if ok {
            Ok(x)
        } else {
            Err(format!("out of range ({self})"))
        }
    }

    /// Parse a number and [`check`](Self::check) it (for command-line flags).
    pub fn parse(&self, s: &str) -> Result<f64, String> {
        let x: f64 = s
            .trim()
            .parse()
            .map_err(|_| format!("not a number (want {self})"))?;
        self.check(x)
    }
}

impl std::fmt::Display for Bounds {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.zero_is_off && self.lo > 0.0 {
            write!(f, "0 = off, or {} to {}", self.lo, self.hi)
        } else {
            write!(f, "{} to {}", self.lo, self.hi)
        }
    }
}

/// How the sampler runs.
#[derive(Debug, Clone, PartialEq)]
pub struct SamplerConfig {
    /// Samples per second ([`HZ_BOUNDS`]).
    pub hz: f64,
    /// Share of one core the smaps (pinned memory) reader may use; 0 turns it off.
    pub smaps_duty: f64,
    /// NVML readings per second; 0 turns GPU sampling off.
    pub gpu_hz: f64,
    /// [`Usage`](provetop_shared::record::Usage) readings per second; 0 turns them off.
    pub usage_hz: f64,
    /// Reset VmHWM after every sample so `peak` is the peak of each interval.
    pub reset_peak: bool,
}

impl Default for SamplerConfig {
    fn default() -> Self {
        SamplerConfig {
            hz: DEFAULT_HZ,
            smaps_duty: DEFAULT_SMAPS_DUTY,
            gpu_hz: DEFAULT_GPU_HZ,
            usage_hz: DEFAULT_USAGE_HZ,
            reset_peak: true,
        }
    }
}

impl SamplerConfig {
    /// Every value within its [`Bounds`]; [`spawn`](super::spawn) refuses a configuration that is not.
    pub fn validate(&self) -> io::Result<()> {
        let check = |what: &str, unit: &str, b: Bounds, x: f64| {
            b.check(x).map(drop).map_err(|e| {
                io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("{what} {x:?}{unit}: {e}"),
                )
            })
        };
        check("sample rate", " Hz", HZ_BOUNDS, self.hz)?;
        check("smaps duty", "", SMAPS_DUTY_BOUNDS, self.smaps_duty)?;
        check("GPU rate", " Hz", GPU_HZ_BOUNDS, self.gpu_hz)?;
        check("usage rate", " Hz", USAGE_HZ_BOUNDS, self.usage_hz)
    }
}
