//! Command line: every subcommand and flag, in one place so `--help` is complete.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};
use provetop_collect::sampler::{
    Bounds, DEFAULT_GPU_HZ, DEFAULT_HZ, DEFAULT_SMAPS_DUTY, DEFAULT_USAGE_HZ, GPU_HZ_BOUNDS,
    HZ_BOUNDS, SMAPS_DUTY_BOUNDS, USAGE_HZ_BOUNDS,
};
use provetop_shared::classify::Thresholds;
use provetop_shared::BatchMode;

mod fleet;
mod sessions;

pub use fleet::{BridgeArgs, BridgeWhat, FleetArgs, FleetFormat, FleetSort};
pub use sessions::{AttachArgs, LsArgs, MarkArgs, StatusArgs};

/// top for zk-SNARK provers: supervise a Groth16 prover, plot its memory against its phases,
/// alert, record, replay.
///
/// With no subcommand, provetop supervises the bundled prover (`provetop-prover`, found next
/// to this binary) on its demo workload, with the live screen and recording on.
#[derive(Debug, Parser)]
#[command(name = "provetop", version, propagate_version = true)]
pub struct Cli {
    /// What to do (default: `run` on the bundled prover's demo workload).
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Supervise a prover (the bundled one, or `-- CMD ARGS...`) and monitor it live.
    Run(RunArgs),
    /// Monitor an existing process tree (no supervision; phases by thresholds).
    Watch(WatchArgs),
    /// Replay a recorded session file (or a `timestamp,rss_kb` CSV) on the live screen.
    Replay(ReplayArgs),
    /// Classify a session or CSV into memory phases (the seed's table, then a summary).
    Classify(ClassifyArgs),
    /// Export a session or CSV as CSV (`timestamp,rss_kb,...`) or JSON lines.
    Export(ExportArgs),
    /// Write a session from JSON lines (what `export --format jsonl` writes): an export
    /// records again.
    Import(ImportArgs),
    /// Supervise like `run --headless`, as a long-running service: no terminal, survives a
    /// hangup, stopped by a signal or `provetop attach` then q; screens attach and detach.
    Serve(RunArgs),
    /// Open the live screen on a running supervisor (`d` detaches, `q` asks, then stops it).
    Attach(AttachArgs),
    /// List the sessions on this machine: live ones, then recent recordings.
    Ls(LsArgs),
    /// Compare sessions (or CSVs) with a baseline: one table of memory, throughput and
    /// phases as value, difference and ratio; `--fail-if` gates a CI run on it.
    Compare(CompareArgs),
    /// Every provetop a Prometheus scrapes, one row each (state, memory against its limit,
    /// GPU, time to OOM, proofs/h, alerts), read back through Prometheus's HTTP API.
    Fleet(FleetArgs),
    /// The remote side of `attach HOST:SESSION` and `ls HOST`, run over SSH (not for people).
    #[command(name = "remote-bridge", hide = true)]
    RemoteBridge(BridgeArgs),
    /// A live session's status (what `ls` shows of it, and more), as text or JSON.
    Status(StatusArgs),
    /// Add a mark (a note) to a live session: it is recorded, and replay and export show it.
    #[command(override_usage = "provetop mark [--latest] [SESSION] <TEXT>")]
    Mark(MarkArgs),
    /// Print a shell's completion script for provetop (bash, zsh, fish, elvish, powershell).
    Completions(CompletionsArgs),
    /// Print provetop's man page (roff), or write every page into a folder.
    Man(ManArgs),
}

/// Seconds between SIGTERM and SIGKILL when stopping the child, unless `--grace` says.
pub const DEFAULT_GRACE_S: f64 = 5.0;
/// `--grace` values: at most an hour (a `Duration` holds it, and the stop sequence's own
/// timeouts added to it cannot overflow).
pub const GRACE_BOUNDS: Bounds = Bounds::new(0.0, 3600.0);

