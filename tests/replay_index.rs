//! `provetop replay` of a compact session reads it chunk by chunk (issue 33): the screen at
//! any position is the whole-file store's (its log the newest entries), a zoomed-out chart
//! keeps every peak from the chunks' summaries, a damaged chunk is skipped with one line
//! naming its offset, and a seek the background pass has not reached waits for it, saying
//! so, instead of showing a state it does not know.

use std::path::Path;
use std::time::Duration;

use provetop::app::{Action, App, View, NS};
use provetop::event_loop::Driver as _;
use provetop::model::Model;
use provetop::replay::ReplayDriver;
use provetop::store::Store;
use provetop::theme::Theme;
use provetop::timeline::{Timeline, LIGHT_LOG};
use provetop_shared::classify::Thresholds;
use provetop_shared::session::compact::index::Index;
use provetop_shared::session::{SessionHeader, SessionWriter};
use provetop_shared::units::GIB;
use provetop_shared::{Record, RecordBody};
use provetop_testkit::bins::provetop;
use provetop_testkit::flight::{Flight, FlightConfig};
use provetop_testkit::tmux::{have_tmux, sh_quote, Tmux};

/// Write a compact flight of `seconds` as the recorder does; `edit` may change a record.
fn write_flight(path: &Path, seconds: u64, mut edit: impl FnMut(usize, &mut Record)) {
    let h = SessionHeader::now(vec!["flight".into()], 20.0);
    let mut w = SessionWriter::create_compact(path, &h).expect("create");
    let cfg = FlightConfig {
        seconds,
        ..FlightConfig::default()
    };
    for (i, mut r) in Flight::new(cfg).enumerate() {
        edit(i, &mut r);
        w.append(&r).expect("append");
        if i % 24 == 23 {
            w.flush().expect("flush");
        }
    }
    w.sync().expect("sync");
}

/// What a model shows apart from its series, in text; of its log, the newest `log` entries.
fn reading(m: &Model, log: usize) -> String {
    let kept = m.log.len().saturating_sub(log);
    format!(
        "records {} events {} first {:?} now {} phase {:?} / {:?}\nmodes {:?}\nalerts {:?}\nlast {:?}\nsample {:?}\nfree {:?}\nlog {:?}\nproofs {:?}",
        m.records(),
        m.events(),
        m.first_t(),
        m.now(),
        m.current_phase_text(),
        m.header_phase_text(),
        m.mode_rows(),
        m.alert_times().collect::<Vec<_>>(),
        m.last_point(),
        m.last_sample,
        m.predicted_free(),
        m.log.iter().skip(kept).collect::<Vec<_>>(),
        m.proofs.finished,
    )
}

/// The phase spans over `[t0, t1]`, as the timeline draws them (their memory left out).
fn spans(m: &Model, t0: u64, t1: u64) -> Vec<String> {
    m.spans_in(t0, t1)
        .map(|s| {
            format!(
                "{} {:?} {} {:?} {:?} {} {}",
                s.label(),
                s.partition,
                s.start,
                s.end,
                s.duration_s,
                s.failed,
                s.derived
            )
        })
        .collect()
}

/// The screen at 120×30.
fn drawn(app: &mut App) -> String {
    crate::drawn::screen_text(app, 120, 30)
}

/// Seek and let a seek that goes on between frames land.
fn seek(d: &mut ReplayDriver, app: &mut App, t: u64) {
    d.seek(app, t);
    while d.seeking().is_some() {
        d.poll(app);
    }
}

fn indexed(path: &Path) -> ReplayDriver {
    let tl = Timeline::open(path, Thresholds::default()).expect("open");
    tl.wait_indexed();
    ReplayDriver::chunked(tl)
}

