//! `provetop fleet --prometheus URL`: every provetop a Prometheus scrapes, one row each, read
//! back from Prometheus's HTTP API (no agent of provetop's own: the supervisors already serve
//! `/metrics`, docs/metrics.md).
//!
//! Contract:
//! * One refresh is a fixed set of instant queries ([`rows::QUERIES`] and the shipped alerts'
//!   conditions [`rows::RED`]), sent at once, each bounded by `--timeout`; their number does
//!   not grow with the fleet (docs/fleet.md has the cost).
//! * How Prometheus answered is said before the rows: down (every query failed: the rows of
//!   the last good reading stay, marked with their age), partial (some failed, or Prometheus
//!   warned), slow, stale (hosts not scraped for `--stale`). Never shown as healthy then.
//! * A row is red while one of the shipped alerts' conditions holds for it.
//! * `--once` prints one reading (`--format table|json`) and exits: 0, or 1 with one line
//!   when Prometheus cannot be read at all.
//!
//! The parts: [`prom`] (the API client), [`rows`] (queries and rows), [`cells`] (a row in
//! words), [`screen`] (the screen) and [`history`] (a row's history, drawn by the live
//! screen's own widgets from range queries).

pub mod cells;
pub mod history;
pub mod prom;
pub mod rows;
pub mod screen;

use std::time::Duration;

pub use crate::cli::{FleetArgs, FleetFormat};
use rows::SortKey;

impl FleetArgs {
    /// The jobs' names, the shipped config's when none is given.
    pub fn jobs(&self) -> Vec<String> {
        if self.jobs.is_empty() {
            vec!["provetop".into()]
        } else {
            self.jobs.clone()
        }
    }

    fn timeout(&self) -> Duration {
        Duration::from_secs_f64(self.timeout)
    }

    /// A query slower than half the timeout is slow.
    fn slow(&self) -> Duration {
        self.timeout() / 2
    }
}

/// `provetop fleet`.
pub fn main(args: &FleetArgs) -> anyhow::Result<i32> {
    let prom = prom::Prom::new(&args.prometheus, args.timeout())?;
    let window = provetop_shared::units::parse_duration_s(&args.window)
        .map_err(|e| anyhow::anyhow!("--window: {e}"))?;
    if args.once {
        return once(args, &prom);
    }
    screen::main(args, prom, window)
}

/// A reading's rows as the arguments ask: filtered, sorted.
pub fn shown(args_filter: Option<&str>, sort: SortKey, r: &rows::Reading) -> Vec<rows::Row> {
    let mut out: Vec<rows::Row> = r
        .rows
        .iter()
        .filter(|x| rows::matches(x, args_filter.unwrap_or("")))
        .cloned()
        .collect();
    rows::sort(&mut out, sort);
    out
}

fn once(args: &FleetArgs, prom: &prom::Prom) -> anyhow::Result<i32> {
    let reading = rows::read(prom, &args.jobs());
    let health = rows::health(&reading, Duration::from_secs_f64(args.stale), args.slow());
    if reading.failed.len() == reading.queries {
        anyhow::bail!("{}: {}", crate::text::inert(prom.url()), health.join("; "));
    }
    let shown = shown(args.filter.as_deref(), args.sort, &reading);
    let out = match args.format {
        FleetFormat::Json => {
            let doc = serde_json::json!({
                "prometheus": prom.url(),
                "at_unix_s": reading.at,
                "health": if health.is_empty() { vec!["ok".to_string()] } else { health },
                "queries": reading.queries,
                "failed": reading.failed,
                "rows": shown,
            });
            format!("{}\n", serde_json::to_string_pretty(&doc)?)
        }
        FleetFormat::Table => {
            let mut s = format!(
                "{}: {} provetop(s), {}\n",
                crate::text::inert(prom.url()),
                reading.rows.len(),
                if health.is_empty() {
                    "ok".to_string()
                } else {
                    health.join("; ")
                }
            );
            let head: Vec<String> = cells::COLUMNS
                .iter()
                .map(|(h, _)| h.to_string())
                .chain(std::iter::once("RED".to_string()))
                .collect();
            let rows: Vec<Vec<String>> = shown
                .iter()
                .map(|r| {
                    let mut c = cells::cells(r);
                    c.push(if r.red.is_empty() {
                        "-".into()
                    } else {
                        "RED".into()
                    });
                    c
                })
                .collect();
            s.push_str(&crate::sessions::table(&head, &rows));
            s
        }
    };
    use std::io::Write;
    let _ = std::io::stdout().write_all(out.as_bytes());
    Ok(0)
}