fn hz_arg(s: &str) -> Result<f64, String> {
    HZ_BOUNDS.parse(s)
}

fn gpu_hz_arg(s: &str) -> Result<f64, String> {
    GPU_HZ_BOUNDS.parse(s)
}

fn usage_hz_arg(s: &str) -> Result<f64, String> {
    USAGE_HZ_BOUNDS.parse(s)
}

fn smaps_duty_arg(s: &str) -> Result<f64, String> {
    SMAPS_DUTY_BOUNDS.parse(s)
}

/// `--metrics`'s value: where to serve `/metrics`, or nowhere (`off`, over the config file).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MetricsAt(pub Option<std::net::SocketAddr>);

fn metrics_arg(s: &str) -> Result<MetricsAt, String> {
    if s.trim() == "off" {
        return Ok(MetricsAt(None));
    }
    parse_listen_addr(s)
        .map(|a| MetricsAt(Some(a)))
        .map_err(|e| format!("{e}, or off"))
}

/// A listening address for the metrics endpoint, as `--metrics` and the file's `metrics`
/// write it: `HOST:PORT` with an IP address (`127.0.0.1:9464`, `[::1]:9464`, `0.0.0.0:9464`
/// for every interface), `localhost:PORT`, or a bare `PORT`/`:PORT`, which is loopback.
pub fn parse_listen_addr(s: &str) -> Result<std::net::SocketAddr, String> {
    let t = s.trim();
    let port = |p: &str| {
        p.parse::<u16>()
            .map_err(|_| format!("bad port {p:?} (want 0 to 65535)"))
    };
    let bare = t.strip_prefix(':').unwrap_or(t);
    if !bare.is_empty() && bare.bytes().all(|b| b.is_ascii_digit()) {
        return Ok(std::net::SocketAddr::from((
            std::net::Ipv4Addr::LOCALHOST,
            port(bare)?,
        )));
    }
    if let Some(p) = t.strip_prefix("localhost:") {
        return Ok(std::net::SocketAddr::from((
            std::net::Ipv4Addr::LOCALHOST,
            port(p)?,
        )));
    }
    t.parse::<std::net::SocketAddr>().map_err(|_| {
        format!("bad address {t:?} (want IP:PORT such as 127.0.0.1:9464, localhost:PORT or a bare PORT)")
    })
}

fn grace_arg(s: &str) -> Result<f64, String> {
    GRACE_BOUNDS.parse(s)
}

/// `10,50,100,180`: the default thresholds as the flag spells them.
fn default_thresholds() -> String {
    let t = Thresholds::default();
    format!("{},{},{},{}", t.idle, t.gpu, t.synth, t.peak)
}

