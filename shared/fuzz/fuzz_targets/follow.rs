//! The follower of a session file being written (`replay --follow`, `attach`): the input is a
//! script of what a writer (and a second, careless writer) does to the file between reads —
//! append intact records, torn records, raw garbage, flip a bit already written — with reads
//! in between. No panic; never more records than the bytes could hold.
#![no_main]
use std::io::{Seek, SeekFrom, Write};

use libfuzzer_sys::fuzz_target;
use provetop::follow::{Follower, Item};
use provetop_shared::session::{encode_payload, SessionHeader, SessionWriter};
use provetop_shared::{Mark, Record, RecordBody};

fn frame(t: u64, text: &[u8]) -> Vec<u8> {
    let rec = Record {
        t,
        body: RecordBody::Mark(Mark::Note {
            text: String::from_utf8_lossy(text).into_owned(),
        }),
    };
    let payload = encode_payload(&rec);
    let mut f = (payload.len() as u32).to_le_bytes().to_vec();
    f.extend_from_slice(&crc32fast::hash(&payload).to_le_bytes());
    f.extend_from_slice(&payload);
    f
}

fuzz_target!(|data: &[u8]| {
    let dir = std::env::temp_dir();
    let path = dir.join(format!("provetop-fuzz-follow-{}.ptop", std::process::id()));
    let _ = std::fs::remove_file(&path);
    let header = SessionHeader {
        format: 1,
        provetop_version: "fuzz".into(),
        wall_anchor: 0,
        mono_anchor: 0,
        host: String::new(),
        command: vec![],
        sample_hz: 20.0,
    };
    {
        let mut w = SessionWriter::create(&path, &header).unwrap();
        w.flush().unwrap();
    }
    let mut file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    file.seek(SeekFrom::End(0)).unwrap();
    let Ok(mut follower) = Follower::open(&path) else {
        return;
    };
    let mut written: u64 = 0;
    let mut records = 0usize;
    let mut read = |f: &mut Follower| {
        for item in f.read().unwrap() {
            if let Item::Record(_) = item {
                records += 1;
            }
        }
    };
    let mut i = 0;
    let mut t = 0u64;
    while i < data.len() {
        let op = data[i];
        let n = data.get(i + 1).copied().unwrap_or(0) as usize;
        let body = &data[(i + 2).min(data.len())..(i + 2 + n).min(data.len())];
        i += 2 + body.len();
        let bytes = match op % 5 {
            0 => {
                t += 1;
                frame(t, body)
            }
            1 => body.to_vec(),
            2 => {
                // A torn frame: a prefix of an intact one.
                t += 1;
                let f = frame(t, body);
                f[..n.min(f.len()) / 2].to_vec()
            }
            3 => {
                // A bit flipped in what was written (a second writer, a bad disk).
                if written > 0 {
                    let at = u64::from_le_bytes({
                        let mut b = [0u8; 8];
                        b[..body.len().min(8)].copy_from_slice(&body[..body.len().min(8)]);
                        b
                    }) % written;
                    let end = file.stream_position().unwrap();
                    let base = end - written;
                    let mut byte = [0u8; 1];
                    use std::io::Read;
                    let mut r = std::fs::File::open(&path).unwrap();
                    r.seek(SeekFrom::Start(base + at)).unwrap();
                    let _ = r.read(&mut byte);
                    file.seek(SeekFrom::Start(base + at)).unwrap();
                    file.write_all(&[byte[0] ^ (1 << (n % 8))]).unwrap();
                    file.seek(SeekFrom::Start(end)).unwrap();
                }
                Vec::new()
            }
            _ => {
                read(&mut follower);
                Vec::new()
            }
        };
        file.write_all(&bytes).unwrap();
        written += bytes.len() as u64;
    }
    read(&mut follower);
    read(&mut follower);
    // A frame is at least 17 bytes (head 8, kind 1, time 8).
    assert!(records as u64 <= written / 17, "{records} records from {written} bytes");
    let _ = std::fs::remove_file(&path);
});
