//! Sessions and files: classify, export, compare, the store, the readers, durability, the recorder, the bundled assets, file security, settings, and the code's shape.
//!
//! One test binary for these files (each binary is a link of the whole workspace); the
//! tests that change process-wide state (`usage`'s CPU readings, `alerts`' environment,
//! `recorder_disk_full`'s file-size limit) keep binaries of their own.

mod assets;
mod classify;
mod compare;
mod drawn;
mod durability;
mod export;
mod files;
mod flight_readers;
mod log_session;
mod readers;
mod recorder;
mod replay_index;
mod rotation;
mod settings;
mod shape;
mod store;
