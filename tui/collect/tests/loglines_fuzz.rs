//! Inputs the `loglines` fuzz target (shared/fuzz) found crashing, kept as regression tests.

use provetop_collect::loglines::{envelope, Engine};
use provetop_collect::supervisor::LineSink;
use provetop_shared::OutputSource;

const LINE: &str = "Feb 25 23:00:34 node1 prover[7]: Bellperson 0.27.0 is being used!";

#[test]
fn a_journald_time_reads_as_its_stamp() {
    let e = envelope::read(LINE);
    assert!(e.stamp.is_some(), "{e:?}");
    assert_eq!(e.msg, "Bellperson 0.27.0 is being used!");
}

#[test]
fn a_multibyte_character_inside_a_journald_time_is_no_stamp_and_no_panic() {
    // Every byte of `Mon DD HH:MM:SS` after the month: the journald reader sliced the line at
    // fixed byte offsets, which panicked inside a multibyte character.
    for i in 4..15 {
        for c in ['é', '\u{FFFD}', '€', '😀'] {
            let mut line = LINE.to_string();
            line.replace_range(i..i + 1, &c.to_string());
            let e = envelope::read(&line);
            assert!(e.stamp.is_none(), "{line:?} read a stamp: {e:?}");
            let mut out = Vec::new();
            Engine::new(Vec::new()).line(&line, 1_000_000_000, &mut out);
        }
    }
}

#[test]
fn the_fuzzers_crashing_output_line_goes_through_the_line_sink() {
    // The minimized crash: an invalid byte where the day and the time meet (U+FFFD once
    // decoded lossily, three bytes across the time's offsets).
    let head: &[u8] = b"Feb 25\xe723:00:34 node1 h SupraSeal is being used!";
    let mut sink = LineSink::new();
    let mut recorded = 0;
    sink.line(
        head,
        head.len() as u64,
        OutputSource::Stderr,
        1_000_000_000,
        true,
        |_| {},
        |_| recorded += 1,
    );
    assert_eq!(recorded, 1, "the line is still recorded as text");
}
