//! The HTTP endpoint that serves [`Metrics`]: `GET /metrics` on the session's tokio runtime
//! (hyper's HTTP/1 server; the request is never parsed by hand).
//!
//! The contract, for a fleet's scrapers and for whatever else reaches the port:
//! * `GET /metrics`: 200, OpenMetrics text when `Accept` asks for it
//!   ([`Format::from_accept`]), Prometheus text 0.0.4 otherwise. Any other path: 404; another
//!   method on `/metrics`: 405 (a scrape resets the interval peak, so `HEAD` is no probe).
//! * A malformed request is answered 400 by hyper, a request head over
//!   [`MAX_REQUEST_HEAD`] bytes 431, and one that does not arrive within
//!   [`HEAD_TIMEOUT`] is dropped; a request body is never read. No connection lives longer
//!   than [`CONNECTION_MAX`].
//! * At most [`MAX_CONNECTIONS`] connections are served at once; one more is closed at
//!   once and counted (`provetop_metrics_rejected_connections_total`). So a flood of
//!   scrapers costs a bounded share of the runtime's two threads, and nothing of the
//!   endpoint's ever blocks the record pipeline beyond one scrape's encoding under the
//!   metrics' lock.
//! * Dropping the [`Endpoint`] stops it: the listener and every open connection close.

use std::convert::Infallible;
use std::net::SocketAddr;
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

use super::{Format, Metrics};

/// Connections served at once.
pub const MAX_CONNECTIONS: usize = 8;
/// Longest request head (request line and headers) read, bytes (hyper's least buffer).
pub const MAX_REQUEST_HEAD: usize = 8192;
/// Time a client has to send its request head.
pub const HEAD_TIMEOUT: Duration = Duration::from_secs(5);
/// Longest life of one connection (a keep-alive scraper reconnects).
pub const CONNECTION_MAX: Duration = Duration::from_secs(60);

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
    let permits = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    let mut conns = JoinSet::new();
    loop {
        while conns.try_join_next().is_some() {}
        let stream = match listener.accept().await {
            Ok((s, _)) => s,
            Err(_) => {
                // Out of file descriptors, or a connection reset before it was taken: wait
                // a little rather than spin.
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let Ok(permit) = permits.clone().try_acquire_owned() else {
            metrics.rejected();
            drop(stream);
            continue;
        };
        let m = metrics.clone();
        conns.spawn(async move {
            let _permit = permit;
            let svc = service_fn(move |req| {
                let m = m.clone();
                async move { Ok::<_, Infallible>(respond(&m, &req)) }
            });
            let conn = http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(HEAD_TIMEOUT)
                .max_buf_size(MAX_REQUEST_HEAD)
                .serve_connection(TokioIo::new(stream), svc);
            // A connection that errs (malformed, reset, timed out) ends; nothing to tell.
            let _ = tokio::time::timeout(CONNECTION_MAX, conn).await;
        });
    }
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
