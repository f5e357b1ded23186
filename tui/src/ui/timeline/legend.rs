//! The letters and glyphs rows are drawn with, and the legend that names the letters.
//!
//! A lettered row draws each phase as one letter (`G` SRS generation, `s` synthesis, `h`/`l`
//! multiexps, …; another phase by its first printable character); the legend names every
//! letter drawn, in a fixed order, with shorter names for narrow screens. A threshold phase
//! on the single shaded row is a shade from `·` (idle) to `█` (peak synthesis), readable
//! without colour.

use provetop_shared::classify::ThresholdPhase;
use provetop_shared::protocol::KNOWN_PHASES;
use provetop_shared::Phase;

use super::rows::short_phase;
use crate::text::inert;

/// The letter a phase is drawn with on a compact row.
pub fn letter(p: &Phase) -> char {
    match p {
        Phase::SrsGenerate => 'G',
        Phase::SrsLoad => 'L',
        Phase::Synthesis => 's',
        Phase::Prove => 'p',
        Phase::GpuSetup => 'u',
        Phase::FftH => 'f',
        Phase::MsmH => 'h',
        Phase::MsmL => 'l',
        Phase::MsmAB1 => 'a',
        Phase::MsmB2 => 'b',
        Phase::Verify => 'v',
        Phase::Other(s) => s.chars().next().filter(|c| !c.is_control()).unwrap_or('?'),
    }
}

/// The letters one window's phases are drawn with: a known phase's own ([`letter`]), and for
/// each other phase (a rust-fil-proofs call, a user rule's phase: read from log lines) a
/// character of its short name that no other phase in the window is drawn with, so that
/// `seal_pre_commit_phase1` and `seal_commit_phase1` are not both `s`, nor `s` synthesis.
#[derive(Debug, Clone, Default)]
pub struct Letters {
    others: Vec<(Phase, char)>,
}

impl Letters {
    /// The letters of the phases in `phases` (the window's spans').
    pub fn of<'a>(phases: impl IntoIterator<Item = &'a Phase>) -> Letters {
        let mut seen: Vec<&Phase> = Vec::new();
        for p in phases {
            if !seen.contains(&p) {
                seen.push(p);
            }
        }
        let mut taken: Vec<char> = seen
            .iter()
            .filter(|p| !matches!(p, Phase::Other(_)))
            .map(|p| letter(p))
            .collect();
        let mut others: Vec<&Phase> = seen
            .into_iter()
            .filter(|p| matches!(p, Phase::Other(_)))
            .collect();
        others.sort();
        let mut out = Vec::with_capacity(others.len());
        for p in others {
            let c = short_phase(p)
                .chars()
                .filter(|c| c.is_alphanumeric())
                .flat_map(|c| [c, c.to_ascii_uppercase(), c.to_ascii_lowercase()])
                .chain('1'..='9')
                .find(|c| !taken.contains(c))
                .unwrap_or_else(|| letter(p));
            taken.push(c);
            out.push((p.clone(), c));
        }
        Letters { others: out }
    }

    /// The letter `p` is drawn with.
    pub fn get(&self, p: &Phase) -> char {
        self.others
            .iter()
            .find(|(o, _)| o == p)
            .map_or_else(|| letter(p), |(_, c)| *c)
    }
}

/// The legend of the lettered rows: every letter the phases in `phases` are drawn with (by
/// `letters`), in a fixed order ("G srs gen s synth h/l msm v verify", then the other
/// phases by their short names: "C C1 P PC1"). `short`: shorter names for narrow screens
/// ("G gen u gpu").
pub fn legend<'a>(
    phases: impl IntoIterator<Item = &'a Phase>,
    short: bool,
    letters: &Letters,
) -> String {
    let mut seen: Vec<&Phase> = Vec::new();
    for p in phases {
        if !seen.contains(&p) {
            seen.push(p);
        }
    }
    // The known phases in the order of their list; those of one name (the multiexps, next to
    // each other there) share an entry: "h/l msm".
    let mut known: Vec<(&str, String)> = Vec::new();
    for p in KNOWN_PHASES.iter().filter(|p| seen.contains(p)) {
        let name = known_name(p, short);
        match known.last_mut() {
            Some((last, letters)) if *last == name => {
                letters.push('/');
                letters.push(letter(p));
            }
            _ => known.push((name, letter(p).to_string())),
        }
    }
    let mut parts: Vec<String> = known
        .into_iter()
        .map(|(name, letters)| format!("{letters} {name}"))
        .collect();
    let mut others: Vec<String> = seen
        .iter()
        .filter(|p| matches!(p, Phase::Other(_)))
        .map(|p| {
            let name: String = inert(short_phase(p))
                .chars()
                .take(if short { 8 } else { 24 })
                .collect();
            format!("{} {name}", letters.get(p))
        })
        .collect();
    others.sort();
    others.dedup();
    parts.extend(others);
    parts.join(" ")
}

/// A known phase's name in the legend (`short`: for narrow screens); the multiexps share one.
fn known_name(p: &Phase, short: bool) -> &'static str {
    let (long, brief) = match p {
        Phase::SrsGenerate => ("srs gen", "gen"),
        Phase::SrsLoad => ("srs load", "load"),
        Phase::Synthesis => ("synth", "synth"),
        Phase::Prove => ("prove", "prove"),
        Phase::GpuSetup => ("gpu setup", "gpu"),
        Phase::FftH => ("fft", "fft"),
        Phase::MsmH | Phase::MsmL | Phase::MsmAB1 | Phase::MsmB2 => ("msm", "msm"),
        Phase::Verify => ("verify", "verify"),
        // Named by its first characters instead (`legend`).
        Phase::Other(_) => ("other", "other"),
    };
    if short {
        brief
    } else {
        long
    }
}

/// Glyph of a threshold phase in the single-row view (readable without colour).
pub(super) fn shade(p: ThresholdPhase) -> char {
    match p {
        ThresholdPhase::IdlePre => '·',
        ThresholdPhase::IdlePost => '░',
        ThresholdPhase::GpuOrTransition => '▒',
        ThresholdPhase::Synth => '▓',
        ThresholdPhase::PeakSynth => '█',
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_legend_names_the_known_phases_in_order_and_the_multiexps_in_one_entry() {
        let drawn = [
            Phase::Verify,
            Phase::MsmL,
            Phase::Synthesis,
            Phase::MsmH,
            Phase::SrsGenerate,
            Phase::Other("pc1".into()),
        ];
        assert_eq!(
            legend(&drawn, false, &Letters::of(&drawn)),
            "G srs gen s synth h/l msm v verify p pc1"
        );
        assert_eq!(
            legend(&drawn, true, &Letters::of(&drawn)),
            "G gen s synth h/l msm v verify p pc1"
        );
    }
}
