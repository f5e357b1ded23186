//! Layout snapshots: the live and replay screens at 80×24 and 200×60, drawn into ratatui's
//! `TestBackend` from deterministic synthetic records.

use super::drawn::screen_text;
use crossterm::event::KeyCode;
use provetop::app::{Action, App, Playback, Screen, NS};
use provetop::theme::Theme;
use provetop_shared::{BatchMode, Event, Mark, Record, RecordBody};
use provetop_testkit::screen::buffer_text;
use provetop_testkit::synth::{records, SynthConfig};
use ratatui::backend::TestBackend;
use ratatui::Terminal;

/// Draw `app` as the event loop does, keeping what the frame was drawn with (the next key
/// reads it), and read the screen.
fn drawn_text(app: &mut App, w: u16, h: u16) -> String {
    let mut term = Terminal::new(TestBackend::new(w, h)).unwrap();
    let mut drawn = app.view.drawn;
    term.draw(|f| drawn = provetop::ui::draw(f, app)).unwrap();
    app.view.drawn = drawn;
    buffer_text(term.backend().buffer())
}

/// [`live_app_of`] the synthetic session as it is.
fn live_app(events: bool) -> App {
    live_app_of(events, |recs| recs)
}

/// The live screen of `pid 4242 provetop-prover --daemon` recording to /tmp/x.ptop, after
/// 90 s of the synthetic session (prover events when `events`) as `with` makes it over.
pub(crate) fn live_app_of(events: bool, with: impl FnOnce(Vec<Record>) -> Vec<Record>) -> App {
    let cfg = SynthConfig {
        events,
        seconds: 90.0,
        ..SynthConfig::default()
    };
    let t0 = cfg.t0;
    let mut app = App::new(Screen::Run, Default::default(), Theme::mono(), t0);
    app.model.apply(&Record::new(
        t0,
        RecordBody::Mark(Mark::ChildStarted {
            pid: 4242,
            command: vec!["provetop-prover".into(), "--daemon".into()],
        }),
    ));
    for r in with(records(cfg)) {
        app.clock = app.clock.max(r.t);
        app.model.apply(&r);
    }
    app.recording = Some("/tmp/x.ptop".into());
    app
}

/// Synthetic utilisation for a synthetic record stream: each sample gets `gpus` GPU
/// readings and every tenth one is followed by a usage reading of a three-process tree.
/// Synthesis (RSS in the seed's synth bands) keeps 12 of 16 cores busy, the GPU band keeps
/// GPU 0 at 86 % (GPU 1, when there is one, follows at half), idle neither; the host has two
/// cores of load of its own.
fn with_usage(recs: Vec<Record>, gpus: u32) -> Vec<Record> {
    use provetop_shared::classify::{ThresholdPhase, Thresholds};
    use provetop_shared::record::{GpuDetail, GpuReading, ProcUsage, Usage};
    use provetop_shared::units::GIB;
    let th = Thresholds::default();
    let mut out = Vec::with_capacity(recs.len() * 11 / 10);
    let mut n = 0u64;
    for mut r in recs {
        let RecordBody::Sample(s) = &mut r.body else {
            out.push(r);
            continue;
        };
        let phase = th.classify(s.rss);
        let synth = matches!(phase, ThresholdPhase::Synth | ThresholdPhase::PeakSynth);
        let gpu = phase == ThresholdPhase::GpuOrTransition;
        s.gpus = (0..gpus)
            .map(|i| GpuReading {
                index: i,
                proc_used: if gpu {
                    (20 + 4 * i as u64) * GIB
                } else {
                    2 * GIB
                },
                used: if gpu {
                    (21 + 4 * i as u64) * GIB
                } else {
                    3 * GIB
                },
                total: 80 * GIB,
                util: if gpu { 86 / (1 + i as u8) } else { 0 },
            })
            .collect();
        let (t, rss) = (r.t, s.rss);
        out.push(r);
        n += 1;
        if n % 10 != 0 {
            continue;
        }
        let cores = if synth { 12.0 } else { 1.0 };
        let proc_row = |pid, ppid, command: &str, share: f64| ProcUsage {
            pid,
            ppid,
            command: command.into(),
            rss: (rss as f64 * share) as u64,
            anon: (rss as f64 * share * 0.8) as u64,
            file: (rss as f64 * share * 0.05) as u64,
            shmem: (rss as f64 * share * 0.15) as u64,
            pinned: if pid == 4242 { Some(22 * GIB) } else { None },
            cores: Some(cores * share),
            threads: if pid == 4242 { 40 } else { 2 },
            major_faults: Some(0.0),
            read_bps: if pid == 4244 {
                None
            } else {
                Some(1.5e6 * share)
            },
            write_bps: if pid == 4244 { None } else { Some(0.0) },
            gpu_mem: if pid == 4242 {
                (0..gpus).map(|i| (i, (20 + 4 * i as u64) * GIB)).collect()
            } else {
                vec![]
            },
        };
        let usage = Usage {
            interval_ns: NS / 2,
            cores: Some(cores),
            threads: 44,
            ctx_switches: Some(1200.0),
            major_faults: Some(0.0),
            read_bps: None,
            write_bps: None,
            host_cores: Some(cores + 2.0),
            host_ncpu: 16,
            procs: vec![
                proc_row(4242, 1, "provetop-prover", 0.9),
                proc_row(4243, 4242, "sh", 0.02),
                // A command with a control character: shown inert.
                proc_row(4244, 4243, "evil\x1b[2Jx", 0.08),
            ],
            gpus: (0..gpus)
                .map(|i| GpuDetail {
                    index: i,
                    uuid: format!("GPU-0000000{i}-synthetic"),
                    name: "NVIDIA H200".into(),
                    temp_c: Some(54 + i),
                    power_w: if gpu { Some(480.0) } else { Some(90.0) },
                    sm_clock_mhz: Some(1980),
                    throttle: vec![],
                    pcie_rx_bps: Some(1.2e9),
                    pcie_tx_bps: None,
                    ecc_corrected: Some(0),
                    ecc_uncorrected: Some(0),
                    pcie_replays: Some(3),
                    xid: None,
                    power_limit_w: Some(700.0),
                    temp_slowdown_c: Some(87),
                })
                .collect(),
            nvml_calls: Vec::new(),
            nvml_backoff: None,
        };
        out.push(Record::new(t, RecordBody::Usage(usage)));
    }
    out
}

