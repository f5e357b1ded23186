//! Keys → [`Action`]s. Each part of the screen lists its own key commands as a [`Section`];
//! the `?` help screen and the footer's hints are generated from the same tables, so they
//! cannot drift from what the keys do.

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

use provetop_shared::BatchMode;

/// Everything a key can ask for.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Action {
    /// Leave provetop.
    Quit,
    /// Show or hide the key help.
    Help,
    /// Show or hide the batch modes compared.
    Modes,
    /// Show or hide the process table.
    Procs,
    /// Sort the process table by its next column (and show it).
    ProcSort,
    /// Shorter time window.
    ZoomIn,
    /// Longer time window.
    ZoomOut,
    /// Stop (or resume) scrolling the live view.
    Freeze,
    /// Move the cursor by this many chart columns (negative: left).
    Cursor(i32),
    /// Hide the cursor (or close help).
    Escape,
    /// Pause the prover, or resume it when paused.
    PauseResume,
    /// Ask the prover for one more proof now.
    ProveNow,
    /// Switch the prover's batch mode.
    SetMode(BatchMode),
    /// Replay: pause or play.
    PlayPause,
    /// Replay: move the position by this many seconds.
    Seek(i32),
    /// Replay: faster.
    SpeedUp,
    /// Replay: slower.
    SpeedDown,
    /// Replay: next phase start.
    NextPhase,
    /// Replay: previous phase start.
    PrevPhase,
    /// Replay: next alert.
    NextAlert,
    /// Replay: previous alert.
    PrevAlert,
    /// Replay: go to the start.
    Start,
    /// Replay: go to the end.
    End,
    /// Scroll the log pane back (older lines).
    LogOlder,
    /// Scroll the log pane forward (newer lines).
    LogNewer,
    /// Show the newest (or scrolled-to) log line whole, or hide it.
    LogLine,
    /// Cycle what the log pane shows: all, the child's output, provetop's own entries.
    LogFilter,
    /// Type a search of the log pane (`/`).
    LogSearch,
    /// Leave the screen and the supervisor running (like `tmux detach`).
    Detach,
    /// Replay with `--baseline`: align the baseline at the next anchor (start, proof N).
    BaselineAlign,
    /// Put the cursor at this record time (a click on the chart, the usage or the timeline).
    CursorAt(u64),
    /// Type a mark to add at the cursor (or now).
    Mark,
    /// The mark typed is complete: the driver adds it ([`crate::app::View::mark`]).
    MarkDone,
    /// Switch the memory axis: linear from 0, logarithmic, split (`y`).
    MemAxis,
    /// Switch the per-GPU memory rows' scale: the card's total or the largest value seen.
    GpuMemScale,
}

/// One key (modifiers other than shift matter for characters; all matter otherwise).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Key {
    /// Key code.
    pub code: KeyCode,
    /// Modifiers.
    pub mods: KeyModifiers,
}

const fn k(c: char) -> Key {
    Key {
        code: KeyCode::Char(c),
        mods: KeyModifiers::NONE,
    }
}

const fn code(code: KeyCode) -> Key {
    Key {
        code,
        mods: KeyModifiers::NONE,
    }
}

const fn shift(code: KeyCode) -> Key {
    Key {
        code,
        mods: KeyModifiers::SHIFT,
    }
}

const fn ctrl(c: char) -> Key {
    Key {
        code: KeyCode::Char(c),
        mods: KeyModifiers::CONTROL,
    }
}

impl Key {
    /// Whether a key event is this key.
    pub fn matches(&self, ev: &KeyEvent) -> bool {
        if ev.code != self.code {
            return false;
        }
        match ev.code {
            // Terminals disagree on whether '?' or 'A' carry SHIFT: the character says it.
            KeyCode::Char(_) => {
                (ev.modifiers - KeyModifiers::SHIFT) == (self.mods - KeyModifiers::SHIFT)
            }
            _ => ev.modifiers == self.mods,
        }
    }
}

/// A key command: the keys, how help names them, what they do.
#[derive(Debug, Clone, Copy)]
pub struct Binding {
    /// Keys that trigger it.
    pub keys: &'static [Key],
    /// Key names shown in help ("←/→").
    pub label: &'static str,
    /// What it does, for help.
    pub help: &'static str,
    pub action: Action,
    /// The footer's short hint, on the first binding of a group ("+-" for both zooms).
    pub hint: Option<Hint>,
}

/// A footer hint: "+-:zoom". Hints are shown in `order`, and give way from the last.
#[derive(Debug, Clone, Copy)]
pub struct Hint {
    pub keys: &'static str,
    pub what: &'static str,
    pub order: u8,
}

