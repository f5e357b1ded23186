//! The commands past one machine: `fleet` (every provetop a Prometheus scrapes) and the
//! hidden `remote-bridge`, the remote side of `attach HOST:SESSION` and `ls HOST`.

use clap::{Args, Subcommand, ValueEnum};

/// `provetop fleet`.
#[derive(Debug, Clone, Args)]
pub struct FleetArgs {
    /// The Prometheus server that scrapes the provetops (its base URL, http://HOST:9090).
    #[arg(long, value_name = "URL", env = "PROVETOP_PROMETHEUS")]
    pub prometheus: String,
    /// Prometheus's job of the provetops (repeatable) [default: provetop, as the shipped
    /// prometheus.yml names it].
    #[arg(long = "job", value_name = "NAME")]
    pub jobs: Vec<String>,
    /// Print one reading and exit.
    #[arg(long)]
    pub once: bool,
    /// `--once`'s output.
    #[arg(long, value_enum, default_value_t = FleetFormat::Table, requires = "once")]
    pub format: FleetFormat,
    /// Sort rows by.
    #[arg(long, value_enum, default_value_t = FleetSort::Red)]
    pub sort: FleetSort,
    /// Only rows whose host, instance, session, state, mode or phase contain this (`red`:
    /// the red rows).
    #[arg(long, value_name = "TEXT")]
    pub filter: Option<String>,
    /// Seconds between refreshes.
    #[arg(long, value_name = "SECS", default_value = "5", value_parser = secs_arg)]
    pub refresh: f64,
    /// Seconds a query may take before Prometheus counts as down for it.
    #[arg(long, value_name = "SECS", default_value = "5", value_parser = secs_arg)]
    pub timeout: f64,
    /// A host not scraped for this many seconds is stale.
    #[arg(long, value_name = "SECS", default_value = "60", value_parser = secs_arg)]
    pub stale: f64,
    /// The history a row opens (Enter): this long back from now (e.g. 15m, 1h, 6h).
    #[arg(long, value_name = "DURATION", default_value = "1h")]
    pub window: String,
}

fn secs_arg(s: &str) -> Result<f64, String> {
    let v = provetop_shared::units::parse_duration_s(s)?;
    if !(0.1..=3600.0).contains(&v) {
        return Err(format!("{s:?}: want 0.1 s to 1 h"));
    }
    Ok(v)
}

/// `--format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FleetFormat {
    /// An aligned table.
    Table,
    /// One JSON document: the health lines and every row's raw values.
    Json,
}

/// `provetop fleet --sort`: what the rows are sorted by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FleetSort {
    /// Red rows first, then by host.
    Red,
    Host,
    State,
    Rss,
    /// RSS as a share of the binding limit.
    Limit,
    Tto,
    Proofs,
    Age,
}

/// `provetop remote-bridge`.
#[derive(Debug, Clone, Args)]
pub struct BridgeArgs {
    #[command(subcommand)]
    pub what: BridgeWhat,
}

/// What the bridge does.
#[derive(Debug, Clone, Subcommand)]
pub enum BridgeWhat {
    /// The live sessions, once.
    Ls,
    /// Stream a session and carry its controls.
    Attach {
        /// The session's id (or a unique part of it).
        session: String,
        /// Forward controls (else the connection is read-only).
        #[arg(long)]
        control: bool,
        /// Start the file at this byte (what the local copy already holds).
        #[arg(long, default_value_t = 0)]
        offset: u64,
    },
}
