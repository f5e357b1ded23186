//! The columns of a chunk: a run of records laid out column by column, each column a run of
//! zigzag varint deltas, so that zstd sees long runs of small, alike bytes.
//!
//! Contract: [`decode`] of [`encode`] gives back the same records, every field exact (deltas
//! wrap, so any `u64` survives). [`decode`] of anything else is an error naming the column,
//! never a panic, and costs time and memory bounded by the bytes given: every count is
//! checked against the bytes left before anything is allocated for it.
//!
//! Layout: sections one after another, each a varint byte length and that many bytes:
//! the kind of each record; its time (delta of delta); the sample columns (one per field of
//! [`Sample`], over the samples only: `0` for `None`, else 1 + the zigzag delta from the
//! column's previous value, after a shift common to the column's deltas, stored first);
//! the GPU readings (a count per sample, then one section per field, each reading against
//! the reading in the same place of the sample before); the other records' bodies as the
//! frames of format 1 hold them (a varint length and the bytes).

use crate::record::{GpuReading, Record, RecordBody, Sample};
use crate::session::frame::{decode_payload, known_kind};

type Get = fn(&Sample) -> Option<u64>;
type Set = fn(&mut Sample, Option<u64>);

/// The scalar columns of a sample, in their order in a chunk.
const FIELDS: [(&str, Get, Set); 16] = [
    ("rss", |s| Some(s.rss), |s, v| s.rss = v.unwrap_or(0)),
    ("peak", |s| s.peak, |s, v| s.peak = v),
    ("anon", |s| s.anon, |s, v| s.anon = v),
    ("file", |s| s.file, |s, v| s.file = v),
    ("shmem", |s| s.shmem, |s, v| s.shmem = v),
    ("swap", |s| s.swap, |s, v| s.swap = v),
    ("locked", |s| s.locked, |s, v| s.locked = v),
    ("vm_pin", |s| s.vm_pin, |s, v| s.vm_pin = v),
    ("pinned", |s| s.pinned, |s, v| s.pinned = v),
    (
        "pinned_reported",
        |s| s.pinned_reported,
        |s, v| s.pinned_reported = v,
    ),
    ("gpu_used", |s| s.gpu_used, |s, v| s.gpu_used = v),
    (
        "mem_available",
        |s| s.mem_available,
        |s, v| s.mem_available = v,
    ),
    ("mem_total", |s| s.mem_total, |s, v| s.mem_total = v),
    (
        "cgroup_current",
        |s| s.cgroup_current,
        |s, v| s.cgroup_current = v,
    ),
    ("cgroup_max", |s| s.cgroup_max, |s, v| s.cgroup_max = v),
    (
        "procs",
        |s| Some(u64::from(s.procs)),
        |s, v| s.procs = v.unwrap_or(0) as u32,
    ),
];

type GGet = fn(&GpuReading) -> u64;
type GSet = fn(&mut GpuReading, u64);

/// The columns of a GPU reading.
const GPU_FIELDS: [(&str, GGet, GSet); 5] = [
    (
        "gpu index",
        |g| u64::from(g.index),
        |g, v| g.index = v as u32,
    ),
    ("gpu proc_used", |g| g.proc_used, |g, v| g.proc_used = v),
    ("gpu used", |g| g.used, |g, v| g.used = v),
    ("gpu total", |g| g.total, |g, v| g.total = v),
    ("gpu util", |g| u64::from(g.util), |g, v| g.util = v as u8),
];

fn put_varint(out: &mut Vec<u8>, mut v: u128) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn zigzag(d: i64) -> u64 {
    ((d << 1) ^ (d >> 63)) as u64
}

fn unzigzag(z: u64) -> i64 {
    ((z >> 1) as i64) ^ -((z & 1) as i64)
}

fn section(out: &mut Vec<u8>, body: &[u8]) {
    put_varint(out, body.len() as u128);
    out.extend_from_slice(body);
}

/// One column of optional values: a shift byte, then a token per value.
fn value_column(values: impl Iterator<Item = Option<u64>> + Clone) -> Vec<u8> {
    let mut prev = 0u64;
    let mut shift = 63u32;
    for v in values.clone().flatten() {
        let d = v.wrapping_sub(prev);
        if d != 0 {
            shift = shift.min(d.trailing_zeros());
        }
        prev = v;
    }
    let mut out = vec![shift as u8];
    prev = 0;
    for v in values {
        match v {
            None => put_varint(&mut out, 0),
            Some(v) => {
                let d = (v.wrapping_sub(prev) as i64) >> shift;
                put_varint(&mut out, 1 + u128::from(zigzag(d)));
                prev = v;
            }
        }
    }
    out
}

