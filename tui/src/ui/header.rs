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

/// How soon each item gives way on a narrow screen (see [`Item`]): the higher, the sooner;
/// among equals, the later item. `KEPT` items never give way.
mod rank {
    /// provetop's own name.
    pub const NAME: u8 = 9;
    /// The rate in its long form ("500 sectors/h"), the average seconds per proof.
    pub const RATE: u8 = 8;
    pub const AVERAGE: u8 = 8;
    /// The rate's short form ("500/h"), the room left while the host's memory binds.
    pub const RATE_SHORT: u8 = 7;
    pub const AVAILABLE: u8 = 7;
    /// The process count, a drop count of zero.
    pub const PROCESSES: u8 = 6;
    pub const NO_DROPS: u8 = 6;
    /// The proof count's notes with the cancellations, each GPU's utilisation, the uptime,
    /// an alert with its explanation.
    pub const CANCELLED: u8 = 5;
    pub const GPU_EACH: u8 = 5;
    pub const UPTIME: u8 = 5;
    pub const ALERT_EXPLAINED: u8 = 5;
    /// The backend, the SRS, the cores busy, the busiest GPU.
    pub const BACKEND: u8 = 4;
    pub const SRS: u8 = 4;
    pub const CPU: u8 = 4;
    pub const GPU_BUSIEST: u8 = 4;
    /// The proof count's sectors, the memory free at the running proof's peak, the
    /// recording dot, the room left while a cgroup limit binds.
    pub const SECTORS: u8 = 3;
    pub const CGROUP_LIMIT: u8 = 3;
    pub const FREE_AT_PEAK: u8 = 3;
    pub const RECORDING: u8 = 3;
    /// The failures, seconds per proof, dropped samples or events, bad lines.
    pub const FAILED: u8 = 2;
    pub const PER_PROOF: u8 = 2;
    pub const DROPS: u8 = 2;
    /// The batch mode, the phase.
    pub const MODE: u8 = 1;
    pub const PHASE: u8 = 1;
    /// Never left out: the state, the proof count, an alert's rule, a predicted shortage, a
    /// time to OOM under the horizon and the limit it runs into, a failing recording.
    pub const KEPT: u8 = 0;
}

/// Draw the header into `area` (two rows). Every item is shown whole or left out whole; on a
/// narrow screen the least needed give way first (see [`Item`]; `rank` names the ranks). Line 1: the name, the rate
/// (its short form first) and the average, the process count, the cancellations and then the
/// sectors of the proof count, the backend, seconds per proof, the failures, the mode. Line 2:
/// MemAvailable, a zero drop count, an alert's explanation, the uptime, each GPU's
/// utilisation (the busiest stays), the SRS, the recording dot, the cores busy, the memory
/// predicted free at the running proof's peak, then dropped samples or events, then the phase. Never the state, the proof count, an alert's rule, a predicted
/// shortage, a time to OOM under the horizon or a failing recording.
pub fn draw(buf: &mut Buffer, area: Rect, app: &App) {
    let room = area.width as usize;
    // The name only on wide screens: narrower ones keep their room for the figures.
    let l1 = line1(app, area.width >= 100);
    buf.set_line(area.x, area.y, &Line::from(fit(l1, room)), area.width);
    if area.height > 1 {
        let mut l2 = fit(line2(app), room);
        // The phase gave way: the line starts at the next item, not at its separator.
        if l2.first().is_some_and(|s| s.content == sep(app).content) {
            l2.remove(0);
        }
        buf.set_line(area.x, area.y + 1, &Line::from(l2), area.width);
    }
}

/// Line 1: who is running and what it has done, in order.
fn line1(app: &App, named: bool) -> Vec<Item<'static>> {
    let mut l1: Vec<Item> = Vec::new();
    if named {
        l1.push(name(app));
    }
    l1.push(state(app));
    l1.extend(processes(app));
    l1.extend(backend(app));
    l1.extend(mode(app));
    // Proofs the prover announced, or its log lines did.
    let m = &app.model;
    if m.has_events() || !m.proofs.running.is_empty() || !m.proofs.finished.is_empty() {
        l1.push(proof_count(app));
        l1.extend(proof_notes(app));
        l1.extend(per_proof(app));
        l1.extend(average(app));
        l1.extend(rate(app));
    }
    l1
}