#[test]
fn a_compact_session_read_chunk_by_chunk_shows_what_the_whole_file_shows_at_every_seek() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("hour.ptop");
    write_flight(&p, 3600, |_, _| {});
    let mut whole = ReplayDriver::new(Store::open(&p).expect("load"));
    let mut chunked = indexed(&p);
    assert!(Index::open(&p).unwrap().chunks.len() > 4, "several chunks");
    let (mut a, mut b) = (
        whole.app(1.0, Theme::mono()),
        chunked.app(1.0, Theme::mono()),
    );
    // A minute's window: inside what a seek draws at full resolution.
    a.view.zoom = View::zoom_for(60.0);
    b.view.zoom = a.view.zoom;
    let (s, e) = (whole.start(), whole.end());
    assert_eq!((s, e), (chunked.start(), chunked.end()));
    // Forward, back, forward by little (playing on), to the end and back to the start.
    let span = e - s;
    let mut log_longer = false;
    for t in [
        s + span / 3,
        s + span / 7,
        s + span / 7 + 3 * NS,
        s + span * 5 / 6,
        e,
        s + span / 2,
        s,
    ] {
        whole.seek(&mut a, t);
        seek(&mut chunked, &mut b, t);
        assert_eq!(b.clock, a.clock);
        log_longer |= a.model.log.len() > LIGHT_LOG;
        assert_eq!(
            reading(&b.model, LIGHT_LOG),
            reading(&a.model, LIGHT_LOG),
            "at +{} s",
            (t - s) / NS
        );
        assert_eq!(drawn(&mut b), drawn(&mut a), "at +{} s", (t - s) / NS);
        // Zoomed out to the hour: the phase spans the snapshot left out are taken back.
        let zoom = a.view.zoom;
        a.view.zoom = View::zoom_for(3600.0);
        b.view.zoom = a.view.zoom;
        chunked.prepare(&mut b);
        assert_eq!(a.window(), b.window());
        let (w0, w1) = a.window();
        assert_eq!(
            spans(&b.model, w0, w1),
            spans(&a.model, w0, w1),
            "at +{} s",
            (t - s) / NS
        );
        (a.view.zoom, b.view.zoom) = (zoom, zoom);
    }
    assert!(log_longer, "a log longer than a snapshot keeps");
    let ix = chunked.timeline().unwrap().indexed();
    assert!(ix.snaps.iter().all(|s| s.model.spans.closed.is_empty()));
    assert_eq!(
        ix.spans.len(),
        whole
            .store()
            .unwrap()
            .spans()
            .iter()
            .filter(|s| s.end.is_some())
            .count(),
        "every closed span kept once"
    );
    drop(ix);
    // The keys that jump: the same phase starts and alerts.
    let tl = chunked.timeline().unwrap();
    let store = whole.store().unwrap();
    assert_eq!(
        tl.indexed().phase_starts.to_vec().unwrap(),
        store.phase_starts()
    );
    assert_eq!(tl.indexed().alerts.to_vec().unwrap(), store.alert_times());
    assert!(!store.phase_starts().is_empty() && !store.alert_times().is_empty());
    // `]`, `[`, `a` and `A` land on the same time from either, from anywhere.
    let keys = [
        Action::NextPhase,
        Action::PrevPhase,
        Action::NextAlert,
        Action::PrevAlert,
    ];
    let mut moved = 0;
    for t in [s, s + span / 2 + 7 * NS, s + span * 5 / 6, e] {
        for k in keys {
            whole.seek(&mut a, t);
            seek(&mut chunked, &mut b, t);
            whole.act(&mut a, k);
            chunked.act(&mut b, k);
            assert_eq!(b.clock, a.clock, "{k:?} from +{} s", (t - s) / NS);
            moved += usize::from(a.clock != t && t != s && t != e);
        }
    }
    // From the middle (past the first alert), every key finds one.
    assert_eq!(moved, 8);
}

#[test]
fn a_log_scrolled_back_to_the_oldest_line_a_seek_kept_says_older_ones_are_a_seek_away() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("hour.ptop");
    write_flight(&p, 3600, |_, _| {});
    let mut chunked = indexed(&p);
    let mut app = chunked.app(1.0, Theme::mono());
    let end = chunked.end();
    seek(&mut chunked, &mut app, end - 600 * NS);
    let held = app.model.log.len();
    assert!(app.model.log.older() > 0, "the snapshot's cut is counted");
    app.act(Action::LogOlder);
    assert!(
        !drawn(&mut app).contains("older: seek back"),
        "not before the oldest"
    );
    for _ in 0..held {
        app.act(Action::LogOlder);
    }
    let s = drawn(&mut app);
    let title = s
        .lines()
        .find(|l| l.contains("─ log ─"))
        .expect("log title");
    assert!(
        title.contains(&format!(
            "{} older: seek back for them",
            app.model.log.older()
        )),
        "{title}"
    );
    // The pane stays full, from the oldest line held down (it showed that line alone).
    let rows = s.lines().skip_while(|l| !l.contains("─ log ─")).skip(1);
    let filled = rows
        .take_while(|l| l.trim_start().starts_with(|c: char| c.is_ascii_digit()))
        .count();
    assert!(filled >= 3, "{s}");
}

