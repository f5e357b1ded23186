//! provetop as a service: server mode (attach, detach, ls, status, mark, the control socket), the metrics endpoint scraped by a real Prometheus, the shipped systemd units, completions and man pages.
//!
//! One test binary for these files (each binary is a link of the whole workspace); the
//! tests that change process-wide state (`usage`'s CPU readings, `alerts`' environment,
//! `recorder_disk_full`'s file-size limit) keep binaries of their own.

mod cli_docs;
mod fleet;
mod metrics;
mod metrics_crowd;
mod prometheus_proc;
mod remote;
mod server;
mod units;