/// Line 2: how it is doing, in order.
fn line2(app: &App) -> Vec<Item<'static>> {
    let mut l2: Vec<Item> = vec![phase(app)];
    if app.model.has_events() {
        l2.push(srs(app));
    }
    l2.extend(cpu(app));
    l2.extend(gpus(app));
    l2.extend(free_at_peak(app));
    let oom = time_to_oom(app);
    let oom_shown = oom.is_some();
    l2.extend(oom);
    l2.extend(uptime(app));
    l2.push(drops(app));
    l2.extend(events_dropped(app));
    l2.extend(bad_lines(app));
    l2.extend(recording_failing(app));
    l2.extend(alert(app).or_else(|| recording(app)));
    l2.extend(limit(app, oom_shown));
    l2
}

/// The separator before an item.
fn sep(app: &App) -> Span<'static> {
    Span::styled(" │ ", app.theme.dim())
}

fn name(app: &App) -> Item<'static> {
    Item::new(
        rank::NAME,
        vec![Span::styled("provetop ", app.theme.bold())],
    )
}

/// The child's state and pid.
fn state(app: &App) -> Item<'static> {
    let t = &app.theme;
    let m = &app.model;
    let state = match (&app.screen, &m.child) {
        (Screen::Replay(p), _) if p.abrupt_end && app.clock >= p.end => {
            Span::styled(format!("■ {}", crate::text::ABRUPT_END), t.bad())
        }
        (
            Screen::Watch { what },
            ChildStatus::Exited {
                reason, oom_kill, ..
            },
        ) => {
            let short = Span::styled(
                format!("■ {what} {}", short_reason(reason, *oom_kill)),
                t.bad(),
            );
            return Item::new(
                rank::KEPT,
                vec![Span::styled(format!("■ {what} {reason}"), t.bad())],
            )
            .or(rank::KEPT, vec![short]);
        }
        (Screen::Watch { what }, _) => Span::styled(format!("◉ watching {what}"), t.ok()),
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
                pid,
                code,
                reason,
                oom_kill,
                ..
            },
        ) => {
            let style = if *code == Some(0) { t.text() } else { t.bad() };
            let short = format!("■ pid {pid} {}", short_reason(reason, *oom_kill));
            return Item::new(
                rank::KEPT,
                vec![Span::styled(format!("■ pid {pid} {reason}"), style)],
            )
            .or(rank::KEPT, vec![Span::styled(short, style)]);
        }
        (_, ChildStatus::Restarting { attempt, backoff_s }) => {
            Span::styled(format!("↻ restart #{attempt} in {backoff_s:.0}s"), t.warn())
        }
    };
    Item::new(rank::KEPT, vec![state])
}

/// An exit's reason in its short form, for a narrow header (the log has it whole): an OOM
/// kill says so; any other, its words before the parenthesis ("killed by SIGKILL").
fn short_reason(reason: &str, oom_kill: bool) -> &str {
    if oom_kill {
        return "OOM-killed";
    }
    reason.split(" (").next().unwrap_or(reason)
}

/// The processes in the tree, when more than one.
fn processes(app: &App) -> Option<Item<'static>> {
    let procs = app.model.last_sample.as_ref()?.procs;
    (procs > 1).then(|| {
        Item::new(
            rank::PROCESSES,
            vec![Span::styled(format!(" ({procs} procs)"), app.theme.dim())],
        )
    })
}

/// The prover's backend and GPU count, or what stands in for its events.
fn backend(app: &App) -> Option<Item<'static>> {
    let t = &app.theme;
    let m = &app.model;
    if let Some(h) = &m.prover.hello {
        let backend = crate::text::inert(&h.backend.to_string()).into_owned();
        let mut spans = vec![sep(app), Span::raw(backend)];
        if !h.gpus.is_empty() {
            spans.push(Span::styled(format!("×{}", h.gpus.len()), t.dim()));
        }
        Some(Item::new(rank::BACKEND, spans))
    } else if !m.has_events() && !matches!(m.child, ChildStatus::None) {
        let what = if m.has_derived() {
            "phases from its log lines"
        } else if m.has_nvtx() {
            "phases from NVTX ranges"
        } else {
            "no events"
        };
        Some(Item::new(
            rank::BACKEND,
            vec![sep(app), Span::styled(what, t.dim())],
        ))
    } else {
        None
    }
}

fn mode(app: &App) -> Option<Item<'static>> {
    let t = &app.theme;
    let mode = app.model.prover.mode?;
    Some(Item::new(
        rank::MODE,
        vec![
            sep(app),
            Span::styled("mode ", t.dim()),
            Span::styled(mode.to_string(), t.bold()),
        ],
    ))
}