#[test]
fn a_zoomed_out_chart_of_a_long_session_keeps_a_single_sample_spike() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("spike.ptop");
    // One sample far above every other, ten minutes in, an hour and a half before the end.
    let spike = 900 * GIB;
    let mut at = 0;
    write_flight(&p, 6000, |i, r| {
        if let RecordBody::Sample(s) = &mut r.body {
            if at == 0 && i > 12_000 {
                s.rss = spike;
                at = r.t;
            }
        }
    });
    let mut d = indexed(&p);
    let mut app = d.app(1.0, Theme::mono());
    let end = d.end();
    seek(&mut d, &mut app, end);
    let cols = app.model.series.columns(d.start(), end, 60);
    let top = cols
        .iter()
        .filter_map(|c| c.max(provetop::series::Metric::Rss));
    assert_eq!(top.max(), Some(spike), "the spike is the chart's top");
    let col = cols
        .iter()
        .find(|c| c.max(provetop::series::Metric::Rss) == Some(spike))
        .unwrap();
    assert!(col.t0 <= at && at <= col.t1, "in its own column");
    // The chart drawn zoomed out to the whole session is scaled to it (the flight's own
    // memory stays under 500 GiB).
    app.view.zoom = View::zoom_for((end - d.start()) as f64 / NS as f64);
    let s = drawn(&mut app);
    assert!(s.contains("1000G┤"), "{s}");
}

/// A compact flight with chunk 2's compressed columns damaged; the chunk's offset.
fn damaged(dir: &Path) -> (std::path::PathBuf, u64) {
    let p = dir.join("damaged.ptop");
    write_flight(&p, 1800, |_, _| {});
    let at = Index::open(&p).unwrap().chunks.get(2).unwrap().0;
    let mut bytes = std::fs::read(&p).unwrap();
    for b in &mut bytes[at as usize + 200..at as usize + 240] {
        *b ^= 0x5a;
    }
    std::fs::write(&p, bytes).unwrap();
    (p, at)
}

#[test]
fn a_damaged_chunk_is_skipped_with_one_line_naming_its_offset_and_replay_still_opens() {
    let dir = tempfile::tempdir().unwrap();
    let (p, at) = damaged(dir.path());
    let d = indexed(&p);
    let w = &d.timeline().unwrap().indexed().warnings;
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(w[0].contains(&format!("byte {at}: damaged chunk")), "{w:?}");
    assert!(!w[0].contains('\n'));

    if !have_tmux("a_damaged_chunk_is_skipped") {
        return;
    }
    let cmd = format!(
        "{} replay --speed 64 {} 2>{}; echo REPLAY-EXIT=$?; sleep 600",
        sh_quote(&provetop().display().to_string()),
        sh_quote(&p.display().to_string()),
        sh_quote(&dir.path().join("err").display().to_string())
    );
    let tmux = Tmux::start("replay-damaged", 120, 30, &cmd);
    let t = Duration::from_secs(30);
    tmux.wait_for("the warning on the screen", t, |s| {
        s.contains("memory") && s.contains(&format!("byte {at}: damaged chunk"))
    });
    tmux.keys(&["G"]);
    tmux.wait_for("the end", t, |s| s.contains("end"));
    tmux.keys(&["q"]);
    let s = tmux.wait_for("exit", t, |s| s.contains("REPLAY-EXIT="));
    assert!(s.contains("REPLAY-EXIT=0"), "{s}");
    let err = std::fs::read_to_string(dir.path().join("err")).unwrap();
    let lines: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("damaged chunk"))
        .collect();
    assert_eq!(lines.len(), 1, "{err}");
    assert!(lines[0].contains(&format!("byte {at}")), "{err}");
}

#[test]
fn a_seek_past_what_is_indexed_waits_saying_so_and_then_lands_on_the_true_state() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("hour.ptop");
    write_flight(&p, 3600, |_, _| {});
    let mut d = ReplayDriver::chunked(Timeline::open(&p, Thresholds::default()).unwrap());
    let mut app = d.app(1.0, Theme::mono());
    let (start, end) = (d.start(), d.end());
    // Straight after opening, the background pass is far from the end.
    d.seek(&mut app, end);
    assert_eq!(d.waiting(), Some(end));
    assert_eq!(app.clock, start, "the position stays where it is known");
    assert_eq!(app.model.records(), 0, "and so does the model");
    d.poll(&mut app);
    let s = drawn(&mut app);
    assert!(s.contains("indexing"), "{s}");
    let t0 = std::time::Instant::now();
    while d.waiting().is_some() || d.seeking().is_some() {
        assert!(
            t0.elapsed() < Duration::from_secs(120),
            "indexing never ended"
        );
        std::thread::sleep(Duration::from_millis(20));
        d.poll(&mut app);
    }
    assert_eq!(app.clock, end);
    let whole = Store::open(&p).unwrap();
    assert_eq!(
        reading(&app.model, LIGHT_LOG),
        reading(&whole.model_at(end), LIGHT_LOG)
    );
}
