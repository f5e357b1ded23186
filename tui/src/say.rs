//! Messages on standard error that never panic.
//!
//! `eprintln!` panics when the write fails, and it does fail exactly when provetop must stay
//! calm: after a hangup (the terminal is gone: EIO) or with stderr piped into a program that
//! has exited (EPIPE). A panic there skipped the child's stop and the end of the recording,
//! and a second one inside the panic hook aborted the process.

use std::io::Write;

/// Write one line to standard error, ignoring errors.
pub fn say(args: std::fmt::Arguments<'_>) {
    let mut e = std::io::stderr().lock();
    let _ = e.write_fmt(args);
    let _ = e.write_all(b"\n");
    let _ = e.flush();
}

/// `say!("provetop: {x}")`: [`say`] with `format!` syntax.
#[macro_export]
macro_rules! say {
    ($($arg:tt)*) => {
        $crate::say::say(format_args!($($arg)*))
    };
}
