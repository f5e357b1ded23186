//! The `provetop-prover` command line.

use std::io::BufReader;
use std::path::PathBuf;
use std::time::Duration;

use clap::Parser;
use provetop_shared::protocol::BatchMode;

use crate::circuit::Layout;
use crate::daemon::{self, Config, SigtermPolicy};
use crate::events::Emitter;
use crate::job::Workload;
use crate::logbridge;
use crate::srs::{self, SrsOptions};

/// Default constraints per partition (2^12). With [`DEFAULT_PARTITIONS`] a proof takes a
/// few seconds on a 2-core machine in a release build (see the benchmark table).
pub const DEFAULT_CONSTRAINTS: u64 = 1 << 12;
/// Default partitions per sector (real 32 GiB PoRep has 10; 8 leaves `sps` visibly leaner).
pub const DEFAULT_PARTITIONS: u32 = 8;

/// A real Groth16 prover (bellperson + blstrs, BLS12-381) on a synthetic PoRep-shaped
/// circuit, reporting its phases as NDJSON events (provetop's protocol).
///
/// Standalone: `provetop-prover --proofs N` proves N sectors and exits. Daemon:
/// `provetop-prover --daemon` reads control messages (one JSON object per line: prove,
/// set_mode, pause, resume, shutdown) on stdin until shutdown or end of input.
/// Events go to stdout, or to the file descriptor given by --events-fd / PROVETOP_EVENTS_FD;
/// human-readable logs go to stderr (RUST_LOG=debug|info|warn sets their level).
#[derive(Debug, Parser)]
#[command(name = "provetop-prover", version, about, long_about)]
pub struct Cli {
    /// Sectors to prove. Standalone: prove them and exit (default 1). Daemon: queue them at
    /// start (default 0).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(0..=100_000))]
    pub proofs: Option<u32>,

    /// Run as a daemon: read control messages on stdin until shutdown or EOF.
    #[arg(long)]
    pub daemon: bool,

    /// Daemon only: queue one proof (of the mode's size: N sectors in batch:N) whenever the
    /// prover has been idle this many seconds (a continuous demo workload with idle gaps).
    #[arg(long, value_name = "SECS", requires = "daemon", value_parser = parse_secs)]
    pub repeat_every: Option<f64>,

    /// Partitions per sector (each one circuit of --constraints constraints).
    #[arg(long, value_name = "P", default_value_t = DEFAULT_PARTITIONS,
          value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub partitions: u32,

    /// Constraints per partition, as bellperson counts them (public inputs included); met
    /// exactly. Minimum 423 (one Merkle opening).
    #[arg(long, value_name = "N", default_value_t = DEFAULT_CONSTRAINTS)]
    pub constraints: u64,

    /// Batch mode at start: single, batch:N, sps or pipelined:D.
    #[arg(long, value_name = "MODE", default_value = "single")]
    pub mode: BatchMode,

    /// SRS cache directory [default: $XDG_CACHE_HOME/provetop/srs].
    #[arg(long, value_name = "DIR", conflicts_with = "no_srs_cache")]
    pub srs_cache: Option<PathBuf>,

    /// Do not read or write the SRS cache (always generate).
    #[arg(long)]
    pub no_srs_cache: bool,

    /// Seed of the sector data and challenges (the SRS depends on the circuit shape only).
    #[arg(long, value_name = "SEED", default_value_t = 1)]
    pub seed: u64,

    /// Worker threads for synthesis and proving [default: all cores].
    #[arg(long, value_name = "T", value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub threads: Option<u32>,

    /// GPUs to use, by index as nvidia-smi and provetop number them ("0,2") [default: every
    /// visible GPU]. Sets CUDA_VISIBLE_DEVICES (and CUDA_DEVICE_ORDER=PCI_BUS_ID) for both
    /// GPU backends, which then spread each proof over these devices.
    #[arg(long, value_name = "LIST", value_parser = crate::gpu::parse_selection)]
    pub gpus: Option<crate::gpu::GpuList>,

