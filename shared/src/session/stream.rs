//! Reading a session record by record in bounded memory: the readers that make one pass or a
//! few (`classify`, `export`, `compare`) whatever the session's length.
//!
//! Contract: [`Stream::open`] reads a head and nothing else; [`Stream::each`] gives every
//! record [`super::load`] would give, in the same order, with the same warnings, holding at
//! most a few MiB: format 1 a window of frames at a time, format 2 one chunk at a time
//! through its [`Index`] (then the tail after the last chunk). Damage costs more: the rest of a
//! format-1 file is read at once from the first damaged or cut frame on, so that
//! resynchronizing is exactly the whole-file reader's (format 2's index resynchronizes on its own, block by block). A file
//! that is not a clean session (a CSV, a head that was damaged) is `None`: such files are
//! small or rare, and the caller loads them whole.
//!
//! Each call of [`Stream::each`] reads the files again: a reader that needs several passes
//! (a median, then the time above it) makes them at the cost of reading, not of memory.

use std::io;
use std::path::{Path, PathBuf};

use super::compact::index::Index;
use super::compact::{read_full, MAGIC2};
use super::frame::{frame_at, possible_len, FrameItem};
use super::header::read_header;
use super::{open_regular, parts, Frames, LoadError, SessionHeader, Warning};
use crate::record::Record;

/// A session opened for streaming.
#[derive(Debug, Clone)]
pub struct Stream {
    files: Vec<PathBuf>,
    /// The header of its first part.
    pub header: SessionHeader,
}

/// Bytes read at a time from a format-1 file (small under test: many windows a file).
#[cfg(not(test))]
const WINDOW: usize = 4 << 20;
#[cfg(test)]
const WINDOW: usize = 8 << 10;
/// Bytes read to find a head: the largest header and then some.
const HEAD_READ: usize = 12 + super::MAX_HEADER as usize + 64;

/// Where a head is and what it says; `None` when it is not a clean session head.
fn clean_head(path: &Path) -> Result<Option<(SessionHeader, u64)>, LoadError> {
    let io = |error| LoadError::Io {
        path: path.to_path_buf(),
        error,
    };
    let file = open_regular(path).map_err(io)?;
    let len = file.metadata().map_err(io)?.len();
    let mut b = vec![0u8; (len as usize).min(HEAD_READ)];
    let n = read_full(&file, &mut b, 0).map_err(io)?;
    b.truncate(n);
    if b.len() < 12 || (b[..8] != super::MAGIC[..] && b[..8] != MAGIC2[..]) {
        return Ok(None);
    }
    let hlen = u32::from_le_bytes([b[8], b[9], b[10], b[11]]) as usize;
    if 12 + hlen > b.len() {
        return Ok(None);
    }
    match read_header(&b) {
        Ok(h) if h.warnings.is_empty() && h.lost_anchors == (false, false) => {
            Ok(Some((h.header, h.frames_at as u64)))
        }
        _ => Ok(None),
    }
}

impl Stream {
    /// Open `path` (a session or a rotated set, as [`super::load`] takes it) for streaming;
    /// `None` when it is to be loaded whole (a CSV, a damaged head, another kind of file).
    pub fn open(path: &Path) -> Result<Option<Stream>, LoadError> {
        let files = parts::set_of(path);
        let first = files.first().map_or(path, |p| p.as_path());
        let Some((header, _)) = clean_head(first)? else {
            return Ok(None);
        };
        Ok(Some(Stream {
            files: if files.is_empty() {
                vec![path.to_path_buf()]
            } else {
                files
            },
            header,
        }))
    }

    /// Give every record to `f`, in file order; returns the warnings, as [`super::load`]
    /// has them.
    pub fn each(&self, f: &mut dyn FnMut(Record)) -> Result<Vec<Warning>, LoadError> {
        self.each_while(&mut |r| {
            f(r);
            true
        })
    }

