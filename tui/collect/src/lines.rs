//! Splitting a stream of bytes into lines, with a cap on line length: the one splitter of
//! the child's event pipe, the child's output and a followed log (`watch --log`).
//!
//! The writer is not trusted: no line is held past the cap, so a writer that never writes a
//! newline cannot make the monitor buffer without bound. What a line over the cap becomes is
//! the reader's choice ([`Overlong`]):
//!
//! * [`Overlong::Skip`] (the event pipe, where such a line is no event): it is reported once,
//!   as soon as it passes the cap, by its first [`EXCERPT`] bytes ([`Piece::TooLong`]), and the
//!   rest of it is skipped up to its newline;
//! * [`Overlong::KeepHead`] (output lines, recorded cut): its first `max` bytes are kept and
//!   it is reported at its newline with its whole length ([`Piece::Cut`]).
//!
//! Lines are split at memory speed (`memchr`), and a line within the cap that a read holds
//! whole is handed over without a copy.

/// Bytes of a bad line kept for the operator.
pub const EXCERPT: usize = 200;

/// What the splitter found.
#[derive(Debug, PartialEq)]
pub enum Piece<'a> {
    /// A whole line (without its newline).
    Line(&'a [u8]),
    /// A line over the cap under [`Overlong::KeepHead`], whole (up to its newline or the end
    /// of the stream): its first bytes and its whole length.
    Cut {
        /// The first `max` bytes.
        head: &'a [u8],
        /// Bytes of the whole line.
        len: u64,
    },
    /// A line over the cap under [`Overlong::Skip`]: its length so far (or in all, once its
    /// end was seen) and its head.
    TooLong {
        /// Bytes seen before it was cut.
        len: usize,
        /// The first bytes.
        head: Vec<u8>,
    },
    /// Bytes without a newline at the end of the stream.
    Partial(&'a [u8]),
}

impl Piece<'_> {
    /// Bytes of the line (as far as it was kept).
    pub fn len(&self) -> usize {
        match self {
            Piece::Line(l) | Piece::Partial(l) | Piece::Cut { head: l, .. } => l.len(),
            Piece::TooLong { head, .. } => head.len(),
        }
    }

    /// Whether it holds no bytes.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The bytes kept of the line and its length in bytes: what a line is recorded from
    /// (the length is larger than the bytes kept for a line that was cut).
    pub fn head_and_len(&self) -> (&[u8], u64) {
        match self {
            Piece::Line(l) | Piece::Partial(l) => (l, l.len() as u64),
            Piece::Cut { head, len } => (head, *len),
            Piece::TooLong { head, len } => (head, *len as u64),
        }
    }
}

/// What a line longer than the cap becomes (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Overlong {
    /// Reported at once by its head, the rest skipped: [`Piece::TooLong`].
    Skip,
    /// Kept by its first `max` bytes, reported whole at its end: [`Piece::Cut`].
    KeepHead,
}

/// Incremental line splitter.
#[derive(Debug)]
pub struct Splitter {
    /// The line so far (at most `max` bytes of it).
    buf: Vec<u8>,
    max: usize,
    overlong: Overlong,
    /// Bytes of the line so far past the `max` kept in `buf` ([`Overlong::KeepHead`]).
    beyond: u64,
    /// Inside an over-long line: skip up to the next newline ([`Overlong::Skip`]).
    skipping: bool,
}

impl Splitter {
    /// A splitter with the given cap, skipping what is over it ([`Overlong::Skip`]).
    pub fn new(max: usize) -> Self {
        Splitter::with(max, Overlong::Skip)
    }

    /// A splitter with the given cap, keeping the heads of longer lines
    /// ([`Overlong::KeepHead`]).
    pub fn keeping_heads(max: usize) -> Self {
        Splitter::with(max, Overlong::KeepHead)
    }

    fn with(max: usize, overlong: Overlong) -> Self {
        Splitter {
            buf: Vec::new(),
            max,
            overlong,
            beyond: 0,
            skipping: false,
        }
    }

