//! Compact sessions: exact round trips, every state a crash can leave a commit in, a real
//! kill -9, damaged and crafted chunks.

use std::path::Path;

use super::*;
use crate::protocol::Event;
use crate::record::{GpuReading, Mark, Sample};
use crate::session::{load, load_bytes, SessionHeader, SessionWriter};

fn sample(i: u64) -> RecordBody {
    let noise = (i.wrapping_mul(2_654_435_761) >> 7) % 97;
    RecordBody::Sample(Sample {
        rss: (40 << 30) + i * 4096 * 3 + noise * 4096,
        peak: (i % 3 != 0).then_some((41 << 30) + noise),
        anon: Some(i * 7),
        file: if i % 5 == 0 { None } else { Some(u64::MAX - i) },
        shmem: Some(1 << 40),
        pinned: Some(0),
        gpu_used: Some(30 << 30),
        gpus: (0..(i % 3))
            .map(|g| GpuReading {
                index: g as u32,
                proc_used: i * 1000 + g,
                used: (80 << 30) - i,
                total: 141 << 30,
                util: if i % 4 == 0 {
                    GpuReading::UTIL_UNKNOWN
                } else {
                    (i % 101) as u8
                },
            })
            .collect(),
        mem_available: Some((900 << 30) - i * 4096),
        mem_total: Some(1 << 40),
        cgroup_current: (i % 10 == 0).then_some(i << 12),
        procs: (i % 17) as u32,
        ..Sample::default()
    })
}

/// Samples with events, notes and output now and then; times not always increasing.
pub(super) fn records(n: u64) -> Vec<Record> {
    (0..n)
        .map(|i| {
            let t = 1_000_000_000 + i * 50_000_000 + (i % 3) * 7;
            let body = match i % 50 {
                7 => RecordBody::Event(Event::Log {
                    level: "info".into(),
                    target: "prover".into(),
                    message: format!("line {i}"),
                }),
                13 => RecordBody::Mark(Mark::Note {
                    text: format!("note {i}"),
                }),
                29 => RecordBody::Output(crate::record::OutputLine {
                    source: crate::record::OutputSource::Stderr,
                    text: format!("stderr line {i} ✓"),
                    cut: None,
                }),
                _ => sample(i),
            };
            Record::new(if i % 97 == 5 { t - 80_000_000 } else { t }, body)
        })
        .collect()
}

fn header() -> SessionHeader {
    SessionHeader::now(vec!["x".into()], 20.0)
}

pub(super) fn write(path: &Path, recs: &[Record], sync: bool) -> SessionWriter {
    let mut w = SessionWriter::create_compact(path, &header()).unwrap();
    for (i, r) in recs.iter().enumerate() {
        w.append(r).unwrap();
        if i % 20 == 19 {
            w.flush().unwrap();
        }
    }
    if sync {
        w.sync().unwrap();
    } else {
        w.flush().unwrap();
    }
    w
}

#[test]
fn every_field_of_every_record_reads_back_exactly_from_chunks_and_from_the_tail() {
    let dir = tempfile::tempdir().unwrap();
    let recs = records(10_000);
    for sync in [true, false] {
        let p = dir.path().join(format!("s{sync}.ptop"));
        drop(write(&p, &recs, sync));
        let l = load(&p).unwrap();
        assert!(l.warnings.is_empty(), "{:?}", l.warnings);
        assert_eq!(l.header.format, 2);
        assert_eq!(l.records.len(), recs.len());
        assert!(l.records == recs, "sync {sync}: records differ");
    }
    // Extremes: every column at 0 and at u64::MAX, alternating.
    let ext: Vec<Record> = (0..100u64)
        .map(|i| {
            let v = if i % 2 == 0 { 0 } else { u64::MAX };
            Record::new(
                v,
                RecordBody::Sample(Sample {
                    rss: v,
                    peak: Some(v),
                    gpus: vec![GpuReading {
                        index: u32::MAX,
                        proc_used: v,
                        used: v,
                        total: v,
                        util: 255,
                    }],
                    procs: u32::MAX,
                    ..Sample::default()
                }),
            )
        })
        .collect();
    let p = dir.path().join("ext.ptop");
    drop(write(&p, &ext, true));
    assert!(load(&p).unwrap().records == ext);
}