    /// Write events to this inherited file descriptor instead of stdout.
    #[arg(long, value_name = "FD", env = "PROVETOP_EVENTS_FD",
          value_parser = clap::value_parser!(i32).range(0..))]
    pub events_fd: Option<i32>,

    /// On SIGTERM/SIGINT: finish the proof in flight or abort it, then exit (a second signal
    /// always aborts).
    #[arg(long, value_enum, value_name = "WHAT", default_value = "finish")]
    pub on_sigterm: SigtermPolicy,

    /// Refuse a mode switch whose predicted peak RSS (the resident floor, RSS at idle with the
    /// SRS loaded, plus the heap bytes per constraint measured by earlier proofs × the
    /// constraints the mode keeps in flight) exceeds this, e.g. 8GiB.
    #[arg(long, value_name = "BYTES", value_parser = provetop_shared::units::parse_bytes)]
    pub mem_budget: Option<u64>,

    /// Print a shell's completion script for provetop-prover (bash, zsh, fish, elvish,
    /// powershell) and exit: the prover's `provetop completions`. Every other flag is
    /// ignored then (not refused: $PROVETOP_EVENTS_FD may be set around it).
    #[arg(long, value_name = "SHELL")]
    pub completions: Option<clap_complete::Shell>,

    /// Print provetop-prover's man page (roff; `provetop-prover --man | man -l -`) and exit:
    /// the prover's `provetop man`.
    #[arg(long)]
    pub man: bool,
}

/// `--completions SHELL` and `--man`: made from these clap definitions, written to stdout.
fn print_doc(cli: &Cli) -> Option<i32> {
    use clap::CommandFactory;
    use std::io::Write;
    let mut out = Vec::new();
    if let Some(shell) = cli.completions {
        clap_complete::generate(shell, &mut Cli::command(), "provetop-prover", &mut out);
    } else if cli.man {
        if let Err(e) = clap_mangen::Man::new(Cli::command()).render(&mut out) {
            eprintln!("provetop-prover: man page: {e}");
            return Some(1);
        }
    } else {
        return None;
    }
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(&out).and_then(|()| stdout.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            eprintln!("provetop-prover: writing standard output: {e}");
            Some(1)
        }
        _ => Some(0),
    }
}

/// Largest partition circuit accepted (FFT domains and parameter files index with u32).
pub const MAX_CONSTRAINTS: u64 = 1 << 31;

fn mem_total() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/meminfo").ok()?;
    let kb: u64 = s
        .lines()
        .find(|l| l.starts_with("MemTotal:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()?;
    Some(kb * 1024)
}

fn parse_secs(s: &str) -> Result<f64, String> {
    let v = provetop_shared::units::parse_duration_s(s)?;
    if v > 0.0 && v.is_finite() {
        Ok(v)
    } else {
        Err(format!("{s:?} is not a positive duration"))
    }
}

/// Make CUDA number devices as NVML, nvidia-smi and provetop do (PCI bus order): always
/// with `--gpus` (its indices are NVML's), else unless the environment already chose; and
/// hide all but `--gpus`. Runs before any thread exists and
/// before CUDA is initialized (it reads both variables once, at initialization).
fn choose_gpus(selection: Option<&[u32]>) -> Result<(), String> {
    let gpu_build = cfg!(any(feature = "cuda", feature = "supraseal"));
    if gpu_build && (selection.is_some() || std::env::var_os("CUDA_DEVICE_ORDER").is_none()) {
        std::env::set_var("CUDA_DEVICE_ORDER", "PCI_BUS_ID");
    }
    let Some(selection) = selection else {
        return Ok(());
    };
    if !gpu_build {
        return Err(
            "this prover was built for the CPU (build it with --features cuda or supraseal)".into(),
        );
    }
    let all = provetop_kernels::gpus()?;
    if let Some(missing) = selection
        .iter()
        .find(|i| !all.iter().any(|g| g.index == **i))
    {
        let have: Vec<String> = all.iter().map(|g| g.index.to_string()).collect();
        return Err(format!(
            "there is no GPU {missing} (NVML lists {})",
            if have.is_empty() {
                "none".to_string()
            } else {
                have.join(", ")
            }
        ));
    }
    let list: Vec<String> = selection.iter().map(u32::to_string).collect();
    std::env::set_var("CUDA_VISIBLE_DEVICES", list.join(","));
    Ok(())
}

/// A fatal usage error: one line on stderr, exit status 2.
fn usage(msg: &str) -> i32 {
    eprintln!("provetop-prover: {msg} (see --help)");
    2
}

/// Parse the command line and run; returns the exit status.
pub fn main() -> i32 {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            use clap::error::ErrorKind;
            if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
                let _ = e.print();
                return 0;
            }
            // clap's message may continue on indented lines (e.g. the missing arguments)
            // before a blank line and the usage: fold that first paragraph into one line.
            let text = e.to_string();
            let para: Vec<&str> = text
                .lines()
                .map(str::trim)
                .skip_while(|l| l.is_empty())
                .take_while(|l| !l.is_empty())
                .collect();
            let msg = para.join(" ");
            let msg = msg.trim_start_matches("error: ");
            return usage(if msg.is_empty() {
                "invalid arguments"
            } else {
                msg
            });
        }
    };
    run(cli)
}

