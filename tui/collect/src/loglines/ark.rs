//! arkworks' `ark-std` with `print-trace` (`start_timer!`/`end_timer!`, ark-groth16's
//! prover among others), printed on stdout:
//!
//! ```text
//! Start:   Groth16::Prover
//! ··Start:   R1CS to QAP witness map
//! ··End:     R1CS to QAP witness map ..............................................12.345ms
//! End:     Groth16::Prover ...........................................................1.5s
//! ```
//!
//! Two pad characters (`·`, or spaces when `CLICOLOR=0`) per level of nesting. The time is
//! ark-std's own: `{secs}.{millis}s`, `{millis}.{micros}ms`, `{micros}.{nanos}µs` (the part
//! after the dot is a count of the smaller unit, not a decimal fraction: `1.5s` is 1.005 s)
//! or `{nanos}ns`. The Start/End pair gives the span; the End's time is only checked.

use provetop_shared::Phase;

use super::envelope::Envelope;
use super::{At, Hit, Scope};

/// Read a print-trace line.
pub fn read(e: &Envelope<'_>, out: &mut Vec<Hit>) -> bool {
    let m = e.msg.trim_start_matches(['·', ' ']);
    if let Some(name) = m.strip_prefix("Start:") {
        let name = name.trim();
        if name.is_empty() {
            return false;
        }
        out.push(Hit::Start(At::new(Scope::Grammar, phase_of(name), None)));
        return true;
    }
    if let Some(rest) = m.strip_prefix("End:") {
        let rest = rest.trim();
        let Some((name, _secs)) = split_time(rest) else {
            return false;
        };
        out.push(Hit::End(At::new(Scope::Grammar, phase_of(name), None)));
        return true;
    }
    false
}

/// `Groth16::Prover ......1.5s` → ("Groth16::Prover", 1.005).
pub fn split_time(rest: &str) -> Option<(&str, f64)> {
    let (body, unit) = ["ms", "µs", "ns", "s"]
        .iter()
        .find_map(|u| rest.strip_suffix(u).map(|b| (b, *u)))?;
    let b = body.as_bytes();
    let mut i = b.len();
    while i > 0 && b[i - 1].is_ascii_digit() {
        i -= 1;
    }
    if i == b.len() {
        return None;
    }
    let mut j = i;
    if j >= 2 && b[j - 1] == b'.' && b[j - 2].is_ascii_digit() {
        j -= 1;
        while j > 0 && b[j - 1].is_ascii_digit() {
            j -= 1;
        }
    }
    let secs = ark_secs(&body[j..], unit)?;
    let name = body[..j].trim_end_matches('.').trim();
    (!name.is_empty()).then_some((name, secs))
}

fn ark_secs(num: &str, unit: &str) -> Option<f64> {
    let (big, small) = match num.split_once('.') {
        Some((a, b)) => (a.parse::<u64>().ok()?, b.parse::<u64>().ok()?),
        None => (num.parse::<u64>().ok()?, 0),
    };
    // Counts per second of the unit and of the one below it.
    let (per, sub) = match unit {
        "s" => (1.0, 1e3),
        "ms" => (1e3, 1e6),
        "µs" => (1e6, 1e9),
        _ => (1e9, 1e9),
    };
    Some(big as f64 / per + small as f64 / sub)
}

/// ark's step names as phases: the Groth16 prover's own steps where they are the protocol's,
/// else the name kept.
pub fn phase_of(name: &str) -> Phase {
    match name {
        "Constraint synthesis" | "Constraint Synthesis" => Phase::Synthesis,
        "Groth16::Prover" => Phase::Prove,
        "R1CS to QAP witness map" => Phase::FftH,
        other => Phase::Other(other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ark_times_are_counts_of_the_smaller_unit() {
        assert_eq!(
            split_time("Groth16::Prover .....1.5s"),
            Some(("Groth16::Prover", 1.005))
        );
        let (n, s) = split_time("R1CS to QAP witness map ....12.345ms").unwrap();
        assert_eq!(n, "R1CS to QAP witness map");
        assert!((s - 0.012345).abs() < 1e-12);
        assert_eq!(split_time("x 800ns"), Some(("x", 8e-7)));
        assert_eq!(split_time("no time here"), None);
    }
}