impl Binding {
    /// This binding with a footer hint.
    const fn hint(self, keys: &'static str, what: &'static str, order: u8) -> Binding {
        Binding {
            hint: Some(Hint { keys, what, order }),
            ..self
        }
    }
}

/// The key commands of one part of the screen.
#[derive(Debug, Clone, Copy)]
pub struct Section {
    /// Title in help.
    pub title: &'static str,
    /// Its bindings.
    pub bindings: &'static [Binding],
}

const fn b(
    keys: &'static [Key],
    label: &'static str,
    help: &'static str,
    action: Action,
) -> Binding {
    Binding {
        keys,
        label,
        help,
        action,
        hint: None,
    }
}

/// The keys every screen has; only what quitting does differs.
macro_rules! global {
    ($quit:expr) => {
        Section {
            title: "general",
            bindings: &[
                b(
                    &[k('?'), code(KeyCode::F(1))],
                    "?",
                    "show/hide this help",
                    Action::Help,
                )
                .hint("?", "help", 0),
                b(&[k('m')], "m", "batch modes side by side", Action::Modes).hint("m", "modes", 20),
                b(
                    &[k('t')],
                    "t",
                    "process table (cursor's time)",
                    Action::Procs,
                )
                .hint("t", "procs", 20),
                b(
                    &[k('s')],
                    "s",
                    "sort processes: next column",
                    Action::ProcSort,
                ),
                b(&[k('q'), ctrl('c')], "q", $quit, Action::Quit).hint("q", "quit", 1),
                b(
                    &[code(KeyCode::Esc)],
                    "Esc",
                    "close a box, hide cursor",
                    Action::Escape,
                ),
            ],
        }
    };
}

/// Always available (the live screen: quitting stops the supervised prover).
pub const GLOBAL: Section = global!("quit (stops the prover)");
/// Always available in `watch`: the watched process is not ours to stop.
pub const GLOBAL_WATCH: Section = global!("quit (the process keeps running)");
/// Always available in replay: there is no prover.
pub const GLOBAL_REPLAY: Section = global!("quit");
/// Always available on an attached screen: quitting stops the prover, after asking.
pub const GLOBAL_ATTACH: Section = global!("quit + stop prover (asks)");

/// Always available on a read-only attached screen: the prover is not its to stop.
pub const GLOBAL_WATCH_ATTACHED: Section = global!("quit (the prover keeps running)");

/// The live screen's session: detach (no footer hint: the footer keeps its room).
pub const SESSION: Section = Section {
    title: "session",
    bindings: &[b(&[k('d')], "d", "detach: prover goes on", Action::Detach)],
};

/// An attached screen's session: detach, with its footer hint.
pub const SESSION_ATTACH: Section = Section {
    title: "session",
    bindings: &[b(&[k('d')], "d", "detach: prover goes on", Action::Detach).hint("d", "detach", 1)],
};

/// The live view of the chart and timeline.
pub const LIVE_VIEW: Section = Section {
    title: "view",
    bindings: &[
        b(
            &[k('+'), k('=')],
            "+",
            "zoom in (shorter window)",
            Action::ZoomIn,
        )
        .hint("+-", "zoom", 2),
        b(
            &[k('-'), k('_')],
            "-",
            "zoom out (longer window)",
            Action::ZoomOut,
        ),
        b(&[k('f')], "f", "freeze/unfreeze the view", Action::Freeze).hint("f", "freeze", 3),
        b(
            &[code(KeyCode::Left), k(',')],
            "←",
            "cursor left: exact values",
            Action::Cursor(-1),
        )
        .hint("←→", "cursor", 4),
        b(
            &[code(KeyCode::Right), k('.')],
            "→",
            "cursor right",
            Action::Cursor(1),
        ),
        b(
            &[shift(KeyCode::Left)],
            "Shift ←",
            "cursor left, 10 columns",
            Action::Cursor(-10),
        ),
        b(
            &[shift(KeyCode::Right)],
            "Shift →",
            "cursor right, 10 columns",
            Action::Cursor(10),
        ),
        b(&[k('M')], "M", MARK_HELP, Action::Mark),
        b(&[k('y')], "y", AXIS_HELP, Action::MemAxis),
        b(&[k('Y')], "Y", GPU_SCALE_HELP, Action::GpuMemScale),
    ],
};

const MARK_HELP: &str = "mark at the cursor (type it)";
const AXIS_HELP: &str = "memory axis: linear/log/split";
const GPU_SCALE_HELP: &str = "GPU memory: card / most seen";

