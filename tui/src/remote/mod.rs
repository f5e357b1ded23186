//! Sessions on other machines, through the system's `ssh` client: `provetop attach
//! HOST:SESSION` and `provetop ls HOST`. No protocol or credentials of provetop's own: `ssh`
//! brings the user's keys, config and agent, and runs `provetop remote-bridge` on the other
//! side ([`bridge`]), which speaks [`wire`] over the channel's stdin and stdout.
//!
//! Contract:
//! * `ssh` runs with `BatchMode=yes` (never a password prompt: a key or the agent, else one
//!   line saying it could not log in), a connect timeout of [`CONNECT_TIMEOUT_S`], and
//!   keepalives that notice a dead peer within [`ALIVE_S`] × [`ALIVE_COUNT`]. The remote side
//!   must say hello within [`HELLO_TIMEOUT`], else the attempt fails (a host that accepts and
//!   hangs). `PROVETOP_SSH` replaces the `ssh` command (split on whitespace: `ssh -F FILE`).
//! * The remote provetop is `provetop` by the remote PATH, or `--remote-provetop`; one of
//!   another version (or none) is one line saying so.
//! * A remote screen is read-only unless `--control`. A dropped connection ends nothing on
//!   the remote side: the screen says so and reconnects, resuming the file where its copy
//!   ends ([`attach`]).

pub mod attach;
pub mod bridge;
pub mod ls;
pub mod wire;

use std::process::{Command, Stdio};
use std::time::Duration;

/// Seconds `ssh` may take to connect.
pub const CONNECT_TIMEOUT_S: u32 = 10;
/// Keepalive: seconds between probes of a silent peer, and probes unanswered before giving up.
pub const ALIVE_S: u32 = 5;
pub const ALIVE_COUNT: u32 = 3;
/// How long the remote side has to say hello (connecting, logging in, starting provetop).
pub const HELLO_TIMEOUT: Duration = Duration::from_secs(20);

/// `HOST:SESSION`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub host: String,
    pub session: String,
}

impl Target {
    /// `HOST:SESSION` (`user@host:id`, `[::1]:id`); `None` for what names a local session
    /// (an id, a path, a socket); an error for a remote target that is not well formed.
    pub fn parse(s: &str) -> Option<anyhow::Result<Target>> {
        if s.contains('/') || !s.contains(':') {
            return None;
        }
        let (host, session) = s.rsplit_once(':')?;
        let host = host
            .strip_prefix('[')
            .and_then(|h| h.strip_suffix(']'))
            .unwrap_or(host);
        Some(check_host(host).and_then(|()| {
            if session.is_empty()
                || !session
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
            {
                anyhow::bail!(
                    "{}: want HOST:SESSION, with the session's id as `provetop ls HOST` shows it",
                    crate::text::inert(s)
                );
            }
            Ok(Target {
                host: host.to_string(),
                session: session.to_string(),
            })
        }))
    }
}

/// A host as `ssh` takes it: no option-like or shell-special spelling.
pub fn check_host(host: &str) -> anyhow::Result<()> {
    let ok = !host.is_empty()
        && !host.starts_with('-')
        && host
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.@:%".contains(c));
    if !ok {
        anyhow::bail!(
            "bad host {:?}: want HOST, USER@HOST or an address",
            crate::text::inert(host)
        );
    }
    Ok(())
}

/// A word quoted for the remote shell (ssh hands its command to one).
fn sh_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// `ssh … HOST -- PROVETOP remote-bridge ARGS…`, stdin and stdout piped, stderr captured.
pub fn ssh(host: &str, remote_provetop: Option<&str>, args: &[&str]) -> anyhow::Result<Command> {
    check_host(host)?;
    let custom = std::env::var("PROVETOP_SSH")
        .ok()
        .filter(|s| !s.trim().is_empty());
    let words: Vec<String> = custom
        .as_deref()
        .unwrap_or("ssh")
        .split_whitespace()
        .map(String::from)
        .collect();
    let mut cmd = Command::new(&words[0]);
    cmd.args(&words[1..]).args([
        "-T",
        "-o",
        "BatchMode=yes",
        "-o",
        &format!("ConnectTimeout={CONNECT_TIMEOUT_S}"),
        "-o",
        &format!("ServerAliveInterval={ALIVE_S}"),
        "-o",
        &format!("ServerAliveCountMax={ALIVE_COUNT}"),
        "-o",
        "LogLevel=ERROR",
        host,
        "--",
    ]);
    let remote: Vec<String> = std::iter::once(remote_provetop.unwrap_or("provetop"))
        .chain(std::iter::once("remote-bridge"))
        .chain(args.iter().copied())
        .map(sh_quote)
        .collect();
    cmd.arg(remote.join(" "))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    Ok(cmd)
}

