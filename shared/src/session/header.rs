//! Reading a session file's head (magic, header length, JSON header) so that damage to it
//! costs at most what it holds: the one header reader of both the whole-file reader and the
//! follower of a growing file.
//!
//! Contract: [`read_header`] gives the header and the offset of the first frame, with a
//! [`Warning`] (byte offset) for each damaged part it read past:
//! * a magic number a bit or two off `PTSESS\0` is read as a session's;
//! * a format version byte other than 1 or 2 is damage when the header says `"format":1` or
//!   `2` (another version is refused, as before); a header field `format` that disagrees with
//!   the version byte is damage to the field;
//! * a header length that does not match is replaced by the length of the JSON object that
//!   starts at byte 12;
//! * a JSON header that does not parse keeps every field still readable in it; the others
//!   are defaulted ([`Head::lost_anchors`] says which clock anchors were lost, for the caller
//!   to estimate) and the frames are taken from where the length says the header ends, or
//!   else from the first intact frame after byte 12.
//!
//! * the header's last field, `"header_crc"` (written since this field came; older files have
//!   none and are read as before), is the CRC-32 of the JSON text without it: a mismatch says
//!   a field was damaged even where the damaged text still parses (a digit of a number).
//!
//! Only a head with nothing session-like left (no readable header and no intact frame after
//! it) is an error.

use serde::de::DeserializeOwned;

use super::frame::{frame_at, known_kind, possible_len, FrameError};
use super::{SessionHeader, Warning, MAGIC, MAX_HEADER};

/// Format versions this build reads: 1 (frames) and 2 (compact chunks).
const SUPPORTED: [u8; 2] = [1, 2];

/// A session file's head, read.
#[derive(Debug, Clone)]
pub struct Head {
    /// The header, with defaults for what could not be read.
    pub header: SessionHeader,
    /// Offset of the first frame.
    pub frames_at: usize,
    /// Damage read past.
    pub warnings: Vec<Warning>,
    /// Whether `wall_anchor` and `mono_anchor` (in that order) were lost (defaulted to 0).
    pub lost_anchors: (bool, bool),
}

/// Why a head cannot be read: its byte offset and what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeadError {
    /// Byte offset.
    pub offset: u64,
    /// What.
    pub detail: String,
}

/// Whether `data` starts like a session file: the magic number, or one a bit or two off.
pub fn looks_like_session(data: &[u8]) -> bool {
    data.len() >= 7 && bits_off(&data[..7], &MAGIC[..7]) <= 2
}

fn bits_off(a: &[u8], b: &[u8]) -> u32 {
    a.iter().zip(b).map(|(x, y)| (x ^ y).count_ones()).sum()
}