/// Records waiting for a chunk, kept as the columns need them: a sample whole, any other
/// record as its encoded body (the tail block's payload already holds it, so it is encoded
/// once and no record is cloned).
#[derive(Debug, Default)]
pub struct Pending {
    kinds: Vec<u8>,
    times: Vec<u64>,
    /// For each record, its index in `samples` (a sample) or the end of its body in `bodies`.
    slots: Vec<usize>,
    samples: Vec<Sample>,
    bodies: Vec<u8>,
}

impl Pending {
    /// Add `rec`, whose format-1 payload is `payload` (kind, t, body).
    pub fn push(&mut self, rec: &Record, payload: &[u8]) {
        self.kinds.push(payload[0]);
        self.times.push(rec.t);
        match &rec.body {
            RecordBody::Sample(s) => {
                self.slots.push(self.samples.len());
                self.samples.push(s.clone());
            }
            _ => {
                self.bodies.extend_from_slice(&payload[9..]);
                self.slots.push(self.bodies.len());
            }
        }
    }

    /// Records held.
    pub fn len(&self) -> usize {
        self.kinds.len()
    }

    /// Whether none are held.
    pub fn is_empty(&self) -> bool {
        self.kinds.is_empty()
    }

    /// Record time between the first record and the latest.
    pub fn span(&self) -> u64 {
        match (self.times.first(), self.times.iter().max()) {
            (Some(a), Some(b)) => b.saturating_sub(*a),
            _ => 0,
        }
    }

    /// Forget the first `n` records.
    pub fn drain(&mut self, n: usize) {
        let n = n.min(self.len());
        let samples = self.kinds[..n].iter().filter(|&&k| k == 1).count();
        let body_end = (0..n)
            .rev()
            .find(|&i| self.kinds[i] != 1)
            .map_or(0, |i| self.slots[i]);
        self.kinds.drain(..n);
        self.times.drain(..n);
        self.slots.drain(..n);
        self.samples.drain(..samples);
        self.bodies.drain(..body_end);
        for (k, slot) in self.kinds.iter().zip(self.slots.iter_mut()) {
            *slot -= if *k == 1 { samples } else { body_end };
        }
    }

    /// The samples of records `a..b`.
    fn samples_in(&self, a: usize, b: usize) -> &[Sample] {
        let from = self.kinds[..a].iter().filter(|&&k| k == 1).count();
        let n = self.kinds[a..b].iter().filter(|&&k| k == 1).count();
        &self.samples[from..from + n]
    }

    /// The times of records `a..b`.
    pub fn times(&self, a: usize, b: usize) -> &[u64] {
        &self.times[a..b]
    }

    /// The envelope of the samples of records `a..b`.
    pub fn summary(&self, a: usize, b: usize) -> super::Summary {
        super::Summary::of_samples(self.samples_in(a, b).iter())
    }

    /// The uncompressed columns of records `a..b`.
    pub fn encode(&self, a: usize, b: usize) -> Vec<u8> {
        let n = b - a;
        let mut out = Vec::with_capacity(n * 24);
        section(&mut out, &self.kinds[a..b]);
        let mut times = Vec::with_capacity(n * 2);
        let (mut prev, mut prev_d) = (0u64, 0i64);
        for &t in &self.times[a..b] {
            let d = t.wrapping_sub(prev) as i64;
            put_varint(&mut times, u128::from(zigzag(d.wrapping_sub(prev_d))));
            (prev, prev_d) = (t, d);
        }
        section(&mut out, &times);
        let samples = self.samples_in(a, b);
        for (_, get, _) in FIELDS {
            section(&mut out, &value_column(samples.iter().map(get)));
        }
        let mut counts = Vec::with_capacity(samples.len());
        for s in samples {
            put_varint(&mut counts, s.gpus.len() as u128);
        }
        section(&mut out, &counts);
        for (_, get, _) in GPU_FIELDS {
            let mut col = Vec::new();
            let mut last: Vec<u64> = Vec::new();
            for s in samples {
                for (j, g) in s.gpus.iter().enumerate() {
                    if last.len() <= j {
                        last.push(0);
                    }
                    let v = get(g);
                    put_varint(&mut col, u128::from(zigzag(v.wrapping_sub(last[j]) as i64)));
                    last[j] = v;
                }
            }
            section(&mut out, &col);
        }
        let mut others = Vec::new();
        // A body's start is the end of the body before it: walk them in order.
        let mut start = (0..a)
            .rev()
            .find(|&j| self.kinds[j] != 1)
            .map_or(0, |j| self.slots[j]);
        for i in a..b {
            if self.kinds[i] != 1 {
                let body = &self.bodies[start..self.slots[i]];
                put_varint(&mut others, body.len() as u128);
                others.extend_from_slice(body);
                start = self.slots[i];
            }
        }
        section(&mut out, &others);
        out
    }
}