/// Commands sent to the supervised prover.
pub const PROVER: Section = Section {
    title: "prover",
    bindings: &[
        b(
            &[k('p')],
            "p",
            "pause / resume the prover",
            Action::PauseResume,
        )
        .hint("p", "pause", 5),
        b(
            &[k('n')],
            "n",
            "prove now (one more proof)",
            Action::ProveNow,
        )
        .hint("n", "prove", 6),
        b(
            &[k('1')],
            "1",
            "mode single (one sector)",
            Action::SetMode(BatchMode::Single),
        )
        .hint("1-4", "mode", 7),
        b(
            &[k('2')],
            "2",
            "mode batch:2 (two sectors)",
            Action::SetMode(BatchMode::Batch(2)),
        ),
        b(
            &[k('3')],
            "3",
            "mode sps (per partition)",
            Action::SetMode(BatchMode::Sps),
        ),
        b(
            &[k('4')],
            "4",
            "mode pipelined:2 (overlapped)",
            Action::SetMode(BatchMode::Pipelined(2)),
        ),
    ],
};

/// Replay playback.
pub const PLAYBACK: Section = Section {
    title: "playback",
    bindings: &[
        b(&[k(' ')], "space", "pause / play", Action::PlayPause).hint("spc", "play", 2),
        b(&[code(KeyCode::Left)], "←", "back 10 s", Action::Seek(-10)).hint("←→", "seek", 3),
        b(
            &[code(KeyCode::Right)],
            "→",
            "forward 10 s",
            Action::Seek(10),
        ),
        b(
            &[shift(KeyCode::Left)],
            "Shift ←",
            "back 60 s",
            Action::Seek(-60),
        ),
        b(
            &[shift(KeyCode::Right)],
            "Shift →",
            "forward 60 s",
            Action::Seek(60),
        ),
        b(
            &[k('+'), k('=')],
            "+",
            "faster (up to 64×)",
            Action::SpeedUp,
        )
        .hint("+-", "speed", 4),
        b(
            &[k('-'), k('_')],
            "-",
            "slower (down to 0.25×)",
            Action::SpeedDown,
        ),
        b(&[k(']')], "]", "next phase start", Action::NextPhase).hint("[]", "phase", 5),
        b(&[k('[')], "[", "previous phase start", Action::PrevPhase),
        b(&[k('a')], "a", "next alert", Action::NextAlert).hint("aA", "alert", 6),
        b(&[k('A')], "A", "previous alert", Action::PrevAlert),
        b(
            &[k('g'), code(KeyCode::Home)],
            "g",
            "go to the start",
            Action::Start,
        ),
        b(
            &[k('G'), code(KeyCode::End)],
            "G",
            "go to the end",
            Action::End,
        ),
    ],
};

/// The replay view of the chart and timeline.
pub const REPLAY_VIEW: Section = Section {
    title: "view",
    bindings: &[
        b(&[k('z')], "z", "zoom in (shorter window)", Action::ZoomIn),
        b(&[k('Z')], "Z", "zoom out (longer window)", Action::ZoomOut),
        b(
            &[k(',')],
            ",",
            "cursor left: exact values",
            Action::Cursor(-1),
        )
        .hint(",.", "cursor", 7),
        b(&[k('.')], ".", "cursor right", Action::Cursor(1)),
        b(
            &[k('<')],
            "<",
            "cursor left, 10 columns",
            Action::Cursor(-10),
        ),
        b(
            &[k('>')],
            ">",
            "cursor right, 10 columns",
            Action::Cursor(10),
        ),
        b(&[k('M')], "M", MARK_HELP, Action::Mark),
        b(&[k('y')], "y", AXIS_HELP, Action::MemAxis),
        b(&[k('Y')], "Y", GPU_SCALE_HELP, Action::GpuMemScale),
    ],
};

/// What the mouse does (listed in the help while the mouse is on; no key triggers these).
pub const MOUSE: Section = Section {
    title: "mouse",
    bindings: &[
        b(
            &[],
            "click",
            "plots: cursor; header, footer, row name: its key",
            Action::CursorAt(0),
        ),
        b(
            &[],
            "wheel",
            "plots: zoom; log, table, help: scroll",
            Action::ZoomIn,
        ),
    ],
};

