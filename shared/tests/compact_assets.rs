//! Today's recorded sessions (format 1, recorded on real machines) still open, and written
//! again as compact sessions they read back record for record, in a fraction of the bytes.

use std::path::PathBuf;

use provetop_shared::session::{load, SessionWriter};
use provetop_shared::RecordBody;

fn assets() -> Vec<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../assets");
    let mut v: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "ptop"))
        .collect();
    v.sort();
    v
}

#[test]
fn every_recorded_asset_rewritten_compact_reads_back_exactly_and_smaller() {
    let dir = tempfile::tempdir().unwrap();
    for a in assets() {
        let old = load(&a).unwrap();
        assert_eq!(old.header.format, 1, "{}", a.display());
        let p = dir.path().join("c.ptop");
        let mut w = SessionWriter::create_compact(&p, &old.header).unwrap();
        for (i, r) in old.records.iter().enumerate() {
            w.append(r).unwrap();
            if i % 10 == 9 {
                w.flush().unwrap();
            }
        }
        w.sync().unwrap();
        let new = load(&p).unwrap();
        assert!(
            new.warnings.is_empty(),
            "{}: {:?}",
            a.display(),
            new.warnings
        );
        assert!(
            new.records == old.records,
            "{}: records differ",
            a.display()
        );
        let samples = old
            .records
            .iter()
            .filter(|r| matches!(r.body, RecordBody::Sample(_)))
            .count() as f64;
        let (was, is) = (
            std::fs::metadata(&a).unwrap().len() as f64,
            std::fs::metadata(&p).unwrap().len() as f64,
        );
        println!(
            "{}: {} records, {:.1} -> {:.1} bytes a sample",
            a.file_name().unwrap().to_string_lossy(),
            old.records.len(),
            was / samples,
            is / samples
        );
        assert!(is < was / 2.0, "{}", a.display());
        std::fs::remove_file(&p).unwrap();
    }
}

#[test]
#[ignore]
fn composition() {
    for a in assets() {
        let old = load(&a).unwrap();
        let mut by = std::collections::BTreeMap::<u8, (usize, usize)>::new();
        for r in &old.records {
            let p = provetop_shared::session::encode_payload(r);
            let e = by.entry(p[0]).or_default();
            e.0 += 1;
            e.1 += p.len();
        }
        let span = old.records.last().unwrap().t - old.records[0].t;
        println!(
            "{}: span {:.0}s hz {} {:?}",
            a.display(),
            span as f64 / 1e9,
            old.header.sample_hz,
            by
        );
    }
}

/// Bytes a sample of an hour of the testkit's flight, written as the recorder writes it
/// (`cargo test -p provetop-shared --test shared flight_bytes -- --ignored --nocapture`).
#[test]
#[ignore]
fn flight_bytes_a_sample() {
    use provetop_testkit::flight::{Flight, FlightConfig};
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("f.ptop");
    let mut w = SessionWriter::create_compact(
        &p,
        &provetop_shared::session::SessionHeader::now(vec![], 20.0),
    )
    .unwrap();
    let mut samples = 0;
    for (i, r) in Flight::new(FlightConfig::default()).enumerate() {
        samples += matches!(r.body, RecordBody::Sample(_)) as u64;
        w.append(&r).unwrap();
        if i % 24 == 23 {
            w.flush().unwrap();
        }
    }
    w.sync().unwrap();
    let n = std::fs::metadata(&p).unwrap().len();
    println!("{:.2} bytes a sample", n as f64 / samples as f64);
}
