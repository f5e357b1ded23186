//! Supervising and watching real processes: faults of the child and of provetop, hostile children, process trees, the bundled prover, signals, watch (of a pid, a cgroup, a unit), headless, hooks, foreign provers and their log lines.
//!
//! One test binary for these files (each binary is a link of the whole workspace); the
//! tests that change process-wide state (`usage`'s CPU readings, `alerts`' environment,
//! `recorder_disk_full`'s file-size limit) keep binaries of their own.

mod bundled_prover;
mod faults_child;
mod faults_provetop;
mod foreign;
mod foreign_logs;
mod headless;
mod hooks;
mod hostile_child;
mod log_phases;
mod loglines;
mod memory_hotplug;
mod nvtx;
mod process_tree;
mod signals;
mod watch_peak;
mod watch_service;
