//! The mouse, end to end: real SGR mouse sequences sent into a tmux pane running `provetop
//! replay` of a shipped session (the H200 modes run) move the cursor, zoom, scroll the log,
//! open what a header item names and close it; a mark typed at the cursor shows on the
//! timeline; the mouse is off with `--no-mouse`, and its capture is undone on every way
//! out (a quit, a signal, a fatal signal).

use std::path::PathBuf;
use std::time::Duration;

use provetop_testkit::bins::provetop;
use provetop_testkit::tmux::{have_tmux, sh_quote, Tmux};

fn asset() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../assets/h200-supraseal-all-modes-usage-10x2p20.ptop")
}

/// `provetop replay ARGS ASSET` in an 80×24 pane that stays after it exits (its status
/// said), paused at the end of the recording: the window is then the whole session (0:00 to
/// 2:00 over the plot's 69 columns, right of an 11-column gutter).
fn replay_at_end(name: &str, args: &str) -> (Tmux, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display();
    let cmd = format!(
        "cd {d} && echo $$ > {d}/pid && exec env XDG_CONFIG_HOME={d}/config {} replay {args} {}",
        sh_quote(&provetop().display().to_string()),
        sh_quote(&asset().display().to_string())
    );
    let tmux = Tmux::start(
        name,
        80,
        24,
        &format!("sh -c {}; echo REPLAY-EXIT=$?; sleep 600", sh_quote(&cmd)),
    );
    let t = Duration::from_secs(20);
    tmux.wait_for("the replay screen", t, |s| {
        s.contains("memory") && s.contains("phases")
    });
    tmux.keys(&["G"]);
    tmux.wait_for("the end", t, |s| s.contains("■ end"));
    (tmux, dir)
}

const T: Duration = Duration::from_secs(10);

#[test]
fn clicks_move_the_cursor_and_the_wheel_zooms_and_scrolls() {
    if !have_tmux("clicks_move_the_cursor_and_the_wheel_zooms_and_scrolls") {
        return;
    }
    let (tmux, _dir) = replay_at_end("mouse", "");
    assert_eq!(tmux.format("#{mouse_sgr_flag}"), "1", "mouse capture is on");

    // A click on the chart's plot: the cursor at that column's time. Column 34 of 69 over
    // two minutes is one minute in.
    tmux.click(11 + 34, 6);
    tmux.wait_for("the cursor at 1:00", T, |s| s.contains("at 1:00.0"));
    // A drag moves it; a click on the timeline's bars puts it there too.
    tmux.sgr_mouse(32, 11 + 17, 6, true);
    tmux.wait_for("the cursor dragged to 0:30", T, |s| s.contains("at 0:30.0"));
    tmux.sgr_mouse(0, 11 + 17, 6, false);
    let s = tmux.capture();
    let bars = s
        .lines()
        .position(|l| l.contains("synth│"))
        .expect("a synth row") as u16;
    tmux.click(11 + 51, bars);
    tmux.wait_for("the cursor at 1:30 from the timeline", T, |s| {
        s.contains("at 1:30.0")
    });

    // The wheel over the chart zooms: in to one minute, then out to five.
    tmux.sgr_mouse(64, 40, 6, true);
    tmux.wait_for("zoomed in", T, |s| s.contains("window 1m"));
    tmux.sgr_mouse(65, 40, 6, true);
    tmux.sgr_mouse(65, 40, 6, true);
    tmux.wait_for("zoomed out", T, |s| s.contains("window 5m"));

    // The wheel over the log scrolls it back: its newest line leaves the pane.
    let newest = "provetop's own CPU";
    assert!(tmux.capture().contains(newest));
    let log_row = tmux
        .capture()
        .lines()
        .position(|l| l.contains(newest))
        .unwrap() as u16;
    for _ in 0..3 {
        tmux.sgr_mouse(64, 20, log_row, true);
    }
    tmux.wait_for("the log scrolled back", T, |s| !s.contains(newest));
    tmux.sgr_mouse(65, 20, log_row, true);
    tmux.sgr_mouse(65, 20, log_row, true);
    tmux.sgr_mouse(65, 20, log_row, true);
    tmux.wait_for("the log back at its newest", T, |s| s.contains(newest));

    // A click on the header's mode opens the modes table (what `m` opens); a click closes it.
    let s = tmux.capture();
    let x = s
        .lines()
        .next()
        .unwrap()
        .find("mode single")
        .expect("the mode item");
    let x = s.lines().next().unwrap()[..x].chars().count() as u16;
    tmux.click(x + 2, 0);
    let s = tmux.wait_for("the modes table", T, |s| s.contains("s/sector"));
    assert!(s.contains("sps"), "{s}");
    tmux.click(2, 20);
    tmux.wait_for("the table closed", T, |s| !s.contains("s/sector"));

    tmux.keys(&["q"]);
    let s = tmux.wait_for("exit", T, |s| s.contains("REPLAY-EXIT="));
    assert!(s.contains("REPLAY-EXIT=0"), "{s}");
    assert_eq!(tmux.format("#{alternate_on}"), "0");
    assert_eq!(
        tmux.format("#{mouse_any_flag}"),
        "0",
        "mouse capture left on"
    );
}

