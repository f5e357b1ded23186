//! What the tick takes from the helpers' latest readings: the sample's pinned total and the
//! usage reading.
//!
//! Both read the pinned state `provetop-maps` keeps and take a process's reading only when it
//! is of the current tree and still stands (`stale`: no table read asked for and left
//! unanswered for [`PINNED_STALE`], none missing for that long past [`MAPS_FLOOR`]). The sample's pinned is `None`
//! (with a note, once, when a reading went stale) while any process's reading is unknown,
//! missing or stale. A usage reading is due at `usage_hz`; one that falls behind is next due a
//! period from now, and each reading's cost is counted for the handle.

use std::sync::atomic::Ordering;
use std::time::Instant;

use provetop_shared::clock::mono_ns;
use provetop_shared::{Mark, Record, RecordBody};

use super::shared::PidPinned;
use super::tick::Sampler;
use super::{MAPS_FLOOR, PINNED_STALE};

impl Sampler {
    /// Take a usage reading of this tick's processes and push it; schedule the next.
    pub(super) fn usage_reading(&mut self) {
        let now = Instant::now();
        self.usage_reading_at(now);
        let cost = now.elapsed().as_nanos() as u64;
        self.shared.usage_reads.fetch_add(1, Ordering::Relaxed);
        self.shared.usage_ns.fetch_add(cost, Ordering::Relaxed);
        self.shared.usage_max_ns.fetch_max(cost, Ordering::Relaxed);
    }

    fn usage_reading_at(&mut self, now: Instant) {
        self.next_usage += self.usage_period;
        if self.next_usage <= now {
            // Behind (a stall, or usage_hz above hz): the next one period from now.
            self.next_usage = now + self.usage_period;
        }
        for p in &mut self.tick_procs {
            p.pinned = self
                .pid_pinned
                .iter()
                .find(|(pid, _)| *pid == p.pid)
                .and_then(|&(_, v)| v);
        }
        let (details, gpu_mem, calls, backoff) = {
            let g = self.shared.gpu.lock().unwrap_or_else(|e| e.into_inner());
            let (calls, backoff) = (g.calls.clone(), g.backoff);
            if g.gen == self.gen {
                (g.details.clone(), g.procs.clone(), calls, backoff)
            } else {
                (Vec::new(), Vec::new(), calls, backoff)
            }
        };
        let Some(reader) = &mut self.usage else {
            return;
        };
        let t = mono_ns();
        let mut u = reader.read(t, &self.tick_procs, &gpu_mem, details);
        u.nvml_calls = calls;
        u.nvml_backoff = backoff;
        self.push(Record::new(t, RecordBody::Usage(u)));
    }

    /// The tree's pinned memory from the latest table readings plus VmLck: `None` (and a note,
    /// once) while a process's reading is unknown, missing or stale. Each process's own
    /// value is kept for the usage reading.
    pub(super) fn pinned(&mut self) -> Option<u64> {
        let mut sum = 0u64;
        let mut why: Option<String> = None;
        let now = Instant::now();
        self.pid_pinned.clear();
        {
            let st = self.shared.pinned.lock().unwrap_or_else(|e| e.into_inner());
            for c in &self.counted {
                let r = (st.gen == self.gen).then(|| st.pids.get(&c.pid)).flatten();
                let mut value = None;
                match r {
                    Some(p) => match stale(c.pid, p, marked(&self.procs, c.pid), now) {
                        Some(text) => {
                            why.get_or_insert_with(|| format!("pinned memory unknown: {text}"));
                        }
                        None => {
                            if marked(&self.procs, c.pid).is_some_and(|m| p.at >= m) {
                                // Answered: the table was read after it was asked for.
                                if let Some(proc) = self.procs.get_mut(&c.pid) {
                                    proc.marked = None;
                                }
                            }
                            match p.reading {
                                Some(r) => {
                                    let v = r.pinned + c.locked.saturating_sub(r.locked_overlap);
                                    sum += v;
                                    value = Some(v);
                                }
                                // Said by the maps thread.
                                None => why = why.or(Some(String::new())),
                            }
                        }
                    },
                    // Not read yet (a new process): known within one tick.
                    None => why = why.or(Some(String::new())),
                }
                self.pid_pinned.push((c.pid, value));
            }
        }
        match why {
            None => {
                self.pinned_stale_said = false;
                Some(sum)
            }
            Some(text) => {
                if !text.is_empty() && !self.pinned_stale_said {
                    self.pinned_stale_said = true;
                    self.push(Record::new(
                        mono_ns(),
                        RecordBody::Mark(Mark::Note { text }),
                    ));
                }
                None
            }
        }
    }
}

/// Why a process's latest table reading no longer stands for its pinned memory, if it does
/// not: a read asked for `marked` (its file and shmem pages moved) still unanswered after
/// [`PINNED_STALE`] (the table read is stuck behind the target's mmap lock), or no read at all
/// for [`PINNED_STALE`] past the floor. Otherwise the reading stands: the pages it counts are
/// among the file and shmem pages the status file shows unchanged since.
fn stale(pid: u32, p: &PidPinned, marked: Option<Instant>, now: Instant) -> Option<String> {
    let age = now.saturating_duration_since(p.at);
    let stuck = marked.is_some_and(|m| p.at < m && now.saturating_duration_since(m) > PINNED_STALE);
    (stuck || age > MAPS_FLOOR + PINNED_STALE).then(|| {
        format!(
            "the mapping table of pid {} was last read {:.1} s ago (its mmap lock is held?)",
            pid,
            age.as_secs_f64()
        )
    })
}

/// Since when a table read asked for `pid` waits for its answer.
fn marked(procs: &std::collections::HashMap<u32, super::tick::Proc>, pid: u32) -> Option<Instant> {
    procs.get(&pid).and_then(|p| p.marked)
}
