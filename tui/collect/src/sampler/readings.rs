//! What the tick takes from the helpers' latest readings: the sample's pinned total and the
//! usage reading.
//!
//! Both read the pinned state `provetop-maps` keeps and take a process's reading only when it
//! is of the current tree and no older than [`PINNED_STALE`]. The sample's pinned is `None`
//! (with a note, once, when a reading went stale) while any process's reading is unknown,
//! missing or stale. A usage reading is due at `usage_hz`; one that falls behind is next due a
//! period from now, and each reading's cost is counted for the handle.

use std::sync::atomic::Ordering;
use std::time::Instant;

use provetop_shared::clock::mono_ns;
use provetop_shared::{Mark, Record, RecordBody};

use super::tick::Sampler;
use super::PINNED_STALE;

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
        {
            let st = self.shared.pinned.lock().unwrap_or_else(|e| e.into_inner());
            for p in &mut self.tick_procs {
                let r = (st.gen == self.gen).then(|| st.pids.get(&p.pid)).flatten();
                p.pinned = r
                    .filter(|r| r.at.elapsed() <= PINNED_STALE)
                    .and_then(|r| r.reading)
                    .map(|r| r.pinned + p.status.locked.saturating_sub(r.locked_overlap));
            }
        }
        let (details, gpu_mem) = {
            let g = self.shared.gpu.lock().unwrap_or_else(|e| e.into_inner());
            if g.gen == self.gen {
                (g.details.clone(), g.procs.clone())
            } else {
                (Vec::new(), Vec::new())
            }
        };
        let Some(reader) = &mut self.usage else {
            return;
        };
        let t = mono_ns();
        let u = reader.read(t, &self.tick_procs, &gpu_mem, details);
        self.push(Record::new(t, RecordBody::Usage(u)));
    }

    /// The tree's pinned memory from the latest table readings plus VmLck: `None` (and a note,
    /// once) while a process's reading is unknown, missing or stale.
    pub(super) fn pinned(&mut self) -> Option<u64> {
        let mut sum = 0u64;
        let mut why: Option<String> = None;
        {
            let st = self.shared.pinned.lock().unwrap_or_else(|e| e.into_inner());
            for &(pid, locked) in &self.locked {
                let r = (st.gen == self.gen).then(|| st.pids.get(&pid)).flatten();
                match r {
                    Some(p) if p.at.elapsed() > PINNED_STALE => {
                        why.get_or_insert_with(|| {
                            format!(
                                "pinned memory unknown: the mapping table of pid {pid} was last read {:.1} s ago (its mmap lock is held?)",
                                p.at.elapsed().as_secs_f64()
                            )
                        });
                    }
                    Some(p) => match p.reading {
                        Some(r) => sum += r.pinned + locked.saturating_sub(r.locked_overlap),
                        // Said by the maps thread.
                        None => why = why.or(Some(String::new())),
                    },
                    // Not read yet (a new process): known within one tick.
                    None => why = why.or(Some(String::new())),
                }
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