/// Read the head of a session file from its first bytes (all of them, or at least the header
/// and the first frame).
pub fn read_header(data: &[u8]) -> Result<Head, HeadError> {
    let err = |offset: u64, detail: String| HeadError { offset, detail };
    if data.len() < 12 {
        return Err(err(0, "session file cut off inside its header".into()));
    }
    let mut warnings = Vec::new();
    let mut warn = |offset: u64, message: String| {
        warnings.push(Warning {
            offset: Some(offset),
            line: None,
            message,
        })
    };
    if data[..7] != MAGIC[..7] {
        if !looks_like_session(data) {
            return Err(err(
                0,
                "not a provetop session file (magic \"PTSESS\")".into(),
            ));
        }
        warn(
            0,
            format!(
                "damaged magic number {:?}, read as a session file's",
                String::from_utf8_lossy(&data[..7])
            ),
        );
    }
    let version = data[7];
    let unsupported = || {
        err(
            7,
            format!(
                "session format version {version} is not supported by this build (it reads versions 1 and 2)"
            ),
        )
    };
    let hlen = u32::from_le_bytes(data[8..12].try_into().expect("4 bytes"));
    let stated_end = (hlen <= MAX_HEADER)
        .then(|| 12 + hlen as usize)
        .filter(|&e| e <= data.len());
    let mut lost_anchors = (false, false);
    let mut format_read = true;
    let mut salvaged = false;
    // 1. The header where its length says; 2. the JSON object at byte 12, whatever the length
    // says; 3. what can be read of a damaged JSON header.
    let stated =
        stated_end.and_then(|e| serde_json::from_slice::<SessionHeader>(&data[12..e]).ok());
    let (mut header, frames_at) = if let (Some(h), Some(e)) = (stated, stated_end) {
        (h, e)
    } else if let Some((h, n)) = first_json(&data[12..]) {
        warn(
            8,
            format!("damaged header length {hlen}: the header is {n} bytes, read as such"),
        );
        (h, 12 + n)
    } else {
        let start = match stated_end {
            Some(e) if frames_follow(data, e) => e,
            _ => match first_frame(data) {
                Some(p) => p,
                None if !SUPPORTED.contains(&version) => return Err(unsupported()),
                None if stated_end.is_none() => {
                    return Err(err(
                        8,
                        format!("header length {hlen} is impossible or cut off"),
                    ))
                }
                None => {
                    let e = serde_json::from_slice::<SessionHeader>(&data[12..12 + hlen as usize])
                        .err()
                        .map_or_else(String::new, |e| e.to_string());
                    return Err(err(12, format!("bad session header: {e}")));
                }
            },
        };
        let (h, lost) = salvage(&data[12..start]);
        salvaged = true;
        format_read = !lost.contains(&"format");
        lost_anchors = (lost.contains(&"wall_anchor"), lost.contains(&"mono_anchor"));
        warn(
            12,
            format!(
                "damaged session header: {}; records read from byte {start}",
                if lost.is_empty() {
                    "its fields read back".to_string()
                } else {
                    format!("{} lost (defaulted)", lost.join(", "))
                }
            ),
        );
        (h, start)
    };
    // (A header salvaged field by field has been said to be damaged already.)
    if let Some(why) = (!salvaged)
        .then(|| checksum_damage(&data[12..frames_at]))
        .flatten()
    {
        warn(
            12,
            format!("damaged session header: {why}; its fields are read as they are"),
        );
    }
    if !SUPPORTED.contains(&version) {
        if !(format_read && matches!(header.format, 1 | 2)) {
            return Err(unsupported());
        }
        warn(
            7,
            format!(
                "damaged format version byte {version}: the header says format {}, read as such",
                header.format
            ),
        );
    } else if header.format != u32::from(version) {
        warn(
            12,
            format!(
                "damaged header field format {}: the file's version byte says {version}, read as such",
                header.format
            ),
        );
        header.format = u32::from(version);
    }
    Ok(Head {
        header,
        frames_at,
        warnings,
        lost_anchors,
    })
}

/// The name of the header's checksum field, its last.
const CRC_KEY: &str = "header_crc";

/// `json` (a header's JSON object) with its checksum field added last: the CRC-32 of `json`.
pub(super) fn with_checksum(mut json: Vec<u8>) -> Vec<u8> {
    let crc = crc32fast::hash(&json);
    if json.pop() == Some(b'}') {
        let sep = if json.ends_with(b"{") { "" } else { "," };
        json.extend_from_slice(format!("{sep}\"{CRC_KEY}\":{crc}}}").as_bytes());
    }
    json
}

/// What the header's checksum field says is wrong with `raw` (the header's JSON text), if
/// anything: None when it checks, or when the header has none (a file older than it).
fn checksum_damage(raw: &[u8]) -> Option<String> {
    let raw = raw.trim_ascii_end();
    // The last field: `,"KEY":DIGITS`. A flip can turn a digit into JSON whitespace (`0` and
    // the space are one bit apart), which leaves the JSON valid: whitespace is skipped here too.
    let body = raw.strip_suffix(b"}")?.trim_ascii_end();
    let digits_at = body.iter().rposition(|b| !b.is_ascii_digit())? + 1;
    let head = body[..digits_at]
        .trim_ascii_end()
        .strip_suffix(b":")?
        .trim_ascii_end()
        .strip_suffix(b"\"")?;
    let key_at = head.iter().rposition(|&b| b == b'"')?;
    let key = &head[key_at + 1..];
    let sep = head[..key_at].last().copied();
    if key != CRC_KEY.as_bytes() {
        // A field of the same length a bit or two off the checksum's name is its name damaged.
        return (key.len() == CRC_KEY.len() && bits_off(key, CRC_KEY.as_bytes()) <= 2)
            .then(|| "its checksum field's name is damaged".to_string());
    }
    let mut covered = head[..key_at.saturating_sub(usize::from(sep == Some(b',')))].to_vec();
    covered.push(b'}');
    let stated = std::str::from_utf8(&body[digits_at..])
        .ok()?
        .parse::<u64>()
        .ok();
    (stated != Some(u64::from(crc32fast::hash(&covered))))
        .then(|| "its checksum does not match (a field was damaged)".to_string())
}

