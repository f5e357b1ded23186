//! Admission of the endpoint's connections: a connection costs a serving slot only once its
//! request head has arrived whole.
//!
//! The contract:
//! * Every connection is accepted. Until its request head (up to its empty line, or
//!   [`MAX_REQUEST_HEAD`] bytes) has arrived it only waits: a socket and a small buffer, no
//!   serving slot, no runtime time but its reads. It has [`HEAD_TIMEOUT`] to send the head;
//!   then it is closed.
//! * At most [`MAX_WAITING_PER_PEER`] connections of one address and [`MAX_WAITING`] in all
//!   wait at once. One more closes the one of that address (when the address is at its share),
//!   else of anyone, that has waited longest, and counts it as turned away. So a new connection
//!   always gets its chance, and a scraper, whose head arrives at once, is not crowded out by
//!   any number of slow or idle connections that are not opened faster than it sends a head.
//! * The head is only looked at for its end: hyper parses it, replayed in front of the rest of
//!   the stream ([`Admitted::io`]).

use std::collections::VecDeque;
use std::io::Cursor;
use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite};
use tokio::net::TcpStream;
use tokio::task::AbortHandle;

/// Longest request head (request line and headers) read, bytes (hyper's least buffer).
pub const MAX_REQUEST_HEAD: usize = 8192;
/// Time a client has to send its whole request head.
pub const HEAD_TIMEOUT: Duration = Duration::from_secs(2);
/// Connections waiting for their head at once, in all.
pub const MAX_WAITING: usize = 256;
/// Connections of one address waiting for their head at once.
pub const MAX_WAITING_PER_PEER: usize = 32;

/// The connections still waiting for their heads, oldest first.
#[derive(Debug, Default)]
pub(super) struct Waiting {
    queue: VecDeque<Entry>,
}

#[derive(Debug)]
struct Entry {
    peer: IpAddr,
    task: AbortHandle,
    headed: Arc<AtomicBool>,
}

impl Waiting {
    /// Make room for one more connection of `peer`: closes (aborts the task of) the longest
    /// waiting one of the same address, or of anyone, where the limits ask it. Whether one
    /// was closed.
    pub(super) fn make_room(&mut self, peer: IpAddr) -> bool {
        self.queue
            .retain(|e| !e.headed.load(Ordering::Acquire) && !e.task.is_finished());
        let same = self.queue.iter().filter(|e| e.peer == peer).count();
        let victim = if same >= MAX_WAITING_PER_PEER {
            self.queue.iter().position(|e| e.peer == peer)
        } else if self.queue.len() >= MAX_WAITING {
            Some(0)
        } else {
            None
        };
        match victim.and_then(|i| self.queue.remove(i)) {
            Some(e) => {
                e.task.abort();
                true
            }
            None => false,
        }
    }

    /// `task` waits for the head of a connection of `peer`; it sets `headed` once it has it.
    pub(super) fn push(&mut self, peer: IpAddr, task: AbortHandle, headed: Arc<AtomicBool>) {
        self.queue.push_back(Entry { peer, task, headed });
    }
}

/// A connection whose request head has arrived (or filled the head buffer).
pub(super) struct Admitted {
    head: Vec<u8>,
    stream: TcpStream,
}

impl Admitted {
    /// Wait (at most [`HEAD_TIMEOUT`]) for the request head on `stream`; `None` when the
    /// client closed or was too slow. `headed` is set as soon as it is here.
    pub(super) async fn wait(mut stream: TcpStream, headed: &AtomicBool) -> Option<Admitted> {
        let head = tokio::time::timeout(HEAD_TIMEOUT, read_head(&mut stream))
            .await
            .ok()??;
        headed.store(true, Ordering::Release);
        Some(Admitted { head, stream })
    }

    /// The connection for hyper: what was read of it, then the rest.
    pub(super) fn io(self) -> impl AsyncRead + AsyncWrite + Unpin + Send {
        let (r, w) = self.stream.into_split();
        tokio::io::join(Cursor::new(self.head).chain(r), w)
    }
}

/// Read up to the empty line that ends a request head, or [`MAX_REQUEST_HEAD`] bytes (hyper
/// then answers 431); `None` when the client closed or the read failed first.
async fn read_head(stream: &mut TcpStream) -> Option<Vec<u8>> {
    let mut head = Vec::with_capacity(1024);
    let mut buf = [0u8; 1024];
    while !has_end(&head) && head.len() < MAX_REQUEST_HEAD {
        let room = (MAX_REQUEST_HEAD - head.len()).min(buf.len());
        match stream.read(&mut buf[..room]).await {
            Ok(0) | Err(_) => return None,
            Ok(n) => head.extend_from_slice(&buf[..n]),
        }
    }
    Some(head)
}

/// Whether `bytes` hold an empty line after a request line (bare LF line ends count, as
/// hyper takes them).
fn has_end(bytes: &[u8]) -> bool {
    bytes.windows(2).any(|w| w == b"\n\n") || bytes.windows(3).any(|w| w == b"\n\r\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_head_ends_at_its_empty_line_with_either_line_end() {
        assert!(has_end(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"));
        assert!(has_end(b"GET /metrics HTTP/1.0\n\n"));
        assert!(!has_end(b"GET /metrics HTTP/1.1\r\nHost: x\r\n"));
        assert!(!has_end(b"GET /metrics HTTP/1.1\r\nHo"));
    }
}