/// Options shared by `run` and `watch`: sampling, alerts, recording, display.
///
/// A value the config file can also set is an `Option`: `None` when the flag is not given,
/// so the file (then the default) decides ([`crate::settings::layer`]). The defaults shown
/// in `--help` are the constants the settings use.
#[derive(Debug, Clone, Args)]
pub struct MonitorOpts {
    /// `--hz`; `None`: the file's `hz`, else [`DEFAULT_HZ`] (help text: `help`).
    #[arg(long, value_name = "HZ", value_parser = hz_arg,
          help = format!("Memory samples per second (status of every process in the tree + \
                          interval peak) [default: {DEFAULT_HZ}]"))]
    pub hz: Option<f64>,
    /// `--smaps-duty`; `None`: the file's `smaps_duty`, else [`DEFAULT_SMAPS_DUTY`].
    #[arg(long, value_name = "FRACTION", value_parser = smaps_duty_arg,
          help = format!("Largest share of one core that the smaps cross-check of pinned \
                          memory may cost (the pinned series itself comes from the mapping \
                          table at the sample rate; smaps only checks it) (0 = off) \
                          [default: {DEFAULT_SMAPS_DUTY}]"))]
    pub smaps_duty: Option<f64>,
    /// `--gpu-hz`; `None`: the file's `gpu_hz`, else [`DEFAULT_GPU_HZ`].
    #[arg(long, value_name = "HZ", value_parser = gpu_hz_arg,
          help = format!("GPU (NVML) readings per second (0 = off) [default: {DEFAULT_GPU_HZ}]"))]
    pub gpu_hz: Option<f64>,
    /// `--usage-hz`; `None`: the file's `usage_hz`, else [`DEFAULT_USAGE_HZ`].
    #[arg(long, value_name = "HZ", value_parser = usage_hz_arg,
          help = format!("Usage readings per second: CPU cores, threads, faults and I/O per \
                          process, the host's load, GPU details (0 = off) \
                          [default: {DEFAULT_USAGE_HZ}]"))]
    pub usage_hz: Option<f64>,
    /// Alert rule, e.g. 'rss > 180GiB for 5s' or 'crit: mem_available < 2GiB' (repeatable).
    #[arg(long = "alert", value_name = "RULE")]
    pub alerts: Vec<String>,
    /// Config file (TOML): hz, gpu_hz, usage_hz, smaps_duty, rules, thresholds, on_alert, default_rule,
    /// metrics, theme, mouse, and [[log_rule]] tables (phases from a prover's output lines, docs/logs.md); a
    /// flag wins over it. Default: $XDG_CONFIG_HOME/provetop/config.toml when present.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Program run on every alert change; details in PROVETOP_ALERT_* environment variables.
    /// Split on whitespace into program and arguments; never run through a shell.
    #[arg(long, value_name = "CMD")]
    pub on_alert: Option<String>,
    /// `--thresholds`; `None`: the file's `thresholds`, else [`Thresholds::default`].
    #[arg(long, value_name = "GIB,GIB,GIB,GIB",
          help = format!("Phase threshold lines in GiB: idle,gpu,synth,peak (ascending) \
                          [default: {}]", default_thresholds()))]
    pub thresholds: Option<Thresholds>,
    /// Session file to record to (default: a new file under $XDG_STATE_HOME/provetop/sessions).
    #[arg(long, value_name = "FILE", conflicts_with = "no_record")]
    pub record: Option<PathBuf>,
    /// Do not record.
    #[arg(long)]
    pub no_record: bool,
    /// Rotate the recording: a new part every DURATION of records (30m, 6h, 1d) or SIZE on
    /// disk (2GiB); parts are named NAME.0001.ptop, … next to the --record NAME.ptop, and every
    /// reader takes NAME.ptop (or any part) as the whole recording.
    #[arg(long, value_name = "DURATION|SIZE", conflicts_with = "no_record")]
    pub rotate: Option<String>,
    /// With --rotate: remove finished parts older than DURATION (e.g. 14d).
    #[arg(long, value_name = "DURATION")]
    pub retain: Option<String>,
    /// With --rotate: remove the oldest finished parts while all parts take more than SIZE.
    #[arg(long, value_name = "SIZE")]
    pub max_disk: Option<String>,
    /// No terminal UI: record, print alerts and restarts to stderr, exit with the child's status.
    #[arg(long)]
    pub headless: bool,
    /// Serve Prometheus/OpenMetrics metrics at http://ADDR/metrics, e.g. 127.0.0.1:9464 or a
    /// bare 9464 (loopback); an explicit 0.0.0.0:9464 serves every interface; `off` serves
    /// nothing even where the config file's `metrics` says. Off by default.
    #[arg(long, value_name = "ADDR", value_parser = metrics_arg)]
    pub metrics: Option<MetricsAt>,
    /// The screen's theme and mouse.
    #[command(flatten)]
    pub screen: ScreenOpts,
}

