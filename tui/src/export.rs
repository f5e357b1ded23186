//! `provetop export`: a session or CSV as CSV (`timestamp,rss_kb,...`) or JSON lines.
//!
//! The CSV has one row per memory sample. It starts with the seed sampler's two columns, so
//! the operators' awk script (and provetop's own CSV reader) run on it unchanged; the other
//! memory series follow, empty where a sample has no reading, then the prover's phase at that
//! instant. After the phase come the usage columns (`cores,host_cores,threads,read_bps,
//! write_bps,major_faults`: the latest usage record's, carried forward over the samples
//! between two of them, empty when unknown: before the first, a rate the reading did not
//! have, after the child exited or started until the next), then for each GPU the session
//! saw, by device index ascending, `gpuN_util,gpuN_mem_kb,gpuN_temp_c` (utilisation percent
//! and memory used on the device from the sample, temperature from the latest usage
//! record). A session with kernel records then has the kernel columns (`mem_limit_kb`, the
//! limit that binds; `psi_memory_some,psi_memory_full,psi_cpu_some,psi_io_some,psi_io_full`,
//! pressure avg10 percent of the tree's cgroup or else the host, two decimals), carried
//! forward like the usage columns. Columns are only ever added at the end: every column up to
//! `phase` is where it always was, and the GPU and kernel columns the header names are the
//! session's own. JSON lines hold
//! one [`Record`] per line, exactly its serde JSON (usage records included), for `jq`.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;

use anyhow::Context as _;
use provetop_shared::classify::Thresholds;
use provetop_shared::metric::{
    Read, Unit, CSV_COLUMNS, GPU_CSV_COLUMNS, KERNEL_CSV_COLUMNS, USAGE_CSV_COLUMNS,
};
use provetop_shared::session::SessionHeader;
use provetop_shared::{Kernel, Mark, Record, RecordBody, Sample, Usage};

use provetop_shared::session::stream::Stream;

use crate::cli::{ExportArgs, ExportFormat};
use crate::scan::Pre;
use crate::store::Store;

/// The CSV header line (without the newline) for a session whose GPUs are `gpus` (device
/// indices, ascending): `timestamp`, the metric table's memory columns
/// ([`provetop_shared::metric::CSV_COLUMNS`]), `phase`, the usage columns
/// ([`USAGE_CSV_COLUMNS`]), per GPU its columns ([`GPU_CSV_COLUMNS`], `gpu0_util`, …), and
/// with `kernel` (the session has kernel records) the kernel columns ([`KERNEL_CSV_COLUMNS`]).
pub fn csv_header(gpus: &[u32], kernel: bool) -> String {
    let mut h = String::from("timestamp");
    for c in provetop_shared::metric::csv_columns() {
        h.push(',');
        h.push_str(c);
    }
    h.push_str(",phase");
    for m in USAGE_CSV_COLUMNS {
        if let Some((name, _)) = m.def().csv {
            h.push(',');
            h.push_str(name);
        }
    }
    for i in gpus {
        for m in GPU_CSV_COLUMNS {
            if let Some((name, _)) = m.def().csv {
                h.push_str(&format!(",gpu{i}_{name}"));
            }
        }
    }
    if kernel {
        for m in KERNEL_CSV_COLUMNS {
            if let Some((name, _)) = m.def().csv {
                h.push(',');
                h.push_str(name);
            }
        }
    }
    h
}

/// Whether the store has kernel records (and its CSV the kernel columns).
pub fn has_kernel(store: &Store) -> bool {
    store
        .records()
        .iter()
        .any(|r| matches!(r.body, RecordBody::Kernel(_)))
}

/// Every GPU index a sample or a usage record of the store names, ascending.
pub fn session_gpus(store: &Store) -> Vec<u32> {
    let mut gpus: Vec<u32> = store
        .records()
        .iter()
        .flat_map(|r| -> Box<dyn Iterator<Item = u32> + '_> {
            match &r.body {
                RecordBody::Sample(s) => Box::new(s.gpus.iter().map(|g| g.index)),
                RecordBody::Usage(u) => Box::new(u.gpus.iter().map(|g| g.index)),
                _ => Box::new(std::iter::empty()),
            }
        })
        .collect();
    gpus.sort_unstable();
    gpus.dedup();
    gpus
}

