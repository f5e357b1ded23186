//! What travels over the SSH channel between `attach HOST:SESSION` (or `ls HOST`) and the
//! remote `provetop remote-bridge`.
//!
//! Remote to local (the bridge's stdout): first one hello line, `provetop-bridge <JSON>`
//! ([`Hello`]: the bridge's protocol and provetop's version); then frames, each a line naming
//! it, and for `data` the bytes it announces:
//! * `data N` + N bytes: the session file's next bytes (the local side appends them to its
//!   copy, which the screen follows as it follows a local file);
//! * `reply JSON`: the control socket's reply to the local side's last request;
//! * `status JSON`: the session's status (first, before any data), `ls JSON`: the sessions;
//! * `ended JSON`: the supervisor is gone (the session ended);
//! * `error TEXT`: the bridge cannot go on (no such session, another's session, …).
//!
//! Local to remote (the bridge's stdin): one control-socket request per line (the control
//! socket's own JSON, [`crate::monitor::control::Request`]). The end of stdin (the connection
//! dropped, or the screen left) ends the bridge, never the session.

use std::io::{BufRead, Read, Write};

use serde::{Deserialize, Serialize};

/// The bridge protocol's version: both sides must speak the same.
pub const PROTO: u32 = 1;
/// The hello line's first word.
pub const HELLO: &str = "provetop-bridge";
/// Longest header line read (a `status` or `ls` line included).
pub const MAX_LINE: usize = 1 << 20;
/// Most bytes one `data` frame carries.
pub const MAX_DATA: usize = 1 << 20;

/// The bridge's first line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Hello {
    pub proto: u32,
    pub version: String,
}

impl Hello {
    pub fn ours() -> Hello {
        Hello {
            proto: PROTO,
            version: env!("CARGO_PKG_VERSION").to_string(),
        }
    }

    /// Whether the other side is this version; else one line saying what differs.
    pub fn check(&self) -> Result<(), String> {
        let ours = Hello::ours();
        if self.proto != ours.proto || self.version != ours.version {
            return Err(format!(
                "the remote provetop is version {} (bridge protocol {}), this one {} (protocol {}): \
                 install the same version on both sides",
                crate::text::inert(&self.version),
                self.proto,
                ours.version,
                ours.proto
            ));
        }
        Ok(())
    }
}

/// One frame from the bridge.
#[derive(Debug, Clone, PartialEq)]
pub enum Frame {
    Data(Vec<u8>),
    Reply(serde_json::Value),
    Status(serde_json::Value),
    Ls(serde_json::Value),
    Ended(serde_json::Value),
    Error(String),
}

/// Write the hello line.
pub fn write_hello(out: &mut impl Write) -> std::io::Result<()> {
    let h = serde_json::to_string(&Hello::ours()).unwrap_or_default();
    writeln!(out, "{HELLO} {h}")?;
    out.flush()
}

/// Write one frame (and flush: the other side waits for it).
pub fn write(out: &mut impl Write, f: &Frame) -> std::io::Result<()> {
    match f {
        Frame::Data(b) => {
            writeln!(out, "data {}", b.len())?;
            out.write_all(b)?;
        }
        Frame::Reply(v) => writeln!(out, "reply {v}")?,
        Frame::Status(v) => writeln!(out, "status {v}")?,
        Frame::Ls(v) => writeln!(out, "ls {v}")?,
        Frame::Ended(v) => writeln!(out, "ended {v}")?,
        Frame::Error(t) => writeln!(out, "error {}", t.replace('\n', " "))?,
    }
    out.flush()
}

/// One line, at most [`MAX_LINE`] bytes; `None` at the end of the stream.
fn line(r: &mut impl BufRead) -> std::io::Result<Option<String>> {
    let mut buf = Vec::new();
    let n = r
        .by_ref()
        .take(MAX_LINE as u64 + 1)
        .read_until(b'\n', &mut buf)?;
    if n == 0 {
        return Ok(None);
    }
    if buf.last() != Some(&b'\n') {
        return Err(bad(if buf.len() > MAX_LINE {
            format!("a line longer than {MAX_LINE} bytes")
        } else {
            "the stream ends inside a line".into()
        }));
    }
    buf.pop();
    String::from_utf8(buf)
        .map(Some)
        .map_err(|_| bad("a line that is not UTF-8".into()))
}

fn bad(what: String) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, what)
}

/// The hello line: the remote's [`Hello`], or what it said instead (its first line).
pub fn read_hello(r: &mut impl BufRead) -> Result<Hello, String> {
    let l = match line(r) {
        Ok(Some(l)) => l,
        Ok(None) => return Err("the remote side closed the connection before saying hello".into()),
        Err(e) => return Err(format!("the remote side's first line: {e}")),
    };
    let Some(json) = l.strip_prefix(HELLO).map(str::trim) else {
        let shown: String = l.chars().take(120).collect();
        return Err(format!(
            "the remote side is not a provetop bridge: it said {:?}",
            crate::text::inert(&shown)
        ));
    };
    serde_json::from_str(json).map_err(|e| format!("a bad hello from the remote provetop: {e}"))
}

/// The next frame; `None` at the end of the stream.
pub fn read(r: &mut impl BufRead) -> std::io::Result<Option<Frame>> {
    let Some(l) = line(r)? else { return Ok(None) };
    let (word, rest) = l.split_once(' ').unwrap_or((l.as_str(), ""));
    let json =
        |s: &str| serde_json::from_str(s).map_err(|e| bad(format!("a bad {word} frame: {e}")));
    Ok(Some(match word {
        "data" => {
            let n: usize = rest
                .parse()
                .ok()
                .filter(|n| *n <= MAX_DATA)
                .ok_or_else(|| bad(format!("a bad data length {rest:?}")))?;
            let mut b = vec![0; n];
            r.read_exact(&mut b)?;
            Frame::Data(b)
        }
        "reply" => Frame::Reply(json(rest)?),
        "status" => Frame::Status(json(rest)?),
        "ls" => Frame::Ls(json(rest)?),
        "ended" => Frame::Ended(json(rest)?),
        "error" => Frame::Error(crate::text::inert(rest).into_owned()),
        other => {
            let shown: String = other.chars().take(40).collect();
            return Err(bad(format!(
                "an unknown frame {:?}",
                crate::text::inert(&shown)
            )));
        }
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_travel_and_a_stranger_or_another_version_is_named() {
        let mut buf = Vec::new();
        write_hello(&mut buf).unwrap();
        let frames = [
            Frame::Status(serde_json::json!({"id": "s"})),
            Frame::Data(b"ab\ncd".to_vec()),
            Frame::Reply(serde_json::json!({"ok": true})),
            Frame::Error("no such session".into()),
        ];
        for f in &frames {
            write(&mut buf, f).unwrap();
        }
        let mut r = std::io::BufReader::new(&buf[..]);
        assert_eq!(read_hello(&mut r).unwrap(), Hello::ours());
        for f in &frames {
            assert_eq!(read(&mut r).unwrap().as_ref(), Some(f));
        }
        assert_eq!(read(&mut r).unwrap(), None);
        let mut other =
            std::io::BufReader::new(&b"error: unrecognized subcommand 'remote-bridge'\n"[..]);
        assert!(read_hello(&mut other)
            .unwrap_err()
            .contains("not a provetop bridge"));
        let old = Hello {
            proto: 1,
            version: "0.0.9".into(),
        };
        assert!(old.check().unwrap_err().contains("version 0.0.9"));
    }
}