/// [`live_app`] with utilisation readings of `gpus` GPUs.
pub(crate) fn live_usage_app(gpus: u32) -> App {
    live_app_of(true, |recs| with_usage(recs, gpus))
}

/// Apply `body` a tenth of a second after the app's clock, and move the clock there.
fn feed(app: &mut App, body: RecordBody) {
    app.clock += NS / 10;
    app.model.apply(&Record::new(app.clock, body));
}

/// A proof of 2 partitions × 4000 constraints started.
fn proof_started(id: u64, mode: BatchMode, sectors: u32) -> RecordBody {
    RecordBody::Event(Event::ProofStarted {
        proof_id: id,
        mode,
        sectors,
        partitions: 2,
        constraints: 4000,
    })
}

/// A proof finished: verified unless `error` says why not.
fn proof_finished(
    id: u64,
    mode: BatchMode,
    duration_s: f64,
    error: Option<&str>,
    cancelled: bool,
) -> RecordBody {
    RecordBody::Event(Event::ProofFinished {
        proof_id: id,
        ok: error.is_none(),
        verified: error.is_none(),
        duration_s,
        mode,
        phases: vec![],
        error: error.map(Into::into),
        cancelled,
        requeued_as: vec![],
    })
}

/// End what the synthetic session left in flight, so a test starts with no proof running.
fn finish_running(app: &mut App) {
    let open: Vec<u64> = app
        .model
        .proofs
        .running
        .iter()
        .map(|p| p.proof_id)
        .collect();
    for id in open {
        feed(app, proof_finished(id, BatchMode::Single, 1.0, None, false));
    }
}

#[test]
fn live_80x24() {
    let app = live_app(true);
    insta::assert_snapshot!(screen_text(&app, 80, 24));
}

#[test]
fn live_200x60() {
    let app = live_app(true);
    insta::assert_snapshot!(screen_text(&app, 200, 60));
}

#[test]
fn live_without_events_80x24() {
    let app = live_app(false);
    insta::assert_snapshot!(screen_text(&app, 80, 24));
}

#[test]
fn live_cursor_and_help_80x24() {
    let mut app = live_app(true);
    app.act(Action::Cursor(-1));
    app.act(Action::Cursor(-20));
    insta::assert_snapshot!("cursor", screen_text(&app, 80, 24));
    app.act(Action::Help);
    insta::assert_snapshot!("help", screen_text(&app, 80, 24));
}

fn replay_app() -> App {
    let cfg = SynthConfig {
        seconds: 120.0,
        ..SynthConfig::default()
    };
    let recs = records(cfg);
    let (start, end) = (recs[0].t, recs.last().unwrap().t);
    let pos = start + 75 * NS;
    let mut app = App::new(
        Screen::Replay(Playback {
            playing: false,
            speed: 4.0,
            start,
            end,
            alerts: vec![],
            file: "session.ptop".into(),
            abrupt_end: false,
        }),
        Default::default(),
        Theme::mono(),
        start,
    );
    for r in recs.iter().take_while(|r| r.t <= pos) {
        app.model.apply(r);
    }
    app.clock = pos;
    app
}

#[test]
fn replay_80x24() {
    insta::assert_snapshot!(screen_text(&replay_app(), 80, 24));
}

#[test]
fn replay_200x60() {
    insta::assert_snapshot!(screen_text(&replay_app(), 200, 60));
}

#[test]
fn mode_switch_is_marked_on_the_timeline() {
    let mut app = live_app(true);
    let t = app.clock - 30 * NS;
    app.model.apply(&Record::new(
        t,
        RecordBody::Event(Event::ModeChanged {
            from: BatchMode::Single,
            to: BatchMode::Sps,
        }),
    ));
    let text = screen_text(&app, 200, 60);
    assert!(text.contains("▸sps"), "{text}");
    assert!(text.contains('┆'), "{text}");
    // Not marked before it happened: the same screen without the event has no marker.
    let plain = screen_text(&live_app(true), 200, 60);
    assert!(!plain.contains("▸"), "{plain}");
}

/// The header's rate is shown whole or not at all: the long form when there is room, then
/// `/h`, then without the average, then not at all.
#[test]
fn header_rate_gives_way_on_narrow_screens() {
    let app = live_app(true);
    let header = |w| screen_text(&app, w, 24).lines().next().unwrap().to_string();
    let wide = header(120);
    assert!(wide.ends_with("avg 7.2s │ 500 sectors/h"), "{wide}");
    let narrow = header(80);
    assert!(narrow.ends_with("avg 7.2s │ 500/h"), "{narrow}");
    let narrower = header(72);
    assert!(narrower.ends_with("7.2s/proof │ 500/h"), "{narrower}");
    let tiny = header(70);
    assert!(!tiny.contains("/h") && !tiny.contains("│ 50"), "{tiny}");
}

/// One batch:2 proof of two sectors done, one failed, one cancelled: what the header's
/// parenthesis is about. Returns the proof count before.
fn add_batch_outcomes(app: &mut App) -> u64 {
    let before = app.model.prover.proofs_done;
    let batch = BatchMode::Batch(2);
    feed(app, proof_started(900, batch, 2));
    feed(app, proof_finished(900, batch, 4.0, None, false));
    feed(
        app,
        proof_finished(901, batch, 0.0, Some("out of memory"), false),
    );
    let cancelled = Some("cancelled before it started (signal)");
    feed(app, proof_finished(902, batch, 0.0, cancelled, true));
    before
}

