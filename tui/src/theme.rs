//! Colours, or none at all. Three palettes ([`Palette`]): the default (for a dark terminal), a
//! light one (for a light background: no white or light-yellow strokes) and a colour-blind-safe
//! one (the Okabe–Ito colours: nothing told apart by red against green alone; good and bad
//! news differ in brightness and glyph as well). `NO_COLOR` (any non-empty value) turns every
//! colour off whatever the palette, and the screen relies on glyphs, bold and reverse video.

use ratatui::style::{Color, Modifier, Style};

use provetop_shared::classify::ThresholdPhase;
use provetop_shared::{AlertLevel, Phase};

use crate::model::LogLevel;
use crate::series::Metric;

/// A named palette (`--theme NAME`, the config file's `theme`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Palette {
    /// For a dark background.
    #[default]
    Default,
    /// For a light background.
    Light,
    /// Colour-blind-safe (Okabe–Ito), for a dark background.
    ColorBlind,
}

impl Palette {
    /// Every palette, in the order `--help` names them.
    pub const ALL: [Palette; 3] = [Palette::Default, Palette::Light, Palette::ColorBlind];

    /// Its name on the command line and in the config file.
    pub fn name(self) -> &'static str {
        match self {
            Palette::Default => "default",
            Palette::Light => "light",
            Palette::ColorBlind => "colorblind",
        }
    }

    fn colors(self) -> &'static Colors {
        match self {
            Palette::Default => &DEFAULT,
            Palette::Light => &LIGHT,
            Palette::ColorBlind => &COLOR_BLIND,
        }
    }
}

impl std::str::FromStr for Palette {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let s = s.trim();
        Palette::ALL
            .into_iter()
            .find(|p| p.name() == s)
            .ok_or_else(|| format!("unknown theme {s:?} (themes: default, light, colorblind)"))
    }
}

/// What a palette gives each kind of thing.
struct Colors {
    dim: Color,
    ok: Color,
    info: Color,
    warn: Color,
    bad: Color,
    rss: Color,
    peak: Color,
    anon: Color,
    file: Color,
    shmem: Color,
    pinned: Color,
    gpu: Color,
    avail: Color,
    other: Color,
    swap: Color,
    srs: Color,
    synth: Color,
    prove: Color,
    fft: Color,
    msm_h: Color,
    msm_l: Color,
    msm_ab1: Color,
    msm_b2: Color,
    verify: Color,
    idle_pre: Color,
    idle_post: Color,
    gpu_phase: Color,
    synth_phase: Color,
    peak_phase: Color,
}

const DEFAULT: Colors = Colors {
    dim: Color::DarkGray,
    ok: Color::Green,
    info: Color::Cyan,
    warn: Color::Yellow,
    bad: Color::Red,
    rss: Color::White,
    peak: Color::Red,
    anon: Color::Green,
    file: Color::Blue,
    shmem: Color::Magenta,
    pinned: Color::Yellow,
    gpu: Color::Cyan,
    avail: Color::DarkGray,
    other: Color::Gray,
    swap: Color::LightRed,
    srs: Color::Blue,
    synth: Color::Magenta,
    prove: Color::DarkGray,
    fft: Color::Cyan,
    msm_h: Color::Green,
    msm_l: Color::LightGreen,
    msm_ab1: Color::Yellow,
    msm_b2: Color::LightYellow,
    verify: Color::White,
    idle_pre: Color::DarkGray,
    idle_post: Color::Blue,
    gpu_phase: Color::Cyan,
    synth_phase: Color::Magenta,
    peak_phase: Color::Red,
};

/// Dark strokes on a light background: black for RSS, the 256-colour table's deeper shades
/// where the 16 colours are too pale on white (yellow, cyan, grey).
const LIGHT: Colors = Colors {
    dim: Color::Indexed(244),
    ok: Color::Indexed(28),
    info: Color::Indexed(25),
    warn: Color::Indexed(130),
    bad: Color::Indexed(160),
    rss: Color::Black,
    peak: Color::Indexed(160),
    anon: Color::Indexed(28),
    file: Color::Indexed(19),
    shmem: Color::Indexed(90),
    pinned: Color::Indexed(130),
    gpu: Color::Indexed(30),
    avail: Color::Indexed(246),
    other: Color::Indexed(240),
    swap: Color::Indexed(166),
    srs: Color::Indexed(19),
    synth: Color::Indexed(90),
    prove: Color::Indexed(240),
    fft: Color::Indexed(30),
    msm_h: Color::Indexed(28),
    msm_l: Color::Indexed(64),
    msm_ab1: Color::Indexed(130),
    msm_b2: Color::Indexed(136),
    verify: Color::Black,
    idle_pre: Color::Indexed(246),
    idle_post: Color::Indexed(19),
    gpu_phase: Color::Indexed(30),
    synth_phase: Color::Indexed(90),
    peak_phase: Color::Indexed(160),
};