fn proof_count(app: &App) -> Item<'static> {
    let t = &app.theme;
    Item::new(
        rank::KEPT,
        vec![
            sep(app),
            Span::styled("proofs ", t.dim()),
            Span::styled(app.model.prover.proofs_done.to_string(), t.bold()),
        ],
    )
}

/// One parenthesis for what else the proof count hides: sectors (batch:N), failures,
/// proofs the stop ended, cancellations; failures outlast the rest on a narrow screen.
fn proof_notes(app: &App) -> Option<Item<'static>> {
    let t = &app.theme;
    let p = &app.model.prover;
    let sectors = (p.sectors_done != p.proofs_done)
        .then(|| Span::styled(format!("{} sectors", p.sectors_done), t.dim()));
    let failed =
        (p.proofs_failed > 0).then(|| Span::styled(format!("{} failed", p.proofs_failed), t.bad()));
    let stopped = (p.proofs_stopped > 0)
        .then(|| Span::styled(format!("{} stopped", p.proofs_stopped), t.dim()));
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
    let all = paren(vec![sectors.clone(), failed.clone(), stopped, cancelled])?;
    let mut item = Item::new(rank::CANCELLED, all);
    if let Some(fewer) = paren(vec![sectors, failed.clone()]) {
        // Sectors apart from proofs matter more than the backend's name.
        item = item.or(rank::SECTORS, fewer);
    }
    if let Some(only) = paren(vec![failed]) {
        item = item.or(rank::FAILED, only);
    }
    Some(item)
}

/// Seconds the last proof took.
fn per_proof(app: &App) -> Option<Item<'static>> {
    let last = app.model.prover.last_s?;
    Some(Item::new(
        rank::PER_PROOF,
        vec![sep(app), Span::raw(format!("{}/proof", fmt_secs(last)))],
    ))
}

/// The average seconds per proof, beside the last one's.
fn average(app: &App) -> Option<Item<'static>> {
    app.model.prover.last_s?;
    let avg = app.model.prover.avg_s()?;
    Some(Item::new(
        rank::AVERAGE,
        vec![Span::styled(
            format!(" avg {}", fmt_secs(avg)),
            app.theme.dim(),
        )],
    ))
}

/// Seconds per proof understate a mode that overlaps proofs: the rate says what the current
/// mode delivers.
fn rate(app: &App) -> Option<Item<'static>> {
    let m = &app.model;
    let r = m.prover.mode.and_then(|mode| m.throughput(mode))?;
    Some(
        Item::new(
            rank::RATE,
            vec![sep(app), Span::raw(format!("{r:.0} sectors/h"))],
        )
        .or(
            rank::RATE_SHORT,
            vec![sep(app), Span::raw(format!("{r:.0}/h"))],
        ),
    )
}

fn phase(app: &App) -> Item<'static> {
    let t = &app.theme;
    Item::new(
        rank::PHASE,
        vec![
            Span::styled("phase ", t.dim()),
            Span::styled(app.model.header_phase_text(), t.bold()),
        ],
    )
}

fn srs(app: &App) -> Item<'static> {
    Item::new(
        rank::SRS,
        vec![
            sep(app),
            Span::styled("SRS ", app.theme.dim()),
            Span::raw(crate::text::srs(&app.model.prover.srs)),
        ],
    )
}

/// Where the cores go now: the tree's cores busy of those online. Unknown reads "-", never 0.
fn cpu(app: &App) -> Option<Item<'static>> {
    let t = &app.theme;
    let (_, u) = app.model.usage.latest()?;
    let cores = u
        .cores
        .filter(|c| c.is_finite())
        .map_or("-".into(), |c| format!("{c:.1}"));
    let of = if u.host_ncpu > 0 {
        format!("/{}", u.host_ncpu)
    } else {
        String::new()
    };
    Some(
        Item::new(
            rank::CPU,
            vec![
                sep(app),
                Span::styled("cpu ", t.dim()),
                Span::raw(format!("{cores}{of}")),
            ],
        )
        .or(
            rank::CPU,
            vec![sep(app), Span::styled("cpu ", t.dim()), Span::raw(cores)],
        ),
    )
}