/// What the proof count hides goes in one parenthesis (sectors of batch proofs, failures,
/// cancellations), and items that do not fit are left out whole, never cut.
#[test]
fn header_counts_sectors_failures_and_cancellations_in_one_parenthesis() {
    let mut app = live_app(true);
    let before = add_batch_outcomes(&mut app);
    let header = |w| screen_text(&app, w, 24).lines().next().unwrap().to_string();
    let done = before + 1;
    let wide = header(200);
    assert!(
        wide.contains(&format!(
            "proofs {done} ({} sectors, 1 failed, 1 cancelled) │ ",
            done + 1
        )),
        "{wide}"
    );
    for w in [60, 70, 80, 90, 100] {
        let h = header(w);
        // Whatever is shown after the count is whole.
        assert!(
            !h.ends_with('│') && !h.ends_with(" av") && !h.ends_with(" a"),
            "{w}: {h}"
        );
    }
}

/// Words of a screen line, without the rule characters that fill title lines.
/// (The parenthesis of the proof count may hold fewer notes on a narrow screen, so its
/// brackets and commas do not count.)
fn words(line: &str) -> Vec<String> {
    line.split(|c: char| c.is_whitespace() || c == '─' || c == '│')
        .map(|w| w.trim_matches(|c| c == '(' || c == ')' || c == ','))
        .filter(|w| !w.is_empty())
        .map(str::to_string)
        .collect()
}

/// On any width, the header lines, the memory legend, the utilisation panel's title, the
/// footer's key hints, and the modes overlay and the process table leave items out whole:
/// every word on a narrow screen is a word of the wide one (a cut value such as "gpu 6" for
/// "gpu 6.41G", or "cancell", would not be).
#[test]
fn narrow_screens_leave_items_out_whole_never_cut() {
    for gpus in [None, Some(1), Some(2)] {
        for overlay in [Action::Modes, Action::Procs] {
            let mut app = match gpus {
                None => live_app(true),
                Some(n) => live_usage_app(n),
            };
            add_batch_outcomes(&mut app);
            let exited = Mark::ChildExited {
                pid: 4242,
                code: Some(0),
                signal: None,
                oom_kill: false,
                reason: "exited 0".into(),
            };
            feed(&mut app, RecordBody::Mark(exited));
            app.act(overlay);
            sweep(&app, overlay, gpus.is_some());
        }
    }
}

fn sweep(app: &App, overlay: Action, usage: bool) {
    let wide = screen_text(app, 250, 60);
    // The short forms are words too: the rate's ("500/h") and the overlay's note.
    let known: std::collections::HashSet<String> = wide
        .lines()
        .chain(wide.replace(" sectors/h", "/h").lines())
        .chain(["busy time: overlaps count once"])
        .flat_map(words)
        .collect();
    let wide_head: Vec<&str> = wide.lines().take(3).collect();
    assert!(wide_head[0].contains("cancelled)"), "{}", wide_head[0]);
    assert!(wide_head[2].contains("gpu"), "{}", wide_head[2]);
    assert_eq!(wide.contains("─ usage ─"), usage, "{wide}");
    let (box_title, defines): (&str, &[&str]) = match overlay {
        Action::Modes => ("batch modes", &["s/sector", "vs single"]),
        _ if usage => ("processes", &["pid", "command", "rss", "cores"]),
        _ => ("processes", &["no usage readings"]),
    };
    for w in 40..=160 {
        let text = screen_text(app, w, 40);
        let lines: Vec<Vec<char>> = text.lines().map(|l| l.chars().collect()).collect();
        // Header (2 lines), memory legend, the usage title, footer, and the inside of the
        // overlay's box.
        let mut checked: Vec<String> = lines[..3]
            .iter()
            .chain(lines.last())
            .map(|l| l.iter().collect())
            .collect();
        let top = lines.iter().position(|l| {
            let l: String = l.iter().collect();
            l.contains(box_title)
        });
        // Rows the overlay covers (what it hides is not cut, only covered).
        let mut covered = 0..0;
        if let Some(top) = top {
            let x0 = lines[top].iter().position(|c| *c == '┌').unwrap();
            let x1 = lines[top].iter().position(|c| *c == '┐').unwrap();
            checked.push(lines[top][x0 + 1..x1].iter().collect());
            let mut end = top + 1;
            for l in &lines[top + 1..] {
                end += 1;
                if l.get(x0) == Some(&'└') {
                    break;
                }
                checked.push(l[x0 + 1..x1.min(l.len())].iter().collect());
            }
            covered = top..end;
        }
        checked.extend(
            text.lines()
                .enumerate()
                .filter(|(i, l)| l.starts_with("─ usage ─") && !covered.contains(i))
                .map(|(_, l)| l.to_string()),
        );
        for line in &checked {
            for word in words(line) {
                assert!(
                    known.contains(&word),
                    "{w} columns: {word:?} cut in {line:?}"
                );
            }
        }
        // The overlay keeps what defines it at 80 columns and up.
        if w >= 80 {
            for d in defines {
                assert!(text.contains(d), "{w}: {d}\n{text}");
            }
        }
    }
}

/// On a small screen the help wraps its texts and scrolls: every word of every key's text
/// can be read, none is cut.
#[test]
fn help_on_small_screens_wraps_and_scrolls_never_cuts() {
    let mut app = live_app(true);
    app.act(Action::Help);
    let mut expected: std::collections::HashSet<String> = std::collections::HashSet::new();
    for s in app.sections() {
        expected.insert(s.title.to_string());
        for b in s.bindings {
            expected.extend(b.label.split_whitespace().map(str::to_string));
            expected.extend(b.help.split_whitespace().map(str::to_string));
        }
    }
    for (w, h) in [(80, 24), (60, 24), (50, 16), (40, 12)] {
        app.view.help_scroll = 0;
        let mut seen = std::collections::HashSet::new();
        for _ in 0..40 {
            let text = drawn_text(&mut app, w, h);
            let lines: Vec<Vec<char>> = text.lines().map(|l| l.chars().collect()).collect();
            let top = lines
                .iter()
                .position(|l| l.iter().collect::<String>().contains("keys (? or Esc"))
                .unwrap_or_else(|| panic!("{w}x{h}: no help box\n{text}"));
            let x0 = lines[top].iter().position(|c| *c == '┌').unwrap();
            let x1 = lines[top].iter().position(|c| *c == '┐').unwrap();
            for l in &lines[top + 1..] {
                if l.get(x0) == Some(&'└') {
                    break;
                }
                let inner: String = l[x0 + 1..x1].iter().collect();
                if inner.contains("more below")
                    || inner.contains("more above")
                    || inner.contains(" below: ")
                {
                    continue;
                }
                for word in inner.split_whitespace() {
                    assert!(
                        expected.contains(word),
                        "{w}x{h}: {word:?} cut in {inner:?}"
                    );
                    seen.insert(word.to_string());
                }
            }
            let before = app.view.help_scroll;
            app.act(Action::LogNewer);
            if app.view.help_scroll == before {
                break;
            }
        }
        let missing: Vec<&String> = expected.iter().filter(|e| !seen.contains(*e)).collect();
        assert!(missing.is_empty(), "{w}x{h}: never shown: {missing:?}");
    }
}