/// The log pane.
pub const LOG: Section = Section {
    title: "log",
    bindings: &[
        b(
            &[code(KeyCode::Enter), k('l')],
            "Enter/l",
            "newest line whole (wrapped)",
            Action::LogLine,
        )
        .hint("l", "log line", 21),
        b(
            &[k('o')],
            "o",
            "log shows: all / output / provetop",
            Action::LogFilter,
        )
        .hint("o", "output", 22),
        b(
            &[k('/')],
            "/",
            "search the log (Enter keeps, Esc drops)",
            Action::LogSearch,
        )
        .hint("/", "search", 23),
        b(
            &[code(KeyCode::PageUp), code(KeyCode::Up)],
            "PgUp/↑",
            "scroll the log back",
            Action::LogOlder,
        ),
        b(
            &[code(KeyCode::PageDown), code(KeyCode::Down)],
            "PgDn/↓",
            "scroll the log forward",
            Action::LogNewer,
        ),
    ],
};

/// The baseline overlay of a replay (`--baseline`).
pub const BASELINE: Section = Section {
    title: "baseline",
    bindings: &[b(
        &[k('b')],
        "b",
        "align the baseline: start, proof 1, 2, …",
        Action::BaselineAlign,
    )
    .hint("b", "align", 8)],
};

/// Key sections of the live screen, in help order.
pub const LIVE: &[Section] = &[GLOBAL, LIVE_VIEW, PROVER, SESSION, LOG, MOUSE];
/// Key sections of an attached screen (`provetop attach`).
pub const ATTACH: &[Section] = &[GLOBAL_ATTACH, LIVE_VIEW, PROVER, SESSION_ATTACH, LOG, MOUSE];
/// Key sections of a read-only attached screen: no prover keys, quitting leaves it running.
pub const ATTACH_READ_ONLY: &[Section] =
    &[GLOBAL_WATCH_ATTACHED, LIVE_VIEW, SESSION_ATTACH, LOG, MOUSE];
/// Key sections of `replay --follow` (a file followed: no prover to command).
pub const FOLLOW: &[Section] = &[GLOBAL_REPLAY, LIVE_VIEW, LOG, MOUSE];
/// Key sections of `watch` (no prover to command).
pub const WATCH: &[Section] = &[GLOBAL_WATCH, LIVE_VIEW, LOG, MOUSE];
/// Key sections of the replay screen, in help order.
pub const REPLAY: &[Section] = &[GLOBAL_REPLAY, PLAYBACK, REPLAY_VIEW, LOG, MOUSE];
/// Key sections of a replay with a baseline drawn in.
pub const REPLAY_BASELINE: &[Section] =
    &[GLOBAL_REPLAY, PLAYBACK, REPLAY_VIEW, BASELINE, LOG, MOUSE];

/// The footer hints of a screen's sections, in their order.
pub fn hints(sections: &[Section]) -> Vec<Hint> {
    hints_for(sections, true)
}

/// The footer hints, without the prover's (`p n 1-4`) unless the child speaks the protocol
/// (`prover_keys`): before its first event they would only be answered "does not speak the
/// provetop protocol".
pub fn hints_for(sections: &[Section], prover_keys: bool) -> Vec<Hint> {
    let mut v: Vec<Hint> = sections
        .iter()
        .filter(|s| prover_keys || s.title != PROVER.title)
        .flat_map(|s| s.bindings.iter())
        .filter_map(|b| b.hint)
        .collect();
    v.sort_by_key(|h| h.order);
    v
}

/// What a click on the footer hint `keys` does: its first binding's action, for the hints
/// that only change the view (not the prover's, nor quitting or detaching: a stray click
/// must not stop or command a prover).
pub fn hint_action(sections: &[Section], keys: &str) -> Option<Action> {
    let b = sections
        .iter()
        .filter(|s| s.title != PROVER.title)
        .flat_map(|s| s.bindings.iter())
        .find(|b| b.hint.is_some_and(|h| h.keys == keys))?;
    (!matches!(b.action, Action::Quit | Action::Detach)).then_some(b.action)
}

