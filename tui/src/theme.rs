//! Colours, or none at all: `NO_COLOR` (any non-empty value) turns every colour off and the
//! screen relies on glyphs, bold and reverse video alone.

use ratatui::style::{Color, Modifier, Style};

use provetop_shared::classify::ThresholdPhase;
use provetop_shared::{AlertLevel, Phase};

use crate::model::LogLevel;
use crate::series::Metric;

/// The palette in use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Theme {
    /// Whether colours are drawn at all.
    pub color: bool,
}

impl Theme {
    /// Colours unless `NO_COLOR` is set to a non-empty value (<https://no-color.org>).
    pub fn from_env() -> Self {
        let no = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        Theme { color: !no }
    }

    /// Colours on.
    pub fn colored() -> Self {
        Theme { color: true }
    }

    /// Colours off.
    pub fn mono() -> Self {
        Theme { color: false }
    }

    fn fg(&self, c: Color) -> Style {
        if self.color {
            Style::default().fg(c)
        } else {
            Style::default()
        }
    }

    /// Plain text.
    pub fn text(&self) -> Style {
        Style::default()
    }

    /// Secondary text (axes, labels, separators).
    pub fn dim(&self) -> Style {
        if self.color {
            Style::default().fg(Color::DarkGray)
        } else {
            Style::default()
        }
    }

    /// Emphasis (titles, key names).
    pub fn bold(&self) -> Style {
        Style::default().add_modifier(Modifier::BOLD)
    }

    /// The cursor column and selected things.
    pub fn cursor(&self) -> Style {
        Style::default().add_modifier(Modifier::REVERSED)
    }

    /// Good news (running, verified).
    pub fn ok(&self) -> Style {
        self.fg(Color::Green)
    }

    /// A warning.
    pub fn warn(&self) -> Style {
        self.fg(Color::Yellow).add_modifier(Modifier::BOLD)
    }

    /// An error or critical alert.
    pub fn bad(&self) -> Style {
        if self.color {
            Style::default().fg(Color::Red).add_modifier(Modifier::BOLD)
        } else {
            Style::default().add_modifier(Modifier::BOLD | Modifier::REVERSED)
        }
    }

    /// Style of an alert level.
    pub fn alert(&self, l: AlertLevel) -> Style {
        match l {
            AlertLevel::Info => self.fg(Color::Cyan),
            AlertLevel::Warn => self.warn(),
            AlertLevel::Crit => self.bad(),
        }
    }

    /// Style of a log line.
    pub fn log(&self, l: LogLevel) -> Style {
        match l {
            LogLevel::Debug => self.dim(),
            LogLevel::Info => self.text(),
            LogLevel::Warn => self.warn(),
            LogLevel::Error => self.bad(),
        }
    }

    /// Colour of a chart series.
    pub fn metric(&self, m: Metric) -> Style {
        self.fg(match m {
            Metric::Rss => Color::White,
            Metric::Peak => Color::Red,
            Metric::Anon => Color::Green,
            Metric::File => Color::Blue,
            Metric::Shmem => Color::Magenta,
            Metric::Pinned | Metric::PinnedReported => Color::Yellow,
            Metric::Gpu => Color::Cyan,
            Metric::MemAvailable => Color::DarkGray,
            Metric::Locked
            | Metric::PhaseDuration
            | Metric::EventAge
            | Metric::PredictedFree
            | Metric::TimeToOom
            | Metric::Cpu
            | Metric::HostCpu
            | Metric::Threads
            | Metric::ReadBps
            | Metric::WriteBps
            | Metric::MajorFaults
            | Metric::GpuUtil
            | Metric::GpuMem
            | Metric::GpuTemp
            | Metric::MemLimit
            | Metric::PsiMemorySome
            | Metric::PsiMemoryFull
            | Metric::PsiCpuSome
            | Metric::PsiIoSome
            | Metric::PsiIoFull
            | Metric::GpuThrottled
            | Metric::GpuEccUncorrected
            | Metric::GpuPcieReplays => Color::Gray,
            Metric::Swap => Color::LightRed,
        })
    }

    /// Threshold lines.
    pub fn threshold(&self) -> Style {
        self.fg(Color::DarkGray)
    }

    /// Colour of a prover phase bar.
    pub fn phase(&self, p: &Phase) -> Style {
        self.fg(match p {
            Phase::SrsGenerate | Phase::SrsLoad => Color::Blue,
            Phase::Synthesis => Color::Magenta,
            Phase::Prove => Color::DarkGray,
            Phase::GpuSetup => Color::Gray,
            Phase::FftH => Color::Cyan,
            Phase::MsmH => Color::Green,
            Phase::MsmL => Color::LightGreen,
            Phase::MsmAB1 => Color::Yellow,
            Phase::MsmB2 => Color::LightYellow,
            Phase::Verify => Color::White,
            Phase::Other(_) => Color::Gray,
        })
    }

    /// Colour of a threshold phase bar.
    pub fn threshold_phase(&self, p: ThresholdPhase) -> Style {
        self.fg(match p {
            ThresholdPhase::IdlePre => Color::DarkGray,
            ThresholdPhase::IdlePost => Color::Blue,
            ThresholdPhase::GpuOrTransition => Color::Cyan,
            ThresholdPhase::Synth => Color::Magenta,
            ThresholdPhase::PeakSynth => Color::Red,
        })
    }
}
