//! provetop-shared's integration tests: the alert engine, the forecast and time to OOM, the parsers under proptest, the protocol's golden files, the H200-scale session.
//!
//! One test binary for the files named here (each binary is a link of the whole workspace).

mod alert_engine;
mod compact_assets;
mod forecast;
mod h200_scale;
mod parsers_prop;
mod protocol_golden;
mod time_to_oom;
