//! provetop as a service: server mode (attach, detach, ls, the control socket) and the metrics endpoint scraped by a real Prometheus.
//!
//! One test binary for these files (each binary is a link of the whole workspace); the
//! tests that change process-wide state (`usage`'s CPU readings, `alerts`' environment,
//! `recorder_disk_full`'s file-size limit) keep binaries of their own.

mod metrics;
mod metrics_crowd;
mod server;
mod cli_docs;
mod units;
