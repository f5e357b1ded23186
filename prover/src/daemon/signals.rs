//! SIGTERM and SIGINT, turned into a stop by a thread of their own.
//!
//! Contract: a signal stops the daemon with reason `signal`. The first one lets the proofs in
//! flight finish or cuts them short, as `--on-sigterm` says (SIGINT alike); any later one
//! always cuts them short.

use std::sync::Arc;

use super::state::Shared;
use super::SigtermPolicy;

pub(super) fn spawn_signal_thread(shared: Arc<Shared>) -> std::io::Result<()> {
    use signal_hook::consts::{SIGINT, SIGTERM};
    let mut signals = signal_hook::iterator::Signals::new([SIGTERM, SIGINT])?;
    std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || {
            for _ in signals.forever() {
                shared.signal();
            }
        })?;
    Ok(())
}

impl Shared {
    fn signal(&self) {
        let mut c = self.lock();
        c.signals += 1;
        let abort = self.on_sigterm == SigtermPolicy::Abort || c.signals > 1;
        self.stop(&mut c, "signal", abort);
    }
}
