//! Arbitrary rows under a `timestamp,rss_kb` header: a clear error or records, never a panic.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut file = b"timestamp,rss_kb\n".to_vec();
    file.extend_from_slice(data);
    let _ = provetop_shared::session::load_bytes(std::path::Path::new("fuzz.csv"), &file);
});