/// Run with parsed arguments.
pub fn run(cli: Cli) -> i32 {
    if let Some(code) = print_doc(&cli) {
        return code;
    }
    if cli.constraints > MAX_CONSTRAINTS {
        return usage(&format!(
            "invalid value for --constraints: {} is more than 2^31 (bellperson's limit)",
            cli.constraints
        ));
    }
    let srs_need = srs::approx_bytes(cli.constraints);
    if let Some(total) = mem_total() {
        if srs_need > total {
            return usage(&format!(
                "invalid value for --constraints: the SRS alone would need about {}, more than this machine's memory ({})",
                provetop_shared::units::fmt_bytes(srs_need),
                provetop_shared::units::fmt_bytes(total)
            ));
        }
    }
    let layout = match Layout::for_constraints(cli.constraints) {
        Ok(l) => l,
        Err(e) => return usage(&format!("invalid value for --constraints: {e}")),
    };
    let cache_dir = if cli.no_srs_cache {
        None
    } else {
        match cli.srs_cache.clone().or_else(srs::default_cache_dir) {
            Some(d) => Some(d),
            None => return usage(
                "no cache directory (no home directory): pass --srs-cache DIR or --no-srs-cache",
            ),
        }
    };
    let emitter = match cli.events_fd {
        // PROVETOP_EVENTS=off: no protocol at all, whatever fd is named (a monitor then reads
        // the phases from the logs alone).
        _ if provetop_emit::switched_off() => Emitter::disabled(),
        Some(fd) => match Emitter::to_fd(fd) {
            Ok(e) => e,
            Err(e) => return usage(&format!("invalid value for --events-fd: {e}")),
        },
        None => Emitter::stdout(),
    };
    if let Err(e) = choose_gpus(cli.gpus.as_ref().map(|g| g.0.as_slice())) {
        return usage(&format!("invalid value for --gpus: {e}"));
    }
    if let Some(t) = cli.threads {
        // bellperson's own pool (FFT, multiexp dispatch) reads this once, lazily; no other
        // thread exists yet that could read the environment concurrently.
        if std::env::var_os("EC_GPU_NUM_THREADS").is_none() {
            std::env::set_var("EC_GPU_NUM_THREADS", t.to_string());
        }
    }
    // rayon's pool is where synthesis runs: named, so a monitor tells it from proving. Must
    // happen before the first parallel call; the error case (already built) cannot occur
    // this early in main.
    let mut pool = rayon::ThreadPoolBuilder::new().thread_name(|i| format!("synthesis-{i}"));
    if let Some(t) = cli.threads {
        pool = pool.num_threads(t as usize);
    }
    let _ = pool.build_global();
    logbridge::install(emitter.clone());

    let cfg = Config {
        workload: Workload {
            layout,
            partitions: cli.partitions,
            seed: cli.seed,
        },
        mode: cli.mode,
        threads: cli.threads,
        srs: SrsOptions {
            cache_dir,
            progress_line: !cli.daemon,
        },
        daemon: cli.daemon,
        initial_proofs: cli.proofs.unwrap_or(if cli.daemon { 0 } else { 1 }),
        repeat_every: cli.repeat_every.map(Duration::from_secs_f64),
        on_sigterm: cli.on_sigterm,
        mem_budget: cli.mem_budget,
    };
    let input: Option<Box<dyn std::io::BufRead + Send>> = cli
        .daemon
        .then(|| Box::new(BufReader::new(std::io::stdin())) as Box<dyn std::io::BufRead + Send>);
    daemon::run(cfg, emitter, input)
}
