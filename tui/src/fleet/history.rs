//! A fleet row's history (Enter on the fleet screen): range queries over the chosen window,
//! turned into the records a session file holds (samples, usage readings, notes for the
//! phases Prometheus saw open), then drawn by the live screen itself, as `replay --follow`
//! draws a finished file: the same chart, usage and log widgets. Prometheus's resolution is
//! its scrape interval (or the query's step), not the sampler's: said on the screen.

use std::collections::BTreeMap;

use provetop_shared::classify::Thresholds;
use provetop_shared::{Mark, Record, RecordBody, Sample, Usage};

use super::prom::{Prom, Range};
use super::rows::Row;
use crate::app::{Action, App, Screen};
use crate::event_loop::{self, Driver};
use crate::theme::Theme;

/// Most points a series of the history holds (the step grows with the window).
const POINTS: f64 = 2000.0;

/// The history's columns: (name, query of one host, `$k` its selector).
const SERIES: [(&str, &str); 14] = [
    ("rss", "provetop_rss_bytes$k"),
    ("peak", "provetop_rss_interval_peak_bytes$k"),
    ("anon", "provetop_rss_anon_bytes$k"),
    ("file", "provetop_rss_file_bytes$k"),
    ("shmem", "provetop_rss_shmem_bytes$k"),
    ("pinned", "sum without (source) (provetop_pinned_bytes$K{source=\"measured\"})"),
    ("gpu", "sum without (gpu, device) (provetop_gpu_memory_used_bytes$k)"),
    ("avail", "provetop_mem_available_bytes$k"),
    ("total", "provetop_mem_total_bytes$k"),
    ("limit", "provetop_memory_limit_bytes$k and on (job, instance) provetop_memory_limit_info$K{kind=\"cgroup\"}"),
    ("procs", "provetop_processes$k"),
    ("cores", "provetop_cpu_cores$k"),
    ("host_cores", "provetop_host_cpu_cores$k"),
    ("phase", "provetop_phase$k == 1"),
];

fn quote(s: &str) -> String {
    s.replace('\\', "\\\\").replace('"', "\\\"")
}

