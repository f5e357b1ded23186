//! Splitting the child's event stream into lines, with a cap on line length.
//!
//! The child is not trusted: a line longer than the cap is cut (reported once, the rest of it
//! skipped up to its newline), so a child that never writes a newline cannot make the monitor
//! buffer without bound.

/// Longest accepted line (without its newline).
pub const MAX_LINE: usize = 1 << 20;
/// Bytes of a bad line kept for the operator.
pub const EXCERPT: usize = 200;

/// What the splitter found.
#[derive(Debug, PartialEq)]
pub enum Piece<'a> {
    /// A whole line (without its newline).
    Line(&'a [u8]),
    /// A line over the cap: its length so far (or in all, once its end was seen) and its head.
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
            Piece::Line(l) | Piece::Partial(l) => l.len(),
            Piece::TooLong { head, .. } => head.len(),
        }
    }

    /// Whether it holds no bytes.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Incremental line splitter.
#[derive(Debug)]
pub struct Splitter {
    buf: Vec<u8>,
    max: usize,
    /// Inside an over-long line: skip up to the next newline.
    skipping: bool,
}

impl Splitter {
    /// A splitter with the given cap.
    pub fn new(max: usize) -> Self {
        Splitter {
            buf: Vec::new(),
            max,
            skipping: false,
        }
    }

    /// Feed bytes; `f` gets every complete piece.
    pub fn feed(&mut self, mut data: &[u8], mut f: impl FnMut(Piece<'_>)) {
        while !data.is_empty() {
            // memchr: a flooding child is split at memory speed, even in a debug build.
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
            if self.buf.is_empty() && ended && part.len() <= self.max {
                // Fast path: the whole line is in this chunk.
                f(Piece::Line(part));
                continue;
            }
            if self.buf.len() + part.len() > self.max {
                let len = self.buf.len() + part.len();
                let mut head = std::mem::take(&mut self.buf);
                head.extend_from_slice(&part[..part.len().min(EXCERPT)]);
                head.truncate(EXCERPT);
                self.buf = Vec::new(); // give the big allocation back
                self.skipping = !ended;
                f(Piece::TooLong { len, head });
                continue;
            }
            self.buf.extend_from_slice(part);
            if ended {
                let line = std::mem::take(&mut self.buf);
                f(Piece::Line(&line));
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
            f(Piece::Partial(&b));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(max: usize, chunks: &[&[u8]]) -> Vec<String> {
        let mut s = Splitter::new(max);
        let mut out = Vec::new();
        let mut push = |p: Piece<'_>| {
            out.push(match p {
                Piece::Line(l) => format!("L:{}", String::from_utf8_lossy(l)),
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
}
