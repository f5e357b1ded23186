//! `provetop remote-bridge` (hidden): the remote side of `attach HOST:SESSION` and `ls HOST`,
//! started by the local provetop through `ssh HOST provetop remote-bridge …`. It bridges this
//! machine's sessions to the SSH channel's stdin and stdout ([`super::wire`]): `ls` answers
//! once; `attach` streams the session file from `--offset` as it grows and forwards control
//! requests to the session's control socket (read-only unless `--control`), until the
//! session ends or stdin does (the connection dropped). It never stops a session by itself.

use std::io::{BufRead, Read, Seek};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::wire::{self, Frame};
use crate::attach::{resolve, REPLY_TIMEOUT};
use crate::monitor::control::{self, Client, Probe, Request};

pub use crate::cli::{BridgeArgs, BridgeWhat};

/// How often the file is looked at for new bytes.
const POLL: Duration = Duration::from_millis(100);
/// How often the supervisor is checked for life.
const LIVENESS: Duration = Duration::from_secs(1);

/// `provetop remote-bridge`: its exit status.
pub fn main(args: &BridgeArgs) -> anyhow::Result<i32> {
    let out = Arc::new(Mutex::new(std::io::stdout()));
    let put = |f: &Frame| -> std::io::Result<()> {
        let mut o = out.lock().unwrap_or_else(|e| e.into_inner());
        wire::write(&mut *o, f)
    };
    {
        let mut o = out.lock().unwrap_or_else(|e| e.into_inner());
        wire::write_hello(&mut *o)?;
    }
    let dir = match control::socket_dir() {
        Ok(d) => d,
        Err(e) => {
            put(&Frame::Error(format!("{e:#}")))?;
            return Ok(1);
        }
    };
    match &args.what {
        BridgeWhat::Ls => {
            put(&Frame::Ls(ls(&dir)))?;
            Ok(0)
        }
        BridgeWhat::Attach {
            session,
            control,
            offset,
        } => match attach(&dir, session, *control, *offset, &out) {
            Ok(code) => Ok(code),
            Err(e) => {
                // The connection may be gone already: nothing else to tell.
                let _ = put(&Frame::Error(format!("{e:#}")));
                Ok(1)
            }
        },
    }
}

/// The live sessions' statuses (those that answer) and the ids of those that do not.
fn ls(dir: &Path) -> serde_json::Value {
    let (live, _) = crate::sessions::live_sessions(dir);
    let mut statuses = Vec::new();
    let mut silent = Vec::new();
    for l in &live {
        match Client::connect(&l.socket, REPLY_TIMEOUT)
            .map_err(anyhow::Error::from)
            .and_then(|mut c| c.status())
        {
            Ok(s) => statuses.push(s),
            Err(_) => silent.push(l.id.clone()),
        }
    }
    serde_json::json!({"live": statuses, "silent": silent})
}

/// A connection to the session's socket, read-only unless `read_only` is false.
fn connect(socket: &Path, id: &str, read_only: bool) -> anyhow::Result<Client> {
    let mut c = Client::connect(socket, REPLY_TIMEOUT)
        .map_err(|e| anyhow::anyhow!("session {id}: cannot connect: {e}"))?;
    // The bridge carries a screen (`attach HOST:SESSION`): noted like a local one.
    c.ask(&Request::Hello {
        read_only,
        screen: true,
    })?;
    Ok(c)
}

fn attach(
    dir: &Path,
    session: &str,
    control_ok: bool,
    offset: u64,
    out: &Arc<Mutex<std::io::Stdout>>,
) -> anyhow::Result<i32> {
    let put = |f: &Frame| -> std::io::Result<()> {
        let mut o = out.lock().unwrap_or_else(|e| e.into_inner());
        wire::write(&mut *o, f)
    };
    let (id, socket) = resolve(dir, Some(session), false)?;
    let mut client = connect(&socket, &id, !control_ok)?;
    let status = client.status()?;
    let Some(path) = status.session.clone() else {
        anyhow::bail!("session {id} does not record (--no-record): there is nothing to stream");
    };
    let mut file = provetop_shared::session::open_regular(&path)
        .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    let len = file.metadata()?.len();
    if offset > len {
        anyhow::bail!(
            "the local copy holds {offset} bytes, the session file {len}: not the same session"
        );
    }
    file.seek(std::io::SeekFrom::Start(offset))?;
    put(&Frame::Status(serde_json::to_value(&status)?))?;
    // Controls: each request line answered in order on its own connection to the socket.
    let requests = std::thread::spawn({
        let out = Arc::clone(out);
        let (socket, id) = (socket.clone(), id.clone());
        move || {
            let stdin = std::io::stdin();
            let mut lines = stdin.lock();
            loop {
                let mut l = String::new();
                match lines
                    .by_ref()
                    .take(control::MAX_REQUEST as u64 + 1)
                    .read_line(&mut l)
                {
                    Ok(0) | Err(_) => return,
                    Ok(_) => {}
                }
                let reply = match serde_json::from_str::<Request>(l.trim()) {
                    Err(e) => {
                        serde_json::json!({"ok": false, "error": format!("bad request: {e}")})
                    }
                    Ok(req) => match client.ask(&req) {
                        Ok(v) => v,
                        Err(e) => {
                            // Once more on a new connection (the supervisor drops idle ones).
                            match connect(&socket, &id, !control_ok).and_then(|mut c| {
                                let v = c.ask(&req);
                                client = c;
                                v
                            }) {
                                Ok(v) => v,
                                Err(_) => {
                                    serde_json::json!({"ok": false, "error": format!("{e:#}")})
                                }
                            }
                        }
                    },
                };
                let mut o = out.lock().unwrap_or_else(|e| e.into_inner());
                if wire::write(&mut *o, &Frame::Reply(reply)).is_err() {
                    return;
                }
            }
        }
    });
    let mut buf = vec![0u8; wire::MAX_DATA];
    let mut checked = Instant::now();
    loop {
        if requests.is_finished() {
            // stdin ended: the local side left or the connection dropped.
            return Ok(0);
        }
        let n = file.read(&mut buf)?;
        if n > 0 {
            if put(&Frame::Data(buf[..n].to_vec())).is_err() {
                return Ok(0);
            }
            continue;
        }
        if checked.elapsed() >= LIVENESS {
            checked = Instant::now();
            if !matches!(control::probe(dir, &id), Probe::Live(_)) {
                // Its last bytes first.
                loop {
                    let n = file.read(&mut buf)?;
                    if n == 0 {
                        break;
                    }
                    put(&Frame::Data(buf[..n].to_vec()))?;
                }
                put(&Frame::Ended(serde_json::json!({"id": id})))?;
                return Ok(0);
            }
        }
        std::thread::sleep(POLL);
    }
}
