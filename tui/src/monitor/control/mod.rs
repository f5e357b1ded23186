//! The control socket of a running session: how `provetop attach`, `provetop ls` and scripts
//! reach a supervisor that has no screen.
//!
//! Contract:
//! * One Unix socket per session, `<dir>/<key>.sock`, where `<dir>` is
//!   `$XDG_RUNTIME_DIR/provetop`, else `$XDG_STATE_HOME/provetop/sockets` (created 0700; an
//!   existing one that is not this user's or that others may write to is refused, and
//!   `$XDG_RUNTIME_DIR` itself is never changed), and `<key>` is a hash of the session's id
//!   ([`key`]: the session file's stem and the supervisor's pid), short whatever the name.
//!   The socket is 0600, and every connection's peer uid (`SO_PEERCRED`) must be the
//!   supervisor's own: anyone else gets one error line and is closed ([`peer_allowed`]).
//! * Beside it, `<key>.lock`, flocked for the supervisor's life and holding the session's id
//!   and file ([`Described`]); opened with `O_NOFOLLOW`, never through a link. A socket
//!   whose lock nobody holds and that accepts no connection is stale (its supervisor died):
//!   [`probe`] says so and removes it; a live supervisor's socket (lock held, or its lock
//!   file deleted but the socket accepting) never is. A supervisor that cannot take the
//!   lock refuses to start its socket, so two never share one.
//! * Newline-delimited JSON: one request per line (`{"cmd":"status"}`, see [`Request`]),
//!   one reply per request, in order: `{"ok":true,...}` or `{"ok":false,"error":"..."}`.
//!   A line that is not JSON, not a known request, or longer than [`MAX_REQUEST`] bytes gets
//!   an error reply and the connection goes on.
//! * Nothing a client does stalls the supervisor: requests wait in one bounded inbox that the
//!   session drains every tick ([`ControlServer::take`]), at most [`CLIENT_IN_FLIGHT`] of
//!   each client at once (so one client cannot crowd out the others); each client's replies
//!   go through
//!   its own queue of [`CLIENT_QUEUE`] lines, written by its own task. A client whose queue
//!   is full (it stopped reading) is dropped, and the session records a note saying so; a
//!   screen that was dropped reconnects, and its data never came from here anyway (it reads
//!   the session file).
//! * `{"cmd":"hello","read_only":true}` makes a connection read-only: controls, stop,
//!   restart and marks are refused on it from then on.
//!
//! The parts: [`protocol`] (what a line says), [`locate`] (where a session's socket is and
//! whether its supervisor lives), [`server`] (the supervisor's side: the socket, its lock,
//! the inbox), [`connection`] (one client's connection: the uid check, reading requests,
//! its reply queue), [`answer`] (the session's answers) and [`client`] (the blocking client).

mod answer;
mod client;
mod connection;
mod locate;
mod protocol;
mod server;

pub use answer::answer;
pub use client::Client;
pub use connection::{peer_allowed, Incoming};
pub use locate::{
    check_dir, described, key, probe, probe_key, session_id, socket_dir, socket_path, Described,
    Probe,
};
pub use protocol::{Request, Status};
pub use server::{for_session, ControlServer};

/// Longest request line accepted, bytes (the newline not counted).
pub const MAX_REQUEST: usize = 64 * 1024;
/// Replies waiting to be written to one client; past that the client is dropped.
pub const CLIENT_QUEUE: usize = 64;
/// Requests of all clients waiting for the session's next tick.
pub const INBOX: usize = 256;
/// Requests of one client waiting at once; its next waits for one to be answered (so a
/// flooding client cannot fill the inbox for the others).
pub const CLIENT_IN_FLIGHT: usize = 8;

#[cfg(test)]
mod tests;