/// A pause lets the proof in flight finish: the header says "pausing" until it has.
#[test]
fn header_says_pausing_until_the_proof_in_flight_finishes() {
    use provetop_shared::protocol::ProverState;
    let mut app = live_app(true);
    let header = |app: &App| {
        let text = screen_text(app, 120, 24);
        text.lines().next().unwrap().to_string()
    };
    finish_running(&mut app);
    feed(&mut app, proof_started(900, BatchMode::Single, 1));
    let paused = Event::State {
        state: ProverState::Paused,
    };
    feed(&mut app, RecordBody::Event(paused));
    let h = header(&app);
    assert!(h.contains("‖ pausing pid 4242"), "{h}");
    feed(
        &mut app,
        proof_finished(900, BatchMode::Single, 1.0, None, false),
    );
    let h = header(&app);
    assert!(h.contains("‖ paused pid 4242"), "{h}");
}

/// An alert stays on the header of a narrow screen, its rule without the explanation.
#[test]
fn header_keeps_the_alert_on_narrow_screens() {
    use provetop_shared::{Alert, AlertLevel, AlertState};
    let mut app = live_app(true);
    let alert = Alert {
        rule: "predicted_free < 0 (the proof running is expected to run out of memory)".into(),
        level: AlertLevel::Warn,
        state: AlertState::Firing,
        metric: "predicted_free".into(),
        value: -1e9,
        threshold: 0.0,
        message: "predicted_free (proof 7 …) -1.0 GiB < 0B".into(),
    };
    feed(&mut app, RecordBody::Alert(alert));
    let line2 = |w| screen_text(&app, w, 24).lines().nth(1).unwrap().to_string();
    let wide = line2(200);
    assert!(
        wide.contains("⚠ predicted_free < 0 (the proof running is expected to run out of memory)"),
        "{wide}"
    );
    for w in [40, 60, 80] {
        let l = line2(w);
        assert!(l.contains("⚠ predicted_free < 0"), "{w}: {l}");
    }
    // The log names the level once, also for a rule written with its level.
    let crit = Alert {
        rule: "crit: rss > 1GiB".into(),
        level: AlertLevel::Crit,
        state: AlertState::Firing,
        metric: "rss".into(),
        value: 2e9,
        threshold: 1e9,
        message: "rss 1.9 GiB > 1.0 GiB".into(),
    };
    feed(&mut app, RecordBody::Alert(crit));
    let last = provetop::text::log_text(&app.model.log.back().unwrap().what);
    assert_eq!(last, "CRIT rss > 1GiB: rss 1.9 GiB > 1.0 GiB");
}

/// The header says what the running proof is predicted to leave free at its peak, from the
/// last proof of its shape, and turns to the shortage when it will not fit.
#[test]
fn header_shows_the_memory_left_at_the_running_proofs_peak() {
    use provetop_shared::units::GIB;
    use provetop_shared::Sample;
    let mut app = live_app(true);
    let single = BatchMode::Single;
    let mem = |rss: u64, avail: u64| {
        RecordBody::Sample(Sample {
            rss,
            peak: Some(rss),
            mem_available: Some(avail),
            ..Sample::default()
        })
    };
    finish_running(&mut app);
    let line2 = |app: &App| {
        screen_text(app, 200, 24)
            .lines()
            .nth(1)
            .unwrap()
            .to_string()
    };
    feed(&mut app, proof_started(901, single, 1));
    feed(&mut app, mem(10 * GIB, 100 * GIB));
    assert!(!line2(&app).contains("at peak"), "{}", line2(&app));
    feed(&mut app, proof_finished(901, single, 1.0, None, false));
    feed(&mut app, proof_started(902, single, 1));
    // 1 GiB now, 10 GiB at the last peak, 20 GiB available: 11 GiB left at the peak.
    feed(&mut app, mem(GIB, 20 * GIB));
    assert!(
        line2(&app).contains("│ 11.0G free at peak"),
        "{}",
        line2(&app)
    );
    // Only 5 GiB available: 4 GiB short.
    feed(&mut app, mem(GIB, 5 * GIB));
    assert!(
        line2(&app).contains("│ 4.00G short at peak"),
        "{}",
        line2(&app)
    );
    feed(&mut app, proof_finished(902, single, 1.0, None, false));
    feed(&mut app, mem(GIB, 5 * GIB));
    assert!(!line2(&app).contains("at peak"), "{}", line2(&app));
}

