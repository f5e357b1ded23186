//! The compact session reader (format 2) on arbitrary input: fuzzed bytes as the columns of
//! a chunk whose checksum and compression are right (so the column decoder itself is
//! reached), and as raw blocks after a good header. Never a panic; time and memory bounded.
#![no_main]
use libfuzzer_sys::fuzz_target;
use provetop_shared::session::compact::{CHUNK_HEAD, MAGIC2};
use provetop_shared::session::{load_bytes, SessionHeader};

fuzz_target!(|data: &[u8]| {
    let p = std::path::Path::new("fuzz.ptop");
    let header = serde_json::to_vec(&SessionHeader {
        format: 2,
        provetop_version: "fuzz".into(),
        wall_anchor: 0,
        mono_anchor: 0,
        host: String::new(),
        command: vec![],
        sample_hz: 20.0,
    })
    .unwrap();
    let mut file = MAGIC2.to_vec();
    file.extend_from_slice(&(header.len() as u32).to_le_bytes());
    file.extend_from_slice(&header);
    let head_len = file.len();
    // A chunk whose columns are the fuzzed bytes (record count from the first two).
    let count = data.first().map_or(1, |&b| u32::from(b) + 1)
        * data.get(1).map_or(1, |&b| u32::from(b % 8) + 1);
    let mut body = vec![b'C'];
    body.extend_from_slice(&0u64.to_le_bytes());
    body.extend_from_slice(&count.to_le_bytes());
    body.extend_from_slice(&[0u8; 16]);
    body.extend_from_slice(&(data.len() as u32).to_le_bytes());
    body.resize(CHUNK_HEAD, 0);
    body.extend_from_slice(&zstd::bulk::compress(data, 1).unwrap());
    file.extend_from_slice(&(body.len() as u32).to_le_bytes());
    file.extend_from_slice(&crc32fast::hash(&body).to_le_bytes());
    file.extend_from_slice(&body);
    let _ = load_bytes(p, &file);
    // The fuzzed bytes as blocks.
    file.truncate(head_len);
    file.extend_from_slice(data);
    let _ = load_bytes(p, &file);
});
