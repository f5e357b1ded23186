//! What a memory cgroup's accounting files say, parsed: `memory.stat`'s breakdown (v2 names,
//! or v1 names mapped to them) and the event counters (v2 `memory.events`; v1
//! `memory.oom_control` and `memory.failcnt`).
//!
//! A key the file lacks stays `None` (an older kernel, the other hierarchy): never 0.

use provetop_shared::record::{MemEvents, MemStat};

use super::Version;

/// `memory.stat`'s breakdown. v1: the hierarchical `total_*` keys where the file has them
/// (v2's are hierarchical too), else the cgroup's own; `rss` → anon, `cache` → file,
/// `mapped_file` → file_mapped, `dirty` → file_dirty, `writeback` → file_writeback,
/// `rss_huge` → anon_thp. v1's `kernel` is not in this file (memory.kmem.usage_in_bytes).
pub fn parse_stat(text: &str, version: Version) -> MemStat {
    let mut s = MemStat::default();
    let mut total_seen = false;
    for line in text.lines() {
        let Some((key, value)) = line.split_once(' ') else {
            continue;
        };
        let Ok(v) = value.trim().parse::<u64>() else {
            continue;
        };
        let slot = match version {
            Version::V2 => v2_slot(&mut s, key),
            Version::V1 => {
                // `total_*` follow the cgroup's own keys: they overwrite them.
                let (k, total) = match key.strip_prefix("total_") {
                    Some(k) => (k, true),
                    None => (key, false),
                };
                if !total && total_seen {
                    None
                } else {
                    total_seen |= total;
                    v1_slot(&mut s, k)
                }
            }
        };
        if let Some(slot) = slot {
            *slot = Some(v);
        }
    }
    s
}

fn v2_slot<'a>(s: &'a mut MemStat, key: &str) -> Option<&'a mut Option<u64>> {
    Some(match key {
        "anon" => &mut s.anon,
        "file" => &mut s.file,
        "shmem" => &mut s.shmem,
        "kernel" => &mut s.kernel,
        "kernel_stack" => &mut s.kernel_stack,
        "pagetables" => &mut s.pagetables,
        "sock" => &mut s.sock,
        "slab" => &mut s.slab,
        "file_mapped" => &mut s.file_mapped,
        "file_dirty" => &mut s.file_dirty,
        "file_writeback" => &mut s.file_writeback,
        "anon_thp" => &mut s.anon_thp,
        "unevictable" => &mut s.unevictable,
        _ => return None,
    })
}

fn v1_slot<'a>(s: &'a mut MemStat, key: &str) -> Option<&'a mut Option<u64>> {
    Some(match key {
        "rss" => &mut s.anon,
        "cache" => &mut s.file,
        "shmem" => &mut s.shmem,
        "mapped_file" => &mut s.file_mapped,
        "dirty" => &mut s.file_dirty,
        "writeback" => &mut s.file_writeback,
        "rss_huge" => &mut s.anon_thp,
        "unevictable" => &mut s.unevictable,
        _ => return None,
    })
}

/// The counters of a v2 `memory.events` text.
pub fn parse_events_v2(text: &str) -> MemEvents {
    let mut e = MemEvents::default();
    for (key, v) in pairs(text) {
        match key {
            "low" => e.low = Some(v),
            "high" => e.high = Some(v),
            "max" => e.max = Some(v),
            "oom" => e.oom = Some(v),
            "oom_kill" => e.oom_kill = Some(v),
            "oom_group_kill" => e.oom_group_kill = Some(v),
            _ => {}
        }
    }
    e
}

/// The counters of a v1 `memory.oom_control` text (`oom_kill`, `under_oom`) and, where
/// read, `memory.failcnt`'s.
pub fn parse_events_v1(oom_control: &str, failcnt: Option<&str>) -> MemEvents {
    let mut e = MemEvents::default();
    for (key, v) in pairs(oom_control) {
        match key {
            "oom_kill" => e.oom_kill = Some(v),
            "under_oom" => e.under_oom = Some(v != 0),
            _ => {}
        }
    }
    e.failcnt = failcnt.and_then(|t| t.trim().parse().ok());
    e
}

/// The counters whose value moved from `before` to `now`, as (name as its file writes it,
/// delta, total). A counter that went down (the cgroup was made anew) is not a move.
pub fn moved(before: &MemEvents, now: &MemEvents) -> Vec<(&'static str, u64, u64)> {
    let pairs = [
        ("high", before.high, now.high),
        ("max", before.max, now.max),
        ("oom", before.oom, now.oom),
        ("oom_kill", before.oom_kill, now.oom_kill),
        ("oom_group_kill", before.oom_group_kill, now.oom_group_kill),
        ("failcnt", before.failcnt, now.failcnt),
    ];
    pairs
        .into_iter()
        .filter_map(|(name, b, a)| match (b, a) {
            (Some(b), Some(a)) if a > b => Some((name, a - b, a)),
            _ => None,
        })
        .collect()
}