/// The action of a key event, looking through `sections` in order.
pub fn lookup(sections: &[Section], ev: &KeyEvent) -> Option<Action> {
    if ev.kind == KeyEventKind::Release {
        return None;
    }
    sections
        .iter()
        .flat_map(|s| s.bindings.iter())
        .find(|b| b.keys.iter().any(|k| k.matches(ev)))
        .map(|b| b.action)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(code: KeyCode, mods: KeyModifiers) -> KeyEvent {
        KeyEvent::new(code, mods)
    }

    #[test]
    fn keys_resolve() {
        let n = KeyModifiers::NONE;
        assert_eq!(lookup(LIVE, &ev(KeyCode::Char('q'), n)), Some(Action::Quit));
        assert_eq!(
            lookup(LIVE, &ev(KeyCode::Char('c'), KeyModifiers::CONTROL)),
            Some(Action::Quit)
        );
        assert_eq!(lookup(LIVE, &ev(KeyCode::Char('c'), n)), None);
        assert_eq!(
            lookup(LIVE, &ev(KeyCode::Char('?'), KeyModifiers::SHIFT)),
            Some(Action::Help)
        );
        assert_eq!(
            lookup(LIVE, &ev(KeyCode::Left, n)),
            Some(Action::Cursor(-1))
        );
        assert_eq!(
            lookup(LIVE, &ev(KeyCode::Left, KeyModifiers::SHIFT)),
            Some(Action::Cursor(-10))
        );
        assert_eq!(
            lookup(LIVE, &ev(KeyCode::Char('3'), n)),
            Some(Action::SetMode(BatchMode::Sps))
        );
        assert_eq!(
            lookup(REPLAY, &ev(KeyCode::Left, n)),
            Some(Action::Seek(-10))
        );
        assert_eq!(
            lookup(REPLAY, &ev(KeyCode::Right, KeyModifiers::SHIFT)),
            Some(Action::Seek(60))
        );
        assert_eq!(
            lookup(REPLAY, &ev(KeyCode::Char('A'), KeyModifiers::SHIFT)),
            Some(Action::PrevAlert)
        );
        assert_eq!(
            lookup(REPLAY, &ev(KeyCode::Char('a'), n)),
            Some(Action::NextAlert)
        );
        assert_eq!(
            lookup(REPLAY, &ev(KeyCode::Char('+'), n)),
            Some(Action::SpeedUp)
        );
        assert_eq!(lookup(WATCH, &ev(KeyCode::Char('p'), n)), None);
        for screen in [LIVE, WATCH, REPLAY, ATTACH, ATTACH_READ_ONLY, FOLLOW] {
            assert_eq!(
                lookup(screen, &ev(KeyCode::Char('m'), n)),
                Some(Action::Modes)
            );
            assert_eq!(
                lookup(screen, &ev(KeyCode::Char('t'), n)),
                Some(Action::Procs)
            );
            assert_eq!(
                lookup(screen, &ev(KeyCode::Char('s'), n)),
                Some(Action::ProcSort)
            );
            assert!(hints(screen).iter().any(|h| h.keys == "t"));
        }
    }

    #[test]
    fn quit_says_what_it_does_on_each_screen() {
        let quit = |screen: &[Section]| {
            screen
                .iter()
                .flat_map(|s| s.bindings.iter())
                .find(|b| b.action == Action::Quit)
                .unwrap()
                .help
        };
        assert_eq!(quit(LIVE), "quit (stops the prover)");
        assert_eq!(quit(WATCH), "quit (the process keeps running)");
        assert_eq!(quit(REPLAY), "quit");
        assert_eq!(quit(ATTACH), "quit + stop prover (asks)");
        assert_eq!(quit(ATTACH_READ_ONLY), "quit (the prover keeps running)");
        assert_eq!(
            lookup(
                ATTACH_READ_ONLY,
                &ev(KeyCode::Char('1'), KeyModifiers::NONE)
            ),
            None
        );
    }

    #[test]
    fn d_detaches_on_the_live_and_attached_screens_only() {
        let d = ev(KeyCode::Char('d'), KeyModifiers::NONE);
        assert_eq!(lookup(LIVE, &d), Some(Action::Detach));
        assert_eq!(lookup(ATTACH, &d), Some(Action::Detach));
        assert_eq!(lookup(WATCH, &d), None);
        assert_eq!(lookup(REPLAY, &d), None);
        assert!(hints(ATTACH).iter().any(|h| h.keys == "d"));
        assert!(!hints(LIVE).iter().any(|h| h.keys == "d"));
    }

    #[test]
    fn prover_hints_wait_for_the_protocol() {
        let keys = |on| {
            hints_for(LIVE, on)
                .iter()
                .map(|h| h.keys)
                .collect::<Vec<_>>()
        };
        assert!(keys(true).contains(&"p") && keys(true).contains(&"1-4"));
        assert!(!keys(false).contains(&"p") && !keys(false).contains(&"n"));
        assert!(!keys(false).contains(&"1-4") && keys(false).contains(&"q"));
    }

    #[test]
    fn no_key_bound_twice_in_a_screen() {
        for screen in [LIVE, WATCH, REPLAY, ATTACH, ATTACH_READ_ONLY, FOLLOW] {
            let all: Vec<Key> = screen
                .iter()
                .flat_map(|s| s.bindings.iter())
                .flat_map(|b| b.keys.iter().copied())
                .collect();
            for (i, a) in all.iter().enumerate() {
                assert!(!all[i + 1..].contains(a), "{a:?} bound twice");
            }
        }
    }
}
