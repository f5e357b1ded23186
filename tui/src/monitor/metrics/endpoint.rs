//! The HTTP endpoint that serves [`Metrics`]: `GET /metrics` on the session's tokio runtime
//! (hyper's HTTP/1 server; the request is never parsed by hand).
//!
//! The contract, for a fleet's scrapers and for whatever else reaches the port:
//! * `GET /metrics`: 200, OpenMetrics text when `Accept` asks for it
//!   ([`Format::from_accept`]), Prometheus text 0.0.4 otherwise. Any other path: 404; another
//!   method on `/metrics`: 405 (a scrape resets the interval peak, so `HEAD` is no probe).
//! * A connection is served only once its request head has arrived ([`admission`]: slow and
//!   idle connections wait apart, a bounded number of them, the longest waiting closed first),
//!   so a bounded number of slow or idle clients cannot crowd out a scraper.
//! * A malformed request is answered 400 by hyper, a request head over
//!   [`MAX_REQUEST_HEAD`] bytes 431, and one that does not arrive within
//!   [`HEAD_TIMEOUT`] is dropped; a request body is never read. One request per connection
//!   (`Connection: close`: an idle keep-alive connection would hold a serving slot), served
//!   within [`SERVE_MAX`].
//! * At most [`MAX_CONNECTIONS`] requests are served at once (more wait for a slot). So a
//!   flood of scrapers costs a bounded share of the runtime's two threads, and nothing of the
//!   endpoint's ever blocks the record pipeline beyond one scrape's encoding under the
//!   metrics' lock.
//! * Dropping the [`Endpoint`] stops it: the listener and every open connection close.
//!
//! [`admission`]: super::admission

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::header::{HeaderValue, ACCEPT, ALLOW, CONTENT_TYPE};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::sync::Semaphore;
use tokio::task::JoinSet;

use super::admission::{Admitted, Waiting};
use super::{Format, Metrics};

pub use super::admission::{HEAD_TIMEOUT, MAX_REQUEST_HEAD, MAX_WAITING, MAX_WAITING_PER_PEER};

/// Requests served at once.
pub const MAX_CONNECTIONS: usize = 8;
/// Longest time serving one request (a client that does not read its answer is dropped).
pub const SERVE_MAX: Duration = Duration::from_secs(10);

/// A running endpoint; dropping it stops it.
#[derive(Debug)]
pub struct Endpoint {
    addr: SocketAddr,
    metrics: Metrics,
    task: tokio::task::JoinHandle<()>,
}

impl Endpoint {
    /// Listen on `addr` and serve `metrics` there; must be called on a tokio runtime. A port
    /// that cannot be had is an error naming the address.
    pub fn start(addr: SocketAddr, metrics: Metrics) -> anyhow::Result<Endpoint> {
        let std = std::net::TcpListener::bind(addr)
            .with_context(|| format!("cannot serve metrics on {addr}"))?;
        std.set_nonblocking(true)
            .with_context(|| format!("cannot serve metrics on {addr}"))?;
        let local = std
            .local_addr()
            .with_context(|| format!("cannot serve metrics on {addr}"))?;
        let listener = tokio::net::TcpListener::from_std(std)
            .with_context(|| format!("cannot serve metrics on {addr}"))?;
        let task = tokio::spawn(serve(listener, metrics.clone()));
        Ok(Endpoint {
            addr: local,
            metrics,
            task,
        })
    }

    /// The address served (the port chosen when `:0` was asked).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The metrics served.
    pub fn metrics(&self) -> &Metrics {
        &self.metrics
    }
}

impl Drop for Endpoint {
    fn drop(&mut self) {
        // The accept loop owns the connections' JoinSet: aborting it closes them all.
        self.task.abort();
    }
}

async fn serve(listener: tokio::net::TcpListener, metrics: Metrics) {
    let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    let mut conns = JoinSet::new();
    let mut waiting = Waiting::default();
    loop {
        while conns.try_join_next().is_some() {}
        let (stream, peer) = match listener.accept().await {
            Ok(s) => s,
            Err(_) => {
                // Out of file descriptors, or a connection reset before it was taken: wait
                // a little rather than spin.
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        if waiting.make_room(peer.ip()) {
            metrics.rejected();
        }
        let headed = Arc::new(AtomicBool::new(false));
        let task = conns.spawn(connection(
            stream,
            metrics.clone(),
            slots.clone(),
            headed.clone(),
        ));
        waiting.push(peer.ip(), task, headed);
    }
}

/// One connection: wait for its head without a slot, then serve its one request in a slot.
async fn connection(
    stream: tokio::net::TcpStream,
    m: Metrics,
    slots: Arc<Semaphore>,
    headed: Arc<AtomicBool>,
) {
    let Some(admitted) = Admitted::wait(stream, &headed).await else {
        return;
    };
    // The semaphore is never closed, so this only ends with a slot.
    let Ok(_slot) = slots.acquire_owned().await else {
        return;
    };
    let svc = service_fn(move |req| {
        let m = m.clone();
        async move { Ok::<_, Infallible>(respond(&m, &req)) }
    });
    let conn = http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(HEAD_TIMEOUT)
        .max_buf_size(MAX_REQUEST_HEAD)
        .keep_alive(false)
        .serve_connection(TokioIo::new(admitted.io()), svc);
    // A connection that errs (malformed, reset, timed out) ends; nothing to tell.
    let _ = tokio::time::timeout(SERVE_MAX, conn).await;
}

/// The answer to one request.
pub fn respond(metrics: &Metrics, req: &Request<Incoming>) -> Response<Full<Bytes>> {
    answer(
        metrics,
        req.method(),
        req.uri().path(),
        req.headers().get(ACCEPT).and_then(|v| v.to_str().ok()),
    )
}

/// The answer to `method path` with `accept` (apart from hyper's types, for the tests).
pub fn answer(
    metrics: &Metrics,
    method: &Method,
    path: &str,
    accept: Option<&str>,
) -> Response<Full<Bytes>> {
    if path != "/metrics" {
        return plain(
            StatusCode::NOT_FOUND,
            "not found: provetop serves /metrics\n",
        );
    }
    if method != Method::GET {
        let mut r = plain(
            StatusCode::METHOD_NOT_ALLOWED,
            "method not allowed: GET /metrics\n",
        );
        r.headers_mut()
            .insert(ALLOW, HeaderValue::from_static("GET"));
        return r;
    }
    let format = Format::from_accept(accept);
    let mut r = Response::new(Full::new(Bytes::from(metrics.scrape(format))));
    r.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static(format.content_type()),
    );
    r
}

fn plain(status: StatusCode, text: &'static str) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(Bytes::from_static(text.as_bytes())));
    *r.status_mut() = status;
    r.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    r
}