/// The records of `row`'s last `window` seconds, oldest first, and Prometheus's errors.
pub fn records(prom: &Prom, row: &Row, now: f64, window: f64) -> (Vec<Record>, Vec<String>) {
    let sel = format!(
        "job=\"{}\",instance=\"{}\"",
        quote(&row.job),
        quote(&row.instance)
    );
    let start = now - window;
    let step = (window / POINTS).max(1.0);
    let answers: Vec<(&str, anyhow::Result<Vec<Range>>)> = std::thread::scope(|s| {
        let hs: Vec<_> = SERIES
            .iter()
            .map(|(n, q)| {
                let q = q
                    .replace("$K{", &format!("{{{sel},"))
                    .replace("$k", &format!("{{{sel}}}"));
                (
                    *n,
                    s.spawn(move || prom.range(&q, start, now, step).map(|a| a.data)),
                )
            })
            .collect();
        hs.into_iter()
            .map(|(n, h)| {
                (
                    n,
                    h.join()
                        .unwrap_or_else(|_| Err(anyhow::anyhow!("query thread panicked"))),
                )
            })
            .collect()
    });
    let mut errors = Vec::new();
    // Per step time: each column's value.
    let mut at: BTreeMap<i64, BTreeMap<&str, f64>> = BTreeMap::new();
    let mut phases: BTreeMap<i64, Vec<String>> = BTreeMap::new();
    for (name, a) in answers {
        let series = match a {
            Ok(s) => s,
            Err(e) => {
                errors.push(format!("{name}: {e:#}"));
                continue;
            }
        };
        for s in series {
            for (t, v) in &s.points {
                let k = (t * 1000.0).round() as i64;
                if name == "phase" {
                    let p = s.labels.get("phase").cloned().unwrap_or_default();
                    phases
                        .entry(k)
                        .or_default()
                        .push(crate::text::inert(&p).into_owned());
                } else {
                    *at.entry(k).or_default().entry(name).or_insert(0.0) += v;
                }
            }
        }
    }
    let t0 = (start * 1000.0).round() as i64;
    let ns = |k: i64| ((k - t0).max(0) as u64) * 1_000_000 + 1;
    let mut out = Vec::new();
    let mut open: Vec<String> = Vec::new();
    let steps: std::collections::BTreeSet<i64> = at.keys().chain(phases.keys()).copied().collect();
    for k in steps {
        let now_open = phases.get(&k).cloned().unwrap_or_default();
        if now_open != open {
            let text = if now_open.is_empty() {
                "phases: none open".to_string()
            } else {
                format!("phases: {}", now_open.join(" + "))
            };
            out.push(Record {
                t: ns(k),
                body: RecordBody::Mark(Mark::Note { text }),
            });
            open = now_open;
        }
        let Some(v) = at.get(&k) else { continue };
        let g = |n: &str| {
            v.get(n)
                .filter(|x| x.is_finite() && **x >= 0.0)
                .map(|x| *x as u64)
        };
        if let Some(rss) = g("rss") {
            out.push(Record {
                t: ns(k),
                body: RecordBody::Sample(Sample {
                    rss,
                    peak: g("peak"),
                    anon: g("anon"),
                    file: g("file"),
                    shmem: g("shmem"),
                    pinned: g("pinned"),
                    gpu_used: g("gpu"),
                    mem_available: g("avail"),
                    mem_total: g("total"),
                    cgroup_max: g("limit"),
                    procs: g("procs").unwrap_or(0) as u32,
                    ..Sample::default()
                }),
            });
        }
        if let Some(cores) = v.get("cores") {
            out.push(Record {
                t: ns(k),
                body: RecordBody::Usage(Usage {
                    interval_ns: (step * 1e9) as u64,
                    cores: Some(*cores),
                    host_cores: v.get("host_cores").copied(),
                    ..Usage::default()
                }),
            });
        }
    }
    (out, errors)
}

/// Draws the records once loaded; nothing comes in, no control goes out.
struct Still;

impl Driver for Still {
    fn poll(&mut self, _app: &mut App) -> bool {
        false
    }
    fn act(&mut self, app: &mut App, _a: Action) {
        app.flash("a history from Prometheus: no prover to command", true);
    }
}

/// Show `row`'s history on the live screen until q.
pub fn show(prom: &Prom, row: &Row, now: f64, window: f64) -> anyhow::Result<()> {
    let (records, errors) = records(prom, row, now, window);
    let mut app = App::new(Screen::Follow, Thresholds::default(), Theme::from_env(), 1);
    for r in &records {
        app.model.apply(r);
    }
    app.origin = app.model.first_t().unwrap_or(1);
    app.clock = records.last().map_or(1, |r| r.t);
    // The whole history in view: a point per scrape is far sparser than the sampler's.
    let span = app.clock.saturating_sub(app.origin) as f64 / 1e9;
    app.view.zoom = crate::app::View::zoom_for(span.max(60.0));
    app.recording = Some(format!(
        "Prometheus {}: {} ({}), last {}",
        crate::text::inert(prom.url()),
        crate::text::inert(&row.host),
        crate::text::inert(&row.instance),
        provetop_shared::units::fmt_secs(window)
    ));
    let said = match (records.is_empty(), errors.first()) {
        (_, Some(e)) => format!("Prometheus: {e}"),
        (true, None) => "Prometheus holds nothing for this host in the window".to_string(),
        (false, None) => "history from Prometheus (one point per scrape or step); q returns".into(),
    };
    app.flash(said, !errors.is_empty() || records.is_empty());
    let rt = crate::monitor::runtime()?;
    rt.block_on(async {
        let stop = crate::monitor::signals::stop_signal();
        event_loop::run_on_terminal(&mut app, &mut Still, stop, false).await
    })?;
    Ok(())
}
