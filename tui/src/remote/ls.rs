//! `provetop ls HOST`: the live sessions of another machine, as `provetop ls` shows this
//! one's, asked of `provetop remote-bridge ls` over SSH.

use std::time::Duration;

use super::wire::{self, Frame};
use super::Conn;
use crate::monitor::control::Status;

/// How long the remote side has to list its sessions once it said hello.
const LIST_TIMEOUT: Duration = Duration::from_secs(15);

/// `provetop ls HOST`.
pub fn main(host: &str, remote_provetop: Option<&str>) -> anyhow::Result<i32> {
    let conn = Conn::open(host, remote_provetop, &["ls"])?;
    let Conn {
        mut child,
        out,
        input,
        err,
    } = conn;
    drop(input);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut out = out;
        let _ = tx.send(wire::read(&mut out));
    });
    let got = rx.recv_timeout(LIST_TIMEOUT);
    let _ = child.kill();
    let _ = child.wait();
    let v = match got {
        Ok(Ok(Some(Frame::Ls(v)))) => v,
        Ok(Ok(Some(Frame::Error(e)))) => anyhow::bail!("{host}: {e}"),
        Ok(Ok(other)) => {
            let e = err.lock().unwrap_or_else(|e| e.into_inner());
            anyhow::bail!(
                "{host}: no list from the remote provetop ({})",
                super::ssh_said(&e).unwrap_or_else(|| format!("{other:?}"))
            )
        }
        Ok(Err(e)) => anyhow::bail!("{host}: {e}"),
        Err(_) => anyhow::bail!("{host}: no list within {} s", LIST_TIMEOUT.as_secs()),
    };
    let live: Vec<Status> = serde_json::from_value(v["live"].clone())
        .map_err(|e| anyhow::anyhow!("{host}: a bad list: {e}"))?;
    let silent: Vec<String> = serde_json::from_value(v["silent"].clone()).unwrap_or_default();
    let mut out = String::new();
    let shown = crate::text::inert(host);
    if live.is_empty() && silent.is_empty() {
        out.push_str(&format!("no live sessions on {shown}\n"));
    } else {
        out.push_str(&format!("live sessions on {shown}:\n"));
        let head = [
            "ID", "PID", "UPTIME", "PROOFS", "ALERTS", "SCREENS", "FILE", "COMMAND",
        ]
        .map(String::from)
        .to_vec();
        let rows: Vec<Vec<String>> = live.iter().map(crate::sessions::live_row).collect();
        out.push_str(&crate::sessions::table(&head, &rows));
        for s in &silent {
            out.push_str(&format!(
                "{} does not answer (on its way out?)\n",
                crate::text::inert(s)
            ));
        }
        out.push_str(&format!("attach: provetop attach {shown}:ID\n"));
    }
    use std::io::Write;
    let _ = std::io::stdout().write_all(out.as_bytes());
    Ok(0)
}
