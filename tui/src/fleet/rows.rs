//! The fleet's rows: one per scraped provetop (Prometheus's `job` and `instance`), read with
//! one instant query per column over every host at once ([`QUERIES`]: their number does not
//! grow with the fleet, each answer has one series per host), and the shipped alerts'
//! conditions ([`RED`], the expressions of `assets/prometheus/provetop.rules.yml`) that turn a
//! row red. What a row lacks is `None` (shown `-`), never 0.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Serialize;

use super::prom::{Prom, Series};

/// A row's key: Prometheus's `job` and `instance` labels.
pub type Key = (String, String);

/// One scraped provetop.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Row {
    pub job: String,
    pub instance: String,
    /// The `host` label (the shipped scrape config's), else the instance.
    pub host: String,
    /// The session's id (`provetop_session_info`), what `attach HOST:SESSION` takes.
    pub session: Option<String>,
    pub version: Option<String>,
    /// Whether Prometheus's last scrape of it worked (`up`).
    pub up: Option<bool>,
    /// `down`, `proving`, `idle`, `paused`, `stopping`, `running` (a child that speaks no
    /// protocol), `exited` (no child now).
    pub state: String,
    pub mode: Option<String>,
    /// Phases open now, `+`-joined (a threshold phase for a child without events).
    pub phase: Option<String>,
    pub rss_bytes: Option<f64>,
    /// The limit that binds the tree, its name, and the room left before it.
    pub limit_bytes: Option<f64>,
    pub limit_name: Option<String>,
    pub room_bytes: Option<f64>,
    pub pinned_bytes: Option<f64>,
    pub gpu_memory_bytes: Option<f64>,
    pub gpu_utilization: Option<f64>,
    pub time_to_oom_s: Option<f64>,
    pub proofs_ok: Option<f64>,
    /// Proofs finished per hour over the last 30 minutes (absent until two scrapes saw the
    /// counter; low while the series is younger than that).
    pub proofs_per_hour: Option<f64>,
    pub oom_kills: Option<f64>,
    /// provetop's own alerts firing on the host.
    pub alerts_firing: Option<f64>,
    /// Seconds since Prometheus last scraped it.
    pub scrape_age_s: Option<f64>,
    /// The shipped alerts whose condition holds now (the row is red when any does).
    pub red: Vec<String>,
}

/// The columns' queries: (name, PromQL). `$s` stands for the selector of provetop's jobs.
pub const QUERIES: [(&str, &str); 19] = [
    ("up", "up$s"),
    ("scrape_time", "timestamp(up$s)"),
    ("build", "provetop_build_info$s"),
    ("session", "provetop_session_info$s"),
    ("state", "provetop_prover_state$s == 1"),
    ("child", "provetop_child_running$s"),
    ("mode", "provetop_prover_info$s"),
    ("phase", "provetop_phase$s == 1"),
    ("threshold_phase", "provetop_threshold_phase$s == 1"),
    ("rss", "provetop_rss_bytes$s"),
    ("limit", "provetop_memory_limit_bytes$s"),
    ("limit_name", "provetop_memory_limit_info$s"),
    ("room", "provetop_memory_limit_room_bytes$s"),
    ("pinned", "sum without (source) (provetop_pinned_bytes$S{source=\"measured\"})"),
    ("gpu_mem", "sum without (gpu, device) (provetop_gpu_memory_used_bytes$s)"),
    ("gpu_util", "avg without (gpu, device) (provetop_gpu_utilization_ratio$s)"),
    ("tto", "provetop_time_to_oom_seconds$s"),
    ("proofs", "sum without (result) (provetop_proofs_total$S{result=\"ok\"})"),
    ("rates", "label_replace(3600 * sum without (result) (rate(provetop_proofs_total$S{result=\"ok\"}[30m])), \"what\", \"proofs_per_hour\", \"job\", \".*\") or label_replace(provetop_oom_kills_total$s, \"what\", \"oom_kills\", \"job\", \".*\") or label_replace(count without (rule, level, metric) (provetop_alert_active$s == 1), \"what\", \"alerts\", \"job\", \".*\")"),
];

