//! Any line from a child or a controller: parse errors, never panics.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let line = String::from_utf8_lossy(data);
    if let Ok(m) = provetop_shared::protocol::parse_event(&line) {
        // Whatever parses must serialize and parse back to the same message.
        let again = provetop_shared::protocol::parse_event(&m.to_line()).expect("re-parse");
        assert_eq!(again, m);
    }
    if let Ok(c) = provetop_shared::protocol::parse_control(&line) {
        let again = provetop_shared::protocol::parse_control(&c.to_line()).expect("re-parse");
        assert_eq!(again, c);
    }
});