/// `m` shows the batch modes side by side, from the proofs the model kept; Esc closes it.
#[test]
fn modes_overlay_compares_what_each_mode_did() {
    let mut app = live_app(true);
    let mut t = app.clock;
    let batch = BatchMode::Batch(2);
    for id in [900u64, 901] {
        for body in [
            proof_started(id, batch, 2),
            proof_finished(id, batch, 4.0, None, false),
        ] {
            t += 4 * NS;
            app.clock = t;
            app.model.apply(&Record::new(t, body));
        }
    }
    assert!(!screen_text(&app, 120, 40).contains("batch modes"));
    app.act(Action::Modes);
    let text = screen_text(&app, 120, 40);
    assert!(text.contains("batch modes (m or Esc closes)"), "{text}");
    let row = |mode: &str| {
        text.lines()
            // Table rows, not the header (only rows carry the "vs single" ×).
            .find(|l| l.contains(&format!(" {mode} ")) && l.contains('×'))
            .unwrap_or_else(|| panic!("{mode} row in\n{text}"))
            .to_string()
    };
    // Two batch proofs of two sectors, 4 s each back to back: 2 s per sector.
    let batch = row("batch:2");
    let cols: Vec<&str> = batch.split_whitespace().collect();
    let at = cols.iter().position(|c| *c == "batch:2").unwrap();
    assert_eq!(&cols[at + 1..at + 4], ["2", "4", "2.00"], "{batch}");
    assert!(
        row("single").contains("1.00×"),
        "single's rate is the reference"
    );
    app.act(Action::Escape);
    assert!(!screen_text(&app, 120, 40).contains("batch modes"));
}

/// A live screen over 30 s of a synthetic prover of `partitions` partitions.
fn partitioned_app(partitions: u32) -> App {
    let cfg = SynthConfig {
        seconds: 30.0,
        partitions,
        ..SynthConfig::default()
    };
    let t0 = cfg.t0;
    let mut app = App::new(Screen::Run, Default::default(), Theme::mono(), t0);
    for r in records(cfg) {
        app.clock = app.clock.max(r.t);
        app.model.apply(&r);
    }
    app
}

/// The live app of an 8-partition prover (the bundled prover's default) whose newest proof
/// also ran the phases the synthetic one leaves out (SRS load, prove, GPU setup): 17 rows.
fn eight_partition_app() -> App {
    use provetop_shared::Phase;
    let mut app = partitioned_app(8);
    finish_running(&mut app);
    for (phase, part) in [
        (Phase::SrsGenerate, None),
        (Phase::SrsLoad, None),
        (Phase::Prove, None),
        (Phase::GpuSetup, None),
    ] {
        let started = Event::PhaseStarted {
            proof_id: 99,
            phase: phase.clone(),
            partition: part,
        };
        feed(&mut app, RecordBody::Event(started));
        for _ in 0..3 {
            feed(&mut app, RecordBody::Mark(Mark::Note { text: ".".into() }));
        }
        let ended = Event::PhaseEnded {
            proof_id: 99,
            phase,
            partition: part,
            duration_s: 0.3,
        };
        feed(&mut app, RecordBody::Event(ended));
    }
    app
}

/// The rows of the phases pane (its title first).
fn timeline_rows(screen: &str) -> Vec<String> {
    screen
        .lines()
        .skip_while(|l| !l.starts_with("─ phases"))
        .take_while(|l| !l.starts_with("─ log"))
        .map(str::to_string)
        .collect()
}

#[test]
fn per_partition_timeline_rows_appear_when_there_is_room() {
    let app = eight_partition_app();
    for (w, h) in [(200, 80), (200, 60), (160, 45)] {
        let rows = timeline_rows(&screen_text(&app, w, h));
        let all = rows.join("\n");
        for p in 0..8 {
            assert!(all.contains(&format!("synth p{p}│")), "{w}x{h}:\n{all}");
        }
        assert!(!all.contains(" rows "), "{w}x{h}: rows left out:\n{all}");
    }
    // 160×45 has room for the partitions, not for every other phase: those are lettered
    // on their group's row, and the legend names their letters.
    let rows = timeline_rows(&screen_text(&app, 160, 45));
    assert!(
        rows.iter().any(|r| r.trim_start().starts_with("prove│")),
        "{rows:#?}"
    );
    for l in ["G srs gen", "L srs load", "p prove", "u gpu setup"] {
        assert!(rows[0].contains(l), "{l}: {}", rows[0]);
    }
    // In proof order: the SRS first, then synthesis's partitions, then the prove call.
    let names: Vec<&str> = rows[1..]
        .iter()
        .filter_map(|r| r.split('│').next())
        .map(str::trim)
        .collect();
    let at = |n: &str| names.iter().position(|x| *x == n);
    let (srs, p0, p7, prove) = (at("srs"), at("synth p0"), at("synth p7"), at("prove"));
    assert!(
        srs.is_some() && p0.is_some() && prove.is_some(),
        "{names:?}"
    );
    assert!(srs < p0 && p7 < prove, "{names:?}");
}

/// Twenty-four partitions do not fit one row each even at 200×60: the rows fold to one per
/// phase, and the lines set aside for the partitions go back to the memory chart instead of
/// standing empty under the phases.
#[test]
fn a_timeline_that_folds_its_partitions_leaves_no_empty_lines() {
    let app = partitioned_app(24);
    for (w, h) in [(200, 60), (120, 40), (80, 24)] {
        let screen = screen_text(&app, w, h);
        let rows = timeline_rows(&screen);
        assert!(rows.len() > 1, "{w}x{h}:\n{screen}");
        for r in &rows[1..] {
            let label = r.split('│').next().unwrap_or("");
            assert!(
                r.contains('│') && !label.trim().is_empty(),
                "{w}x{h}: an empty line under the phases:\n{}",
                rows.join("\n")
            );
        }
        assert!(!rows.iter().any(|r| r.contains(" p23│")), "{w}x{h}: folded");
    }
}

#[test]
fn the_timeline_legend_names_every_letter_it_draws() {
    let app = eight_partition_app();
    for (w, h) in [(80, 24), (120, 30), (160, 45)] {
        let rows = timeline_rows(&screen_text(&app, w, h));
        let lettered: Vec<&String> = rows[1..]
            .iter()
            .filter(|r| r.contains(|c: char| c.is_ascii_alphabetic() && r.find('│').is_some()))
            .collect();
        let drawn: std::collections::BTreeSet<char> = lettered
            .iter()
            .filter_map(|r| r.split_once('│'))
            .flat_map(|(_, cells)| cells.chars().filter(|c| c.is_ascii_alphabetic()))
            .collect();
        // The title line names each drawn letter, as a word of its own.
        let title = &rows[0];
        let words: Vec<&str> = title.split([' ', '/']).collect();
        for c in &drawn {
            assert!(
                words.contains(&c.to_string().as_str()),
                "{w}x{h}: letter {c} is not in the legend: {title}\n{rows:#?}"
            );
        }
    }
}

