//! Round trips, every cut point and damaged byte, the CSV reader.

use super::*;
use crate::protocol::Event;
use crate::record::{Mark, RecordBody, Sample};

fn sample(rss: u64) -> RecordBody {
    RecordBody::Sample(Sample {
        rss,
        peak: Some(rss + 1),
        gpus: vec![crate::record::GpuReading {
            index: 0,
            proc_used: 5,
            used: 6,
            total: 7,
            util: 80,
        }],
        ..Sample::default()
    })
}

fn write(path: &Path, recs: &[Record]) {
    let mut w = SessionWriter::create(path, &SessionHeader::now(vec!["x".into()], 20.0)).unwrap();
    for r in recs {
        w.append(r).unwrap();
    }
    w.sync().unwrap();
}

fn recs() -> Vec<Record> {
    vec![
        Record::new(1, sample(100)),
        Record::new(
            2,
            RecordBody::Event(Event::Log {
                level: "info".into(),
                target: "t".into(),
                message: "hi".into(),
            }),
        ),
        Record::new(3, RecordBody::Mark(Mark::Note { text: "n".into() })),
        Record::new(4, sample(200)),
    ]
}

#[test]
fn roundtrip_and_mode() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("s.ptop");
    write(&p, &recs());
    let l = load(&p).unwrap();
    assert_eq!(l.records, recs());
    assert!(l.warnings.is_empty());
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(&p).unwrap().permissions().mode() & 0o777,
        0o600
    );
}

#[test]
fn truncated_tail_keeps_complete_records() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("s.ptop");
    write(&p, &recs());
    let full = std::fs::read(&p).unwrap();
    for cut in 1..40 {
        let data = &full[..full.len() - cut];
        let l = load_bytes(&p, data).unwrap();
        assert_eq!(l.records, recs()[..3].to_vec(), "cut {cut}");
        assert_eq!(l.warnings.len(), 1);
        assert!(l.warnings[0].message.contains("cut off"));
    }
}

#[test]
fn damage_in_middle_is_reported_and_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("s.ptop");
    write(&p, &recs());
    let mut data = std::fs::read(&p).unwrap();
    // Find the offset of frame 2 (the event) and flip a payload byte.
    let items: Vec<_> = Frames::new(
        &data,
        12 + u32::from_le_bytes(data[8..12].try_into().unwrap()) as usize,
    )
    .collect();
    let off = match &items[1] {
        FrameItem::Record(o, _) => *o as usize,
        _ => panic!(),
    };
    data[off + 12] ^= 0xff;
    let l = load_bytes(&p, &data).unwrap();
    assert_eq!(l.records.len(), 3);
    assert_eq!(l.warnings.len(), 1);
    assert_eq!(l.warnings[0].offset, Some(off as u64));
    assert!(l.warnings[0].to_string().contains("checksum"));
}

#[test]
fn csv_rows_and_errors() {
    let p = Path::new("x.csv");
    let l = load_bytes(p, b"timestamp,rss_kb\n100,1024\n101,2048\n").unwrap();
    assert_eq!(l.kind, SourceKind::Csv);
    assert_eq!(l.records.len(), 2);
    assert_eq!(l.records[1].t, 1_000_000_000);
    let e = load_bytes(p, b"timestamp,rss_kb\n100,1024\n101,abc\n102,1\n").unwrap_err();
    assert_eq!(
        e.to_string(),
        "x.csv: line 3: bad rss_kb \"abc\" (want an integer number of KiB)"
    );
    let l = load_bytes(p, b"timestamp,rss_kb\n100,1024\n101,20").unwrap();
    assert_eq!(
        l.records.len(),
        2,
        "a parsable last line without newline is kept"
    );
    let l = load_bytes(p, b"timestamp,rss_kb\n100,1024\n101,").unwrap();
    assert_eq!(l.records.len(), 1);
    assert!(l.warnings[0]
        .to_string()
        .starts_with("line 3: last line is cut off"));
    let l = load_bytes(p, b"timestamp,rss_kb\n100,1\n99,2\n").unwrap();
    assert_eq!(l.records[0].t, 1_000_000_000);
    assert!(l.warnings[0].message.contains("back in time"));
    assert!(load_bytes(p, b"").is_err());
    let e = load_bytes(p, b"hello world").unwrap_err();
    assert!(e
        .to_string()
        .starts_with("x.csv: byte 0: not a provetop session"));
    let e = load_bytes(p, b"timestamp,rss_kb\n1,99999999999999999\n").unwrap_err();
    assert!(e.to_string().contains("absurd"));
}

#[test]
fn a_checksum_digit_turned_to_whitespace_is_still_seen_as_damage() {
    // `0` and the space are one bit apart: such a flip can leave the header's JSON valid and
    // its checksum a different number, wherever in the number the digit was.
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("s.ptop");
    write(&p, &recs());
    let data = std::fs::read(&p).unwrap();
    let key = b"\"header_crc\":";
    let at = data.windows(key.len()).position(|w| w == key).unwrap() + key.len();
    let digits = data[at..].iter().take_while(|b| b.is_ascii_digit()).count();
    assert!(digits > 1, "{digits}");
    for i in [0, digits - 1] {
        let mut d = data.clone();
        d[at + i] = b' ';
        let l = load_bytes(&p, &d).unwrap();
        assert_eq!(l.records, recs(), "digit {i}");
        // (A number left with a leading 0 is no JSON number: the header is then read field by
        // field, and said damaged that way.)
        assert_eq!(l.warnings.len(), 1, "digit {i}: {:?}", l.warnings);
        assert!(
            l.warnings[0].message.contains("damaged session header"),
            "{:?}",
            l.warnings
        );
    }
}
