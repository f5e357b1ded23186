//! The terminal: raw mode + alternate screen on the way in, restored on every way out —
//! normal return, error, panic (hook) and signals (the loop ends, the guard drops).

use std::io::{self, Stdout, Write};
use std::mem::ManuallyDrop;
use std::sync::atomic::{AtomicBool, Ordering};

use crossterm::cursor::Show;
use crossterm::terminal::{
    disable_raw_mode, enable_raw_mode, EnterAlternateScreen, LeaveAlternateScreen,
};
use crossterm::{cursor::Hide, execute};
use ratatui::backend::CrosstermBackend;
use ratatui::Terminal;

/// Whether the terminal is in raw mode / alternate screen now.
static ACTIVE: AtomicBool = AtomicBool::new(false);

/// Leave raw mode and the alternate screen (idempotent; safe from a panic hook).
pub fn restore() {
    if ACTIVE.swap(false, Ordering::SeqCst) {
        let _ = disable_raw_mode();
        let mut out = io::stdout();
        let _ = execute!(out, LeaveAlternateScreen, Show);
        let _ = out.flush();
    }
}

/// The terminal in TUI mode; dropping it restores the terminal.
pub struct Tui {
    /// The ratatui terminal. Never dropped: ratatui's `Drop` shows the cursor and, when that
    /// fails (the terminal hung up), reports it with `eprintln!`, which panics on the same
    /// dead terminal. [`restore`] shows the cursor instead, ignoring errors.
    pub terminal: ManuallyDrop<Terminal<CrosstermBackend<Stdout>>>,
}

impl Tui {
    /// Enter raw mode and the alternate screen. Fails with a clear message when stdout is
    /// not a terminal.
    pub fn enter() -> anyhow::Result<Tui> {
        use std::io::IsTerminal;
        if !io::stdout().is_terminal() || !io::stdin().is_terminal() {
            anyhow::bail!("standard input/output is not a terminal (use `provetop run --headless` without one)");
        }
        enable_raw_mode()
            .map_err(|e| anyhow::anyhow!("cannot put the terminal in raw mode: {e}"))?;
        ACTIVE.store(true, Ordering::SeqCst);
        let mut out = io::stdout();
        if let Err(e) = execute!(out, EnterAlternateScreen, Hide) {
            restore();
            anyhow::bail!("cannot switch to the alternate screen: {e}");
        }
        let terminal = match Terminal::new(CrosstermBackend::new(io::stdout())) {
            Ok(t) => t,
            Err(e) => {
                restore();
                anyhow::bail!("cannot set up the terminal: {e}");
            }
        };
        Ok(Tui {
            terminal: ManuallyDrop::new(terminal),
        })
    }
}

impl Drop for Tui {
    fn drop(&mut self) {
        // The terminal itself is left undropped on purpose (see the field); it holds only a
        // stdout handle and two screen buffers.
        restore();
    }
}

/// Install the panic hook: restore the terminal, run `cleanup` (the session's: kill the
/// supervised children, flush the recording), then print the panic as usual.
pub fn install_panic_hook(cleanup: impl Fn() + Send + Sync + 'static) {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        restore();
        cleanup();
        previous(info);
    }));
}
