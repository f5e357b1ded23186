//! The running state of the store's reducer pass (see the parent module): the model, the
//! labels interned so far, the reach, and what the pass carries from one record to the next.

use std::collections::HashMap;

use super::{Store, NO_LABEL};
use crate::model::{Effects, Model};

/// The running state of the reducer pass.
pub(super) struct Pass {
    pub(super) model: Model,
    pub(super) fx: Effects,
    pub(super) label_ids: HashMap<String, u32>,
    /// The label's text, in a streamed pass (which interns none).
    pub(super) text: String,
    pub(super) label: u32,
    /// The reach so far.
    pub(super) hi: u64,
    /// (reach, no phase open) at the previous sample.
    pub(super) prev_sample: Option<(u64, bool)>,
    pub(super) srs_ready: bool,
    pub(super) snap_bytes: usize,
    pub(super) saw_events: bool,
}

impl Pass {
    /// A pass from the start (`streamed`: for [`Store::stream`]).
    pub(super) fn new(store: &Store, streamed: bool) -> Pass {
        // A streamed store keeps no model to show (no snapshots): its charts' series need
        // only what the reducer reads of them, not an hour of points.
        let model = if streamed {
            Model::with_limits(store.thresholds, crate::series::Limits::streaming())
        } else {
            Model::new(store.thresholds)
        };
        Pass {
            model,
            fx: Effects::new(),
            label_ids: HashMap::new(),
            text: String::new(),
            label: NO_LABEL,
            hi: 0,
            prev_sample: None,
            srs_ready: false,
            snap_bytes: 0,
            saw_events: false,
        }
    }
}