    /// [`Stream::each`] until `f` says no more (false): reading stops there (a reader whose
    /// output went away, `| head`); the warnings are those met so far.
    pub fn each_while(&self, f: &mut dyn FnMut(Record) -> bool) -> Result<Vec<Warning>, LoadError> {
        let stop = std::cell::Cell::new(false);
        let f = &mut |r: Record| {
            if !stop.get() && !f(r) {
                stop.set(true);
            }
        };
        let many = self.files.len() > 1;
        let mut warnings = Vec::new();
        for (k, p) in self.files.iter().enumerate() {
            if stop.get() {
                break;
            }
            let name = p
                .file_name()
                .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
            let mut ws = Vec::new();
            let r = match clean_head(p) {
                Ok(Some((h, at))) => part(p, &h, at, f, &stop, &mut ws),
                // A later part with a damaged head: read whole, as `load` reads it.
                Ok(None) => super::load_one(p).map(|l| {
                    l.records.into_iter().for_each(&mut *f);
                    ws = l.warnings;
                }),
                Err(e) => Err(e),
            };
            match r {
                Ok(()) => warnings.extend(ws.into_iter().map(|mut w| {
                    if many {
                        w.message = format!("{name}: {}", w.message);
                    }
                    w
                })),
                Err(e) if k == 0 => return Err(e),
                // A part that cannot be read at all (removed meanwhile) is skipped.
                Err(e) => warnings.push(Warning {
                    offset: None,
                    line: None,
                    message: format!("{e}; part skipped"),
                }),
            }
        }
        Ok(warnings)
    }
}

/// One file's records from `at` (its first frame or block).
fn part(
    path: &Path,
    header: &SessionHeader,
    at: u64,
    f: &mut dyn FnMut(Record),
    stop: &std::cell::Cell<bool>,
    warnings: &mut Vec<Warning>,
) -> Result<(), LoadError> {
    let io = |error| LoadError::Io {
        path: path.to_path_buf(),
        error,
    };
    if header.format == 2 {
        return compact(path, f, stop, warnings).map_err(io);
    }
    let file = open_regular(path).map_err(io)?;
    let len = file.metadata().map_err(io)?.len();
    let mut buf: Vec<u8> = Vec::with_capacity(WINDOW + 8);
    let mut base = at; // file offset of buf[0]
    let mut pos = at;
    loop {
        if pos >= len || stop.get() {
            return Ok(());
        }
        // The frame's head, then the whole frame, in the buffer.
        let need = |buf: &Vec<u8>, base: u64, n: u64| pos + n <= base + buf.len() as u64;
        if !need(&buf, base, 8) {
            refill(&file, &mut buf, &mut base, pos, 8, len).map_err(io)?;
        }
        let o = (pos - base) as usize;
        if buf.len() < o + 8 {
            break;
        }
        let flen = u32::from_le_bytes([buf[o], buf[o + 1], buf[o + 2], buf[o + 3]]);
        if !possible_len(flen) || pos + 8 + u64::from(flen) > len {
            break;
        }
        let whole = 8 + u64::from(flen);
        if !need(&buf, base, whole) {
            refill(&file, &mut buf, &mut base, pos, whole, len).map_err(io)?;
        }
        let o = (pos - base) as usize;
        match frame_at(&buf[o..]) {
            Ok((rec, n)) => {
                f(rec);
                pos += n as u64;
            }
            Err(_) => break,
        }
    }
    // Damage, or a cut tail: the whole-file reader's resynchronization over the rest of the
    // file (its budget that of the whole file, its offsets the file's).
    drop(buf);
    let mut data = vec![0u8; (len - pos) as usize];
    let n = read_full(&file, &mut data, pos).map_err(io)?;
    data.truncate(n);
    for item in Frames::rest_of(&data, pos as usize, len) {
        match item {
            FrameItem::Record(_, r) => f(r),
            FrameItem::Warning(w) => warnings.push(w),
        }
    }
    Ok(())
}

/// Keep the bytes from `pos` and read at least `n` of them (up to a window more), not past
/// `len`.
fn refill(
    file: &std::fs::File,
    buf: &mut Vec<u8>,
    base: &mut u64,
    pos: u64,
    n: u64,
    len: u64,
) -> io::Result<()> {
    let keep = (pos - *base) as usize;
    buf.drain(..keep.min(buf.len()));
    *base = pos;
    let want = (n.max(WINDOW as u64)).min(len - pos) as usize;
    if buf.len() < want {
        let have = buf.len();
        buf.resize(want, 0);
        let got = read_full(file, &mut buf[have..], pos + have as u64)?;
        buf.truncate(have + got);
    }
    Ok(())
}