/// The uncompressed columns of `records`.
#[cfg(test)]
pub fn encode(records: &[Record]) -> Vec<u8> {
    let mut p = Pending::default();
    for r in records {
        p.push(r, &crate::session::frame::encode_payload(r));
    }
    p.encode(0, p.len())
}

/// A bounds-checked cursor over bytes.
struct Cursor<'a> {
    b: &'a [u8],
    at: usize,
    what: &'static str,
}

impl<'a> Cursor<'a> {
    fn new(b: &'a [u8], what: &'static str) -> Self {
        Cursor { b, at: 0, what }
    }

    fn left(&self) -> usize {
        self.b.len() - self.at
    }

    fn varint(&mut self) -> Result<u128, String> {
        let mut v = 0u128;
        for shift in (0..133).step_by(7) {
            let Some(&byte) = self.b.get(self.at) else {
                return Err(format!("{} column ends early", self.what));
            };
            self.at += 1;
            v |= u128::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(format!("{} column holds an overlong number", self.what))
    }

    fn u64(&mut self) -> Result<u64, String> {
        u64::try_from(self.varint()?).map_err(|_| format!("{} column: number too large", self.what))
    }

    fn bytes(&mut self, n: usize) -> Result<&'a [u8], String> {
        if n > self.left() {
            return Err(format!(
                "{} column says {n} bytes, {} are left",
                self.what,
                self.left()
            ));
        }
        self.at += n;
        Ok(&self.b[self.at - n..self.at])
    }

    fn section(&mut self, what: &'static str) -> Result<Cursor<'a>, String> {
        self.what = what;
        let n = self.u64()?;
        let b = self.bytes(usize::try_from(n).unwrap_or(usize::MAX))?;
        Ok(Cursor::new(b, what))
    }

    fn done(&self) -> Result<(), String> {
        if self.left() > 0 {
            return Err(format!(
                "{} column has {} bytes too many",
                self.what,
                self.left()
            ));
        }
        Ok(())
    }
}

fn read_values(c: &mut Cursor, n: usize) -> Result<Vec<Option<u64>>, String> {
    let shift = u32::from(c.bytes(1)?[0]);
    if shift > 63 || n > c.left() {
        return Err(format!("{} column: bad shift or count", c.what));
    }
    let mut prev = 0u64;
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let tok = c.varint()?;
        if tok == 0 {
            out.push(None);
            continue;
        }
        let z = u64::try_from(tok - 1).map_err(|_| format!("{} column: bad delta", c.what))?;
        let d = unzigzag(z).wrapping_shl(shift) as u64;
        prev = prev.wrapping_add(d);
        out.push(Some(prev));
    }
    c.done()?;
    Ok(out)
}

/// The kind of each of the `count` records of uncompressed columns `raw` (the first
/// column, read without decoding the others).
pub fn kinds(raw: &[u8], count: usize) -> Result<&[u8], String> {
    let mut c = Cursor::new(raw, "kind");
    let kinds = c.section("kind")?;
    if kinds.b.len() != count {
        return Err(format!("{} kinds for {count} records", kinds.b.len()));
    }
    Ok(kinds.b)
}

/// The columns of a chunk read up to the other records: each record's kind and time, and
/// the samples decoded.
struct Columns<'a> {
    kinds: &'a [u8],
    times: Vec<u64>,
    samples: Vec<Sample>,
    other: Cursor<'a>,
}

