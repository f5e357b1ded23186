//! One client's connection, on the supervisor's side: the peer-uid check, reading request
//! lines (bounded by [`MAX_REQUEST`], at most [`CLIENT_IN_FLIGHT`] waiting at once), answering
//! bad lines, `hello` and read-only refusals itself, and writing replies through the client's
//! own queue of [`CLIENT_QUEUE`] lines; a client that stops reading is dropped with a note.
//! Nothing here waits on the session: requests go to its inbox as [`Incoming`].

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::{mpsc, Notify};

use super::{Request, CLIENT_IN_FLIGHT, CLIENT_QUEUE, MAX_REQUEST};

/// The `SO_PEERCRED` check: only the session's owner may connect.
pub fn peer_allowed(peer_uid: u32, own_uid: u32) -> Result<(), String> {
    if peer_uid == own_uid {
        Ok(())
    } else {
        Err(format!(
            "refused: this session belongs to uid {own_uid}, the connection is from uid {peer_uid}"
        ))
    }
}

/// A request from a client, waiting for the session to answer it.
pub struct Incoming {
    pub request: Request,
    /// Which connection (for notes).
    pub client: u64,
    to: ClientTx,
    /// One of the client's [`CLIENT_IN_FLIGHT`], given back when this is answered.
    _slot: tokio::sync::OwnedSemaphorePermit,
}

impl Incoming {
    /// Answer with `{"ok":true, ...fields}`.
    pub fn ok(&self, fields: Value) {
        let mut v = json!({"ok": true});
        if let (Some(o), Value::Object(f)) = (v.as_object_mut(), fields) {
            o.extend(f);
        }
        self.to.send(&v);
    }

    /// Answer with `{"ok":false,"error":...}`.
    pub fn err(&self, error: impl std::fmt::Display) {
        self.to
            .send(&json!({"ok": false, "error": error.to_string()}));
    }
}

/// One client's reply queue, and what ends the client.
#[derive(Clone)]
struct ClientTx {
    id: u64,
    queue: mpsc::Sender<String>,
    kill: Arc<Notify>,
    notes: Arc<Mutex<Vec<String>>>,
}

impl ClientTx {
    /// A note for the session to record (at its next tick).
    fn note(&self, text: String) {
        self.notes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(text);
    }

    fn send(&self, v: &Value) {
        let mut line = v.to_string();
        line.push('\n');
        match self.queue.try_send(line) {
            Ok(()) => {}
            Err(mpsc::error::TrySendError::Full(_)) => {
                // It stopped reading: drop it rather than wait for it or buffer without end.
                self.kill.notify_one();
                let mut notes = self.notes.lock().unwrap_or_else(|e| e.into_inner());
                notes.push(format!(
                    "control client {} dropped: it stopped reading its replies ({CLIENT_QUEUE} waiting)",
                    self.id
                ));
            }
            Err(mpsc::error::TrySendError::Closed(_)) => {}
        }
    }
}

/// Accept connections for as long as the server lives: the owner's are served, anyone else's
/// get one error line.
pub(super) async fn accept_loop(
    listener: UnixListener,
    inbox: mpsc::Sender<Incoming>,
    notes: Arc<Mutex<Vec<String>>>,
    clients: Arc<AtomicUsize>,
) {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    let own = nix::unistd::geteuid().as_raw();
    loop {
        let Ok((mut stream, _)) = listener.accept().await else {
            // EMFILE and the like: do not spin.
            tokio::time::sleep(Duration::from_millis(100)).await;
            continue;
        };
        let allowed = match stream.peer_cred() {
            Ok(c) => peer_allowed(c.uid(), own),
            Err(e) => Err(format!("refused: cannot read the peer's credentials: {e}")),
        };
        if let Err(e) = allowed {
            tokio::spawn(async move {
                let line = format!("{}\n", json!({"ok": false, "error": e}));
                let _ =
                    tokio::time::timeout(Duration::from_secs(1), stream.write_all(line.as_bytes()))
                        .await;
            });
            continue;
        }
        let id = NEXT.fetch_add(1, Ordering::Relaxed);
        let (inbox, notes, clients) = (inbox.clone(), notes.clone(), clients.clone());
        tokio::spawn(async move {
            clients.fetch_add(1, Ordering::Relaxed);
            serve_client(stream, id, inbox, notes).await;
            clients.fetch_sub(1, Ordering::Relaxed);
        });
    }
}

