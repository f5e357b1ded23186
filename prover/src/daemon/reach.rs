//! What this process can reach before the kernel stops it: its RSS now plus the room before
//! the limit that binds it, the least of its memory cgroup's limits up the hierarchy
//! (`memory.max`, `memory.high`; v1 `limit_in_bytes`) and the host's MemAvailable, read when
//! asked (a host whose MemTotal grows is followed). The `--mem-budget` check caps the budget
//! with it: a mode whose predicted peak the kernel would not allow is refused even under a
//! larger budget.

use provetop_collect::cgroup::{Limits, MemCgroup};
use provetop_collect::procstatus::read_status;
use provetop_collect::sampler::system::MemInfo;

/// (bytes this process can reach, what binds: "job.service memory.max", "host
/// MemAvailable"); `None` when neither its RSS nor any limit can be read.
pub(super) fn now() -> Option<(u64, String)> {
    let me = std::process::id();
    let rss = read_status(me).ok()?.rss;
    let mut best: Option<(u64, String)> = MemInfo::open()
        .and_then(|mut m| m.read())
        .ok()
        .map(|(_, avail)| (avail, provetop_shared::limit::HOST.to_string()));
    if let Some(cg) = MemCgroup::of_pid(me) {
        for r in Limits::open(&cg).read() {
            if best.as_ref().is_none_or(|b| r.room() < b.0) {
                best = Some((r.room(), r.name.clone()));
            }
        }
    }
    best.map(|(room, name)| (rss.saturating_add(room), name))
}