/// A compact file's records: chunk by chunk, then its tail.
fn compact(
    path: &Path,
    f: &mut dyn FnMut(Record),
    stop: &std::cell::Cell<bool>,
    warnings: &mut Vec<Warning>,
) -> io::Result<()> {
    let ix = Index::open(path)?;
    warnings.extend(ix.warnings.iter().cloned());
    let mut next_seq = 0u64;
    for (i, item) in ix.chunks.iter().enumerate() {
        let (at, head) = item?;
        if stop.get() {
            return Ok(());
        }
        let end = head.first_seq.saturating_add(u64::from(head.count));
        match ix.chunk(i) {
            Err(why) => warnings.push(Warning {
                offset: Some(at),
                line: None,
                message: format!("damaged chunk ({why}); its {} records are lost", head.count),
            }),
            Ok((recs, disagree)) => {
                if let Some(d) = disagree {
                    warnings.push(Warning {
                        offset: Some(at),
                        line: None,
                        message: d,
                    });
                }
                for (j, rec) in recs.into_iter().enumerate() {
                    if head.first_seq + j as u64 >= next_seq {
                        f(rec);
                    }
                }
                next_seq = next_seq.max(end);
            }
        }
    }
    for item in ix.tail_after(next_seq)? {
        match item {
            FrameItem::Record(_, r) => f(r),
            FrameItem::Warning(w) => warnings.push(w),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{Mark, RecordBody, Sample};
    use crate::session::{load, SessionWriter};

    /// Enough records that a format-1 file spans several windows.
    fn records() -> Vec<Record> {
        (0..40_000u64)
            .map(|i| {
                let body = if i % 100 == 7 {
                    RecordBody::Mark(Mark::Note {
                        text: format!("note {i}"),
                    })
                } else {
                    RecordBody::Sample(Sample {
                        rss: (40 << 30) + (i * 2_654_435_761) % (1 << 30),
                        peak: Some(41 << 30),
                        anon: Some(i),
                        ..Sample::default()
                    })
                };
                Record::new(1_000_000_000 + i * 50_000_000, body)
            })
            .collect()
    }

    fn write(path: &Path, compact: bool) {
        let h = SessionHeader::now(vec!["x".into()], 20.0);
        let mut w = if compact {
            SessionWriter::create_compact(path, &h)
        } else {
            SessionWriter::create(path, &h)
        }
        .unwrap();
        for (i, r) in records().iter().enumerate() {
            w.append(r).unwrap();
            if i % 24 == 23 {
                w.flush().unwrap();
            }
        }
        w.sync().unwrap();
    }

    fn streamed(path: &Path) -> (Vec<Record>, Vec<Warning>) {
        let s = Stream::open(path).unwrap().expect("a clean head");
        let mut v = Vec::new();
        let w = s.each(&mut |r| v.push(r)).unwrap();
        (v, w)
    }

    #[test]
    fn a_stream_gives_what_the_whole_file_reader_gives_intact_cut_or_damaged() {
        let dir = tempfile::tempdir().unwrap();
        for compact in [false, true] {
            let p = dir.path().join(format!("s{compact}.ptop"));
            write(&p, compact);
            let whole = std::fs::read(&p).unwrap();
            let n = whole.len();
            let cases: Vec<(&str, Vec<u8>)> = vec![
                ("intact", whole.clone()),
                ("cut", whole[..n - n / 3 - 5].to_vec()),
                ("damaged", {
                    let mut d = whole.clone();
                    for k in [n / 5, n / 2, n / 2 + 1, n - 100] {
                        d[k] ^= 0x5a;
                    }
                    d
                }),
            ];
            for (what, bytes) in cases {
                std::fs::write(&p, &bytes).unwrap();
                let l = load(&p).unwrap();
                let (recs, warns) = streamed(&p);
                assert_eq!(recs.len(), l.records.len(), "{what}, compact {compact}");
                assert!(recs == l.records, "{what}, compact {compact}");
                assert_eq!(warns.is_empty(), l.warnings.is_empty(), "{what}");
                if !compact {
                    assert_eq!(warns, l.warnings, "{what}");
                }
            }
        }
    }
}