/// How the screen looks and what it takes: flags of every command with a screen (`run`,
/// `watch`, `replay`, `attach`). Each is an `Option`, `None` when not given, so the config
/// file's `theme` and `mouse` (then the default) decide ([`crate::settings::screen`]).
#[derive(Debug, Clone, Default, Args)]
pub struct ScreenOpts {
    /// The screen's colours: default, light (a light background) or colorblind (the
    /// Okabe–Ito palette). NO_COLOR (non-empty) turns colours off whatever the theme.
    #[arg(long, value_name = "NAME", value_parser = theme_arg)]
    pub theme: Option<crate::theme::Palette>,
    /// Take no mouse events (the terminal keeps its own selection and scrolling); the mouse
    /// is on by default.
    #[arg(long, overrides_with = "mouse")]
    pub no_mouse: bool,
    /// Take mouse events even where the config file says `mouse = false`.
    #[arg(long, overrides_with = "no_mouse")]
    pub mouse: bool,
}

impl ScreenOpts {
    /// The mouse as the flags say it (`None`: neither flag given).
    pub fn mouse_flag(&self) -> Option<bool> {
        match (self.mouse, self.no_mouse) {
            (true, _) => Some(true),
            (_, true) => Some(false),
            _ => None,
        }
    }
}

fn theme_arg(s: &str) -> Result<crate::theme::Palette, String> {
    s.parse()
}

/// `provetop run`.
#[derive(Debug, Clone, Args)]
pub struct RunArgs {
    /// Monitoring options.
    #[command(flatten)]
    pub monitor: MonitorOpts,
    /// Restart policy for the child.
    #[arg(long, value_enum, default_value_t = RestartPolicy::Never)]
    pub restart: RestartPolicy,
    /// Most restarts with `--restart on-failure`.
    #[arg(long, default_value_t = 5, value_name = "N")]
    pub max_restarts: u32,
    /// Seconds between SIGTERM and SIGKILL when stopping the child (0 to 3600).
    #[arg(long, default_value_t = DEFAULT_GRACE_S, value_name = "SECS", value_parser = grace_arg)]
    pub grace: f64,
    /// Watchdog: alert when the child has spoken the provetop protocol and then sends no
    /// event for this long while it runs (a hung prover), e.g. 90, 5m. The alert clears when
    /// events resume. Off by default; the same as --alert 'warn: event_age > DURATION'.
    #[arg(long, value_name = "DURATION")]
    pub watchdog: Option<String>,
    /// Bundled prover: partitions per sector.
    #[arg(long, value_name = "P")]
    pub partitions: Option<u32>,
    /// Bundled prover: constraints per partition.
    #[arg(long, value_name = "N")]
    pub constraints: Option<u64>,
    /// Bundled prover: batch mode at start (single, batch:N, sps, pipelined:D).
    #[arg(long, value_name = "MODE")]
    pub mode: Option<BatchMode>,
    /// Bundled prover: proofs to run (default: one after another until quit).
    #[arg(long, value_name = "N")]
    pub proofs: Option<u32>,
    /// Bundled prover: refuse mode switches whose predicted peak RSS (the RSS at idle plus
    /// what earlier proofs measured per constraint in flight) exceeds this (e.g. 8GiB).
    #[arg(long, value_name = "BYTES")]
    pub mem_budget: Option<String>,
    /// Bundled prover (GPU builds): the GPUs to use, by index as nvidia-smi numbers them
    /// (e.g. 0,2) [default: every visible GPU].
    #[arg(long, value_name = "LIST")]
    pub gpus: Option<String>,
    /// Accepted for older scripts: a hangup detaches by default now (`--stop-on-hangup`
    /// stops instead).
    #[arg(long, hide = true, overrides_with = "stop_on_hangup")]
    pub detach_on_hangup: bool,
    /// When the screen's terminal hangs up (an SSH connection dropped), stop the prover and
    /// end the session, instead of detaching as `d` does (the default: the prover goes on in
    /// the background and `provetop attach` brings the screen back).
    #[arg(long, env = "PROVETOP_STOP_ON_HANGUP", overrides_with = "detach_on_hangup",
          value_parser = clap::builder::FalseyValueParser::new())]
    pub stop_on_hangup: bool,
    /// Do not hand the child provetop's NVTX injection library (by default its NVTX ranges
    /// and markers, from C/C++, the `nvtx` Python package or `torch.cuda.nvtx`, become
    /// phases and marks; `watch` cannot inject into a process already running).
    #[arg(long)]
    pub no_nvtx: bool,
    /// A baseline session (or CSV) drawn in dim on the chart and the timeline, each proof
    /// aligned with the baseline's proof of the same number (its last once there are more):
    /// whether this proof tracks above or below the baseline while it runs.
    #[arg(long, value_name = "FILE")]
    pub baseline: Option<PathBuf>,
    /// Command to supervise instead of the bundled prover. If it speaks the provetop protocol
    /// it writes events to the fd named in $PROVETOP_EVENTS_FD.
    #[arg(last = true, value_name = "CMD")]
    pub command: Vec<String>,
}

