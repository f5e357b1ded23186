//! Reading one protocol line: its `type` must be known (an unknown one is an error, unknown
//! fields are not), and a `hello` from a newer major version is refused.

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
    Ok(msg)
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
