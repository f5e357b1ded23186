//! Test harness, not part of provetop: the live screen of
//! `provetop run --record FILE -- CMD ARGS`, whose driver panics MS milliseconds in. The
//! end-to-end test of the panic path runs it in tmux: the terminal must be restored, the
//! child killed and the recording kept, by the same panic hook and cleanup `provetop run`
//! installs.
//!
//! ```text
//! panicking_screen MS FILE CMD [ARGS...]
//! ```

use std::path::PathBuf;
use std::time::{Duration, Instant};

use provetop::app::{Action, App, Screen};
use provetop::event_loop::{self, Driver};
use provetop::live::LiveDriver;
use provetop::monitor::{self, Monitor, Target};
use provetop::settings::Setup;
use provetop::theme::Theme;
use provetop_collect::sampler::SamplerConfig;
use provetop_collect::supervisor::{ChildSpec, Restart};
use provetop_shared::classify::Thresholds;
use provetop_shared::clock::mono_ns;

struct Panicking {
    live: LiveDriver,
    at: Instant,
}

impl Driver for Panicking {
    fn poll(&mut self, app: &mut App) -> bool {
        if Instant::now() >= self.at {
            panic!("panicking on purpose");
        }
        self.live.poll(app)
    }

    fn act(&mut self, app: &mut App, a: Action) {
        self.live.act(app, a)
    }
}

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [ms, record, argv @ ..] = args.as_slice() else {
        anyhow::bail!("usage: panicking_screen MS FILE CMD [ARGS...]");
    };
    let setup = Setup {
        sampler: SamplerConfig::default(),
        rules: Vec::new(),
        hook: None,
        thresholds: Thresholds::default(),
        record: Some(PathBuf::from(record)),
        rotation: None,
        metrics: None,
        log_rules: Vec::new(),
        nvtx_phases: Default::default(),
    };
    let target = Target::Command(ChildSpec {
        argv: argv.to_vec(),
        env: Vec::new(),
        log_path: None,
        restart: Restart::Never,
        grace: Duration::from_secs(2),
        log_rules: Vec::new(),
        nvtx: Default::default(),
    });
    let at = Instant::now() + Duration::from_millis(ms.parse()?);
    monitor::runtime()?.block_on(async {
        let mut app = App::new(Screen::Run, setup.thresholds, Theme::from_env(), mono_ns());
        let stop = provetop::monitor::signals::stop_signal();
        let monitor = Monitor::start(&setup, target, &mut app.model).await?;
        provetop::terminal::install_panic_hook(monitor.panic_cleanup());
        let mut driver = Panicking {
            live: LiveDriver::new(monitor),
            at,
        };
        event_loop::run_on_terminal(&mut app, &mut driver, stop, false).await?;
        Ok(())
    })
}