/// The JSON object at the start of `b` as a header, and its length.
fn first_json(b: &[u8]) -> Option<(SessionHeader, usize)> {
    let mut it = serde_json::Deserializer::from_slice(b).into_iter::<SessionHeader>();
    let h = it.next()?.ok()?;
    Some((h, it.byte_offset()))
}

/// Whether frames can start at `at`: the end of the bytes, an intact frame, or the start of
/// one cut off.
fn frames_follow(data: &[u8], at: usize) -> bool {
    at == data.len() || !matches!(frame_at(&data[at..]), Err(FrameError::Bad(_)))
}

/// The first intact frame after byte 12, within the largest header's reach.
fn first_frame(data: &[u8]) -> Option<usize> {
    let last = data.len().min(12 + MAX_HEADER as usize + 1);
    (13..last.saturating_sub(8)).find(|&p| {
        let r = &data[p..];
        let len = u32::from_le_bytes(r[0..4].try_into().expect("4 bytes"));
        possible_len(len) && r.len() > 8 && known_kind(r[8]) && frame_at(r).is_ok()
    })
}

/// The header's fields still readable in a damaged JSON text, and the names of those lost.
fn salvage(raw: &[u8]) -> (SessionHeader, Vec<&'static str>) {
    let mut lost = Vec::new();
    let mut h = SessionHeader {
        format: 1,
        provetop_version: "unknown".into(),
        wall_anchor: 0,
        mono_anchor: 0,
        host: String::new(),
        command: Vec::new(),
        sample_hz: 0.0,
    };
    macro_rules! take {
        ($($f:ident),*) => {$(
            match field(raw, stringify!($f)) {
                Some(v) => h.$f = v,
                None => lost.push(stringify!($f)),
            }
        )*};
    }
    take!(
        format,
        provetop_version,
        wall_anchor,
        mono_anchor,
        host,
        command,
        sample_hz
    );
    (h, lost)
}

/// The value of `"name":` in a JSON text, read up to where it ends (what follows may be
/// damaged).
fn field<T: DeserializeOwned>(raw: &[u8], name: &str) -> Option<T> {
    let key = format!("\"{name}\":");
    let at = raw.windows(key.len()).position(|w| w == key.as_bytes())?;
    let rest = &raw[at + key.len()..];
    let mut it = serde_json::Deserializer::from_slice(rest).into_iter::<T>();
    let v = it.next()?.ok()?;
    // A value must end where the object goes on or closes: "12" read from "123x" is not 12.
    matches!(rest.get(it.byte_offset()), Some(b',' | b'}') | None).then_some(v)
}

/// Estimate lost clock anchors from the records: the monotonic anchor as the first record's
/// time, the wall anchor as `end_wall` (the file's modification time, unix ns, when known)
/// at the last record's time.
pub fn estimate_anchors(
    header: &mut SessionHeader,
    lost: (bool, bool),
    first_t: Option<u64>,
    last_t: Option<u64>,
    end_wall: Option<u64>,
) {
    let (lost_wall, lost_mono) = lost;
    if lost_mono {
        header.mono_anchor = first_t.unwrap_or(0);
    }
    if lost_wall {
        if let (Some(last), Some(end)) = (last_t, end_wall) {
            let since = last.saturating_sub(header.mono_anchor);
            header.wall_anchor = end.saturating_sub(since);
        }
    }
}