/// Where the GPUs go now: each GPU's utilisation (the busiest alone on a narrow screen).
/// Unknown reads "-", never 0.
fn gpus(app: &App) -> Option<Item<'static>> {
    let t = &app.theme;
    let m = &app.model;
    let Some(gpus) = m
        .last_sample
        .as_ref()
        .map(|s| &s.gpus)
        .filter(|g| !g.is_empty())
    else {
        // GPUs were read before and are not now (NVML failing, a GPU gone): unknown.
        return m.usage.gpus.iter().any(|g| g.series.total() > 0).then(|| {
            Item::new(
                rank::GPU_EACH,
                vec![sep(app), Span::styled("gpu -", t.dim())],
            )
        });
    };
    let all: Vec<String> = gpus
        .iter()
        .map(|g| g.utilization().map_or("-".to_string(), |u| format!("{u}%")))
        .collect();
    let max = gpus.iter().filter_map(|g| g.utilization()).max();
    let mut item = Item::new(
        rank::GPU_EACH,
        vec![
            sep(app),
            Span::styled("gpu ", t.dim()),
            Span::raw(all.join(" ")),
        ],
    );
    if gpus.len() > 1 {
        item = item.or(
            rank::GPU_BUSIEST,
            vec![
                sep(app),
                Span::styled("gpu ", t.dim()),
                Span::raw(max.map_or("-".to_string(), |u| format!("{u}%"))),
                Span::styled(" max", t.dim()),
            ],
        );
    }
    Some(item)
}

/// Will the proof running fit? What is predicted to be left at its peak, once a proof of its
/// shape has finished (the `predicted_free` forecast); short of memory, in red and kept.
fn free_at_peak(app: &App) -> Option<Item<'static>> {
    let t = &app.theme;
    let free = app.model.predicted_free()?;
    Some(if free < 0.0 {
        Item::new(
            rank::KEPT,
            vec![
                sep(app),
                Span::styled(
                    format!("{} short at peak", short_bytes(-free as u64)),
                    t.bad(),
                ),
            ],
        )
    } else {
        Item::new(
            rank::FREE_AT_PEAK,
            vec![
                sep(app),
                Span::raw(short_bytes(free as u64)),
                Span::styled(" free at peak", t.dim()),
            ],
        )
    })
}

/// At this rate, when does memory run out? (the trend forecast, for any process): under the
/// horizon, in red and kept. A `time_to_oom` rule that fires sets a horizon of its own.
fn time_to_oom(app: &App) -> Option<Item<'static>> {
    let m = &app.model;
    let rule_fires = m
        .alerts
        .active
        .iter()
        .any(|a| a.alert.metric == Metric::TimeToOom.name());
    let secs = m
        .time_to_oom()
        .filter(|&s| s < DEFAULT_OOM_HORIZON_S || rule_fires)?;
    Some(Item::new(
        rank::KEPT,
        vec![
            sep(app),
            Span::styled(format!("OOM in {}", fmt_secs(secs)), app.theme.bad()),
        ],
    ))
}

/// How long the child has run (the session, once it has not).
fn uptime(app: &App) -> Option<Item<'static>> {
    let m = &app.model;
    let up = match &m.child {
        ChildStatus::Running { since, .. } => Some(app.clock.saturating_sub(*since)),
        _ => m.first_t().map(|f| app.clock.saturating_sub(f)),
    }?;
    Some(Item::new(
        rank::UPTIME,
        vec![
            sep(app),
            Span::styled("up ", app.theme.dim()),
            Span::raw(fmt_secs(up as f64 / NS as f64)),
        ],
    ))
}

/// Samples dropped: always shown, and kept longer once there are some.
fn drops(app: &App) -> Item<'static> {
    let t = &app.theme;
    let drops = app.model.notes.dropped_samples;
    Item::new(
        if drops > 0 {
            rank::DROPS
        } else {
            rank::NO_DROPS
        },
        vec![
            sep(app),
            Span::styled(
                format!("drops {drops}"),
                if drops > 0 { t.warn() } else { t.dim() },
            ),
        ],
    )
}

fn events_dropped(app: &App) -> Option<Item<'static>> {
    let n = app.model.notes.dropped_events;
    (n > 0).then(|| {
        Item::new(
            rank::DROPS,
            vec![Span::styled(
                format!(" events dropped {n}"),
                app.theme.warn(),
            )],
        )
    })
}

fn bad_lines(app: &App) -> Option<Item<'static>> {
    let n = app.model.notes.bad_lines;
    (n > 0).then(|| {
        Item::new(
            rank::DROPS,
            vec![Span::styled(format!(" bad {n}"), app.theme.warn())],
        )
    })
}

fn recording_failing(app: &App) -> Option<Item<'static>> {
    app.recording_failing.then(|| {
        Item::new(
            rank::KEPT,
            vec![sep(app), Span::styled("✖ rec failing", app.theme.bad())],
        )
    })
}