#[test]
fn a_session_of_samples_at_20_hz_takes_well_under_16_bytes_a_sample() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("s.ptop");
    let recs: Vec<Record> = (0..20 * 600)
        .map(|i| Record::new(i * 50_000_000, sample(i)))
        .collect();
    drop(write(&p, &recs, true));
    let per = std::fs::metadata(&p).unwrap().len() as f64 / recs.len() as f64;
    assert!(per < 16.0, "{per} bytes a sample");
}

/// Every state a crash can leave a commit in: the chunk cut while appended after the tail,
/// the copy over the tail cut anywhere, the copy done but the file not yet cut.
#[test]
fn a_crash_anywhere_in_a_commit_keeps_every_record_once_and_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("s.ptop");
    let recs = records(1000);
    let mut w = write(&p, &recs, false);
    let tail = std::fs::read(&p).unwrap();
    let start = tail.len() - tail_len(&recs);
    let chunk = chunk_block(0, &recs).unwrap();
    let check = |bytes: &[u8], what: &str| {
        let l = load_bytes(Path::new("x.ptop"), bytes).unwrap();
        assert!(l.records == recs, "{what}: {} records", l.records.len());
    };
    let step = (chunk.len() / 40).max(1);
    for k in (0..=chunk.len()).step_by(step) {
        let mut b = tail.clone();
        b.extend_from_slice(&chunk[..k]);
        check(&b, &format!("chunk appended up to {k}"));
    }
    let mut both = tail.clone();
    both.extend_from_slice(&chunk);
    for k in (0..=chunk.len()).step_by(step).chain([chunk.len()]) {
        let mut b = both.clone();
        b[start..start + k].copy_from_slice(&chunk[..k]);
        check(&b, &format!("copied up to {k}"));
    }
    // And what the writer leaves.
    w.sync().unwrap();
    let done = std::fs::read(&p).unwrap();
    assert_eq!(done.len(), start + chunk.len());
    check(&done, "committed");
}

fn tail_len(recs: &[Record]) -> usize {
    recs.iter()
        .enumerate()
        .map(|(i, r)| tail_block(i as u64, r).len())
        .sum()
}

/// Run as a child by the next test: writes the endless record stream to the path in
/// `PROVETOP_ENDLESS_WRITER`, flushing every 20 records and saying on stdout how many it
/// has flushed.
#[test]
#[ignore]
fn endless_writer() {
    let Ok(p) = std::env::var("PROVETOP_ENDLESS_WRITER") else {
        return;
    };
    let mut w = SessionWriter::create_compact(Path::new(&p), &header()).unwrap();
    let recs = records(20_000);
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    for i in 0u64.. {
        w.append(&recs[(i % 20_000) as usize]).unwrap();
        if i % 20 == 19 {
            w.flush().unwrap();
            writeln!(out, "{}", i + 1).unwrap();
            out.flush().unwrap();
        }
    }
}

#[test]
fn a_writer_killed_at_random_keeps_everything_it_had_flushed() {
    use std::io::BufRead;
    let dir = tempfile::tempdir().unwrap();
    let all = records(20_000);
    for round in 0..6u64 {
        let p = dir.path().join(format!("k{round}.ptop"));
        let mut child = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "session::compact::tests::endless_writer",
                "--ignored",
                "--nocapture",
                "-q",
            ])
            .env("PROVETOP_ENDLESS_WRITER", &p)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
        // Kill after a pseudo-random number of flushes (several commits in).
        let at = 5_000 + (round * 7919 % 23) * 700;
        let mut flushed = 0u64;
        for l in lines.by_ref() {
            if let Ok(n) = l.unwrap_or_default().trim().parse::<u64>() {
                flushed = n;
                if n >= at {
                    break;
                }
            }
        }
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(child.id() as i32),
            nix::sys::signal::Signal::SIGKILL,
        )
        .unwrap();
        child.wait().unwrap();
        let l = load(&p).unwrap();
        assert!(
            l.records.len() as u64 >= flushed,
            "round {round}: {} < {flushed}",
            l.records.len()
        );
        for (i, r) in l.records.iter().enumerate() {
            assert!(*r == all[i % 20_000], "round {round}: record {i} differs");
        }
    }
}