/// Run `provetop export`; returns the process exit code.
pub fn main(args: &ExportArgs) -> anyhow::Result<i32> {
    // Before the (possibly long) load; creating the file (O_EXCL) is what makes it sure.
    if let Some(out) = &args.output {
        refuse_existing(&args.file, out)?;
    }
    // LoadError already names the cause; `{:#}` would repeat its io::Error source.
    let err = |e: provetop_shared::session::LoadError| anyhow::anyhow!("{e}");
    if let Some(src) = Stream::open(&args.file).map_err(err)? {
        // A pass for what the header names and the records that move, then one that writes.
        let (pre, warnings) = crate::scan::Pre::of(&src).map_err(err)?;
        for w in &warnings {
            crate::say!("provetop: warning: {}: {w}", args.file.display());
        }
        let write = |out: &mut dyn Write| match args.format {
            ExportFormat::Csv => stream_csv(&args.file, &src, &pre, out),
            ExportFormat::Jsonl => stream_jsonl(&src, &pre, out),
        };
        return emit(args, write);
    }
    let store = Store::scan(&args.file, Thresholds::default()).map_err(err)?;
    store.report_warnings();
    let write = |out: &mut dyn Write| match args.format {
        ExportFormat::Csv => write_csv(&store, out),
        ExportFormat::Jsonl => write_jsonl(&store, out),
    };
    emit(args, write)
}

/// Write the export with `write` to `-o`'s new file or to standard output.
fn emit(
    args: &ExportArgs,
    write: impl Fn(&mut dyn Write) -> io::Result<()>,
) -> anyhow::Result<i32> {
    match &args.output {
        Some(path) => {
            let file = create(path)?;
            let mut out = BufWriter::with_capacity(1 << 20, file);
            write(&mut out)
                .and_then(|()| out.flush())
                .with_context(|| format!("writing {}", path.display()))?;
        }
        None => {
            let stdout = io::stdout();
            let mut out = BufWriter::with_capacity(1 << 20, stdout.lock());
            ignore_broken_pipe(write(&mut out).and_then(|()| out.flush()))
                .context("writing standard output")?;
        }
    }
    Ok(0)
}

/// A new file, 0600, never through a link ([`provetop_shared::session::create_private`]).
fn create(path: &Path) -> anyhow::Result<File> {
    provetop_shared::session::create_private(path)
        .with_context(|| format!("cannot create {}", path.display()))
}

/// `-o` names an existing path: the input itself (same file, by device and inode), or any
/// other file. An export writes only a new file; standard output is there for the rest.
fn refuse_existing(input: &Path, out: &Path) -> anyhow::Result<()> {
    use std::os::unix::fs::MetadataExt;
    let Ok(o) = std::fs::symlink_metadata(out) else {
        return Ok(());
    };
    let same = |m: &std::fs::Metadata| {
        std::fs::metadata(input).is_ok_and(|i| (i.dev(), i.ino()) == (m.dev(), m.ino()))
    };
    if same(&o) || std::fs::metadata(out).is_ok_and(|m| same(&m)) {
        anyhow::bail!(
            "-o {}: that is the input {}; refusing to write the export over it",
            out.display(),
            input.display()
        );
    }
    let what = provetop_shared::session::taken(out).unwrap_or("already exists");
    anyhow::bail!(
        "-o {}: {what}; provetop export writes only a new file (choose another name, remove it, or leave out -o for standard output)",
        out.display()
    )
}

/// Write bytes to standard output; a reader that went away (`| head`) is not an error.
pub fn write_stdout(bytes: &[u8]) -> anyhow::Result<()> {
    let mut out = io::stdout().lock();
    ignore_broken_pipe(out.write_all(bytes).and_then(|()| out.flush()))
        .context("writing standard output")
}

fn ignore_broken_pipe(r: io::Result<()>) -> io::Result<()> {
    match r {
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(()),
        r => r,
    }
}

/// Every sample as one CSV row under [`csv_header`].
pub fn write_csv(store: &Store, out: &mut dyn Write) -> io::Result<()> {
    let mut rows = CsvRows::new(store.header(), session_gpus(store), has_kernel(store));
    writeln!(out, "{}", csv_header(&rows.gpus, rows.kernel))?;
    for (i, rec) in store.records().iter().enumerate() {
        rows.record(rec, store.phase_at_index(i), out)?;
    }
    Ok(())
}

/// [`write_csv`] of a session read in passes ([`crate::scan`]): the reducer's pass writes
/// each row as its sample comes.
pub fn stream_csv(path: &Path, src: &Stream, pre: &Pre, out: &mut dyn Write) -> io::Result<()> {
    let mut rows = CsvRows::new(&src.header, pre.gpus.clone(), pre.kernel);
    writeln!(out, "{}", csv_header(&rows.gpus, rows.kernel))?;
    let mut failed: Option<io::Error> = None;
    let pass = Store::stream(
        path,
        src,
        Thresholds::default(),
        Some(pre.has_events),
        Some(&pre.late),
        crate::store::Figures::Text,
        &mut |rec, phase| {
            failed = rows.record(rec, phase, out).err();
            // A reader that went away (`| head`), a full disk: no more reading.
            failed.is_none()
        },
    );
    if let Some(e) = failed {
        return Err(e);
    }
    pass.map(|_| ())
        .map_err(|e| io::Error::other(e.to_string()))
}