/// Child restart policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum RestartPolicy {
    /// Never restart.
    Never,
    /// Restart after a failure (non-zero exit or signal), with exponential backoff.
    OnFailure,
}

/// `provetop watch`. Its process is already running: NVTX ranges cannot be injected into
/// it (NVTX loads its injection library at the program's first NVTX call, from the
/// environment it started with); `provetop run` the program for NVTX phases.
#[derive(Debug, Clone, Args)]
#[command(
    after_help = "NVTX phases need `provetop run`: a running process cannot be given the injection library."
)]
pub struct WatchArgs {
    /// Process to watch (with its descendants): `provetop watch 1234` or `--pid 1234`.
    #[arg(value_name = "PID", required_unless_present_any = ["pid_flag", "cgroup", "unit"],
          conflicts_with_all = ["cgroup", "unit"])]
    pid_arg: Option<u32>,
    /// The same, as an option.
    #[arg(long = "pid", value_name = "PID", conflicts_with_all = ["pid_arg", "cgroup", "unit"])]
    pid_flag: Option<u32>,
    /// Watch every process of a cgroup and of the cgroups below it, as they come and go (a
    /// service's workers, its restarts): its directory (`/sys/fs/cgroup/…`, v1 or v2) or its
    /// path from the hierarchy's root (`/system.slice/curio.service`). A member's exit ends
    /// nothing; the cgroup's removal ends the session.
    #[arg(long, value_name = "DIR", conflicts_with = "unit")]
    pub cgroup: Option<String>,
    /// Watch a systemd unit (`.service` added when NAME has no unit type): its cgroup, as
    /// `--cgroup` does, and, where journald runs, its journal as the `--log`.
    #[arg(long, value_name = "NAME")]
    pub unit: Option<String>,
    /// Measure interval peaks by resetting the process's VmHWM after each sample
    /// (`clear_refs` ← 5). Off by default for a process provetop did not start: the reset
    /// is visible to every other reader of VmHWM (`/usr/bin/time`'s max RSS, a job
    /// scheduler's accounting, another provetop) and spoils their figure. Without it the
    /// peak column is not measured, only VmRSS at each sample (a spike between two samples
    /// is missed).
    #[arg(long)]
    pub reset_peak: bool,
    /// A log the process writes, read for its phases like a supervised child's output
    /// (followed as it grows); `-` reads standard input, e.g. `journalctl -fu curio |
    /// provetop watch PID --log -`. With `--unit`, replaces the unit's journal.
    #[arg(long, value_name = "FILE")]
    pub log: Option<LogSource>,
    /// Monitoring options.
    #[command(flatten)]
    pub monitor: MonitorOpts,
}

/// What `provetop watch` watches, however it was given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Watched {
    /// A process and its descendants.
    Pid(u32),
    /// A cgroup, as `--cgroup` names it.
    Cgroup(String),
    /// A systemd unit, as `--unit` names it.
    Unit(String),
}