fn columns(raw: &[u8], count: usize) -> Result<Columns<'_>, String> {
    let mut c = Cursor::new(raw, "kind");
    let kinds = c.section("kind")?;
    if kinds.b.len() != count {
        return Err(format!("{} kinds for {count} records", kinds.b.len()));
    }
    if let Some(k) = kinds.b.iter().find(|&&k| !known_kind(k)) {
        return Err(format!("unknown record kind {k}"));
    }
    let mut tc = c.section("time")?;
    let mut times = Vec::with_capacity(count);
    let (mut prev, mut prev_d) = (0u64, 0i64);
    for _ in 0..count {
        let d = prev_d.wrapping_add(unzigzag(tc.u64()?));
        prev = prev.wrapping_add(d as u64);
        prev_d = d;
        times.push(prev);
    }
    tc.done()?;
    let n = kinds.b.iter().filter(|&&k| k == 1).count();
    let mut samples = vec![Sample::default(); n];
    for (name, _, set) in FIELDS {
        let vals = read_values(&mut c.section(name)?, n)?;
        if matches!(name, "rss" | "procs") && vals.iter().any(Option::is_none) {
            return Err(format!("{name} column misses a value"));
        }
        if name == "procs"
            && vals
                .iter()
                .any(|v| v.is_some_and(|v| v > u64::from(u32::MAX)))
        {
            return Err("procs column holds a number too large".into());
        }
        for (s, v) in samples.iter_mut().zip(vals) {
            set(s, v);
        }
    }
    decode_gpus(&mut c, &mut samples)?;
    let other = c.section("other records")?;
    c.done()?;
    Ok(Columns {
        kinds: kinds.b,
        times,
        samples,
        other,
    })
}

/// The `count` records of uncompressed columns `raw`.
pub fn decode(raw: &[u8], count: usize) -> Result<Vec<Record>, String> {
    let Columns {
        kinds,
        times,
        samples,
        other: mut oc,
    } = columns(raw, count)?;
    let mut samples = samples.into_iter();
    let mut out = Vec::with_capacity(count);
    let mut payload = Vec::new();
    for (&k, t) in kinds.iter().zip(times) {
        let body = if k == 1 {
            RecordBody::Sample(samples.next().ok_or("too few samples")?)
        } else {
            let len = usize::try_from(oc.u64()?).unwrap_or(usize::MAX);
            let b = oc.bytes(len)?;
            payload.clear();
            payload.push(k);
            payload.extend_from_slice(&t.to_le_bytes());
            payload.extend_from_slice(b);
            decode_payload(&payload)?.body
        };
        out.push(Record { t, body });
    }
    oc.done()?;
    Ok(out)
}

/// The samples among the `count` records of uncompressed columns `raw`, each with its time
/// and its index among the records, the other records left undecoded: what a reader that
/// draws memory needs.
pub fn samples(raw: &[u8], count: usize) -> Result<Vec<(usize, u64, Sample)>, String> {
    let c = columns(raw, count)?;
    let at = c.kinds.iter().zip(c.times).enumerate();
    let sampled = at.filter(|(_, (&k, _))| k == 1);
    Ok(sampled
        .zip(c.samples)
        .map(|((i, (_, t)), s)| (i, t, s))
        .collect())
}

fn decode_gpus(c: &mut Cursor, samples: &mut [Sample]) -> Result<(), String> {
    let mut cc = c.section("gpu count")?;
    let mut total = 0usize;
    let mut counts = Vec::with_capacity(samples.len());
    for _ in 0..samples.len() {
        let k = usize::try_from(cc.u64()?).unwrap_or(usize::MAX);
        total = total.saturating_add(k);
        counts.push(k);
    }
    cc.done()?;
    // Each reading takes at least a byte in each of its columns.
    if total > c.left() {
        return Err(format!("{total} GPU readings in {} bytes", c.left()));
    }
    for (s, &k) in samples.iter_mut().zip(&counts) {
        s.gpus = vec![GpuReading::default(); k];
    }
    for (name, _, set) in GPU_FIELDS {
        let mut col = c.section(name)?;
        let mut last: Vec<u64> = Vec::new();
        for s in samples.iter_mut() {
            for (j, g) in s.gpus.iter_mut().enumerate() {
                if last.len() <= j {
                    last.push(0);
                }
                let v = last[j].wrapping_add(unzigzag(col.u64()?) as u64);
                if (name == "gpu index" && v > u64::from(u32::MAX))
                    || (name == "gpu util" && v > 255)
                {
                    return Err(format!("{name} column holds a number too large"));
                }
                set(g, v);
                last[j] = v;
            }
        }
        col.done()?;
    }
    Ok(())
}
