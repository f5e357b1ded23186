//! The two header lines: who is running and how it is doing.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};

use provetop_shared::forecast::DEFAULT_OOM_HORIZON_S;
use provetop_shared::metric::Metric;
use provetop_shared::protocol::ProverState;
use provetop_shared::units::fmt_secs;

use crate::app::{App, Screen, NS};
use crate::model::ChildStatus;
use crate::ui::{fit, short_bytes, Item};

/// Draw the header into `area` (two rows). Every item is shown whole or left out whole; on a
/// narrow screen the least needed give way first (see [`Item`]). Line 1: the name, the rate
/// (its short form first) and the average, the process count, the cancellations and then the
/// sectors of the proof count, the backend, seconds per proof, the failures, the mode. Line 2:
/// MemAvailable, a zero drop count, an alert's explanation, the uptime, each GPU's
/// utilisation (the busiest stays), the SRS, the recording dot, the cores busy, the memory
/// predicted free at the running proof's peak, then dropped samples or events, then the phase. Never the state, the proof count, an alert's rule, a predicted
/// shortage, a time to OOM under the horizon or a failing recording.
pub fn draw(buf: &mut Buffer, area: Rect, app: &App) {
    let t = &app.theme;
    let m = &app.model;
    let sep = || Span::styled(" │ ", t.dim());
    let mut l1: Vec<Item> = Vec::new();
    // The name only on wide screens: narrower ones keep their room for the figures.
    if area.width >= 100 {
        l1.push(Item::new(9, vec![Span::styled("provetop ", t.bold())]));
    }

    // Child state and pid.
    let state = match (&app.screen, &m.child) {
        (Screen::Replay(p), _) if p.abrupt_end && app.clock >= p.end => {
            Span::styled(format!("■ {}", crate::text::ABRUPT_END), t.bad())
        }
        (Screen::Watch { pid }, ChildStatus::Exited { reason, .. }) => {
            Span::styled(format!("■ pid {pid} {reason}"), t.bad())
        }
        (Screen::Watch { pid }, _) => Span::styled(format!("◉ watching pid {pid}"), t.ok()),
        (Screen::Replay(_), ChildStatus::None) => Span::styled("▷ replay", t.dim()),
        (_, ChildStatus::None) => Span::styled("○ starting", t.dim()),
        (_, ChildStatus::Running { pid, stopped, .. }) => {
            if let Some(how) = stopped {
                Span::styled(format!("‖ pid {pid} {how}"), t.warn())
            } else if m.prover.state == Some(ProverState::Paused) {
                // A pause lets the proofs in flight finish: say so until they have.
                let word = if m.proofs.running.is_empty() {
                    "paused"
                } else {
                    "pausing"
                };
                Span::styled(format!("‖ {word} pid {pid}"), t.warn())
            } else {
                Span::styled(format!("▶ running pid {pid}"), t.ok())
            }
        }
        (
            _,
            ChildStatus::Exited {
                pid, code, reason, ..
            },
        ) => {
            let style = if *code == Some(0) { t.text() } else { t.bad() };
            Span::styled(format!("■ pid {pid} {reason}"), style)
        }
        (_, ChildStatus::Restarting { attempt, backoff_s }) => {
            Span::styled(format!("↻ restart #{attempt} in {backoff_s:.0}s"), t.warn())
        }
    };
    l1.push(Item::new(0, vec![state]));
    if let Some(s) = &m.last_sample {
        if s.procs > 1 {
            l1.push(Item::new(
                6,
                vec![Span::styled(format!(" ({} procs)", s.procs), t.dim())],
            ));
        }
    }

    if let Some(h) = &m.prover.hello {
        let backend = crate::text::inert(&h.backend.to_string()).into_owned();
        let mut spans = vec![sep(), Span::raw(backend)];
        if !h.gpus.is_empty() {
            spans.push(Span::styled(format!("×{}", h.gpus.len()), t.dim()));
        }
        l1.push(Item::new(4, spans));
    } else if !m.has_events() && !matches!(m.child, ChildStatus::None) {
        let what = if m.has_derived() {
            "phases from its log lines"
        } else {
            "no events"
        };
        l1.push(Item::new(4, vec![sep(), Span::styled(what, t.dim())]));
    }
    if let Some(mode) = m.prover.mode {
        l1.push(Item::new(
            1,
            vec![
                sep(),
                Span::styled("mode ", t.dim()),
                Span::styled(mode.to_string(), t.bold()),
            ],
        ));
    }
    if m.has_events() {
        l1.push(Item::new(
            0,
            vec![
                sep(),
                Span::styled("proofs ", t.dim()),
                Span::styled(m.prover.proofs_done.to_string(), t.bold()),
            ],
        ));
        // One parenthesis for what else the count hides: sectors (batch:N), failures,
        // cancellations; failures outlast the rest on a narrow screen.
        let p = &m.prover;
        let sectors = (p.sectors_done != p.proofs_done)
            .then(|| Span::styled(format!("{} sectors", p.sectors_done), t.dim()));
        let failed = (p.proofs_failed > 0)
            .then(|| Span::styled(format!("{} failed", p.proofs_failed), t.bad()));
        let cancelled = (p.proofs_cancelled > 0)
            .then(|| Span::styled(format!("{} cancelled", p.proofs_cancelled), t.dim()));
        let paren = |notes: Vec<Option<Span<'static>>>| -> Option<Vec<Span<'static>>> {
            let notes: Vec<Span> = notes.into_iter().flatten().collect();
            if notes.is_empty() {
                return None;
            }
            let mut spans = vec![Span::styled(" (", t.dim())];
            for (i, n) in notes.into_iter().enumerate() {
                if i > 0 {
                    spans.push(Span::styled(", ", t.dim()));
                }
                spans.push(n);
            }
            spans.push(Span::styled(")", t.dim()));
            Some(spans)
        };
        if let Some(all) = paren(vec![sectors.clone(), failed.clone(), cancelled]) {
            let mut item = Item::new(5, all);
            if let Some(fewer) = paren(vec![sectors, failed.clone()]) {
                // Sectors apart from proofs matter more than the backend's name.
                item = item.or(3, fewer);
            }
            if let Some(only) = paren(vec![failed]) {
                item = item.or(2, only);
            }
            l1.push(item);
        }
        if let Some(last) = m.prover.last_s {
            l1.push(Item::new(
                2,
                vec![sep(), Span::raw(format!("{}/proof", fmt_secs(last)))],
            ));
            if let Some(avg) = m.prover.avg_s() {
                l1.push(Item::new(
                    8,
                    vec![Span::styled(format!(" avg {}", fmt_secs(avg)), t.dim())],
                ));
            }
        }
        // Seconds per proof understate a mode that overlaps proofs: the rate says what the
        // current mode delivers.
        if let Some(r) = m.prover.mode.and_then(|mode| m.throughput(mode)) {
            l1.push(
                Item::new(8, vec![sep(), Span::raw(format!("{r:.0} sectors/h"))])
                    .or(7, vec![sep(), Span::raw(format!("{r:.0}/h"))]),
            );
        }
    }

    // Line 2: phase, SRS, uptime, drops, alerts.
    let mut l2: Vec<Item> = vec![Item::new(
        1,
        vec![
            Span::styled("phase ", t.dim()),
            Span::styled(m.header_phase_text(), t.bold()),
        ],
    )];
    if m.has_events() {
        l2.push(Item::new(
            4,
            vec![
                sep(),
                Span::styled("SRS ", t.dim()),
                Span::raw(crate::text::srs(&m.prover.srs)),
            ],
        ));
    }
    // Where the cores and the GPUs go now: the tree's cores busy of those online, each GPU's
    // utilisation (the busiest alone on a narrow screen). Unknown reads "-", never 0.
    if let Some((_, u)) = m.usage.latest() {
        let cores = u
            .cores
            .filter(|c| c.is_finite())
            .map_or("-".into(), |c| format!("{c:.1}"));
        let of = if u.host_ncpu > 0 {
            format!("/{}", u.host_ncpu)
        } else {
            String::new()
        };
        l2.push(
            Item::new(
                4,
                vec![
                    sep(),
                    Span::styled("cpu ", t.dim()),
                    Span::raw(format!("{cores}{of}")),
                ],
            )
            .or(
                4,
                vec![sep(), Span::styled("cpu ", t.dim()), Span::raw(cores)],
            ),
        );
    }
    if let Some(gpus) = m
        .last_sample
        .as_ref()
        .map(|s| &s.gpus)
        .filter(|g| !g.is_empty())
    {
        let all: Vec<String> = gpus
            .iter()
            .map(|g| g.utilization().map_or("-".to_string(), |u| format!("{u}%")))
            .collect();
        let max = gpus.iter().filter_map(|g| g.utilization()).max();
        let mut item = Item::new(
            5,
            vec![
                sep(),
                Span::styled("gpu ", t.dim()),
                Span::raw(all.join(" ")),
            ],
        );
        if gpus.len() > 1 {
            item = item.or(
                4,
                vec![
                    sep(),
                    Span::styled("gpu ", t.dim()),
                    Span::raw(max.map_or("-".to_string(), |u| format!("{u}%"))),
                    Span::styled(" max", t.dim()),
                ],
            );
        }
        l2.push(item);
    } else if m.usage.gpus.iter().any(|g| g.series.total() > 0) {
        // GPUs were read before and are not now (NVML failing, a GPU gone): unknown.
        l2.push(Item::new(5, vec![sep(), Span::styled("gpu -", t.dim())]));
    }
    // Will the proof running fit? What is predicted to be left at its peak, once a proof of
    // its shape has finished (the `predicted_free` forecast); short of memory, in red and kept.
    if let Some(free) = m.predicted_free() {
        let item = if free < 0.0 {
            Item::new(
                0,
                vec![
                    sep(),
                    Span::styled(
                        format!("{} short at peak", short_bytes(-free as u64)),
                        t.bad(),
                    ),
                ],
            )
        } else {
            Item::new(
                3,
                vec![
                    sep(),
                    Span::raw(short_bytes(free as u64)),
                    Span::styled(" free at peak", t.dim()),
                ],
            )
        };
        l2.push(item);
    }
    // At this rate, when does memory run out? (the trend forecast, for any process): under
    // the horizon, in red and kept. A `time_to_oom` rule that fires sets a horizon of its own.
    let rule_fires = m
        .alerts
        .active
        .iter()
        .any(|a| a.alert.metric == Metric::TimeToOom.name());
    if let Some(secs) = m
        .time_to_oom()
        .filter(|&s| s < DEFAULT_OOM_HORIZON_S || rule_fires)
    {
        l2.push(Item::new(
            0,
            vec![
                sep(),
                Span::styled(format!("OOM in {}", fmt_secs(secs)), t.bad()),
            ],
        ));
    }
    let up = match &m.child {
        ChildStatus::Running { since, .. } => Some(app.clock.saturating_sub(*since)),
        _ => m.first_t().map(|f| app.clock.saturating_sub(f)),
    };
    if let Some(up) = up {
        l2.push(Item::new(
            5,
            vec![
                sep(),
                Span::styled("up ", t.dim()),
                Span::raw(fmt_secs(up as f64 / NS as f64)),
            ],
        ));
    }
    let drops = m.notes.dropped_samples;
    l2.push(Item::new(
        if drops > 0 { 2 } else { 6 },
        vec![
            sep(),
            Span::styled(
                format!("drops {drops}"),
                if drops > 0 { t.warn() } else { t.dim() },
            ),
        ],
    ));
    if m.notes.dropped_events > 0 {
        l2.push(Item::new(
            2,
            vec![Span::styled(
                format!(" events dropped {}", m.notes.dropped_events),
                t.warn(),
            )],
        ));
    }
    if m.notes.bad_lines > 0 {
        l2.push(Item::new(
            2,
            vec![Span::styled(
                format!(" bad {}", m.notes.bad_lines),
                t.warn(),
            )],
        ));
    }
    if app.recording_failing {
        l2.push(Item::new(
            0,
            vec![sep(), Span::styled("✖ rec failing", t.bad())],
        ));
    }
    if let Some(a) = m.alerts.active.iter().max_by_key(|a| a.alert.level) {
        let more = if m.alerts.active.len() > 1 {
            format!(" +{}", m.alerts.active.len() - 1)
        } else {
            String::new()
        };
        // The rule as written, or on a narrow screen without its explanation: "⚠ rss >
        // 90GiB" rather than no alert at all.
        let rule = crate::text::inert(&a.alert.rule).into_owned();
        let rule = &rule;
        let short = rule.split_once(" (").map_or(rule.as_str(), |(r, _)| r);
        let style = t.alert(a.alert.level);
        l2.push(
            Item::new(
                5,
                vec![sep(), Span::styled(format!("⚠ {rule}{more}"), style)],
            )
            .or(
                0,
                vec![sep(), Span::styled(format!("⚠ {short}{more}"), style)],
            ),
        );
    } else if app.recording.is_some() && !app.recording_failing {
        l2.push(Item::new(
            3,
            vec![
                sep(),
                Span::styled("● rec", t.metric(crate::series::Metric::Peak)),
            ],
        ));
    }
    if let Some(avail) = m.last_sample.as_ref().and_then(|s| s.mem_available) {
        l2.push(Item::new(
            7,
            vec![
                sep(),
                Span::styled(format!("avail {}", short_bytes(avail)), t.dim()),
            ],
        ));
    }
    let room = area.width as usize;
    buf.set_line(area.x, area.y, &Line::from(fit(l1, room)), area.width);
    if area.height > 1 {
        buf.set_line(area.x, area.y + 1, &Line::from(fit(l2, room)), area.width);
    }
}