#[test]
fn replay_help_does_not_speak_of_stopping_a_prover() {
    let mut app = replay_app();
    app.act(Action::Help);
    let help = screen_text(&app, 100, 40);
    assert!(help.contains("quit"), "{help}");
    assert!(!help.contains("stops the prover"), "{help}");
    let mut live = live_app(true);
    live.act(Action::Help);
    assert!(screen_text(&live, 100, 40).contains("quit (stops the prover)"));
}

#[test]
fn the_footer_offers_prover_keys_only_once_the_child_speaks_the_protocol() {
    let footer = |app: &App| {
        screen_text(app, 120, 24)
            .lines()
            .last()
            .unwrap()
            .to_string()
    };
    let silent = footer(&live_app(false));
    assert!(silent.contains("q:quit"), "{silent}");
    for hint in ["p:pause", "n:prove", "1-4:mode"] {
        assert!(!silent.contains(hint), "{silent}");
        assert!(footer(&live_app(true)).contains(hint));
    }
}

#[test]
fn a_long_log_line_can_be_read_whole() {
    let mut app = live_app(true);
    let message = format!("start {} the end of it", "word ".repeat(60));
    feed(
        &mut app,
        RecordBody::Event(Event::Log {
            level: "warn".into(),
            target: "prover".into(),
            message: message.clone(),
        }),
    );
    let pane = screen_text(&app, 80, 24);
    assert!(!pane.contains("the end of it"), "{pane}");
    for key in [KeyCode::Char('l'), KeyCode::Enter] {
        let ev = crossterm::event::KeyEvent::new(key, crossterm::event::KeyModifiers::NONE);
        let action = provetop::keymap::lookup(app.sections(), &ev).unwrap();
        assert_eq!(app.act(action), None);
        let whole = screen_text(&app, 80, 24);
        assert!(whole.contains("log line"), "{whole}");
        assert!(whole.contains("the end of it"), "{whole}");
        app.act(Action::Escape);
        assert!(!screen_text(&app, 80, 24).contains("the end of it"));
    }
}

#[test]
fn usage_panel_80x24() {
    let app = live_usage_app(1);
    insta::assert_snapshot!(screen_text(&app, 80, 24));
}

#[test]
fn usage_panel_200x60() {
    let app = live_usage_app(2);
    insta::assert_snapshot!(screen_text(&app, 200, 60));
}

#[test]
fn process_table_80x24() {
    let mut app = live_usage_app(1);
    app.act(Action::Procs);
    insta::assert_snapshot!(screen_text(&app, 80, 24));
}

#[test]
fn process_table_200x60() {
    let mut app = live_usage_app(2);
    app.act(Action::Procs);
    insta::assert_snapshot!(screen_text(&app, 200, 60));
}

/// The panel is on the memory chart's time axis: it starts in the chart's gutter column,
/// a cell drawn under a chart column is that column's time, and the cursor's column is the
/// same in both.
#[test]
fn the_usage_panel_shares_the_charts_time_axis_and_cursor() {
    let mut app = live_usage_app(1);
    app.act(Action::Cursor(-1));
    app.act(Action::Cursor(-20));
    let text = screen_text(&app, 120, 40);
    let lines: Vec<Vec<char>> = text.lines().map(|l| l.chars().collect()).collect();
    let title = lines
        .iter()
        .position(|l| l.iter().collect::<String>().starts_with("─ usage ─"))
        .unwrap_or_else(|| panic!("no usage panel\n{text}"));
    let chart_row = &lines[3];
    let axis = chart_row
        .iter()
        .position(|c| *c == '┤' || *c == '│')
        .unwrap();
    let strip = &lines[title + 1];
    assert_eq!(strip.iter().position(|c| *c == '│'), Some(axis), "{text}");
    // Synthesis (12 of 16 cores: six eighths) and idle: both seen.
    let cells: String = strip[axis + 1..].iter().collect();
    assert!(cells.contains('▆') && cells.contains('▁'), "{cells}");
    // At the cursor the title gives the values there, not now.
    let now = screen_text(&live_usage_app(1), 120, 40);
    let now_title = now.lines().find(|l| l.starts_with("─ usage ─")).unwrap();
    assert_ne!(text.lines().nth(title).unwrap(), now_title);
}

/// An older session (no usage readings, no GPU readings) draws no panel; GPU readings alone
/// draw the GPU lines and say the CPU was not sampled.
#[test]
fn without_usage_data_the_panel_takes_no_room() {
    let app = live_app(true);
    assert!(!screen_text(&app, 200, 60).contains("─ usage"));
    let mut app = live_usage_app(1);
    assert!(screen_text(&app, 200, 60).contains("─ usage ─ cpu "));
    // GPU readings only.
    let cfg = SynthConfig {
        seconds: 30.0,
        ..SynthConfig::default()
    };
    app = App::new(Screen::Run, Default::default(), Theme::mono(), cfg.t0);
    for r in with_usage(records(cfg), 1) {
        if !matches!(r.body, RecordBody::Usage(_)) {
            app.clock = app.clock.max(r.t);
            app.model.apply(&r);
        }
    }
    let text = screen_text(&app, 200, 60);
    assert!(text.contains("─ usage ─ cpu not sampled │ gpu0 "), "{text}");
    assert!(!text.contains(" tree "), "{text}");
    app.act(Action::Procs);
    assert!(screen_text(&app, 200, 60).contains("no usage readings"));
}