    /// Feed bytes; `f` gets every complete piece.
    pub fn feed(&mut self, mut data: &[u8], mut f: impl FnMut(Piece<'_>)) {
        while !data.is_empty() {
            // memchr: a flooding writer is split at memory speed, even in a debug build.
            let nl = memchr::memchr(b'\n', data);
            let (part, rest, ended) = match nl {
                Some(i) => (&data[..i], &data[i + 1..], true),
                None => (data, &data[data.len()..], false),
            };
            data = rest;
            if self.skipping {
                if ended {
                    self.skipping = false;
                }
                continue;
            }
            if self.buf.is_empty() && self.beyond == 0 && ended && part.len() <= self.max {
                // Fast path: the whole line is in this chunk.
                f(Piece::Line(part));
                continue;
            }
            if self.buf.len() + part.len() > self.max {
                match self.overlong {
                    Overlong::Skip => {
                        let len = self.buf.len() + part.len();
                        let mut head = std::mem::take(&mut self.buf);
                        head.extend_from_slice(&part[..part.len().min(EXCERPT)]);
                        head.truncate(EXCERPT);
                        self.buf = Vec::new(); // give the big allocation back
                        self.skipping = !ended;
                        f(Piece::TooLong { len, head });
                        continue;
                    }
                    Overlong::KeepHead => {
                        let room = self.max.saturating_sub(self.buf.len());
                        self.buf.extend_from_slice(&part[..room]);
                        self.beyond += (part.len() - room) as u64;
                    }
                }
            } else {
                self.buf.extend_from_slice(part);
            }
            if ended {
                let line = std::mem::take(&mut self.buf);
                let beyond = std::mem::take(&mut self.beyond);
                f(whole(&line, beyond));
                self.buf = line;
                self.buf.clear();
                if self.buf.capacity() > 64 << 10 {
                    self.buf = Vec::new();
                }
            }
        }
    }

    /// End of stream: report a trailing partial line, if any.
    pub fn finish(&mut self, mut f: impl FnMut(Piece<'_>)) {
        if !self.buf.is_empty() && !self.skipping {
            let b = std::mem::take(&mut self.buf);
            match std::mem::take(&mut self.beyond) {
                0 => f(Piece::Partial(&b)),
                beyond => f(whole(&b, beyond)),
            }
        }
    }
}

/// A line that ended: whole, or cut when `beyond` bytes of it were not kept.
fn whole(kept: &[u8], beyond: u64) -> Piece<'_> {
    match beyond {
        0 => Piece::Line(kept),
        _ => Piece::Cut {
            head: kept,
            len: kept.len() as u64 + beyond,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(max: usize, chunks: &[&[u8]]) -> Vec<String> {
        split(Splitter::new(max), chunks)
    }

    fn split(mut s: Splitter, chunks: &[&[u8]]) -> Vec<String> {
        let mut out = Vec::new();
        let mut push = |p: Piece<'_>| {
            out.push(match p {
                Piece::Line(l) => format!("L:{}", String::from_utf8_lossy(l)),
                Piece::Cut { head, len } => format!("C:{len}:{}", String::from_utf8_lossy(head)),
                Piece::TooLong { len, head } => {
                    format!("T:{len}:{}", String::from_utf8_lossy(&head))
                }
                Piece::Partial(b) => format!("P:{}", String::from_utf8_lossy(b)),
            })
        };
        for c in chunks {
            s.feed(c, &mut push);
        }
        s.finish(&mut push);
        out
    }

    #[test]
    fn joins_lines_across_chunks() {
        assert_eq!(
            run(100, &[b"ab", b"c\nde", b"f\n", b"g"]),
            ["L:abc", "L:def", "P:g"]
        );
    }

    #[test]
    fn cuts_long_lines_and_recovers() {
        assert_eq!(run(4, &[b"12345", b"678\nok\n"]), ["T:5:12345", "L:ok"]);
        assert_eq!(run(4, &[b"123456789\nok\n"]), ["T:9:123456789", "L:ok"]);
    }

    #[test]
    fn empty_lines_are_lines() {
        assert_eq!(run(4, &[b"\n\n"]), ["L:", "L:"]);
    }

    #[test]
    fn keeping_heads_keeps_a_long_lines_head_and_its_whole_length() {
        let keep = || Splitter::keeping_heads(4);
        assert_eq!(
            split(keep(), &[b"12345", b"678\nok\n"]),
            ["C:8:1234", "L:ok"]
        );
        assert_eq!(split(keep(), &[b"123456789\nok\n"]), ["C:9:1234", "L:ok"]);
        assert_eq!(
            split(keep(), &[b"1234\n", b"12", b"34"]),
            ["L:1234", "P:1234"]
        );
        assert_eq!(split(keep(), &[b"12", b"3456"]), ["C:6:1234"]);
    }

    /// The head-and-length reading the output copier and the `--log` follower each spelled
    /// before they shared this splitter: every byte appended to the head up to the cap, the
    /// length counted, a line given at its newline and a non-empty rest at the end.
    fn heads_by_hand(max: usize, chunks: &[&[u8]]) -> Vec<(Vec<u8>, u64)> {
        let (mut out, mut head, mut len) = (Vec::new(), Vec::new(), 0u64);
        for chunk in chunks {
            let mut rest: &[u8] = chunk;
            while !rest.is_empty() {
                let (part, ended) = match rest.iter().position(|b| *b == b'\n') {
                    Some(i) => {
                        let p = &rest[..i];
                        rest = &rest[i + 1..];
                        (p, true)
                    }
                    None => (std::mem::take(&mut rest), false),
                };
                let room = max.saturating_sub(head.len());
                head.extend_from_slice(&part[..part.len().min(room)]);
                len += part.len() as u64;
                if ended {
                    out.push((std::mem::take(&mut head), std::mem::take(&mut len)));
                }
            }
        }
        if len > 0 {
            out.push((head, len));
        }
        out
    }

    #[test]
    fn keeping_heads_reads_any_stream_as_the_head_and_length_reading_did() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move |n: u64| {
            seed = seed
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (seed >> 33) % n
        };
        for _ in 0..2_000 {
            let max = 1 + next(12) as usize;
            let bytes: Vec<u8> = (0..next(80))
                .map(|_| {
                    if next(5) == 0 {
                        b'\n'
                    } else {
                        b'a' + next(26) as u8
                    }
                })
                .collect();
            let mut chunks: Vec<&[u8]> = Vec::new();
            let mut rest = &bytes[..];
            while !rest.is_empty() {
                let (c, r) = rest.split_at((1 + next(20) as usize).min(rest.len()));
                chunks.push(c);
                rest = r;
            }
            let mut got = Vec::new();
            let mut s = Splitter::keeping_heads(max);
            let mut push = |p: Piece<'_>| {
                let (head, len) = p.head_and_len();
                got.push((head.to_vec(), len));
            };
            for c in &chunks {
                s.feed(c, &mut push);
            }
            s.finish(&mut push);
            assert_eq!(got, heads_by_hand(max, &chunks), "cap {max}, {chunks:?}");
        }
    }
}