/// Why `ssh` (or the remote command) failed, from its stderr: the first line that says
/// "error", else the last non-empty one; inert.
pub fn ssh_said(stderr: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(stderr);
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    lines
        .iter()
        .find(|l| l.to_ascii_lowercase().contains("error"))
        .or(lines.last())
        .map(|l| crate::text::inert(l).into_owned())
}

/// A bridge on `host` that said hello: its output, its input, and `ssh` itself.
pub struct Conn {
    pub child: std::process::Child,
    pub out: std::io::BufReader<std::process::ChildStdout>,
    pub input: std::process::ChildStdin,
    /// What `ssh` and the remote command wrote on stderr so far.
    pub err: std::sync::Arc<std::sync::Mutex<Vec<u8>>>,
}

impl Conn {
    /// Start `ssh HOST PROVETOP remote-bridge ARGS…` and wait (at most [`HELLO_TIMEOUT`]) for
    /// the bridge's hello, of this version. Any failure is one line naming the host.
    pub fn open(host: &str, remote_provetop: Option<&str>, args: &[&str]) -> anyhow::Result<Conn> {
        use std::io::Read;
        let mut cmd = ssh(host, remote_provetop, args)?;
        let mut child = cmd
            .spawn()
            .map_err(|e| anyhow::anyhow!("cannot run ssh: {e}"))?;
        let (Some(out), Some(input), Some(mut stderr)) =
            (child.stdout.take(), child.stdin.take(), child.stderr.take())
        else {
            let _ = child.kill();
            let _ = child.wait();
            anyhow::bail!("ssh {host}: its pipes could not be made");
        };
        let err = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let sink = std::sync::Arc::clone(&err);
        std::thread::spawn(move || {
            let mut b = [0u8; 4096];
            while let Ok(n) = stderr.read(&mut b) {
                if n == 0 {
                    break;
                }
                let mut e = sink.lock().unwrap_or_else(|e| e.into_inner());
                if e.len() < 64 * 1024 {
                    e.extend_from_slice(&b[..n]);
                }
            }
        });
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut r = std::io::BufReader::new(out);
            let h = wire::read_hello(&mut r);
            let _ = tx.send((h, r));
        });
        let said = |child: &mut std::process::Child,
                    err: &std::sync::Arc<std::sync::Mutex<Vec<u8>>>| {
            // Let ssh finish saying why (it exits at once on a refused connection).
            let t0 = std::time::Instant::now();
            while t0.elapsed() < Duration::from_secs(1) {
                if let Ok(Some(_)) = child.try_wait() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = child.kill();
            let _ = child.wait();
            std::thread::sleep(Duration::from_millis(50));
            let e = err.lock().unwrap_or_else(|e| e.into_inner());
            ssh_said(&e)
        };
        match rx.recv_timeout(HELLO_TIMEOUT) {
            Ok((Ok(hello), out)) => {
                if let Err(e) = hello.check() {
                    let _ = child.kill();
                    let _ = child.wait();
                    anyhow::bail!("{host}: {e}");
                }
                Ok(Conn {
                    child,
                    out,
                    input,
                    err,
                })
            }
            Ok((Err(e), _)) => {
                let why = said(&mut child, &err);
                match why {
                    Some(w) => anyhow::bail!("ssh {host}: {w}"),
                    None => anyhow::bail!("ssh {host}: {e}"),
                }
            }
            Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
                anyhow::bail!(
                    "ssh {host}: no answer within {} s (the host or its provetop hangs)",
                    HELLO_TIMEOUT.as_secs()
                )
            }
        }
    }

    /// End `ssh` (the remote bridge ends with its stdin; the session goes on).
    pub fn close(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remote_targets_are_told_from_local_names() {
        assert!(Target::parse("s-12").is_none());
        assert!(Target::parse("/tmp/a:b.ptop").is_none());
        let t = Target::parse("me@box:s-12").unwrap().unwrap();
        assert_eq!((t.host.as_str(), t.session.as_str()), ("me@box", "s-12"));
        let v6 = Target::parse("[::1]:s-1").unwrap().unwrap();
        assert_eq!(v6.host, "::1");
        assert!(Target::parse("-oProxyCommand=x:s").unwrap().is_err());
        assert!(Target::parse("box:s;rm").unwrap().is_err());
        assert_eq!(sh_quote("a'b"), r"'a'\''b'");
    }
}
