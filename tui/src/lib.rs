//! provetop: `top` for zk-SNARK provers.
//!
//! Data flow: collection (`provetop-collect`: sampler, supervisor, alerts, recorder) produces
//! one stream of [`provetop_shared::Record`]s; the [`model`] reduces them into app state; the
//! view draws the state. Replay, classify and export read the same records from a file.

pub mod app;
pub mod areas;
pub mod attach;
pub mod baseline;
pub mod classify;
pub mod cli;
pub mod clidoc;
pub mod compare;
pub mod control_cli;
pub mod delta;
pub mod detach;
pub mod event_loop;
pub mod export;
pub mod fleet;
pub mod follow;
pub mod headless;
pub mod import;
pub mod keymap;
pub mod live;
pub mod logsession;
pub mod model;
pub mod monitor;
pub mod mouse;
pub mod recordings;
pub mod remote;
pub mod replay;
pub mod say;
pub mod scan;
pub mod series;
pub mod sessions;
pub mod settings;
pub mod store;
pub mod terminal;
pub mod text;
pub mod theme;
pub mod timeline;
pub mod ui;
pub mod view_options;