fn session_with_chunks(dir: &Path) -> (std::path::PathBuf, Vec<Record>) {
    let p = dir.join("c.ptop");
    let recs = records(3 * 8192 + 100);
    drop(write(&p, &recs, true));
    (p, recs)
}

/// Offsets of the blocks of a compact file.
fn blocks(data: &[u8]) -> Vec<usize> {
    let h = crate::session::read_header(data).unwrap();
    let mut at = h.frames_at;
    let mut out = Vec::new();
    while at < data.len() {
        out.push(at);
        at += 8 + u32::from_le_bytes(data[at..at + 4].try_into().unwrap()) as usize;
    }
    out
}

#[test]
fn a_damaged_chunk_loses_only_its_records_and_is_reported_with_its_offset() {
    let dir = tempfile::tempdir().unwrap();
    let (p, recs) = session_with_chunks(dir.path());
    let mut data = std::fs::read(&p).unwrap();
    let at = blocks(&data)[1];
    let (first, count) = seqs(&data[at..]);
    data[at + 200] ^= 0x10;
    let l = load_bytes(&p, &data).unwrap();
    assert_eq!(l.warnings.len(), 1, "{:?}", l.warnings);
    assert_eq!(l.warnings[0].offset, Some(at as u64));
    assert!(l.warnings[0]
        .to_string()
        .starts_with(&format!("byte {at}: damaged block")));
    assert_eq!(recs.len() - l.records.len(), count);
    assert!(l.records[..first] == recs[..first] && l.records[first..] == recs[first + count..]);
}

/// A chunk block's first sequence number and record count.
fn seqs(block: &[u8]) -> (usize, usize) {
    let first = u64::from_le_bytes(block[9..17].try_into().unwrap()) as usize;
    let count = u32::from_le_bytes(block[17..21].try_into().unwrap()) as usize;
    (first, count)
}

/// Re-frame a chunk body (its checksum made right again), as a crafted file would.
fn reframe(body: &[u8]) -> Vec<u8> {
    framed(body)
}

/// The session of [`session_with_chunks`] with its second block replaced by a chunk of `body`.
fn crafted(dir: &Path, body: &[u8]) -> Loaded {
    let p = dir.join("c.ptop");
    if !p.exists() {
        session_with_chunks(dir);
    }
    let data = std::fs::read(&p).unwrap();
    let b = blocks(&data);
    let mut out = data[..b[1]].to_vec();
    out.extend_from_slice(&reframe(body));
    out.extend_from_slice(&data[b[2]..]);
    load_bytes(&p, &out).unwrap()
}

use crate::session::Loaded;

/// The body of the second chunk of [`session_with_chunks`] and its records.
fn chunk_body(dir: &Path) -> (Vec<u8>, Vec<Record>) {
    let p = dir.join("c.ptop");
    if !p.exists() {
        session_with_chunks(dir);
    }
    let data = std::fs::read(&p).unwrap();
    let at = blocks(&data)[1];
    let (first, count) = seqs(&data[at..]);
    let recs = records(3 * 8192 + 100)[first..first + count].to_vec();
    (
        chunk_block(first as u64, &recs).unwrap()[8..].to_vec(),
        recs,
    )
}