/// The shipped alerts' conditions, as `provetop.rules.yml` writes them (a test holds them
/// equal): a row is red while one holds (the rules' `for:` is not waited for).
pub const RED: [(&str, &str); 7] = [
    (
        "ProvetopRssOver90Percent",
        "provetop_rss_bytes > 0.9 * (provetop_cgroup_memory_max_bytes or provetop_mem_total_bytes)",
    ),
    ("ProvetopPredictedOOM", "provetop_predicted_free_bytes < 0"),
    ("ProvetopAlert", "provetop_alert_active == 1"),
    (
        "ProvetopOOMKill",
        "increase(provetop_oom_kills_total[15m]) > 0 or (provetop_oom_kills_total > 0 unless provetop_oom_kills_total offset 15m)",
    ),
    (
        "ProvetopNearBindingLimit",
        "provetop_memory_limit_room_bytes < 0.05 * provetop_memory_limit_bytes",
    ),
    (
        "ProvetopMemoryPressure",
        "max without (scope) (provetop_pressure_avg10_ratio{resource=\"memory\",line=\"full\"}) > 0.1",
    ),
    (
        "ProvetopNextProofWillNotFit",
        "provetop_last_proof_peak_bytes - provetop_rss_bytes - provetop_memory_limit_room_bytes > 0",
    ),
];

/// What one refresh read: the rows, and how Prometheus answered.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Reading {
    pub rows: Vec<Row>,
    /// Queries sent, and those that failed (name: error).
    pub queries: usize,
    pub failed: Vec<String>,
    /// Prometheus's own warnings (partial data).
    pub warnings: Vec<String>,
    /// The slowest query's seconds.
    pub slowest_s: f64,
    /// Prometheus's time of the reading (unix seconds).
    pub at: f64,
}

/// The selector of provetop's jobs: `{job="provetop"}`, or `{job=~"a|b"}`.
pub fn selector(jobs: &[String]) -> (String, String) {
    let inner = match jobs {
        [] => String::new(),
        [one] => format!("job=\"{}\"", escape(one)),
        many => format!(
            "job=~\"{}\"",
            many.iter()
                .map(|j| escape(&regex_quote(j)))
                .collect::<Vec<_>>()
                .join("|")
        ),
    };
    let full = if inner.is_empty() {
        String::new()
    } else {
        format!("{{{inner}}}")
    };
    (full, inner)
}

fn escape(s: &str) -> String {
    s.replace('\\', "\\\\").replace('"', "\\\"")
}

fn regex_quote(s: &str) -> String {
    s.chars()
        .flat_map(|c| {
            let special = "\\.+*?()|[]{}^$".contains(c);
            special
                .then_some('\\')
                .into_iter()
                .chain(std::iter::once(c))
        })
        .collect()
}

/// `query` with the jobs' selector in: `$s` a whole selector, `$S{a="b"}` merged with one.
pub fn with_selector(query: &str, sel: &(String, String)) -> String {
    let merged = if sel.1.is_empty() {
        "{".to_string()
    } else {
        format!("{{{},", sel.1)
    };
    query.replace("$S{", &merged).replace("$s", &sel.0)
}

/// The red rules' queries with the jobs' selector: each ANDed with the jobs' `up`.
fn red_query(expr: &str, sel: &(String, String)) -> String {
    if sel.0.is_empty() {
        expr.to_string()
    } else {
        format!("({expr}) and on (job, instance) up{}", sel.0)
    }
}

