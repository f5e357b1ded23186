//! What `classify` reads from the memory samples, one record at a time: the seed's table
//! (runs written out as they close), the summary's running figures and the medians it needs
//! (exact, over as many passes as they take: see [`provetop_shared::nth`]), and the highest
//! interval peak. Nothing per sample is kept, so a session of any length costs the same.

use std::fmt::Write as _;

use provetop_shared::classify::{
    Classifier, Medians, Summarizer, Summary, ThresholdPhase, Thresholds,
};
use provetop_shared::{Record, RecordBody};

/// The samples folded so far.
pub struct Samples {
    classifier: Classifier,
    /// The seed's table, the runs closed so far.
    pub table: String,
    /// Runs per threshold phase, in [`ThresholdPhase::ALL`]'s order.
    pub runs: [u64; 5],
    summarizer: Summarizer,
    medians: Medians,
    medians_done: Option<(u64, Option<u64>)>,
    /// The highest interval peak and its time (the first of equals).
    pub hwm: Option<(u64, u64)>,
    /// Samples read.
    pub count: u64,
}

impl Samples {
    /// Nothing read yet.
    pub fn new(thresholds: Thresholds) -> Samples {
        Samples {
            classifier: Classifier::new(thresholds),
            table: String::new(),
            runs: [0; 5],
            summarizer: Summarizer::new(thresholds),
            medians: Medians::new(thresholds),
            medians_done: None,
            hwm: None,
            count: 0,
        }
    }

    fn close(&mut self, run: provetop_shared::classify::Run) {
        let _ = writeln!(self.table, "{run}");
        if let Some(i) = ThresholdPhase::ALL.iter().position(|p| *p == run.phase) {
            self.runs[i] += 1;
        }
    }

    /// The next record of the first pass (samples in file order).
    pub fn feed(&mut self, r: &Record) {
        let RecordBody::Sample(s) = &r.body else {
            return;
        };
        if let Some(run) = self.classifier.push(r.t, s.rss) {
            self.close(run);
        }
        self.summarizer.push(r.t, s.rss);
        self.medians.push(r.t, s.rss);
        if let Some(p) = s.peak {
            match self.hwm {
                Some((bp, _)) if bp >= p => {}
                _ => self.hwm = Some((p, r.t)),
            }
        }
        self.count += 1;
    }

    /// The end of a pass: whether the medians are known (else give the records again to
    /// [`Samples::feed_medians`]). The first call also closes the table's last run.
    pub fn end_pass(&mut self) -> bool {
        if let Some(run) = self.classifier.finish() {
            self.close(run);
        }
        if self.medians_done.is_none() {
            self.medians_done = self.medians.end_pass();
        }
        self.medians_done.is_some()
    }

    /// The next record of a pass after the first, for the medians.
    pub fn feed_medians(&mut self, r: &Record) {
        if let (None, RecordBody::Sample(s)) = (self.medians_done, &r.body) {
            self.medians.push(r.t, s.rss);
        }
    }

    /// The summary (once [`Samples::end_pass`] said the medians are known); None without a
    /// sample.
    pub fn summary(&self) -> Option<Summary> {
        let (gap, idle) = self.medians_done?;
        self.summarizer.clone().finish(gap, idle)
    }
}
