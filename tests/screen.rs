//! The screen, drawn into ratatui's TestBackend and in tmux: snapshots, the live, replay and compare screens, the event loop, hostile text, the child's state, huge times.
//!
//! One test binary for these files (each binary is a link of the whole workspace); the
//! tests that change process-wide state (`usage`'s CPU readings, `alerts`' environment,
//! `recorder_disk_full`'s file-size limit) keep binaries of their own.

mod child_state;
mod compare_tui;
mod drawn;
mod event_loop;
mod gpu_sessions;
mod hostile_text;
mod huge_times;
mod live_tui;
mod log_screen;
mod mouse_tui;
mod replay_tui;
mod themes;
mod ui_snapshots;
