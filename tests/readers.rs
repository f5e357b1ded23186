//! Every reader takes bounded time and memory, whatever it is given: special files
//! (`/dev/zero`, `/dev/urandom`, a FIFO with no writer, a directory), crafted files (a header
//! that claims 4 GiB, 2 GiB of zeros, damage that makes resynchronizing costly) and the config
//! file. Each is a clear one-line error (or a warning), never a hang or an OOM. Through the
//! real `provetop classify|export|run` (under an address-space limit) and `Store::open`.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use provetop::store::Store;
use provetop_shared::session::MAGIC;
use provetop_testkit::bins::provetop;
use provetop_testkit::procs::wait_until;

/// Address space a reader run may use: well under the 2 GiB files below.
const LIMIT_KIB: u64 = 1536 << 10;

/// What a bounded run printed.
struct Out {
    code: Option<i32>,
    stderr: String,
}

/// `provetop ARGS` under `ulimit -v` [`LIMIT_KIB`]; killed (and the test failed) if it runs
/// past a generous minute.
fn bounded(args: &[&str], dir: &Path) -> Out {
    let mut c = Command::new("sh");
    c.arg("-c")
        .arg(format!("ulimit -v {LIMIT_KIB}; exec \"$@\""))
        .arg("sh")
        .arg(provetop())
        .args(args)
        .env("XDG_CONFIG_HOME", dir.join("config"))
        .env("XDG_STATE_HOME", dir.join("state"))
        .env("XDG_CACHE_HOME", dir.join("cache"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut child = c.spawn().unwrap();
    let done = wait_until(Duration::from_secs(60), || {
        child.try_wait().unwrap().is_some()
    });
    if !done {
        let _ = child.kill();
        let _ = child.wait();
        panic!("provetop {args:?} still running after a minute");
    }
    let o = child.wait_with_output().unwrap();
    Out {
        code: o.status.code(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
    }
}

fn assert_one_line_error(o: &Out, what: &[&str]) {
    assert_eq!(o.code, Some(1), "{}", o.stderr);
    assert_eq!(o.stderr.lines().count(), 1, "not one line: {}", o.stderr);
    for w in what {
        assert!(o.stderr.contains(w), "{w:?} missing: {}", o.stderr);
    }
}

fn fifo(dir: &Path) -> PathBuf {
    let p = dir.join("fifo");
    nix::unistd::mkfifo(&p, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    p
}

/// Files that are not regular files, made in DIR (a named pipe, the directory `name`) or
/// there already (two character devices), each with what an error calls it.
fn special_files(dir: &Path, name: &str) -> Vec<(PathBuf, &'static str)> {
    let d = dir.join(name);
    std::fs::create_dir(&d).unwrap();
    vec![
        (PathBuf::from("/dev/zero"), "character device"),
        (PathBuf::from("/dev/urandom"), "character device"),
        (fifo(dir), "named pipe"),
        (d, "directory"),
    ]
}

/// Make `p` `len` bytes long, sparse past its end (no disk used).
fn grow_sparse(p: &Path, len: u64) {
    std::fs::OpenOptions::new()
        .write(true)
        .open(p)
        .unwrap()
        .set_len(len)
        .unwrap();
}

/// A sparse file of `len` zero bytes (no disk used).
fn zeros(dir: &Path, len: u64) -> PathBuf {
    let p = dir.join("zeros");
    std::fs::File::create(&p).unwrap().set_len(len).unwrap();
    p
}

#[test]
fn special_files_are_one_line_errors_for_classify_and_export() {
    let dir = tempfile::tempdir().unwrap();
    for (file, what) in special_files(dir.path(), "a-directory") {
        let f = file.to_str().unwrap();
        for args in [
            vec!["classify", f],
            vec!["export", f, "--format", "csv"],
            vec!["export", f, "--format", "jsonl"],
        ] {
            let o = bounded(&args, dir.path());
            assert_one_line_error(&o, &[f, what]);
        }
    }
}

#[test]
fn store_open_refuses_special_files_without_blocking() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = fifo(dir.path());
    for p in [
        Path::new("/dev/zero"),
        Path::new("/dev/null"),
        fifo.as_path(),
    ] {
        let Err(e) = Store::open(p) else {
            panic!("opened {}", p.display())
        };
        let e = e.to_string();
        assert!(e.contains("regular files only"), "{e}");
        assert!(!e.contains('\n'));
    }
}

#[test]
fn two_gib_of_zeros_is_refused_after_reading_its_first_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let z = zeros(dir.path(), 2 << 30);
    let f = z.to_str().unwrap();
    for args in [vec!["classify", f], vec!["export", f, "--format", "csv"]] {
        let o = bounded(&args, dir.path());
        assert_one_line_error(&o, &[f, "not a provetop session file"]);
    }
}

#[test]
fn a_header_that_claims_4_gib_is_a_one_line_error_even_before_2_gib_of_data() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("huge-header.ptop");
    let mut data = MAGIC.to_vec();
    data.extend_from_slice(&u32::MAX.to_le_bytes());
    data.extend_from_slice(b"{\"format\":1}");
    std::fs::write(&p, &data).unwrap();
    let o = bounded(&["classify", p.to_str().unwrap()], dir.path());
    assert_one_line_error(&o, &["header length 4294967295"]);
    // Followed by 2 GiB (sparse): refused from the first bytes, not after reading them all.
    grow_sparse(&p, 2 << 30);
    for args in [
        vec!["classify", p.to_str().unwrap()],
        vec!["export", p.to_str().unwrap(), "--format", "jsonl"],
    ] {
        let o = bounded(&args, dir.path());
        assert_one_line_error(&o, &["header length 4294967295"]);
    }
    // So is another format version.
    let mut v2 = data.clone();
    v2[7] = 3;
    std::fs::write(&p, &v2).unwrap();
    grow_sparse(&p, 2 << 30);
    let o = bounded(&["classify", p.to_str().unwrap()], dir.path());
    assert_one_line_error(&o, &["session format version 3 is not supported"]);
}

#[test]
fn damage_crafted_to_make_resynchronizing_costly_is_given_up_on_in_bounded_time() {
    // Every 4th offset reads as the start of a 64 KiB frame of a known kind whose checksum
    // fails: resynchronizing used to checksum 64 KiB at each of them (hundreds of GB for this
    // file), now it stops at a budget and says so.
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("crafted.ptop");
    provetop_testkit::fixtures::write_session(&p, provetop_testkit::fixtures::demo_records());
    let intact = Store::open(&p).unwrap().records().len();
    let mut f = std::fs::OpenOptions::new().append(true).open(&p).unwrap();
    f.write_all(&[1u8, 1, 1, 0].repeat(4 << 20)).unwrap();
    drop(f);
    let o = bounded(&["classify", p.to_str().unwrap()], dir.path());
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    assert!(o.stderr.contains("took too long"), "{}", o.stderr);
    assert!(
        o.stderr.contains("bytes to the end ignored"),
        "{}",
        o.stderr
    );
    // In-process too, and what was intact before the damage is kept.
    let s = Store::open(&p).unwrap();
    assert_eq!(s.records().len(), intact);
}

#[test]
fn damage_in_an_ordinary_file_is_still_resynchronized() {
    // The budget does not get in the way of the usual damage: a few garbage bytes between
    // intact records.
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("ok.ptop");
    provetop_testkit::fixtures::write_session(&p, provetop_testkit::fixtures::demo_records());
    let mut data = std::fs::read(&p).unwrap();
    let n = Store::open(&p).unwrap().records().len();
    let mid = data.len() / 2;
    data.splice(mid..mid, [0xffu8; 100]);
    let q = dir.path().join("damaged.ptop");
    std::fs::write(&q, &data).unwrap();
    let s = Store::open(&q).unwrap();
    assert!(s.records().len() >= n - 2, "{} of {n}", s.records().len());
}

#[test]
fn special_and_huge_config_files_are_one_line_errors() {
    let dir = tempfile::tempdir().unwrap();
    let mut files = special_files(dir.path(), "conf.d");
    let big = dir.path().join("big.toml");
    std::fs::write(&big, "# padding\n".repeat(200_000)).unwrap();
    files.push((big, "larger than 1024 KiB"));
    files.push((zeros(dir.path(), 2 << 30), "larger than 1024 KiB"));
    for (file, what) in files {
        let f = file.to_str().unwrap();
        let o = bounded(
            &[
                "run",
                "--headless",
                "--no-record",
                "--config",
                f,
                "--",
                "true",
            ],
            dir.path(),
        );
        assert_one_line_error(&o, &["cannot read config", f, what]);
    }
    // Not UTF-8.
    let bin = dir.path().join("bin.toml");
    std::fs::write(&bin, b"hz = 5\n\xff\xfe\n").unwrap();
    let o = bounded(
        &[
            "run",
            "--headless",
            "--no-record",
            "--config",
            bin.to_str().unwrap(),
            "--",
            "true",
        ],
        dir.path(),
    );
    assert_one_line_error(&o, &["not UTF-8"]);
}

/// The first `frames` frames of a real session (its header untouched), and where they start.
fn real_session_head(frames: usize) -> (Vec<u8>, usize) {
    let data = std::fs::read(provetop_testkit::fixtures::repo().join("assets/all-modes-cpu.ptop"))
        .unwrap();
    let hlen = u32::from_le_bytes(data[8..12].try_into().unwrap()) as usize;
    let mut end = 12 + hlen;
    for _ in 0..frames {
        let len = u32::from_le_bytes(data[end..end + 4].try_into().unwrap()) as usize;
        end += 8 + len;
    }
    (data[..end].to_vec(), 12 + hlen)
}

#[test]
fn a_header_damaged_by_any_single_bit_costs_no_record_after_it_in_either_reader() {
    use provetop::follow::{Follower, Item};
    use provetop_shared::session::load_bytes;
    let (data, header_end) = real_session_head(40);
    let name = Path::new("flipped.ptop");
    let intact = load_bytes(name, &data).unwrap();
    assert!(intact.warnings.is_empty());
    assert_eq!(intact.records.len(), 40);
    let dir = tempfile::tempdir().unwrap();
    let mut silent = Vec::new();
    for bit in 0..header_end * 8 {
        let mut d = data.clone();
        d[bit / 8] ^= 1 << (bit % 8);
        let what = format!("bit {bit} (byte {})", bit / 8);
        let l = load_bytes(name, &d).unwrap_or_else(|e| panic!("{what}: {e}"));
        assert_eq!(l.records, intact.records, "{what}: {:?}", l.warnings);
        // A warning names the damage's offset, in the head; a flip it cannot see (a digit of
        // a number, a letter of a name: the JSON has no checksum) changed only that field.
        if l.warnings.is_empty() {
            silent.push(bit / 8);
        } else {
            let w = &l.warnings[0];
            assert!(
                w.offset.is_some_and(|o| o < header_end as u64),
                "{what}: {w}"
            );
        }
        // The follower reads past it the same way.
        let p = dir.path().join(format!("f{bit}.ptop"));
        std::fs::write(&p, &d).unwrap();
        let mut f = Follower::open(&p).unwrap_or_else(|e| panic!("{what}: {e}"));
        let got = f.read().unwrap();
        let recs: Vec<_> = got
            .iter()
            .filter_map(|i| match i {
                Item::Record(r) => Some(r.clone()),
                Item::Warning(_) => None,
            })
            .collect();
        assert_eq!(recs, intact.records, "{what}");
        assert_eq!(
            got.iter().any(|i| matches!(i, Item::Warning(_))),
            !l.warnings.is_empty(),
            "{what}"
        );
        std::fs::remove_file(&p).unwrap();
    }
    // Only flips inside the JSON text can go unseen.
    assert!(silent.iter().all(|&b| b >= 12), "{silent:?}");
}

#[test]
fn a_header_written_now_says_when_any_single_bit_of_it_is_damaged() {
    // The header's checksum field sees even the flips that leave its JSON valid.
    use provetop_shared::session::{load_bytes, SessionHeader, SessionWriter};
    let (old, _) = real_session_head(40);
    let records = load_bytes(Path::new("real.ptop"), &old).unwrap().records;
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("now.ptop");
    let header = SessionHeader::now(
        vec!["prover".into(), "--partitions".into(), "2".into()],
        10.0,
    );
    let mut w = SessionWriter::create(&p, &header).unwrap();
    for r in &records {
        w.append(r).unwrap();
    }
    w.flush().unwrap();
    drop(w);
    let data = std::fs::read(&p).unwrap();
    let header_end = 12 + u32::from_le_bytes(data[8..12].try_into().unwrap()) as usize;
    let intact = load_bytes(&p, &data).unwrap();
    assert!(intact.warnings.is_empty(), "{:?}", intact.warnings);
    assert_eq!(intact.header, header);
    for bit in 0..header_end * 8 {
        let mut d = data.clone();
        d[bit / 8] ^= 1 << (bit % 8);
        let what = format!("bit {bit} (byte {})", bit / 8);
        let l = load_bytes(&p, &d).unwrap_or_else(|e| panic!("{what}: {e}"));
        assert_eq!(l.records, records, "{what}");
        assert!(!l.warnings.is_empty(), "{what}: no warning");
        assert!(
            l.warnings
                .iter()
                .all(|w| w.offset.is_some_and(|o| o < header_end as u64)),
            "{what}: {:?}",
            l.warnings
        );
    }
}