impl WatchArgs {
    /// What to watch (clap requires one of PID, `--pid`, `--cgroup` and `--unit`, and no
    /// two: the order here only settles what clap already refused).
    pub fn watched(&self) -> Watched {
        if let Some(c) = &self.cgroup {
            return Watched::Cgroup(c.clone());
        }
        if let Some(u) = &self.unit {
            return Watched::Unit(u.clone());
        }
        // Clap requires one of them; 0 is refused as "not a process id" like any bad pid.
        Watched::Pid(self.pid_arg.or(self.pid_flag).unwrap_or(0))
    }
}

/// `provetop replay`.
#[derive(Debug, Clone, Args)]
pub struct ReplayArgs {
    /// Session file or `timestamp,rss_kb` CSV.
    #[arg(required_unless_present = "log", conflicts_with = "log")]
    pub file: Option<PathBuf>,
    /// A prover's log file instead: a session built from its lines alone, on the log's own
    /// timestamps (phases and proofs; no memory), read by every grammar and by the config
    /// file's [[log_rule]]s (docs/logs.md).
    #[arg(long, value_name = "FILE", conflicts_with = "follow")]
    pub log: Option<PathBuf>,
    /// Config file for `--log`'s [[log_rule]] tables (default: the usual config file).
    #[arg(long, value_name = "FILE", requires = "log")]
    pub config: Option<PathBuf>,
    /// Playback speed (0.25 to 64).
    #[arg(long, default_value_t = 1.0)]
    pub speed: f64,
    /// Start position: seconds from the beginning (e.g. 90, 2m, 1h).
    #[arg(long, value_name = "TIME")]
    pub start: Option<String>,
    /// Phase threshold lines in GiB: idle,gpu,synth,peak.
    #[arg(long, default_value = "10,50,100,180", value_name = "GIB,GIB,GIB,GIB")]
    pub thresholds: Thresholds,
    /// Follow a session file still being written: the live view of everything in it, then of
    /// each record as it is written (inotify, else polled every 100 ms).
    #[arg(long, conflicts_with = "start")]
    pub follow: bool,
    /// A baseline session (or CSV) drawn in dim on the chart and the timeline, aligned at
    /// the start (the `b` key: proof 1, 2, … of each); the cursor box gives both values.
    #[arg(long, value_name = "FILE", conflicts_with = "follow")]
    pub baseline: Option<PathBuf>,
    /// The screen's theme and mouse.
    #[command(flatten)]
    pub screen: ScreenOpts,
}

/// `provetop classify`.
#[derive(Debug, Clone, Args)]
pub struct ClassifyArgs {
    /// Session file or `timestamp,rss_kb` CSV.
    #[arg(required_unless_present = "log", conflicts_with = "log")]
    pub file: Option<PathBuf>,
    /// A prover's log file instead: phases, proofs and durations from its lines alone, on
    /// the log's own timestamps (no memory), read by every grammar and by the config file's
    /// [[log_rule]]s (docs/logs.md).
    #[arg(long, value_name = "FILE")]
    pub log: Option<PathBuf>,
    /// Config file for `--log`'s [[log_rule]] tables (default: the usual config file).
    #[arg(long, value_name = "FILE", requires = "log")]
    pub config: Option<PathBuf>,
    /// Phase boundaries in GiB: idle,gpu,synth,peak.
    #[arg(long, default_value = "10,50,100,180", value_name = "GIB,GIB,GIB,GIB")]
    pub thresholds: Thresholds,
    /// Print only the seed's table (one line per run), as the awk script did.
    #[arg(long)]
    pub table_only: bool,
}

/// Export formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ExportFormat {
    /// `timestamp,rss_kb,...` (the seed's awk script runs on it unchanged).
    Csv,
    /// One JSON record per line.
    Jsonl,
}