#[test]
fn crafted_chunks_are_one_warning_each_in_bounded_time_and_memory() {
    let dir = tempfile::tempdir().unwrap();
    let (good, recs) = chunk_body(dir.path());
    let chunk_body = |_: &[Record]| good.clone();
    let t0 = std::time::Instant::now();
    // A bomb: a gigabyte of zeros said to be a kilobyte.
    let zeros = vec![0u8; 64 << 20];
    let z = zstd::bulk::compress(&zeros, 3).unwrap();
    let mut body = chunk_body(&recs)[..CHUNK_HEAD].to_vec();
    body[29..33].copy_from_slice(&1024u32.to_le_bytes());
    body.extend_from_slice(&z);
    let l = crafted(dir.path(), &body);
    assert_eq!(l.warnings.len(), 1, "{:?}", l.warnings);
    assert!(
        l.warnings[0].message.contains("does not decompress"),
        "{}",
        l.warnings[0]
    );
    // A head promising more than the limit.
    let mut body = chunk_body(&recs);
    body[29..33].copy_from_slice(&u32::MAX.to_le_bytes());
    let l = crafted(dir.path(), &body);
    assert!(
        l.warnings[0].message.contains("impossible chunk"),
        "{}",
        l.warnings[0]
    );
    // Columns whose lengths lie: a record count the columns do not hold.
    let mut body = chunk_body(&recs);
    body[9..13].copy_from_slice(&4000u32.to_le_bytes());
    let l = crafted(dir.path(), &body);
    assert!(
        l.warnings[0].message.contains("kinds for 4000 records"),
        "{}",
        l.warnings[0]
    );
    // A good chunk in its place reads back whole (the crafting itself is sound).
    let l = crafted(dir.path(), &good);
    assert!(l.warnings.is_empty(), "{:?}", l.warnings);
    assert_eq!(l.records.len(), 3 * 8192 + 100);
    // A section length past the end (valid zstd of bad columns).
    let mut raw = columns::encode(&recs);
    raw[0] = 0xff;
    raw[1] = 0x7f;
    let mut body = chunk_body(&recs)[..CHUNK_HEAD].to_vec();
    body.extend_from_slice(&zstd::bulk::compress(&raw, 1).unwrap());
    let l = crafted(dir.path(), &body);
    assert_eq!(l.warnings.len(), 1, "{:?}", l.warnings);
    assert!(
        l.warnings[0].message.contains("kinds for"),
        "{}",
        l.warnings[0]
    );
    // A column cut short inside a section: said, with the column's name.
    let mut raw = columns::encode(&recs);
    let n = raw.len();
    raw.truncate(n - 3);
    let mut body = chunk_body(&recs)[..CHUNK_HEAD].to_vec();
    body[29..33].copy_from_slice(&(raw.len() as u32).to_le_bytes());
    body.extend_from_slice(&zstd::bulk::compress(&raw, 1).unwrap());
    let l = crafted(dir.path(), &body);
    assert!(
        l.warnings[0].message.contains("column"),
        "{}",
        l.warnings[0]
    );
    // A summary that disagrees: said, and the records kept.
    let mut body = chunk_body(&recs);
    body[37..45].copy_from_slice(&1u64.to_le_bytes());
    let l = crafted(dir.path(), &body);
    assert_eq!(l.warnings.len(), 1, "{:?}", l.warnings);
    assert!(
        l.warnings[0].message.contains("summary disagrees"),
        "{}",
        l.warnings[0]
    );
    assert_eq!(l.records.len(), 3 * 8192 + 100);
    assert!(t0.elapsed() < std::time::Duration::from_secs(30));
}

#[test]
fn random_bytes_as_columns_never_panic() {
    let recs = records(300);
    let raw = columns::encode(&recs);
    let mut rnd = provetop_testkit::xorshift::xorshift(0x9e37_79b9_7f4a_7c15);
    let mut x = 0;
    for _ in 0..3000 {
        let mut b = raw.clone();
        for _ in 0..4 {
            x = rnd();
            let i = (x as usize) % b.len();
            b[i] = (x >> 32) as u8;
        }
        let _ = columns::decode(&b, 300);
        let _ = columns::decode(&b[..(x as usize) % b.len()], 300);
    }
}