/// One connection: read request lines, hand them to the session, write the replies from the
/// client's queue in a task of its own.
async fn serve_client(
    stream: UnixStream,
    id: u64,
    inbox: mpsc::Sender<Incoming>,
    notes: Arc<Mutex<Vec<String>>>,
) {
    let (mut rd, mut wr) = stream.into_split();
    let (queue, mut replies) = mpsc::channel::<String>(CLIENT_QUEUE);
    let kill = Arc::new(Notify::new());
    let to = ClientTx {
        id,
        queue,
        kill: kill.clone(),
        notes,
    };
    let writer = tokio::spawn(async move {
        while let Some(line) = replies.recv().await {
            if wr.write_all(line.as_bytes()).await.is_err() {
                break;
            }
        }
    });
    let slots = Arc::new(tokio::sync::Semaphore::new(CLIENT_IN_FLIGHT));
    // Whether it said it is a screen (its detach is noted when it goes).
    let mut screen = false;
    let reader = async {
        let mut read_only = false;
        let mut buf = Vec::with_capacity(1024);
        let mut chunk = vec![0u8; 8192];
        // Bytes of an over-long line being skipped up to its newline.
        let mut skipping = false;
        loop {
            let n = match rd.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => n,
            };
            let mut rest = &chunk[..n];
            while !rest.is_empty() {
                let nl = rest.iter().position(|&b| b == b'\n');
                let (part, more) = match nl {
                    Some(i) => (&rest[..i], Some(&rest[i + 1..])),
                    None => (rest, None),
                };
                if !skipping {
                    buf.extend_from_slice(part);
                    if buf.len() > MAX_REQUEST {
                        to.send(&json!({"ok": false, "error": format!(
                            "request longer than {MAX_REQUEST} bytes: ignored up to its end of line")}));
                        buf.clear();
                        skipping = true;
                    }
                }
                match more {
                    Some(m) => {
                        if !skipping {
                            let line = std::mem::take(&mut buf);
                            let said = parse_line(&line, &mut read_only, &to);
                            if let Some(note) = screen_note(&said, &mut screen, read_only, id) {
                                to.note(note);
                            }
                            if let Some(request) = said.request {
                                let Ok(slot) = slots.clone().acquire_owned().await else {
                                    return;
                                };
                                let incoming = Incoming {
                                    request,
                                    client: id,
                                    to: to.clone(),
                                    _slot: slot,
                                };
                                // Waits only this client's reader, never the session.
                                if inbox.send(incoming).await.is_err() {
                                    return;
                                }
                            }
                        }
                        skipping = false;
                        rest = m;
                    }
                    None => rest = &[],
                }
            }
        }
    };
    tokio::select! {
        _ = reader => {}
        _ = kill.notified() => {}
    }
    // Dropped (it stopped reading) or gone: its pending replies go with it.
    writer.abort();
    if screen {
        to.note(format!("screen detached (client {id})"));
    }
}

/// What a line said: a request for the session, or a `hello` the connection answered.
struct Said {
    request: Option<Request>,
    hello_screen: bool,
}

/// The note for a screen's first `hello`; marks the connection as a screen.
fn screen_note(said: &Said, screen: &mut bool, read_only: bool, id: u64) -> Option<String> {
    if !said.hello_screen || *screen {
        return None;
    }
    *screen = true;
    Some(format!(
        "screen attached (client {id}{})",
        if read_only { ", read-only" } else { "" }
    ))
}

/// A request line for the session, or no request when the connection answered it itself
/// (bad input, hello, a read-only refusal).
fn parse_line(line: &[u8], read_only: &mut bool, to: &ClientTx) -> Said {
    let none = Said {
        request: None,
        hello_screen: false,
    };
    let text = String::from_utf8_lossy(line);
    let text = text.trim();
    if text.is_empty() {
        return none;
    }
    let request: Request = match serde_json::from_str(text) {
        Ok(r) => r,
        Err(e) => {
            to.send(&json!({"ok": false, "error": format!("not a request: {e}")}));
            return none;
        }
    };
    if let Request::Hello {
        read_only: ro,
        screen,
    } = request
    {
        // Read-only is one way: a connection cannot make itself writable again.
        *read_only |= ro;
        to.send(&json!({"ok": true, "read_only": *read_only, "pid": std::process::id()}));
        return Said {
            request: None,
            hello_screen: screen,
        };
    }
    if *read_only && request.changes_something() {
        to.send(&json!({"ok": false, "error": "read-only connection: not sent"}));
        return none;
    }
    Said {
        request: Some(request),
        hello_screen: false,
    }
}
