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

/// The legend of the lettered rows: every letter the phases in `phases` are drawn with,
/// in a fixed order ("G srs gen s synth h/l msm v verify").
/// `short`: shorter names for narrow screens ("G gen u gpu").
pub fn legend<'a>(phases: impl IntoIterator<Item = &'a Phase>, short: bool) -> String {
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
            let name: String = inert(p.as_str())
                .chars()
                .take(if short { 8 } else { 24 })
                .collect();
            format!("{} {name}", letter(p))
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
            legend(&drawn, false),
            "G srs gen s synth h/l msm v verify p pc1"
        );
        assert_eq!(legend(&drawn, true), "G gen s synth h/l msm v verify p pc1");
    }
}
