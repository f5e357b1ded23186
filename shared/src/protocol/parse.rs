//! Reading one protocol line: its `type` must be known (an unknown one is an error, unknown
//! fields are not), a `hello` from a newer major version is refused, and so is a duration that
//! is negative, NaN or infinite (zero is a duration).

use super::{ControlMsg, Event, EventMsg, PROTOCOL_MAJOR, PROTOCOL_VERSION};

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum ProtocolError {
    /// Not JSON, or not an object.
    #[error("not a JSON object: {0}")]
    Json(String),
    /// No `type` field.
    #[error("message has no \"type\" field")]
    MissingType,
    /// A `type` this build does not know.
    #[error("unknown message type {0:?}")]
    UnknownType(String),
    /// Fields of a known type are wrong.
    #[error("bad {kind:?} message: {detail}")]
    BadFields {
        /// The message type.
        kind: String,
        /// serde's description.
        detail: String,
    },
    /// The peer speaks a newer major version.
    #[error("peer speaks protocol {peer}, this build speaks {ours} (major version too new)")]
    NewerMajor {
        /// Peer's version.
        peer: String,
        ours: &'static str,
    },
    /// The line is longer than the reader accepts.
    #[error("line of {0} bytes exceeds the limit")]
    TooLong(usize),
}

const EVENT_TYPES: &[&str] = &[
    "hello",
    "srs_loading",
    "srs_progress",
    "srs_ready",
    "proof_queued",
    "proof_started",
    "phase_started",
    "phase_ended",
    "proof_finished",
    "mode_changed",
    "mode_refused",
    "memory_report",
    "state",
    "log",
    "error",
    "bye",
];

const CONTROL_TYPES: &[&str] = &["prove", "set_mode", "pause", "resume", "shutdown"];

fn parse_tagged<T: serde::de::DeserializeOwned>(
    line: &str,
    known: &[&str],
) -> Result<(T, String), ProtocolError> {
    let value: serde_json::Value =
        serde_json::from_str(line.trim_end()).map_err(|e| ProtocolError::Json(e.to_string()))?;
    let obj = value
        .as_object()
        .ok_or_else(|| ProtocolError::Json("not an object".into()))?;
    let kind = obj
        .get("type")
        .and_then(|t| t.as_str())
        .ok_or(ProtocolError::MissingType)?
        .to_string();
    if !known.contains(&kind.as_str()) {
        return Err(ProtocolError::UnknownType(kind));
    }
    let msg = serde_json::from_value(value).map_err(|e| ProtocolError::BadFields {
        kind: kind.clone(),
        detail: e.to_string(),
    })?;
    Ok((msg, kind))
}

/// Parse one prover output line. A `hello` of a newer major version is an error.
pub fn parse_event(line: &str) -> Result<EventMsg, ProtocolError> {
    let (msg, _) = parse_tagged::<EventMsg>(line, EVENT_TYPES)?;
    if let Event::Hello { protocol, .. } = &msg.event {
        check_version(protocol)?;
    }
    check_durations(&msg.event)?;
    Ok(msg)
}

/// Every `duration_s` of an event must be a finite, non-negative number of seconds.
fn check_durations(event: &Event) -> Result<(), ProtocolError> {
    let check = |field: &str, d: f64| {
        if d.is_finite() && d >= 0.0 {
            return Ok(());
        }
        let why = if d.is_nan() {
            "not a number"
        } else if d.is_infinite() {
            "infinite"
        } else {
            "negative"
        };
        Err(ProtocolError::BadFields {
            kind: event.kind().to_string(),
            detail: format!("{field} is {d}: a duration cannot be {why}"),
        })
    };
    match event {
        Event::SrsReady { duration_s, .. } | Event::PhaseEnded { duration_s, .. } => {
            check("duration_s", *duration_s)
        }
        Event::ProofFinished {
            duration_s, phases, ..
        } => {
            check("duration_s", *duration_s)?;
            for (i, p) in phases.iter().enumerate() {
                check(&format!("phases[{i}].duration_s"), p.duration_s)?;
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

/// Parse one control line.
pub fn parse_control(line: &str) -> Result<ControlMsg, ProtocolError> {
    parse_tagged::<ControlMsg>(line, CONTROL_TYPES).map(|(m, _)| m)
}

/// Accept any version with our major (or older); refuse a newer major.
pub fn check_version(peer: &str) -> Result<(), ProtocolError> {
    let major = peer
        .split('.')
        .next()
        .and_then(|m| m.parse::<u32>().ok())
        .ok_or_else(|| ProtocolError::BadFields {
            kind: "hello".into(),
            detail: format!("protocol version {peer:?} is not MAJOR.MINOR"),
        })?;
    if major > PROTOCOL_MAJOR {
        return Err(ProtocolError::NewerMajor {
            peer: peer.to_string(),
            ours: PROTOCOL_VERSION,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::Phase;

    #[test]
    fn negative_nan_and_infinite_durations_are_refused_and_zero_is_a_duration() {
        let ended = |d: &str| {
            format!(
                r#"{{"ts":1,"type":"phase_ended","proof_id":1,"phase":"prove","duration_s":{d}}}"#
            )
        };
        let err = parse_event(&ended("-0.5")).unwrap_err().to_string();
        assert!(
            err.contains("phase_ended")
                && err.contains("duration_s is -0.5")
                && err.contains("negative"),
            "{err}"
        );
        assert!(parse_event(&ended("0")).is_ok());
        assert!(parse_event(&ended("0.25")).is_ok());
        // JSON has no NaN; a number out of f64's range is refused by the reader itself.
        assert!(parse_event(&ended("1e999")).is_err());
        let srs = r#"{"ts":1,"type":"srs_ready","bytes":1,"pinned_bytes":0,"source":"disk","duration_s":-1}"#;
        let err = parse_event(srs).unwrap_err().to_string();
        assert!(
            err.contains("srs_ready") && err.contains("duration_s is -1"),
            "{err}"
        );
        let finished = |d: &str, p: &str| {
            format!(
                r#"{{"ts":1,"type":"proof_finished","proof_id":1,"ok":true,"verified":true,"duration_s":{d},"mode":"single","phases":[{{"phase":"prove","duration_s":1}},{{"phase":"verify","duration_s":{p}}}]}}"#
            )
        };
        let err = parse_event(&finished("-3", "1")).unwrap_err().to_string();
        assert!(
            err.contains("proof_finished") && err.contains("duration_s is -3"),
            "{err}"
        );
        let err = parse_event(&finished("3", "-1")).unwrap_err().to_string();
        assert!(err.contains("phases[1].duration_s is -1"), "{err}");
        assert!(parse_event(&finished("0", "0")).is_ok());
        // Built in memory (a peer that is not JSON-bound): NaN and infinity are caught too.
        for d in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            let e = Event::PhaseEnded {
                proof_id: 1,
                phase: Phase::Prove,
                partition: None,
                duration_s: d,
            };
            assert!(check_durations(&e).is_err(), "{d}");
        }
    }
}