/// Okabe–Ito: orange, sky blue, bluish green, yellow, blue, vermillion, reddish purple, as
/// the 256-colour table's nearest (so any 256-colour terminal draws them). Good news is sky
/// blue, bad news vermillion and bold: never green against red.
const COLOR_BLIND: Colors = Colors {
    dim: Color::Indexed(244),
    ok: Color::Indexed(74),
    info: Color::Indexed(74),
    warn: Color::Indexed(214),
    bad: Color::Indexed(166),
    rss: Color::White,
    peak: Color::Indexed(166),
    anon: Color::Indexed(36),
    file: Color::Indexed(25),
    shmem: Color::Indexed(175),
    pinned: Color::Indexed(214),
    gpu: Color::Indexed(74),
    avail: Color::Indexed(244),
    other: Color::Indexed(250),
    swap: Color::Indexed(227),
    srs: Color::Indexed(25),
    synth: Color::Indexed(175),
    prove: Color::Indexed(244),
    fft: Color::Indexed(74),
    msm_h: Color::Indexed(36),
    msm_l: Color::Indexed(36),
    msm_ab1: Color::Indexed(214),
    msm_b2: Color::Indexed(227),
    verify: Color::White,
    idle_pre: Color::Indexed(244),
    idle_post: Color::Indexed(25),
    gpu_phase: Color::Indexed(74),
    synth_phase: Color::Indexed(175),
    peak_phase: Color::Indexed(166),
};

/// The palette in use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Theme {
    /// Whether colours are drawn at all.
    pub color: bool,
    /// Which colours.
    pub palette: Palette,
}

/// Whether `NO_COLOR` asks for no colour (any non-empty value, <https://no-color.org>).
pub fn no_color() -> bool {
    std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty())
}

impl Theme {
    /// The default palette, unless `NO_COLOR` is set to a non-empty value.
    pub fn from_env() -> Self {
        Theme::named(Palette::Default)
    }

    /// `palette`, unless `NO_COLOR` is set to a non-empty value.
    pub fn named(palette: Palette) -> Self {
        Theme {
            color: !no_color(),
            palette,
        }
    }

    /// Colours on (the default palette).
    pub fn colored() -> Self {
        Theme::of(Palette::Default)
    }

    /// `palette`'s colours on, whatever the environment.
    pub fn of(palette: Palette) -> Self {
        Theme {
            color: true,
            palette,
        }
    }

    /// Colours off.
    pub fn mono() -> Self {
        Theme {
            color: false,
            palette: Palette::Default,
        }
    }

    fn c(&self) -> &'static Colors {
        self.palette.colors()
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
        self.fg(self.c().dim)
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
        self.fg(self.c().ok)
    }

    /// A warning.
    pub fn warn(&self) -> Style {
        self.fg(self.c().warn).add_modifier(Modifier::BOLD)
    }

    /// An error or critical alert.
    pub fn bad(&self) -> Style {
        if self.color {
            Style::default()
                .fg(self.c().bad)
                .add_modifier(Modifier::BOLD)
        } else {
            Style::default().add_modifier(Modifier::BOLD | Modifier::REVERSED)
        }
    }

    /// Style of an alert level.
    pub fn alert(&self, l: AlertLevel) -> Style {
        match l {
            AlertLevel::Info => self.fg(self.c().info),
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
        let c = self.c();
        self.fg(match m {
            Metric::Rss => c.rss,
            Metric::Peak => c.peak,
            Metric::Anon => c.anon,
            Metric::File => c.file,
            Metric::Shmem => c.shmem,
            Metric::Pinned | Metric::PinnedReported => c.pinned,
            Metric::Gpu => c.gpu,
            Metric::MemAvailable => c.avail,
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
            | Metric::GpuPcieReplays => c.other,
            Metric::Swap => c.swap,
        })
    }

    /// Threshold lines.
    pub fn threshold(&self) -> Style {
        self.fg(self.c().dim)
    }

    /// Colour of a prover phase bar.
    pub fn phase(&self, p: &Phase) -> Style {
        let c = self.c();
        self.fg(match p {
            Phase::SrsGenerate | Phase::SrsLoad => c.srs,
            Phase::Synthesis => c.synth,
            Phase::Prove => c.prove,
            Phase::GpuSetup => c.other,
            Phase::FftH => c.fft,
            Phase::MsmH => c.msm_h,
            Phase::MsmL => c.msm_l,
            Phase::MsmAB1 => c.msm_ab1,
            Phase::MsmB2 => c.msm_b2,
            Phase::Verify => c.verify,
            Phase::Other(_) => c.other,
        })
    }

    /// Colour of a threshold phase bar.
    pub fn threshold_phase(&self, p: ThresholdPhase) -> Style {
        let c = self.c();
        self.fg(match p {
            ThresholdPhase::IdlePre => c.idle_pre,
            ThresholdPhase::IdlePost => c.idle_post,
            ThresholdPhase::GpuOrTransition => c.gpu_phase,
            ThresholdPhase::Synth => c.synth_phase,
            ThresholdPhase::PeakSynth => c.peak_phase,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn palettes_parse_by_name_and_an_unknown_one_names_them_all() {
        for p in Palette::ALL {
            assert_eq!(p.name().parse::<Palette>(), Ok(p));
        }
        let e = "dark".parse::<Palette>().unwrap_err();
        assert!(e.contains("default, light, colorblind"), "{e}");
    }

    #[test]
    fn without_colour_every_palette_draws_the_same() {
        for p in Palette::ALL {
            let t = Theme {
                color: false,
                palette: p,
            };
            assert_eq!(t.metric(Metric::Rss), Style::default());
            assert_eq!(t.phase(&Phase::Synthesis), Style::default());
            assert_eq!(t.bad(), Theme::mono().bad());
        }
    }

    #[test]
    fn the_colour_blind_palette_never_puts_good_news_in_green_against_red() {
        let t = Theme::of(Palette::ColorBlind);
        let greens = [Color::Green, Color::LightGreen, Color::Red, Color::LightRed];
        for s in [t.ok(), t.bad(), t.warn()] {
            assert!(!greens.contains(&s.fg.unwrap()), "{s:?}");
        }
        let l = Theme::of(Palette::Light);
        assert_ne!(l.metric(Metric::Rss).fg, Some(Color::White));
    }
}