/// One refresh: every query at once (a thread each, each bounded by the client's timeout).
pub fn read(prom: &Prom, jobs: &[String]) -> Reading {
    let sel = selector(jobs);
    let mut asks: Vec<(String, String)> = QUERIES
        .iter()
        .map(|(n, q)| (n.to_string(), with_selector(q, &sel)))
        .collect();
    asks.extend(
        RED.iter()
            .map(|(n, q)| (format!("red:{n}"), red_query(q, &sel))),
    );
    asks.push(("time".into(), "time()".into()));
    let answers: Vec<_> = std::thread::scope(|s| {
        let handles: Vec<_> = asks
            .iter()
            .map(|(n, q)| (n, s.spawn(move || prom.instant(q))))
            .collect();
        handles
            .into_iter()
            .map(|(n, h)| {
                let r = h
                    .join()
                    .unwrap_or_else(|_| Err(anyhow::anyhow!("query thread panicked")));
                (n.clone(), r)
            })
            .collect()
    });
    let mut reading = Reading {
        queries: asks.len(),
        ..Reading::default()
    };
    let mut got: BTreeMap<String, Vec<Series>> = BTreeMap::new();
    for (n, r) in answers {
        match r {
            Ok(a) => {
                reading.slowest_s = reading.slowest_s.max(a.took.as_secs_f64());
                reading.warnings.extend(a.warnings);
                got.insert(n, a.data);
            }
            Err(e) => reading.failed.push(format!("{n}: {e:#}")),
        }
    }
    reading.warnings.sort();
    reading.warnings.dedup();
    reading.at = got
        .get("time")
        .and_then(|s| s.first())
        .map_or(0.0, |s| s.value);
    reading.rows = rows(&got, reading.at);
    reading
}

fn key(s: &Series) -> Key {
    let l = |k: &str| s.labels.get(k).cloned().unwrap_or_default();
    (l("job"), l("instance"))
}

/// Fold the answers into rows: every key that `up` or `provetop_build_info` names.
fn rows(got: &BTreeMap<String, Vec<Series>>, now: f64) -> Vec<Row> {
    let empty = Vec::new();
    let q = |n: &str| got.get(n).unwrap_or(&empty);
    let mut rows: BTreeMap<Key, Row> = BTreeMap::new();
    let builds: BTreeMap<Key, &Series> = q("build").iter().map(|s| (key(s), s)).collect();
    for s in q("up")
        .iter()
        .filter(|s| builds.contains_key(&key(s)) || s.value == 0.0)
    {
        let r = rows.entry(key(s)).or_default();
        r.up = Some(s.value == 1.0);
        // A target that is down has only `up` to name its host.
        r.host = s.labels.get("host").cloned().unwrap_or_default();
    }
    for (k, s) in &builds {
        let r = rows.entry(k.clone()).or_default();
        r.version = s.labels.get("version").cloned();
        if let Some(h) = s.labels.get("host") {
            r.host = h.clone();
        }
    }
    for ((job, instance), r) in rows.iter_mut() {
        r.job = job.clone();
        r.instance = instance.clone();
        if r.host.is_empty() {
            r.host = instance.clone();
        }
    }
    let mut each = |n: &str, f: &mut dyn FnMut(&mut Row, &Series)| {
        for s in q(n) {
            if let Some(r) = rows.get_mut(&key(s)) {
                f(r, s);
            }
        }
    };
    let label = |s: &Series, l: &str| s.labels.get(l).cloned();
    each("session", &mut |r, s| r.session = label(s, "session"));
    each("mode", &mut |r, s| {
        r.mode = label(s, "mode").filter(|m| !m.is_empty())
    });
    each("state", &mut |r, s| {
        r.state = label(s, "state").unwrap_or_default()
    });
    each("child", &mut |r, s| {
        if s.value == 0.0 {
            r.state = "exited".into();
        } else if r.state.is_empty() {
            r.state = "running".into();
        }
    });
    for n in ["phase", "threshold_phase"] {
        each(n, &mut |r, s| {
            let p = label(s, "phase").unwrap_or_default();
            r.phase = Some(match r.phase.take() {
                Some(had) if n == "phase" => format!("{had}+{p}"),
                Some(had) => had,
                None => p,
            });
        });
    }
    each("rss", &mut |r, s| r.rss_bytes = Some(s.value));
    each("limit", &mut |r, s| r.limit_bytes = Some(s.value));
    each("limit_name", &mut |r, s| r.limit_name = label(s, "limit"));
    each("room", &mut |r, s| r.room_bytes = Some(s.value));
    each("pinned", &mut |r, s| r.pinned_bytes = Some(s.value));
    each("gpu_mem", &mut |r, s| r.gpu_memory_bytes = Some(s.value));
    each("gpu_util", &mut |r, s| r.gpu_utilization = Some(s.value));
    each("tto", &mut |r, s| r.time_to_oom_s = Some(s.value));
    each("proofs", &mut |r, s| r.proofs_ok = Some(s.value));
    each("rates", &mut |r, s| match label(s, "what").as_deref() {
        Some("proofs_per_hour") => r.proofs_per_hour = Some(s.value),
        Some("oom_kills") => r.oom_kills = Some(s.value),
        Some("alerts") => r.alerts_firing = Some(s.value),
        _ => {}
    });
    each("scrape_time", &mut |r, s| {
        r.scrape_age_s = Some((now - s.value).max(0.0));
    });
    for (name, _) in RED {
        each(&format!("red:{name}"), &mut |r, _| {
            if !r.red.iter().any(|n| n == name) {
                r.red.push(name.to_string());
            }
        });
    }
    let mut out: Vec<Row> = rows.into_values().collect();
    for r in &mut out {
        if r.up == Some(false) {
            r.state = "down".into();
            if !r.red.iter().any(|n| n == "ProvetopDown") {
                r.red.push("ProvetopDown".into());
            }
        }
        if r.state.is_empty() {
            r.state = "-".into();
        }
        if r.alerts_firing.is_none() && r.up == Some(true) {
            r.alerts_firing = Some(0.0);
        }
    }
    out
}