#[test]
fn a_mark_typed_at_the_cursor_shows_on_the_timeline_and_in_the_log() {
    if !have_tmux("a_mark_typed_at_the_cursor_shows_on_the_timeline_and_in_the_log") {
        return;
    }
    let (tmux, _dir) = replay_at_end("mark", "");
    tmux.click(11 + 34, 6);
    tmux.wait_for("the cursor at 1:00", T, |s| s.contains("at 1:00.0"));
    tmux.keys(&["M"]);
    tmux.wait_for("the mark prompt", T, |s| s.contains("mark at 1:00.0: "));
    tmux.send_bytes(b"sps starts");
    tmux.keys(&["Enter"]);
    let s = tmux.wait_for("the mark", T, |s| s.contains("1:00.0 mark: sps starts"));
    // On the timeline's top row, at the cursor's column.
    let top = s
        .lines()
        .skip_while(|l| !l.starts_with("─ phases"))
        .nth(1)
        .unwrap();
    assert_eq!(top.chars().nth(11 + 34), Some('*'), "{s}");
    tmux.keys(&["q"]);
    tmux.wait_for("exit", T, |s| s.contains("REPLAY-EXIT=0"));
}

#[test]
fn without_the_mouse_the_terminal_keeps_it_and_every_way_out_gives_it_back() {
    if !have_tmux("without_the_mouse_the_terminal_keeps_it_and_every_way_out_gives_it_back") {
        return;
    }
    let (tmux, _dir) = replay_at_end("nomouse", "--no-mouse");
    assert_eq!(tmux.format("#{mouse_any_flag}"), "0");
    tmux.click(11 + 34, 6);
    std::thread::sleep(Duration::from_millis(600));
    assert!(
        !tmux.capture().contains("at 1:00.0"),
        "a click moved the cursor"
    );
    tmux.keys(&["q"]);
    tmux.wait_for("exit", T, |s| s.contains("REPLAY-EXIT=0"));

    // A signal that stops provetop, and a fatal one (its handler restores the terminal).
    for (sig, status) in [("TERM", "143"), ("ABRT", "134")] {
        let (tmux, dir) = replay_at_end(&format!("sig{sig}"), "");
        assert_eq!(tmux.format("#{mouse_any_flag}"), "1");
        let pid = std::fs::read_to_string(dir.path().join("pid")).unwrap();
        let st = std::process::Command::new("kill")
            .args([format!("-{sig}"), pid.trim().to_string()])
            .status()
            .unwrap();
        assert!(st.success());
        let s = tmux.wait_for("exit", T, |s| s.contains("REPLAY-EXIT="));
        assert!(s.contains(&format!("REPLAY-EXIT={status}")), "{sig}: {s}");
        assert_eq!(tmux.format("#{alternate_on}"), "0", "{sig}");
        assert_eq!(
            tmux.format("#{mouse_any_flag}"),
            "0",
            "{sig}: mouse capture left on"
        );
    }
}
