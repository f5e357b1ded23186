//! The limit that binds: how much more memory the watched tree can take before the kernel
//! stops it, and what stops it.
//!
//! Two kinds of limit bind a tree: its memory cgroup's (the sampler puts the one with the
//! least room among `memory.max` and `memory.high` of the tree's cgroup and its ancestors in
//! [`Sample::cgroup_max`], with that cgroup's usage in [`Sample::cgroup_current`]) and the
//! host's (`MemAvailable`, read as it changes: a host whose `MemTotal` grows while memory is
//! used is followed, never a figure cached at start). The room is the least of the two; what
//! the tree can reach is its RSS plus that room. The limit's name ("curio.service memory.max",
//! "host MemAvailable") comes from the latest [`Kernel`] record where one names it.

use crate::record::{Binding, Sample};

/// Which kind of limit binds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bound {
    /// A memory cgroup's `memory.max` or `memory.high` (v1 `limit_in_bytes`).
    Cgroup,
    /// The host's MemAvailable.
    Host,
}

/// The room left before the limit that binds, from one sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Room {
    /// Bytes left.
    pub bytes: u64,
    /// What binds.
    pub bound: Bound,
}

/// The room at `s`: the least of the binding cgroup's room and MemAvailable. `None` when the
/// sample has neither (an imported CSV).
pub fn room(s: &Sample) -> Option<Room> {
    let cgroup = match (s.cgroup_max, s.cgroup_current) {
        (Some(max), Some(cur)) => Some(Room {
            bytes: max.saturating_sub(cur),
            bound: Bound::Cgroup,
        }),
        _ => None,
    };
    let host = s.mem_available.map(|a| Room {
        bytes: a,
        bound: Bound::Host,
    });
    match (cgroup, host) {
        (Some(c), Some(h)) => Some(if c.bytes < h.bytes { c } else { h }),
        (c, h) => c.or(h),
    }
}

/// What the tree's RSS can reach at `s`: its RSS plus the room left. This is what `rss > 90%`
/// is a percent of.
pub fn reach(s: &Sample) -> Option<u64> {
    room(s).map(|r| s.rss.saturating_add(r.bytes))
}

/// The name of what binds: the latest kernel record's name for it when that record agrees on
/// the kind, else the kind's generic name.
pub fn name(bound: Bound, named: Option<&Binding>) -> String {
    let named = named.map(|b| b.name.as_str());
    match (bound, named) {
        (Bound::Host, _) => HOST.to_string(),
        (Bound::Cgroup, Some(n)) if n != HOST => n.to_string(),
        (Bound::Cgroup, _) => "the cgroup's limit".to_string(),
    }
}

/// The host's limit, as every reader names it.
pub const HOST: &str = "host MemAvailable";

#[cfg(test)]
mod tests {
    use super::*;

    const GIB: u64 = 1 << 30;

    fn sample(rss: u64, avail: Option<u64>, cg: Option<(u64, u64)>) -> Sample {
        Sample {
            rss,
            mem_available: avail,
            cgroup_current: cg.map(|c| c.0),
            cgroup_max: cg.map(|c| c.1),
            ..Sample::default()
        }
    }

    #[test]
    fn the_cgroup_binds_when_its_room_is_the_smaller() {
        let s = sample(2 * GIB, Some(20 * GIB), Some((2 * GIB, 5 * GIB / 2)));
        assert_eq!(
            room(&s),
            Some(Room {
                bytes: GIB / 2,
                bound: Bound::Cgroup
            })
        );
        assert_eq!(reach(&s), Some(5 * GIB / 2));
        let b = Binding {
            name: "curio.service memory.max".into(),
            limit: 5 * GIB / 2,
            used: 2 * GIB,
        };
        assert_eq!(name(Bound::Cgroup, Some(&b)), "curio.service memory.max");
    }

    #[test]
    fn the_host_binds_when_memavailable_is_the_smaller_and_follows_it_as_it_changes() {
        let s = sample(2 * GIB, Some(GIB), Some((2 * GIB, 10 * GIB)));
        assert_eq!(room(&s).map(|r| r.bound), Some(Bound::Host));
        assert_eq!(reach(&s), Some(3 * GIB));
        // A host that balloons: more MemAvailable, more reach, sample by sample.
        let s = sample(2 * GIB, Some(100 * GIB), None);
        assert_eq!(reach(&s), Some(102 * GIB));
        assert_eq!(name(Bound::Host, None), "host MemAvailable");
    }

    #[test]
    fn a_sample_without_memory_readings_has_no_room() {
        assert_eq!(room(&sample(GIB, None, None)), None);
        assert_eq!(reach(&sample(GIB, None, None)), None);
    }
}