/// What the rows are sorted by (`--sort`, the `s` key).
pub use crate::cli::FleetSort as SortKey;

impl SortKey {
    pub const ALL: [SortKey; 8] = [
        SortKey::Red,
        SortKey::Host,
        SortKey::State,
        SortKey::Rss,
        SortKey::Limit,
        SortKey::Tto,
        SortKey::Proofs,
        SortKey::Age,
    ];

    pub fn name(self) -> &'static str {
        match self {
            SortKey::Red => "red",
            SortKey::Host => "host",
            SortKey::State => "state",
            SortKey::Rss => "rss",
            SortKey::Limit => "limit",
            SortKey::Tto => "tto",
            SortKey::Proofs => "proofs",
            SortKey::Age => "age",
        }
    }
}

/// Sort `rows` by `key` (largest first for numbers; absent last), then by host and instance.
pub fn sort(rows: &mut [Row], key: SortKey) {
    let num = |r: &Row| -> Option<f64> {
        match key {
            SortKey::Rss => r.rss_bytes,
            SortKey::Limit => Some(r.rss_bytes? / r.limit_bytes?),
            // Soonest first: negated.
            SortKey::Tto => r.time_to_oom_s.map(|t| -t),
            SortKey::Proofs => r.proofs_per_hour,
            SortKey::Age => r.scrape_age_s,
            _ => None,
        }
    };
    rows.sort_by(|a, b| {
        let by = match key {
            SortKey::Red => b.red.is_empty().cmp(&a.red.is_empty()).reverse(),
            SortKey::State => a.state.cmp(&b.state),
            SortKey::Host => std::cmp::Ordering::Equal,
            _ => match (num(a), num(b)) {
                (Some(x), Some(y)) => y.total_cmp(&x),
                (Some(_), None) => std::cmp::Ordering::Less,
                (None, Some(_)) => std::cmp::Ordering::Greater,
                (None, None) => std::cmp::Ordering::Equal,
            },
        };
        by.then_with(|| a.host.cmp(&b.host))
            .then_with(|| a.instance.cmp(&b.instance))
    });
}

/// Whether `row` matches the filter: a case-insensitive substring of its host, instance,
/// session, state, mode or phase; `red` matches the red rows.
pub fn matches(row: &Row, filter: &str) -> bool {
    let f = filter.trim().to_lowercase();
    if f.is_empty() {
        return true;
    }
    if f == "red" {
        return !row.red.is_empty();
    }
    [
        Some(&row.host),
        Some(&row.instance),
        row.session.as_ref(),
        Some(&row.state),
        row.mode.as_ref(),
        row.phase.as_ref(),
    ]
    .into_iter()
    .flatten()
    .any(|v| v.to_lowercase().contains(&f))
}