/// The gravest alert firing, and how many more.
fn alert(app: &App) -> Option<Item<'static>> {
    let m = &app.model;
    let a = m.alerts.active.iter().max_by_key(|a| a.alert.level)?;
    let more = if m.alerts.active.len() > 1 {
        format!(" +{}", m.alerts.active.len() - 1)
    } else {
        String::new()
    };
    // The rule as written, or on a narrow screen without its explanation: "⚠ rss > 90GiB"
    // rather than no alert at all.
    let rule = crate::text::inert(&a.alert.rule).into_owned();
    let short = rule.split_once(" (").map_or(rule.as_str(), |(r, _)| r);
    let style = app.theme.alert(a.alert.level);
    Some(
        Item::new(
            rank::ALERT_EXPLAINED,
            vec![sep(app), Span::styled(format!("⚠ {rule}{more}"), style)],
        )
        .or(
            rank::KEPT,
            vec![sep(app), Span::styled(format!("⚠ {short}{more}"), style)],
        ),
    )
}

/// The recording dot, while the session file is written (and no alert takes its place).
fn recording(app: &App) -> Option<Item<'static>> {
    (app.recording.is_some() && !app.recording_failing).then(|| {
        Item::new(
            rank::RECORDING,
            vec![
                sep(app),
                Span::styled("● rec", app.theme.metric(crate::series::Metric::Peak)),
            ],
        )
    })
}

/// The room left before the limit that binds, and its name: "0.4G left of 2.5G curio.service
/// memory.max", "avail 80G" while the host's MemAvailable binds. Kept while a time to OOM is
/// shown (it says what the tree runs into), in red under a tenth of the limit.
fn limit(app: &App, oom_shown: bool) -> Option<Item<'static>> {
    let t = &app.theme;
    let (room, of, name) = app.model.binding()?;
    let host = name == provetop_shared::limit::HOST;
    let short = of.is_some_and(|l| room < l / 10);
    let style = if short { t.bad() } else { t.dim() };
    let left = short_bytes(room);
    let text = match (host, of) {
        (true, _) => format!("avail {left}"),
        (false, Some(l)) => format!("{left} left of {} {name}", short_bytes(l)),
        (false, None) => format!("{left} left before {name}"),
    };
    let rank = match (oom_shown, host) {
        (true, _) => rank::KEPT,
        (false, true) => rank::AVAILABLE,
        (false, false) => rank::CGROUP_LIMIT,
    };
    // Narrower: the cgroup without its file ("0.4G left, curio.service"), then the room alone.
    let cgroup = name.split(' ').next().unwrap_or(&name).to_string();
    let mut item = Item::new(rank, vec![sep(app), Span::styled(text, style)]);
    if !host {
        item = item
            .or(
                rank,
                vec![
                    sep(app),
                    Span::styled(format!("{left} left, {cgroup}"), style),
                ],
            )
            .or(
                rank,
                vec![sep(app), Span::styled(format!("{left} left"), style)],
            );
    }
    Some(item)
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

    #[test]
    fn a_cgroup_that_binds_is_named_with_its_room_and_kept_beside_the_time_to_oom() {
        use provetop_shared::{Binding, Kernel};
        let mut app = App::new(Screen::Run, Default::default(), Theme::mono(), NS);
        app.model.apply(&Record::new(
            NS,
            RecordBody::Kernel(Box::new(Kernel {
                binding: Some(Binding {
                    name: "curio.service memory.max".into(),
                    limit: 5 * GIB / 2,
                    used: 2 * GIB,
                }),
                ..Kernel::default()
            })),
        ));
        // 200 MiB/s towards a 2.5 GiB cgroup on a host with plenty available.
        for i in 0..=100u64 {
            let t = NS + i * NS / 20;
            let rss = GIB + (200 << 20) * i / 20;
            app.clock = t;
            app.model.apply(&Record::new(
                t,
                RecordBody::Sample(Sample {
                    rss,
                    mem_available: Some(100 * GIB),
                    mem_total: Some(128 * GIB),
                    cgroup_current: Some(rss),
                    cgroup_max: Some(5 * GIB / 2),
                    ..Sample::default()
                }),
            ));
        }
        let l = line2(&app, 200);
        assert!(l.contains("left of 2.50G curio.service memory.max"), "{l}");
        assert!(l.contains("OOM in"), "{l}");
        // At 80 columns both stay: the time to OOM and what it runs into.
        let l = line2(&app, 80);
        assert!(
            l.contains("OOM in") && l.contains("curio.service memory.max"),
            "{l}"
        );
    }
}
