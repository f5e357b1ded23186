//! Terminal escape sequences out of a line: loggers colour their output when they think they
//! write to a terminal (env_logger, fil_logger, tracing's fmt, ark-std's `colored`).
//!
//! Only the grammars see the stripped text; the recorded line keeps its bytes and is made
//! inert where it is shown.

use std::borrow::Cow;

/// `line` without CSI (`ESC [ … final`), OSC (`ESC ] … BEL|ESC \`) and two-byte escapes.
pub fn strip(line: &str) -> Cow<'_, str> {
    if !line.contains('\x1b') {
        return Cow::Borrowed(line);
    }
    let mut out = String::with_capacity(line.len());
    let mut it = line.chars().peekable();
    while let Some(c) = it.next() {
        if c != '\x1b' {
            out.push(c);
            continue;
        }
        match it.next() {
            Some('[') => {
                // Parameters and intermediates, then one final byte in @..~.
                for c in it.by_ref() {
                    if ('@'..='~').contains(&c) {
                        break;
                    }
                }
            }
            Some(']') => {
                while let Some(c) = it.next() {
                    if c == '\x07' {
                        break;
                    }
                    if c == '\x1b' && it.peek() == Some(&'\\') {
                        it.next();
                        break;
                    }
                }
            }
            _ => {}
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colours_and_titles_go_and_the_text_stays() {
        assert_eq!(
            strip("\x1b[2m[\x1b[0m2026 \x1b[32mINFO \x1b[0m x\x1b[2m]\x1b[0m m"),
            "[2026 INFO  x] m"
        );
        assert_eq!(strip("a\x1b]0;title\x07b\x1b]2;t\x1b\\c"), "abc");
        assert!(matches!(strip("plain"), Cow::Borrowed("plain")));
        assert_eq!(strip("cut\x1b["), "cut");
    }
}