/// Every record as one line of its serde JSON, read in one pass (placed as the store
/// places them).
pub fn stream_jsonl(src: &Stream, pre: &Pre, out: &mut dyn Write) -> io::Result<()> {
    let mut failed: Option<io::Error> = None;
    let pass = crate::store::placed_each(src, &pre.late, &mut |rec| {
        failed = serde_json::to_writer(&mut *out, &rec)
            .map_err(io::Error::from)
            .and_then(|()| out.write_all(b"\n"))
            .err();
        failed.is_none()
    });
    if let Some(e) = failed {
        return Err(e);
    }
    pass.map(|_| ())
        .map_err(|e| io::Error::other(e.to_string()))
}

/// The CSV's rows, record by record: the latest usage and kernel readings carried forward.
struct CsvRows {
    header: SessionHeader,
    gpus: Vec<u32>,
    kernel: bool,
    usage: Option<Usage>,
    last_kernel: Option<Kernel>,
    line: String,
}

impl CsvRows {
    fn new(header: &SessionHeader, gpus: Vec<u32>, kernel: bool) -> Self {
        CsvRows {
            header: header.clone(),
            gpus,
            kernel,
            usage: None,
            last_kernel: None,
            line: String::with_capacity(256),
        }
    }

    /// The next record (in placed order) with the prover's phase text after it: a sample is
    /// a row.
    fn record(&mut self, rec: &Record, phase: Option<&str>, out: &mut dyn Write) -> io::Result<()> {
        let s = match &rec.body {
            RecordBody::Sample(s) => s,
            RecordBody::Usage(u) => {
                self.usage = Some(u.clone());
                return Ok(());
            }
            RecordBody::Kernel(k) => {
                self.last_kernel = Some(k.as_ref().clone());
                return Ok(());
            }
            // A new or ended tree: the last usage and kernel readings were of the one before.
            RecordBody::Mark(Mark::ChildStarted { .. } | Mark::ChildExited { .. }) => {
                self.usage = None;
                self.last_kernel = None;
                return Ok(());
            }
            _ => return Ok(()),
        };
        let line = &mut self.line;
        line.clear();
        // The model writes "-" for "no phase, no known state"; a CSV cell says that empty.
        let phase = phase.filter(|p| *p != "-");
        csv_row(
            line,
            &self.header,
            rec.t,
            s,
            phase,
            self.usage.as_ref(),
            &self.gpus,
        );
        if self.kernel {
            kernel_cells(line, self.last_kernel.as_ref());
        }
        line.push('\n');
        out.write_all(line.as_bytes())
    }
}

fn csv_row(
    line: &mut String,
    header: &SessionHeader,
    t: u64,
    s: &Sample,
    phase: Option<&str>,
    usage: Option<&Usage>,
    gpus: &[u32],
) {
    use std::fmt::Write as _;
    let wall = header.wall_anchor as i128 + t as i128 - header.mono_anchor as i128;
    line.push_str(&fmt_unix(wall));
    for (_, read) in CSV_COLUMNS.iter().filter_map(|m| m.def().csv) {
        line.push(',');
        if let Read::Sample(read) = read {
            if let Some(b) = read(s) {
                let _ = write!(line, "{}", kib(b));
            }
        }
    }
    line.push(',');
    if let Some(p) = phase {
        csv_text(line, p);
    }
    for m in USAGE_CSV_COLUMNS {
        line.push(',');
        if let Some((_, read)) = m.def().csv {
            csv_number(line, m.unit(), read.value(Some(s), usage));
        }
    }
    for &g in gpus {
        for m in GPU_CSV_COLUMNS {
            line.push(',');
            if let Some((_, read)) = m.def().csv {
                let v = read
                    .per_gpu_values(Some(s), usage)
                    .into_iter()
                    .find(|(i, _)| *i == g)
                    .map(|(_, v)| v);
                csv_number(line, m.unit(), v);
            }
        }
    }
}

/// The kernel columns of a row, from the latest kernel record (empty cells without one).
fn kernel_cells(line: &mut String, k: Option<&Kernel>) {
    use std::fmt::Write as _;
    for m in KERNEL_CSV_COLUMNS {
        line.push(',');
        let v = k.and_then(|k| m.of_kernel(k));
        match (m.unit(), v) {
            // Pressure is a fraction of a percent for long: two decimals.
            (Unit::Percent, Some(v)) => {
                let _ = write!(line, "{v:.2}");
            }
            (unit, v) => csv_number(line, unit, v),
        }
    }
}