#[cfg(test)]
mod tests {
    use provetop_shared::units::GIB;
    use provetop_shared::{Alert, AlertLevel, AlertState, Record, RecordBody, Sample};
    use ratatui::backend::TestBackend;
    use ratatui::Terminal;

    use crate::app::{App, Screen, NS};
    use crate::theme::Theme;

    /// An app that watched RSS grow `rate` bytes/s for 10 s at 20 Hz from 1 GiB, with
    /// MemAvailable falling as it grew from `avail` bytes.
    fn growing(rate: u64, avail: u64) -> App {
        let mut app = App::new(Screen::Run, Default::default(), Theme::mono(), NS);
        for i in 0..=200u64 {
            let t = NS + i * NS / 20;
            let grown = rate * i / 20;
            app.clock = t;
            app.model.apply(&Record::new(
                t,
                RecordBody::Sample(Sample {
                    rss: GIB + grown,
                    mem_available: Some(avail - grown),
                    mem_total: Some(64 * GIB),
                    ..Sample::default()
                }),
            ));
        }
        app
    }

    fn line2(app: &App, w: u16) -> String {
        let mut term = Terminal::new(TestBackend::new(w, 2)).unwrap();
        term.draw(|f| {
            let area = f.area();
            super::draw(f.buffer_mut(), area, app)
        })
        .unwrap();
        let buf = term.backend().buffer();
        (0..w).map(|x| buf[(x, 1)].symbol()).collect()
    }

