//! A fleet row in words: the columns the screen and `--once --format table` show, each cell
//! made inert (label values come from whoever runs a scraped provetop).

use provetop_shared::units::{fmt_bytes, fmt_secs};

use super::rows::Row;

/// The columns: (heading, whether the narrow screen keeps it).
pub const COLUMNS: [(&str, bool); 13] = [
    ("HOST", true),
    ("SESSION", false),
    ("STATE", true),
    ("MODE", false),
    ("PHASE", false),
    ("RSS/LIMIT", true),
    ("PINNED", false),
    ("GPU MEM", false),
    ("GPU%", false),
    ("TTO", true),
    ("PROOFS/H", true),
    ("ALERTS", true),
    ("AGE", true),
];

fn bytes(v: Option<f64>) -> String {
    v.filter(|b| b.is_finite() && *b >= 0.0)
        .map_or("-".into(), |b| fmt_bytes(b as u64))
}

fn text(v: Option<&String>) -> String {
    v.map_or("-".into(), |s| crate::text::inert(s).into_owned())
}

/// The row's cells, in [`COLUMNS`] order.
pub fn cells(r: &Row) -> Vec<String> {
    let limit = match (r.rss_bytes, r.limit_bytes) {
        (Some(rss), Some(l)) if l > 0.0 => {
            format!(
                "{}/{} {:.0}%",
                bytes(Some(rss)),
                bytes(Some(l)),
                100.0 * rss / l
            )
        }
        (rss, _) => bytes(rss),
    };
    let alerts = match (r.alerts_firing, r.red.is_empty()) {
        (a, false) => format!(
            "{} {}",
            a.map_or("-".into(), |a| format!("{a:.0}")),
            r.red.join(",")
        ),
        (Some(a), true) => format!("{a:.0}"),
        (None, true) => "-".into(),
    };
    vec![
        crate::text::inert(&r.host).into_owned(),
        text(r.session.as_ref()),
        crate::text::inert(&r.state).into_owned(),
        text(r.mode.as_ref()),
        text(r.phase.as_ref()),
        limit,
        bytes(r.pinned_bytes),
        bytes(r.gpu_memory_bytes),
        r.gpu_utilization
            .map_or("-".into(), |u| format!("{:.0}%", 100.0 * u)),
        r.time_to_oom_s.map_or("-".into(), fmt_secs),
        r.proofs_per_hour.map_or("-".into(), |p| format!("{p:.1}")),
        alerts,
        r.scrape_age_s.map_or("-".into(), |a| {
            if a < 60.0 {
                format!("{a:.0}s")
            } else {
                fmt_secs(a.round())
            }
        }),
    ]
}