/// Pressure from kernel records gets its lines in the usage panel: memory in the compact
/// form, memory full, CPU and I/O too on a tall screen; the title gives the values now.
#[test]
fn pressure_shows_in_the_usage_panel_on_the_phase_axis() {
    use provetop_shared::{Kernel, Psi, PsiLine, PsiResource};
    let mut app = live_usage_app(1);
    let res = |some: f64| {
        Some(PsiResource {
            some: PsiLine {
                avg10: some,
                rate: None,
            },
            full: Some(PsiLine {
                avg10: some / 2.0,
                rate: None,
            }),
        })
    };
    for i in 0..20 {
        feed(
            &mut app,
            RecordBody::Kernel(Box::new(Kernel {
                psi_host: Some(Psi {
                    memory: res(if i < 10 { 0.0 } else { 42.5 }),
                    cpu: res(3.0),
                    io: res(0.5),
                }),
                ..Kernel::default()
            })),
        );
    }
    let tall = screen_text(&app, 200, 60);
    assert!(tall.contains("psi mem 42% cpu 3.0% io 0.5%"), "{tall}");
    for label in ["pmem 42%│", "pmemF 21%│", "pcpu 3.0%│", "pio 0.5%│"] {
        assert!(tall.contains(label), "{label}\n{tall}");
    }
    let strip = tall.lines().find(|l| l.contains("pmem 42%")).unwrap();
    assert!(strip.contains('▁') && strip.contains('▄'), "{strip}");
    let small = screen_text(&app, 80, 24);
    assert!(!small.contains("pcpu"), "{small}");
}

/// The kernel's view of the tree's cgroup: the process table has a cgroup line (usage against
/// its limit, memory.stat's breakdown), the cursor box the limit that binds, named, and the
/// breakdown at the cursor.
#[test]
fn the_cgroup_as_the_kernel_charges_it_shows_in_the_process_table_and_the_cursor_box() {
    use provetop_shared::{Binding, CgroupReading, Kernel, MemStat};
    let mut app = live_usage_app(1);
    let gib = 1u64 << 30;
    feed(
        &mut app,
        RecordBody::Kernel(Box::new(Kernel {
            cgroup: Some(CgroupReading {
                path: "/system.slice/curio.service".into(),
                version: 1,
                current: Some(240 * gib),
                max: Some(256 * gib),
                stat: MemStat {
                    anon: Some(200 * gib),
                    file: Some(30 * gib),
                    shmem: Some(8 * gib),
                    kernel: Some(2 * gib),
                    ..MemStat::default()
                },
                ..CgroupReading::default()
            }),
            binding: Some(Binding {
                name: "curio.service memory.max".into(),
                limit: 256 * gib,
                used: 240 * gib,
            }),
            ..Kernel::default()
        })),
    );
    app.act(Action::Procs);
    let table = screen_text(&app, 200, 60);
    assert!(table.contains("cgroup 240G/256G max"), "{table}");
    assert!(table.contains("/system.slice/curio.service"), "{table}");
    assert!(table.contains("anon 200G file 30.0G"), "{table}");
    app.act(Action::Escape);
    app.act(Action::Cursor(-1));
    let boxed = screen_text(&app, 200, 60);
    assert!(boxed.contains("curio.service memory.max"), "{boxed}");
    assert!(boxed.contains("cg anon"), "{boxed}");
}

/// What the kernel did to the tree's memory is marked on the timeline's top row: an OOM kill
/// `X` (over a limit reached at the same time), a limit reached `^`, a stall `~`.
#[test]
fn oom_kills_limits_and_stalls_are_marked_on_the_timeline() {
    let mut app = live_app(true);
    let marks = [
        Mark::MemoryEvent {
            cgroup: "/job".into(),
            counter: "max".into(),
            delta: 3,
            total: 3,
        },
        Mark::OomKill {
            pid: Some(4242),
            command: Some("provetop-prover".into()),
            cgroup: Some("/job".into()),
            watched: true,
            text: "OOM kill of pid 4242 (provetop-prover) in /job".into(),
        },
        Mark::Stall {
            scope: "cgroup".into(),
            resource: "memory".into(),
            line: "some".into(),
            stall_us: 150_000,
            window_us: 1_000_000,
        },
    ];
    for (i, m) in marks.into_iter().enumerate() {
        // Two marks in one column, then the stall well after.
        app.clock += if i == 2 { 5 * NS } else { NS / 1000 };
        app.model
            .apply(&Record::new(app.clock, RecordBody::Mark(m)));
    }
    let text = screen_text(&app, 120, 40);
    let lines: Vec<&str> = text.lines().collect();
    let title = lines
        .iter()
        .position(|l| l.starts_with("─ phases"))
        .unwrap_or_else(|| panic!("{text}"));
    let top = lines[title + 1];
    assert!(top.contains('X') && top.contains('~'), "{top}\n{text}");
    assert!(!top.contains('^'), "the kill wins its column: {top}");
    assert!(text.contains("OOM kill of pid 4242"), "{text}");
}

/// In replay the process table shows the reading nearest the cursor: a process that had
/// exited by the end is still listed at a time it ran, with that reading's time.
#[test]
fn the_process_table_follows_the_cursor_in_replay() {
    use provetop_shared::record::{ProcUsage, Usage};
    let row = |pid, command: &str| ProcUsage {
        pid,
        ppid: 1,
        command: command.into(),
        rss: 1 << 30,
        cores: Some(1.0),
        threads: 2,
        ..ProcUsage::default()
    };
    let start = 1_000 * NS;
    let mut recs = Vec::new();
    for i in 0..120u64 {
        let t = start + i * NS / 2;
        recs.push(Record::new(
            t,
            RecordBody::Sample(provetop_shared::Sample {
                rss: 1 << 30,
                ..Default::default()
            }),
        ));
        let mut procs = vec![row(10, "prover")];
        if i < 60 {
            procs.push(row(11, "synth-helper"));
        }
        recs.push(Record::new(
            t,
            RecordBody::Usage(Usage {
                interval_ns: NS / 2,
                cores: Some(2.0),
                threads: 4,
                host_ncpu: 2,
                procs,
                ..Usage::default()
            }),
        ));
    }
    let end = recs.last().unwrap().t;
    let mut app = App::new(
        Screen::Replay(Playback {
            playing: false,
            speed: 1.0,
            start,
            end,
            alerts: vec![],
            file: "s.ptop".into(),
            abrupt_end: false,
        }),
        Default::default(),
        Theme::mono(),
        start,
    );
    for r in &recs {
        app.model.apply(r);
    }
    app.clock = end;
    app.act(Action::Procs);
    let text = screen_text(&app, 120, 40);
    assert!(text.contains("processes at 0:59.5"), "{text}");
    assert!(!text.contains("synth-helper"), "{text}");
    app.act(Action::Cursor(-1));
    for _ in 0..3 {
        app.act(Action::Cursor(-10));
    }
    let text = screen_text(&app, 120, 40);
    assert!(text.contains("synth-helper"), "{text}");
    assert!(!text.contains("processes at 0:59.5"), "{text}");
}