fn pairs(text: &str) -> impl Iterator<Item = (&str, u64)> {
    text.lines().filter_map(|l| {
        let (k, v) = l.split_once(' ')?;
        Some((k, v.trim().parse().ok()?))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A v1 cgroup's memory.stat on this VM (Linux 6.18).
    const V1_STAT: &str = "cache 4800081920\nrss 12840960\nrss_huge 0\nshmem 0\nmapped_file 12312576\ndirty 72241152\nwriteback 0\nworkingset_refault_anon 0\nworkingset_refault_file 326194\nswap 0\nswapcached 0\npgpgin 575342\npgpgout 257084\npgfault 86769\npgmajfault 22\ninactive_anon 12660736\nactive_anon 32768\ninactive_file 3213799424\nactive_file 1586270208\nunevictable 0\nhierarchical_memory_limit 9223372036854771712\nhierarchical_memsw_limit 9223372036854771712\ntotal_cache 4800196608\ntotal_rss 12840961\ntotal_rss_huge 0\ntotal_shmem 0\ntotal_mapped_file 12312576\ntotal_dirty 72241152\ntotal_writeback 0\ntotal_workingset_refault_anon 0\ntotal_workingset_refault_file 776933\ntotal_swap 0\ntotal_swapcached 0\ntotal_pgpgin 1037175\ntotal_pgpgout 718889\ntotal_pgfault 99236\ntotal_pgmajfault 4307\ntotal_inactive_anon 12660736\ntotal_active_anon 32768\ntotal_inactive_file 3213914112\ntotal_active_file 1586270208\ntotal_unevictable 0\n";

    /// A v2 service's memory.stat (Linux 6.8, Ubuntu 24.04), its first keys.
    const V2_STAT: &str = "anon 1630208\nfile 14311424\nkernel 1605632\nkernel_stack 65536\npagetables 188416\nsec_pagetables 0\npercpu 1440\nsock 4096\nvmalloc 0\nshmem 8192\nzswap 0\nzswapped 0\nfile_mapped 7299072\nfile_dirty 0\nfile_writeback 0\nswapcached 0\nanon_thp 0\nfile_thp 0\nshmem_thp 0\ninactive_anon 1622016\nactive_anon 16384\ninactive_file 9519104\nactive_file 4792320\nunevictable 0\nslab_reclaimable 838968\nslab_unreclaimable 410328\nslab 1249296\nworkingset_refault_anon 0\n";

    #[test]
    fn v1_stat_maps_the_hierarchical_totals_to_v2_names() {
        let s = parse_stat(V1_STAT, Version::V1);
        assert_eq!(s.anon, Some(12840961), "total_rss, not the own rss");
        assert_eq!(s.file, Some(4800196608));
        assert_eq!(s.file_mapped, Some(12312576));
        assert_eq!(s.file_dirty, Some(72241152));
        assert_eq!(s.anon_thp, Some(0));
        assert_eq!(s.shmem, Some(0));
        assert_eq!(
            (s.kernel, s.slab, s.sock, s.pagetables),
            (None, None, None, None)
        );
    }

    #[test]
    fn v2_stat_reads_its_own_names() {
        let s = parse_stat(V2_STAT, Version::V2);
        assert_eq!(s.anon, Some(1630208));
        assert_eq!(s.file, Some(14311424));
        assert_eq!(s.kernel, Some(1605632));
        assert_eq!(s.kernel_stack, Some(65536));
        assert_eq!(s.pagetables, Some(188416), "not sec_pagetables");
        assert_eq!(s.sock, Some(4096));
        assert_eq!(s.slab, Some(1249296));
        assert_eq!(s.shmem, Some(8192));
    }

    #[test]
    fn event_counters_of_both_hierarchies() {
        let e = parse_events_v2("low 0\nhigh 12\nmax 3\noom 1\noom_kill 1\noom_group_kill 0\n");
        assert_eq!(
            (
                e.high,
                e.max,
                e.oom,
                e.oom_kill,
                e.oom_group_kill,
                e.failcnt
            ),
            (Some(12), Some(3), Some(1), Some(1), Some(0), None)
        );
        let e = parse_events_v1(
            "oom_kill_disable 0\nunder_oom 0\noom_kill 1\n",
            Some("17\n"),
        );
        assert_eq!(
            (e.oom_kill, e.under_oom, e.failcnt, e.high),
            (Some(1), Some(false), Some(17), None)
        );
    }

    #[test]
    fn only_counters_that_went_up_moved() {
        let a = parse_events_v2("low 0\nhigh 12\nmax 3\noom 1\noom_kill 1\noom_group_kill 0\n");
        let b = parse_events_v2("low 0\nhigh 15\nmax 3\noom 2\noom_kill 0\noom_group_kill 0\n");
        assert_eq!(moved(&a, &b), vec![("high", 3, 15), ("oom", 1, 2)]);
    }
}
