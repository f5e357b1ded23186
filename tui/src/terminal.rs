//! The terminal: raw mode + alternate screen (+ mouse capture, unless turned off) on the way
//! in, restored on every way out — normal return, error, panic (hook), the signals that stop
//! provetop (the loop ends, the guard drops: [`crate::monitor::signals::stop_signal`]) and
//! fatal ones (a handler). Mouse capture left on would turn every later click in the shell
//! into escape sequences, so it is turned off on each of those ways as well.

use std::io::{self, Stdout, Write};
use std::mem::ManuallyDrop;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

use crossterm::cursor::Show;
use crossterm::event::{DisableMouseCapture, EnableMouseCapture};
use crossterm::terminal::{
    disable_raw_mode, enable_raw_mode, EnterAlternateScreen, LeaveAlternateScreen,
};
use crossterm::{cursor::Hide, execute};
use ratatui::backend::CrosstermBackend;
use ratatui::Terminal;

use crate::app::Screen;

/// The error of a screen opened without a terminal: what does that command's work without
/// one (replay and attach have no headless form; `classify` and `export` read a session).
pub fn no_terminal(screen: &Screen) -> String {
    let instead = match screen {
        Screen::Run => "`provetop run --headless` supervises without one",
        Screen::Watch { .. } => "`provetop watch --headless` watches without one",
        Screen::Replay(_) | Screen::Follow => {
            "replay needs one; `provetop classify FILE` or `provetop export FILE` reads a \
             session without one"
        }
        Screen::Attach { .. } => {
            "attach needs one; `provetop ls` lists the live sessions without one"
        }
    };
    format!("standard input/output is not a terminal: {instead}")
}

/// Whether the terminal is in raw mode / alternate screen now.
static ACTIVE: AtomicBool = AtomicBool::new(false);

/// Whether mouse capture is on now.
static MOUSE: AtomicBool = AtomicBool::new(false);

/// Leave mouse capture, raw mode and the alternate screen (idempotent; safe from a panic
/// hook).
pub fn restore() {
    if MOUSE.swap(false, Ordering::SeqCst) {
        let _ = execute!(io::stdout(), DisableMouseCapture);
    }
    if ACTIVE.swap(false, Ordering::SeqCst) {
        let _ = disable_raw_mode();
        let mut out = io::stdout();
        let _ = execute!(out, LeaveAlternateScreen, Show);
        let _ = out.flush();
    }
}

/// What crossterm's `DisableMouseCapture` writes, for the fatal-signal handler (which cannot
/// call crossterm): every mouse mode it turns on, off.
const MOUSE_OFF: &[u8] = b"\x1b[?1006l\x1b[?1015l\x1b[?1003l\x1b[?1002l\x1b[?1000l";

/// The terminal's settings before raw mode, for [`on_fatal_signal`] (which cannot call into
/// crossterm: only async-signal-safe calls there).
static SAVED_TERMIOS: OnceLock<nix::libc::termios> = OnceLock::new();

/// Faults that end provetop whatever it does: abort (an allocation that failed, a panic
/// while panicking), an illegal instruction, a floating-point trap, a breakpoint, a bad
/// system call. SIGSEGV and SIGBUS stay with the Rust runtime (its stack-overflow report).
const FATAL_SIGNALS: [nix::sys::signal::Signal; 5] = {
    use nix::sys::signal::Signal::*;
    [SIGABRT, SIGILL, SIGFPE, SIGTRAP, SIGSYS]
};

/// Restore the terminal on a fatal signal, then let the signal end the process as it would
/// have: installed with `SA_RESETHAND`, so the default action is back; the signal raised
/// again stays pending until the handler returns, then ends the process (the core dump and
/// the exit status are the signal's).
extern "C" fn on_fatal_signal(sig: nix::libc::c_int) {
    if ACTIVE.swap(false, Ordering::SeqCst) {
        const LEAVE: &[u8] = b"\x1b[?1049l\x1b[?25h";
        let mouse = MOUSE.swap(false, Ordering::SeqCst);
        // SAFETY: tcsetattr, write and raise are async-signal-safe; the termios was saved
        // before the handler was installed and is never written again; LEAVE and MOUSE_OFF
        // are valid buffers of their lengths.
        unsafe {
            if let Some(t) = SAVED_TERMIOS.get() {
                nix::libc::tcsetattr(0, nix::libc::TCSANOW, t);
            }
            if mouse {
                nix::libc::write(1, MOUSE_OFF.as_ptr().cast(), MOUSE_OFF.len());
            }
            nix::libc::write(1, LEAVE.as_ptr().cast(), LEAVE.len());
        }
    }
    // SAFETY: raise is async-signal-safe.
    unsafe { nix::libc::raise(sig) };
}