/// `provetop export`.
#[derive(Debug, Clone, Args)]
pub struct ExportArgs {
    /// Session file or `timestamp,rss_kb` CSV.
    pub file: PathBuf,
    /// Output format.
    #[arg(long, value_enum)]
    pub format: ExportFormat,
    /// Output file (default: standard output).
    #[arg(long, short, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// `provetop import`.
#[derive(Debug, Clone, Args)]
pub struct ImportArgs {
    /// JSON lines, one record each (`provetop export --format jsonl`).
    pub file: PathBuf,
    /// The session to write (a new file; compact, format 2).
    #[arg(long, short, value_name = "FILE")]
    pub output: PathBuf,
    /// Take the header (host, command, clock anchors, rate) from this session, e.g. the one
    /// exported: a CSV export of the import then has the same times.
    #[arg(long, value_name = "SESSION")]
    pub like: Option<PathBuf>,
}

/// `provetop completions`.
#[derive(Debug, Clone, Args)]
pub struct CompletionsArgs {
    /// The shell.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

/// `provetop man`.
#[derive(Debug, Clone, Args)]
pub struct ManArgs {
    /// Write provetop.1 and a page per subcommand (provetop-run.1, …) into this folder
    /// instead of printing provetop.1.
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

/// Where the log lines come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LogSource {
    /// A file (followed as it grows).
    File(PathBuf),
    /// provetop's standard input (`-`).
    Stdin,
    /// The output of a command that follows a log (`watch --unit`'s journal: `journalctl
    /// --follow --unit NAME`); never given on the command line.
    Command(Vec<String>),
}

impl std::str::FromStr for LogSource {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        if s.is_empty() {
            return Err("empty path (give a file, or - for standard input)".into());
        }
        Ok(if s == "-" {
            LogSource::Stdin
        } else {
            LogSource::File(PathBuf::from(s))
        })
    }
}

/// Output formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CompareFormat {
    /// An aligned table for the terminal.
    Table,
    /// A GitHub markdown table (for a pull request).
    Markdown,
    /// One JSON document: sessions, rows (raw values), notes.
    Json,
    /// One line per metric and other session.
    Csv,
}

/// `provetop compare`.
#[derive(Debug, Clone, Args)]
pub struct CompareArgs {
    /// The baseline: a session file or a `timestamp,rss_kb` CSV.
    pub baseline: PathBuf,
    /// The sessions compared with it (sessions or CSVs, mixed).
    #[arg(required = true, value_name = "OTHER")]
    pub others: Vec<PathBuf>,
    /// Compare only the proofs of this batch mode (single, batch:N, sps, pipelined:D). Once:
    /// every file; repeated: one per file in order, the baseline first
    /// (`--mode single --mode sps`).
    #[arg(long, value_name = "MODE")]
    pub mode: Vec<BatchMode>,
    /// Compare only these proofs, numbered from 1 in the order they started (after --mode):
    /// N, A..B, A.., ..B. Once: every file; repeated: one per file in order.
    #[arg(long, value_name = "RANGE")]
    pub proofs: Vec<String>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = CompareFormat::Table)]
    pub format: CompareFormat,
    /// Fail (exit 3) when an other session is worse than this, e.g. 'peak > +5%',
    /// 's_per_sector > +3%', 'above_floor > +1GiB' (repeatable; docs/compare.md).
    #[arg(long = "fail-if", value_name = "RULE")]
    pub fail_if: Vec<String>,
    /// Phase threshold lines in GiB: idle,gpu,synth,peak (CSV phases and the idle floor).
    #[arg(long, default_value = "10,50,100,180", value_name = "GIB,GIB,GIB,GIB")]
    pub thresholds: Thresholds,
    /// Read a file that is neither a session nor a CSV as a prover's log, as
    /// `classify --log` does (phases and proofs from its lines; no memory).
    #[arg(long)]
    pub logs: bool,
}
