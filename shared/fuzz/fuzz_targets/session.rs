//! Arbitrary bytes after a valid session header: every frame is read, damaged, or cut; no panic.
#![no_main]
use libfuzzer_sys::fuzz_target;
use provetop_shared::session::{load_bytes, SessionHeader, MAGIC};

fuzz_target!(|data: &[u8]| {
    let p = std::path::Path::new("fuzz.ptop");
    // Raw bytes, as a file could hold anything.
    let _ = load_bytes(p, data);
    // A well-formed header followed by fuzzed frames: exercises the frame reader and resync.
    let header = serde_json::to_vec(&SessionHeader {
        format: 1,
        provetop_version: "fuzz".into(),
        wall_anchor: 0,
        mono_anchor: 0,
        host: String::new(),
        command: vec![],
        sample_hz: 20.0,
    })
    .unwrap();
    let mut file = MAGIC.to_vec();
    file.extend_from_slice(&(header.len() as u32).to_le_bytes());
    file.extend_from_slice(&header);
    file.extend_from_slice(data);
    let _ = load_bytes(p, &file);
});