/// A number cell in its unit's CSV form: bytes as KiB, cores with two decimals, rates per
/// second with one (bytes per second whole), percent, °C and counts whole; empty when unknown.
fn csv_number(line: &mut String, unit: Unit, v: Option<f64>) {
    use std::fmt::Write as _;
    let Some(v) = v.filter(|v| v.is_finite()) else {
        return;
    };
    let _ = match unit {
        Unit::Bytes => write!(line, "{}", kib(v.max(0.0) as u64)),
        Unit::Cores => write!(line, "{v:.2}"),
        Unit::PerSecond => write!(line, "{v:.1}"),
        Unit::Seconds => write!(line, "{v:.3}"),
        Unit::Percent | Unit::Celsius | Unit::Count | Unit::BytesPerSecond => {
            write!(line, "{v:.0}")
        }
    };
}

/// A text cell. Phase names are identifiers, but a foreign prover may send anything: control
/// characters are shown as visible escapes ([`crate::text::inert`], so no cell holds a line
/// break), a cell a spreadsheet would read as a formula (`=`, `+`, `-`, `@`) starts with `'`
/// (OWASP's rule), and a cell with a comma or a quote is quoted (RFC 4180).
pub fn csv_text(line: &mut String, text: &str) {
    let text = crate::text::inert(text);
    let formula = text.starts_with(['=', '+', '-', '@']);
    let quoted = text.contains([',', '"']);
    if quoted {
        line.push('"');
    }
    if formula {
        line.push('\'');
    }
    if quoted {
        line.push_str(&text.replace('"', "\"\""));
        line.push('"');
    } else {
        line.push_str(&text);
    }
}

/// Bytes → KiB, rounded to the nearest (readings from /proc are whole KiB anyway).
fn kib(b: u64) -> u64 {
    b / 1024 + u64::from(b % 1024 >= 512)
}

/// Unix nanoseconds as seconds with up to millisecond precision: `1700000000`,
/// `1700000000.05`. Integers throughout, so no float noise in the output.
pub fn fmt_unix(ns: i128) -> String {
    let neg = ns < 0;
    let ms = (ns.abs() + 500_000) / 1_000_000;
    let (secs, frac) = (ms / 1000, ms % 1000);
    let sign = if neg && ms != 0 { "-" } else { "" };
    if frac == 0 {
        format!("{sign}{secs}")
    } else {
        let f = format!("{frac:03}");
        format!("{sign}{secs}.{}", f.trim_end_matches('0'))
    }
}

/// Every record as one line of its serde JSON.
pub fn write_jsonl(store: &Store, out: &mut dyn Write) -> io::Result<()> {
    for rec in store.records() {
        serde_json::to_writer(&mut *out, rec as &Record)?;
        out.write_all(b"\n")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unix_times() {
        assert_eq!(fmt_unix(1_700_000_000_000_000_000), "1700000000");
        assert_eq!(fmt_unix(1_700_000_000_050_000_000), "1700000000.05");
        assert_eq!(fmt_unix(1_700_000_000_123_456_789), "1700000000.123");
        assert_eq!(fmt_unix(1_700_000_000_999_600_000), "1700000001");
        assert_eq!(fmt_unix(-1_500_000_000), "-1.5");
        assert_eq!(fmt_unix(0), "0");
    }

    #[test]
    fn text_cells_are_inert_for_terminals_and_spreadsheets() {
        let cell = |t: &str| {
            let mut l = String::new();
            csv_text(&mut l, t);
            l
        };
        assert_eq!(cell("synthesis"), "synthesis");
        assert_eq!(cell("=1+2"), "'=1+2");
        assert_eq!(cell("+x"), "'+x");
        assert_eq!(cell("-x"), "'-x");
        assert_eq!(cell("@SUM(A1)"), "'@SUM(A1)");
        assert_eq!(cell("a,b"), "\"a,b\"");
        assert_eq!(cell("=a\"b"), "\"'=a\"\"b\"");
        assert_eq!(cell("a\nb\x1b[2J\r"), "a\\nb\\x1b[2J\\r");
    }

    #[test]
    fn kib_rounds() {
        assert_eq!(kib(0), 0);
        assert_eq!(kib(1024), 1);
        assert_eq!(kib(1535), 1);
        assert_eq!(kib(1536), 2);
        assert_eq!(kib(u64::MAX), u64::MAX / 1024 + 1);
    }
}
