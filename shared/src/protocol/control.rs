//! Monitor → prover: one [`ControlMsg`] per line on the prover's stdin.

use serde::{Deserialize, Serialize};

use super::vocab::BatchMode;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Control {
    /// Queue `count` more proofs.
    Prove {
        /// How many proofs.
        count: u32,
    },
    /// Switch batch mode at the next safe boundary.
    SetMode {
        /// The new mode.
        mode: BatchMode,
    },
    /// Start no new proof until resumed (the one in flight finishes).
    Pause,
    /// Undo `pause`.
    Resume,
    /// Exit after the current proof (or abort it when `abort`), then say bye.
    Shutdown {
        /// Abort the proof in flight instead of finishing it.
        #[serde(default)]
        abort: bool,
    },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ControlMsg {
    /// Monotonic nanoseconds.
    pub ts: u64,
    /// The control.
    #[serde(flatten)]
    pub control: Control,
}

impl ControlMsg {
    /// Stamp a control now.
    pub fn now(control: Control) -> Self {
        ControlMsg {
            ts: crate::clock::mono_ns(),
            control,
        }
    }

    /// One NDJSON line, without the trailing newline.
    pub fn to_line(&self) -> String {
        serde_json::to_string(self).expect("controls always serialize")
    }
}