#[test]
fn the_index_opens_a_session_by_its_chunk_heads_and_seeks_and_envelopes_exactly() {
    use super::index::Index;
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("i.ptop");
    let recs = records(20_000);
    // The last records stay in the tail (flushed, not synced).
    let mut w = write(&p, &recs[..19_000], true);
    for r in &recs[19_000..] {
        w.append(r).unwrap();
    }
    w.flush().unwrap();
    let ix = Index::open(&p).unwrap();
    assert!(ix.warnings.is_empty(), "{:?}", ix.warnings);
    let mut all = Vec::new();
    for i in 0..ix.chunks.len() {
        let (r, disagree) = ix.chunk(i).unwrap();
        assert!(disagree.is_none());
        all.extend(r);
    }
    all.extend(ix.tail().unwrap().into_iter().map(|i| match i {
        FrameItem::Record(_, r) => r,
        FrameItem::Warning(w) => panic!("{w}"),
    }));
    assert!(all == recs);
    // A chunk's samples read alone are its records' samples, at their indexes and times.
    for i in 0..ix.chunks.len() {
        let (r, _) = ix.chunk(i).unwrap();
        let alone = ix.samples(i).unwrap();
        let full: Vec<_> = r
            .iter()
            .enumerate()
            .filter_map(|(k, r)| match &r.body {
                RecordBody::Sample(s) => Some((k, r.t, s.clone())),
                _ => None,
            })
            .collect();
        assert!(
            !full.is_empty() && full.len() < r.len(),
            "samples among others"
        );
        assert!(alone == full, "chunk {i}");
    }
    // Seeking to a record's time lands on the chunk that holds it.
    for k in [0usize, 5000, 12_345, 18_999] {
        let i = ix.seek(recs[k].t).unwrap();
        let head = ix.chunks.get(i).unwrap().1;
        let (first, count) = (head.first_seq as usize, head.count as usize);
        assert!(
            (first..first + count).contains(&k) || recs[k].t < recs[first].t + 100_000_000,
            "{k}"
        );
    }
    // The envelope of everything is the true extreme of every sample.
    let env = ix.envelope(0, u64::MAX).unwrap();
    let truth = Summary::of(&recs[..19_000]);
    assert_eq!(env.rss_max, truth.rss_max);
    assert_eq!(env.peak_max, truth.peak_max);
    assert_eq!(env.rss_min, truth.rss_min);
    // A damaged chunk head is one warning with its offset, and the scan goes on.
    let mut data = std::fs::read(&p).unwrap();
    let at = ix.chunks.get(1).unwrap().0 as usize;
    data[at + 9] ^= 0xff;
    data[at + 8] = b'X';
    let q = dir.path().join("d.ptop");
    std::fs::write(&q, &data).unwrap();
    let d = Index::open(&q).unwrap();
    assert_eq!(d.warnings.len(), 1, "{:?}", d.warnings);
    assert_eq!(d.warnings[0].offset, Some(at as u64));
    assert_eq!(d.chunks.len(), ix.chunks.len() - 1);
}

use crate::session::FrameItem;

#[test]
fn pending_records_drained_from_the_front_encode_as_the_rest_alone() {
    let recs = records(500);
    let mut p = Pending::default();
    for r in &recs {
        p.push(r, &crate::session::frame::encode_payload(r));
    }
    for (k, a, b) in [(0, 0, 500), (7, 10, 300), (13, 0, 200), (29, 50, 51)] {
        p.drain(k);
        let rest = &recs[recs.len() - p.len()..];
        assert_eq!(
            p.encode(a, b),
            columns::encode(&rest[a..b]),
            "drained {k}, {a}..{b}"
        );
        assert_eq!(p.summary(a, b), Summary::of(&rest[a..b]));
    }
}
