//! A part of the timeline: a chunk of one file of the set, or the records after its last
//! chunk, as the timeline finds it (where, how many records, their time range and the
//! envelope of its samples), in the fixed form its spill keeps; and its summary as a chart
//! bucket, for the zoomed-out history a seek draws without decoding.

use provetop_shared::session::compact::{self, Summary};
use provetop_shared::spill::{u64_at, Fixed};

use crate::series::{Bucket, Metric};

/// A run of records: a chunk of one file, or the records after its last chunk.
#[derive(Debug, Clone, Copy)]
pub struct Part {
    /// Which file of the set.
    pub file: usize,
    /// Its chunk in that file (`None`: the file's tail).
    pub chunk: Option<usize>,
    /// Records at its start already given by a chunk before (a chunk copied twice).
    pub skip: u32,
    /// Records in it (`skip` included).
    pub count: u32,
    /// Largest record time.
    pub t_max: u64,
    /// Earliest record time.
    pub t_min: u64,
    /// Byte offset in its file.
    pub offset: u64,
    /// The envelope of its samples.
    pub summary: Summary,
}

impl Fixed for Part {
    const SIZE: usize = 8 * 5 + 8 + compact::SUMMARY_LEN;
    fn put(&self, out: &mut Vec<u8>) {
        let chunk = self.chunk.map_or(u64::MAX, |c| c as u64);
        let counts = u64::from(self.skip) << 32 | u64::from(self.count);
        for v in [
            self.file as u64,
            chunk,
            counts,
            self.t_max,
            self.t_min,
            self.offset,
        ] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        self.summary.put(out);
    }
    fn take(b: &[u8]) -> Self {
        let counts = u64_at(b, 2);
        Part {
            file: u64_at(b, 0) as usize,
            chunk: Some(u64_at(b, 1))
                .filter(|&c| c != u64::MAX)
                .map(|c| c as usize),
            skip: (counts >> 32) as u32,
            count: counts as u32,
            t_max: u64_at(b, 3),
            t_min: u64_at(b, 4),
            offset: u64_at(b, 5),
            summary: Summary::get(&b[48..]),
        }
    }
}

/// A part's summary as one history bucket: RSS its range; peak, GPU memory and available
/// memory their extreme (the summary keeps no other end), so no peak is lost.
pub fn summary_bucket(p: &Part) -> Option<Bucket> {
    let s = p.summary;
    if s.samples == 0 {
        return None;
    }
    let mut lanes = [None; crate::series::METRICS];
    lanes[Metric::Rss.idx()] = Some((s.rss_min, s.rss_max));
    lanes[Metric::Peak.idx()] = Some((s.peak_max, s.peak_max));
    if s.gpu_max > 0 {
        lanes[Metric::Gpu.idx()] = Some((s.gpu_max, s.gpu_max));
    }
    if s.avail_min != u64::MAX {
        lanes[Metric::MemAvailable.idx()] = Some((s.avail_min, s.avail_min));
    }
    Some(Bucket::of_envelope(p.t_min, p.t_max, s.samples, lanes))
}

#[cfg(test)]
mod tests {
    use super::*;
    use provetop_shared::spill::Spill;

    #[test]
    fn parts_kept_in_a_spill_come_back_as_they_were() {
        let part = |i: u64| Part {
            file: (i % 3) as usize,
            chunk: (i % 5 != 0).then_some(i as usize),
            skip: (i % 7) as u32,
            count: 8192 - i as u32,
            t_max: i * 1_000 + 999,
            t_min: i * 1_000,
            offset: i << 16,
            summary: Summary {
                samples: i as u32,
                rss_min: i,
                rss_max: i << 20,
                peak_max: (i << 20) + 3,
                gpu_max: 0,
                avail_min: u64::MAX,
            },
        };
        let mut s = Spill::<Part>::default();
        let n = Spill::<Part>::block() as u64 * 2 + 7;
        (0..n).for_each(|i| s.push(part(i)));
        assert!(s.on_disk() > 0);
        for (i, p) in s.to_vec().unwrap().into_iter().enumerate() {
            assert_eq!(format!("{p:?}"), format!("{:?}", part(i as u64)));
        }
    }
}