    #[test]
    fn the_time_to_oom_shows_in_red_under_the_horizon_and_not_above_it() {
        // 1 GiB/s with 10 GiB left after the climb: 10 s.
        let app = growing(GIB, 20 * GIB);
        let l = line2(&app, 80);
        assert!(l.contains("│ OOM in 10.0s"), "{l}");
        // 100 MiB/s, 20 GiB left: over three minutes, not shown.
        let app = growing(100 << 20, 21 * GIB);
        assert!(!line2(&app, 200).contains("OOM"), "{}", line2(&app, 200));
    }

    #[test]
    fn a_firing_time_to_oom_rule_sets_a_longer_horizon() {
        let mut app = growing(100 << 20, 16 * GIB);
        assert!(!line2(&app, 200).contains("OOM"));
        let t = app.clock + NS / 10;
        app.model.apply(&Record::new(
            t,
            RecordBody::Alert(Alert {
                rule: "time_to_oom < 5m".into(),
                level: AlertLevel::Warn,
                state: AlertState::Firing,
                metric: "time_to_oom".into(),
                value: 150.0,
                threshold: 300.0,
                message:
                    "time_to_oom (RSS growing 100 MiB/s, 15.0 GiB left in MemAvailable) 2m30s < 5m"
                        .into(),
            }),
        ));
        let l = line2(&app, 200);
        assert!(l.contains("OOM in 2m"), "{l}");
    }
}
