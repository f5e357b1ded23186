//! `provetop watch PID --log FILE` and `--log -`: a log the watched prover writes (or
//! `journalctl -fu curio | provetop watch PID --log -`) read like a supervised child's
//! output: every line a record (source `file` or `in`, bounded the same way) and through the
//! same line grammars ([`provetop_collect::loglines`]).
//!
//! A file is followed as it grows (`tail -f`: read to its end, then polled every
//! [`POLL`]); one that shrinks was truncated or rotated and is read again from its start.
//! Of a file already larger than [`BACKLOG`] only the last [`BACKLOG`] bytes are read (from
//! a line's start): its older lines are history, placed in the past by their timestamps.
//! Standard input is read to its end. A command (`watch --unit`'s `journalctl --follow`) is
//! read to its end too, its lines marked `file`; it is ended with provetop, and a command
//! that fails says why in a warning.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::time::Duration;

use provetop_collect::channel::{self, RecordRx, RecordTx};
use provetop_collect::lines::Splitter;
use provetop_collect::loglines::Rule;
use provetop_collect::supervisor::{LineSink, MAX_OUTPUT_LINE};
use provetop_shared::clock::mono_ns;
use provetop_shared::{OutputSource, Record};

pub use crate::cli::LogSource;

/// How often a followed file is looked at for more.
pub const POLL: Duration = Duration::from_millis(100);
/// Most of an existing file read at start.
pub const BACKLOG: u64 = 16 << 20;

/// Start reading `src` on a thread of its own, its lines read by the built-in grammars and
/// `rules` (the config file's); its records come out of the receiver. A file that cannot be
/// opened is an error naming it.
pub fn spawn(src: LogSource, rules: Vec<Rule>) -> anyhow::Result<RecordRx> {
    let (tx, rx) = channel::channel(provetop_collect::supervisor::RECORD_CHANNEL);
    let reader: Box<dyn Read + Send> = match &src {
        LogSource::Command(argv) => {
            let argv = argv.clone();
            std::thread::Builder::new()
                .name("provetop-log".into())
                .spawn(move || follow_command(argv, rules, tx))?;
            return Ok(rx);
        }
        LogSource::Stdin => Box::new(std::io::stdin()),
        LogSource::File(p) => {
            let mut f = provetop_shared::session::open_regular(p)
                .map_err(|e| anyhow::anyhow!("--log {}: {e}", p.display()))?;
            let len = f.metadata().map(|m| m.len()).unwrap_or(0);
            if len > BACKLOG {
                f.seek(SeekFrom::Start(len - BACKLOG))?;
            }
            Box::new(f)
        }
    };
    let skip_first = matches!(&src, LogSource::File(p) if std::fs::metadata(p).map(|m| m.len() > BACKLOG).unwrap_or(false));
    std::thread::Builder::new()
        .name("provetop-log".into())
        .spawn(move || follow(src, reader, skip_first, rules, tx))?;
    Ok(rx)
}

fn follow(
    src: LogSource,
    mut r: Box<dyn Read + Send>,
    mut skip_first: bool,
    rules: Vec<Rule>,
    tx: RecordTx,
) {
    let source = match src {
        LogSource::Stdin => OutputSource::Stdin,
        LogSource::File(_) | LogSource::Command(_) => OutputSource::File,
    };
    let mut sink = LineSink::with_rules(rules);
    let mut buf = vec![0u8; 64 << 10];
    let mut lines = Splitter::keeping_heads(MAX_OUTPUT_LINE);
    let mut pos = 0u64;
    let send = |rec: Record| {
        // The app's channel is bounded; a line waits for room rather than vanish (the log is
        // ours to pace: a file or a pipe).
        let _ = tx.blocking_send(rec);
    };
    loop {
        let n = match r.read(&mut buf) {
            Ok(0) => {
                let LogSource::File(p) = &src else { break };
                if tx.is_closed() {
                    break;
                }
                std::thread::sleep(POLL);
                // Truncated or rotated: from the start again.
                if std::fs::metadata(p).map(|m| m.len() < pos).unwrap_or(false) {
                    match File::open(p) {
                        Ok(f) => {
                            r = Box::new(f);
                            pos = 0;
                        }
                        Err(_) => continue,
                    }
                }
                continue;
            }
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        };
        pos += n as u64;
        lines.feed(&buf[..n], |line| {
            if !std::mem::take(&mut skip_first) {
                let (head, len) = line.head_and_len();
                sink.line(head, len, source, mono_ns(), true, send, send);
            }
        });
    }
    lines.finish(|line| {
        let (head, len) = line.head_and_len();
        sink.line(head, len, source, mono_ns(), true, send, send);
    });
    if let Some(d) = sink.take_over() {
        send(d);
    }
}

/// Read the output of `argv` (a command that follows a log) as [`follow`] reads a pipe; the
/// command is started on this thread, which lives while it runs, so that it ends with
/// provetop (`PR_SET_PDEATHSIG`). A command that cannot start, or fails, is a warning with
/// its first words of complaint.
fn follow_command(argv: Vec<String>, rules: Vec<Rule>, tx: RecordTx) {
    use std::os::unix::process::CommandExt;
    use std::process::{Command, Stdio};
    let warn = |text: String| {
        let _ = tx.blocking_send(Record::new(
            mono_ns(),
            provetop_shared::RecordBody::Mark(provetop_shared::Mark::Warning { text }),
        ));
    };
    let Some((prog, args)) = argv.split_first() else {
        return;
    };
    let mut cmd = Command::new(prog);
    cmd.args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // SAFETY: the closure runs in the child between fork and exec and only calls prctl(2),
    // which is async-signal-safe; it touches no memory of the parent's.
    unsafe {
        cmd.pre_exec(|| {
            nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGTERM)
                .map_err(std::io::Error::from)
        });
    }
    let shown = argv.join(" ");
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            return warn(format!(
                "cannot run `{shown}`: {e}: the log is not followed"
            ))
        }
    };
    let (Some(out), Some(mut err)) = (child.stdout.take(), child.stderr.take()) else {
        return;
    };
    let err_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = (&mut err).take(4096).read_to_string(&mut s);
        s
    });
    follow(
        LogSource::Command(Vec::new()),
        Box::new(out),
        false,
        rules,
        tx.clone(),
    );
    let status = child.wait();
    let complaint = err_reader.join().unwrap_or_default();
    let first = complaint
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("");
    match status {
        Ok(s) if s.success() && first.is_empty() => {}
        Ok(s) => warn(format!("`{shown}` ended ({s}): {}", first.trim())),
        Err(e) => warn(format!("`{shown}`: {e}")),
    }
}
