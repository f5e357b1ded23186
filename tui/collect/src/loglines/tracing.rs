//! `tracing_subscriber::fmt` with span events on close (`FmtSpan::CLOSE`), in its text and
//! JSON forms: `… prove{id=3}:synthesize: my_prover: close time.busy=1.21s time.idle=25.1µs`
//! is a span `synthesize` that closed now and was open for busy + idle (the span's life from
//! creation to close; tracing measures both). Its name is the phase (`synthesis`, `prove`,
//! `msm_h`, … are the protocol's own; any other name is kept as it is).

use provetop_shared::Phase;

use super::duration::parse_secs;
use super::envelope::{Envelope, Format};
use super::{At, Hit, Scope};

/// Read a span close event.
pub fn read(e: &Envelope<'_>, out: &mut Vec<Hit>) -> bool {
    if !matches!(e.format, Format::TracingFmt | Format::TracingJson) {
        return false;
    }
    let msg = e.msg.trim();
    if !(msg == "close" || msg.starts_with("close ")) {
        return false;
    }
    let Some(span) = e.span.as_deref() else {
        return false;
    };
    let busy = e.field("time.busy").and_then(parse_secs);
    let idle = e.field("time.idle").and_then(parse_secs);
    let secs = match (busy, idle) {
        (Some(b), Some(i)) => b + i,
        (Some(b), None) => b,
        _ => return false,
    };
    out.push(Hit::Took {
        at: At::new(
            Scope::Grammar,
            phase_of(span),
            e.field("partition")
                .and_then(|p| p.trim_matches('"').parse().ok()),
        ),
        secs,
        ago: 0.0,
    });
    true
}

/// A span's name as a phase: the protocol's names as they are, a few common spellings of
/// them, else the name kept.
pub fn phase_of(name: &str) -> Phase {
    match name {
        "synthesize" | "synthesis" | "synthesize_circuits" => Phase::Synthesis,
        "prove" | "proving" | "create_proof" => Phase::Prove,
        other => Phase::from(other.to_string()),
    }
}