/// A reading's health in words, for the header: `ok`, or what is wrong.
pub fn health(r: &Reading, stale_after: Duration, slow_after: Duration) -> Vec<String> {
    let mut out = Vec::new();
    if r.failed.len() == r.queries {
        out.push(format!("Prometheus DOWN: {}", first_error(&r.failed)));
        return out;
    }
    if !r.failed.is_empty() {
        out.push(format!(
            "PARTIAL: {} of {} queries failed: {}",
            r.failed.len(),
            r.queries,
            first_error(&r.failed)
        ));
    }
    for w in r.warnings.iter().take(2) {
        out.push(format!("PARTIAL: Prometheus warns: {w}"));
    }
    if r.slowest_s > slow_after.as_secs_f64() {
        out.push(format!("SLOW: a query took {:.1} s", r.slowest_s));
    }
    let stale = r
        .rows
        .iter()
        .filter(|x| {
            x.scrape_age_s
                .is_some_and(|a| a > stale_after.as_secs_f64())
        })
        .count();
    if stale > 0 {
        out.push(format!(
            "STALE: {stale} of {} not scraped for over {} s",
            r.rows.len(),
            stale_after.as_secs()
        ));
    }
    out
}

fn first_error(failed: &[String]) -> String {
    let e = failed.first().map(String::as_str).unwrap_or_default();
    // "name: Prometheus at URL: why": the why (the URL is said beside it).
    let e = e.split_once(": ").map_or(e, |(_, rest)| rest);
    e.strip_prefix("Prometheus at ")
        .and_then(|r| r.split_once(": "))
        .map_or(e, |(_, why)| why)
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn job_selectors_are_quoted_and_merged() {
        let one = selector(&["pro\"ve".into()]);
        assert_eq!(with_selector("up$s", &one), "up{job=\"pro\\\"ve\"}");
        assert_eq!(
            with_selector("x$S{a=\"b\"}", &one),
            "x{job=\"pro\\\"ve\",a=\"b\"}"
        );
        let none = selector(&[]);
        assert_eq!(with_selector("x$S{a=\"b\"}", &none), "x{a=\"b\"}");
        let two = selector(&["a.b".into(), "c".into()]);
        assert_eq!(two.0, "{job=~\"a\\\\.b|c\"}");
    }

    #[test]
    fn down_partial_slow_and_stale_are_said_and_ok_is_silent() {
        let s = Duration::from_secs(60);
        let slow = Duration::from_secs(2);
        let fresh = Row {
            scrape_age_s: Some(1.0),
            ..Row::default()
        };
        let ok = Reading {
            rows: vec![fresh.clone()],
            queries: 27,
            ..Reading::default()
        };
        assert!(health(&ok, s, slow).is_empty());
        let down = Reading {
            queries: 2,
            failed: vec!["up: Prometheus at http://p: no answer within 5s".into(); 2],
            ..Reading::default()
        };
        assert_eq!(
            health(&down, s, slow),
            ["Prometheus DOWN: no answer within 5s"]
        );
        let partial = Reading {
            rows: vec![
                fresh.clone(),
                Row {
                    scrape_age_s: Some(300.0),
                    ..Row::default()
                },
            ],
            queries: 27,
            failed: vec!["rss: Prometheus at http://p: HTTP 503: overloaded".into()],
            warnings: vec!["some store unavailable".into()],
            slowest_s: 3.5,
            ..Reading::default()
        };
        let said = health(&partial, s, slow).join(" | ");
        assert_eq!(
            said,
            "PARTIAL: 1 of 27 queries failed: HTTP 503: overloaded | PARTIAL: Prometheus warns: \
             some store unavailable | SLOW: a query took 3.5 s | STALE: 1 of 2 not scraped for \
             over 60 s"
        );
    }

    #[test]
    fn red_rows_sort_first_and_the_filter_reads_words() {
        let mut rows = vec![
            Row {
                host: "b".into(),
                state: "idle".into(),
                ..Row::default()
            },
            Row {
                host: "a".into(),
                state: "proving".into(),
                ..Row::default()
            },
            Row {
                host: "c".into(),
                red: vec!["X".into()],
                ..Row::default()
            },
        ];
        sort(&mut rows, SortKey::Red);
        let hosts: Vec<&str> = rows.iter().map(|r| r.host.as_str()).collect();
        assert_eq!(hosts, ["c", "a", "b"]);
        assert!(matches(&rows[1], "PROV"));
        assert!(matches(&rows[0], "red") && !matches(&rows[1], "red"));
    }
}