/// `s` sorts the table by the next column and says so; ↓ scrolls a table taller than the
/// screen, and the command of a process is shown inert.
#[test]
fn the_process_table_sorts_scrolls_and_shows_commands_inert() {
    use provetop_shared::record::{ProcUsage, Usage};
    let mut app = live_usage_app(1);
    app.act(Action::Procs);
    let text = screen_text(&app, 200, 60);
    assert!(text.contains("by rss (s sorts)"), "{text}");
    assert!(text.contains("evil\\x1b[2Jx"), "{text}");
    let order = |text: &str| -> Vec<String> {
        // The table's rows: the lines with one of the tree's pids.
        text.lines()
            .filter(|l| {
                ["4242", "4243", "4244"]
                    .iter()
                    .any(|p| l.contains(&format!(" {p} ")))
            })
            .filter_map(|l| {
                ["provetop-prover", "sh", "evil"]
                    .into_iter()
                    .find(|c| {
                        l.split_whitespace()
                            .any(|w| w == *c || (*c == "evil" && w.starts_with(c)))
                    })
                    .map(str::to_string)
            })
            .collect()
    };
    assert_eq!(order(&text), ["provetop-prover", "evil", "sh"]);
    for _ in 0..4 {
        app.act(Action::ProcSort);
    }
    let text = screen_text(&app, 200, 60);
    assert!(text.contains("by pid"), "{text}");
    assert_eq!(order(&text), ["provetop-prover", "sh", "evil"]);
    // Forty processes on 80×24: scrolled to the end, the last pid shows.
    let procs = (0..40)
        .map(|i| ProcUsage {
            pid: 100 + i,
            ppid: 1,
            command: format!("worker{i}"),
            rss: (1000 - i as u64) << 20,
            ..ProcUsage::default()
        })
        .collect();
    feed(
        &mut app,
        RecordBody::Usage(Usage {
            procs,
            ..Usage::default()
        }),
    );
    let text = drawn_text(&mut app, 80, 24);
    assert!(text.contains("more below"), "{text}");
    assert!(!text.contains(" 139 "), "{text}");
    for _ in 0..20 {
        app.act(Action::LogNewer);
        drawn_text(&mut app, 80, 24);
    }
    let text = drawn_text(&mut app, 80, 24);
    assert!(text.contains(" 139 "), "{text}");
    assert!(!text.contains("more below"), "{text}");
    app.act(Action::Escape);
    assert!(!screen_text(&app, 80, 24).contains("┌─ processes"));
}

/// The modes table gives each mode's overlap of CPU and GPU busy time; a mode without usage
/// readings reads "–", not 0 %.
#[test]
fn the_modes_table_shows_the_overlap_per_mode() {
    let mut app = live_usage_app(1);
    app.act(Action::Modes);
    let text = screen_text(&app, 160, 40);
    let row = text
        .lines()
        .find(|l| l.contains(" single ") && l.contains('×'))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(text.contains("overlap"), "{text}");
    // Synthesis and the GPU band alternate: little overlap, but known.
    assert!(row.contains('%'), "{row}");
    let plain = {
        let mut a = live_app(true);
        a.act(Action::Modes);
        screen_text(&a, 160, 40)
    };
    let row = plain
        .lines()
        .find(|l| l.contains(" single ") && l.contains('×'))
        .unwrap();
    assert!(row.contains('–') && !row.contains('%'), "{row}");
}

/// The header says the cores busy of those online and each GPU's utilisation now.
#[test]
fn the_header_shows_cores_busy_and_gpu_utilisation_now() {
    let app = live_usage_app(2);
    let line2 = screen_text(&app, 200, 24)
        .lines()
        .nth(1)
        .unwrap()
        .to_string();
    assert!(line2.contains("│ cpu 12.0/16"), "{line2}");
    assert!(line2.contains("│ gpu 0% 0%"), "{line2}");
    // NVML fails (the GPUs vanish from the samples): unknown, not 0 %.
    let mut app = app;
    feed(
        &mut app,
        RecordBody::Sample(provetop_shared::Sample {
            rss: 1 << 30,
            ..Default::default()
        }),
    );
    let text = screen_text(&app, 200, 60);
    let line2 = text.lines().nth(1).unwrap();
    assert!(line2.contains("│ gpu - │"), "{line2}");
    let title = text.lines().find(|l| l.starts_with("─ usage ─")).unwrap();
    assert!(title.contains("gpu0 - - │ gpu1 - -"), "{title}");
}

#[test]
fn a_provers_gpu_pool_report_draws_live_under_nvmls_figure() {
    let mut app = live_usage_app(1);
    let before = screen_text(&app, 200, 60);
    assert!(!before.contains("gpu live"), "{before}");
    feed(
        &mut app,
        RecordBody::Event(Event::MemoryReport {
            pinned_bytes: 0,
            gpu_bytes: 28 << 30,
            srs_bytes: 0,
            gpu_live_bytes: Some(6 << 30),
            gpu_reserved_bytes: Some(28 << 30),
        }),
    );
    let s = screen_text(&app, 200, 60);
    assert!(
        s.contains("gpu live 6.00G"),
        "the line under NVML's figure: {s}"
    );
    assert!(
        s.contains("(live 6.00G of 28.0G)"),
        "beside NVML's figure in the legend: {s}"
    );
}