/// Save the terminal's settings and install [`on_fatal_signal`] (once).
fn guard_fatal_signals() {
    use nix::sys::signal::{sigaction, SaFlags, SigAction, SigHandler, SigSet};
    // SAFETY: tcgetattr writes the termios it is given; zeroed is a valid termios.
    let mut t: nix::libc::termios = unsafe { std::mem::zeroed() };
    // SAFETY: fd 0 is a terminal here (checked by the caller); `t` is a valid termios.
    if unsafe { nix::libc::tcgetattr(0, &mut t) } != 0 || SAVED_TERMIOS.set(t).is_err() {
        return;
    }
    let action = SigAction::new(
        SigHandler::Handler(on_fatal_signal),
        SaFlags::SA_RESETHAND,
        SigSet::empty(),
    );
    for sig in FATAL_SIGNALS {
        // SAFETY: the handler makes only async-signal-safe calls (see on_fatal_signal).
        let _ = unsafe { sigaction(sig, &action) };
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
    /// Enter raw mode and the alternate screen for `screen`, with mouse capture when `mouse`.
    /// Fails with a clear message, [`no_terminal`], when stdout is not a terminal.
    /// `stdin_taken`: standard input is data (`watch --log -`), so the keys come from the
    /// terminal (`/dev/tty`).
    pub fn enter(stdin_taken: bool, screen: &Screen, mouse: bool) -> anyhow::Result<Tui> {
        use std::io::IsTerminal;
        // With `watch --log -` standard input is the log; keys come from /dev/tty (crossterm
        // opens it when standard input is not a terminal).
        let keys =
            io::stdin().is_terminal() || (stdin_taken && std::fs::File::open("/dev/tty").is_ok());
        if !io::stdout().is_terminal() || !keys {
            anyhow::bail!("{}", no_terminal(screen));
        }
        guard_fatal_signals();
        enable_raw_mode()
            .map_err(|e| anyhow::anyhow!("cannot put the terminal in raw mode: {e}"))?;
        ACTIVE.store(true, Ordering::SeqCst);
        let mut out = io::stdout();
        if let Err(e) = execute!(out, EnterAlternateScreen, Hide) {
            restore();
            anyhow::bail!("cannot switch to the alternate screen: {e}");
        }
        if mouse {
            // Marked on first: a write that half failed is still undone on the way out.
            MOUSE.store(true, Ordering::SeqCst);
            if let Err(e) = execute!(out, EnableMouseCapture) {
                restore();
                anyhow::bail!("cannot turn mouse capture on (--no-mouse goes without): {e}");
            }
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
/// supervised children, flush the recording), then print the panic as usual. A panic of the
/// sampler thread is left to the pipeline, which notices the dead thread (with the panic's
/// message), records it and stops the session in order.
pub fn install_panic_hook(cleanup: impl Fn() + Send + Sync + 'static) {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if std::thread::current().name() == Some(provetop_collect::sampler::THREAD_NAME) {
            if !ACTIVE.load(Ordering::SeqCst) {
                previous(info);
            }
            return;
        }
        restore();
        cleanup();
        previous(info);
    }));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_screen_without_a_terminal_names_what_does_its_work_without_one() {
        let run = no_terminal(&Screen::Run);
        assert!(run.contains("`provetop run --headless`"), "{run}");
        let watch = no_terminal(&Screen::Watch {
            what: "pid 1".into(),
        });
        assert!(watch.contains("`provetop watch --headless`"), "{watch}");
        let attach = no_terminal(&Screen::Attach { read_only: false });
        assert!(attach.contains("attach needs one") && attach.contains("`provetop ls`"));
        for replay in [
            no_terminal(&Screen::Follow),
            no_terminal(&Screen::Replay(crate::app::Playback {
                playing: true,
                speed: 1.0,
                start: 0,
                end: 0,
                alerts: Vec::new(),
                file: "s.ptop".into(),
                abrupt_end: false,
            })),
        ] {
            assert!(replay.contains("replay needs one"), "{replay}");
            assert!(replay.contains("`provetop classify FILE`") && replay.contains("export"));
            assert!(!replay.contains("headless"), "{replay}");
        }
        for s in [run, watch, attach] {
            assert!(
                s.starts_with("standard input/output is not a terminal: "),
                "{s}"
            );
        }
    }
}
