//! The CI-sized version of the fuzz targets in `shared/fuzz/` (which run under cargo fuzz for
//! minutes): arbitrary input to the event/control parser, the session reader and the CSV
//! reader gives a value or an error, never a panic, and what parses re-serializes to itself.

use std::path::Path;

use proptest::prelude::*;
use provetop_shared::protocol::{parse_control, parse_event};
use provetop_shared::session::load_bytes;

/// JSON-ish lines: real message shapes with fields swapped, dropped or mistyped.
fn protocol_line() -> impl Strategy<Value = String> {
    let types = prop::sample::select(vec![
        "hello",
        "srs_loading",
        "srs_ready",
        "proof_started",
        "phase_started",
        "phase_ended",
        "proof_finished",
        "mode_changed",
        "log",
        "error",
        "bye",
        "prove",
        "set_mode",
        "pause",
        "shutdown",
        "nope",
        "",
    ]);
    let values = prop::sample::select(vec![
        "1",
        "-1",
        "1e400",
        "\"x\"",
        "null",
        "true",
        "[]",
        "{}",
        "\"single\"",
        "\"batch:0\"",
        "\"pipelined:3\"",
        "\"synthesis\"",
        "18446744073709551616",
        "\"\\ud800\"",
    ]);
    let keys = prop::sample::select(vec![
        "ts",
        "proof_id",
        "phase",
        "partition",
        "duration_s",
        "mode",
        "count",
        "abort",
        "protocol",
        "reason",
        "proofs_done",
        "message",
        "level",
        "ok",
        "verified",
    ]);
    (types, prop::collection::vec((keys, values), 0..8)).prop_map(|(t, kv)| {
        let mut s = format!("{{\"type\":\"{t}\"");
        for (k, v) in kv {
            s.push_str(&format!(",\"{k}\":{v}"));
        }
        s.push('}');
        s
    })
}

/// Text with everything a CSV writer must quote: commas, quotes, line breaks.
fn csv_text() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop::sample::select(vec!['a', '"', ',', '\n', '\r', '=', 'é', ' ']),
        0..12,
    )
    .prop_map(|v| v.into_iter().collect())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn protocol_lines_never_panic_and_roundtrip(line in protocol_line()) {
        if let Ok(m) = parse_event(&line) {
            prop_assert_eq!(parse_event(&m.to_line()).unwrap(), m);
        }
        if let Ok(c) = parse_control(&line) {
            prop_assert_eq!(parse_control(&c.to_line()).unwrap(), c);
        }
    }

    #[test]
    fn arbitrary_bytes_never_panic_the_parsers(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        let line = String::from_utf8_lossy(&bytes);
        let _ = parse_event(&line);
        let _ = parse_control(&line);
        let _ = load_bytes(Path::new("x"), &bytes);
        let mut csv = b"timestamp,rss_kb\n".to_vec();
        csv.extend_from_slice(&bytes);
        let _ = load_bytes(Path::new("x.csv"), &csv);
        let mut session = b"PTSESS\0\x01".to_vec();
        session.extend_from_slice(&bytes);
        let _ = load_bytes(Path::new("x.ptop"), &session);
    }

    #[test]
    fn csv_rows_with_any_quoted_text_column_read_back_whole(
        rows in prop::collection::vec((0u64..1_000_000, 0u64..1 << 40, csv_text()), 1..20),
        crlf in any::<bool>(),
    ) {
        // RFC 4180 quoting, as any CSV writer does it: commas, quotes and line breaks inside.
        let nl = if crlf { "\r\n" } else { "\n" };
        let mut csv = format!("timestamp,rss_kb,phase{nl}");
        for (i, (ts, kb, text)) in rows.iter().enumerate() {
            csv.push_str(&format!(
                "{},{kb},\"{}\"{nl}",
                1_700_000_000 + ts + i as u64 * 1_000_000,
                text.replace('"', "\"\"")
            ));
        }
        let l = load_bytes(Path::new("x.csv"), csv.as_bytes()).unwrap();
        let kbs: Vec<u64> = l
            .records
            .iter()
            .map(|r| match &r.body {
                provetop_shared::RecordBody::Sample(s) => s.rss / 1024,
                _ => unreachable!(),
            })
            .collect();
        prop_assert_eq!(kbs, rows.iter().map(|r| r.1).collect::<Vec<_>>());
    }

    #[test]
    fn csv_with_unbalanced_quotes_never_panics_and_stays_linear(
        bytes in prop::collection::vec(prop::sample::select(vec![b'"', b',', b'\n', b'1', b'\r']), 0..4096)
    ) {
        let mut csv = b"timestamp,rss_kb\n".to_vec();
        csv.extend_from_slice(&bytes);
        let _ = load_bytes(Path::new("x.csv"), &csv);
    }
}
