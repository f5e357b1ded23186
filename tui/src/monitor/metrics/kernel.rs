//! The kernel record's families: the limit that binds (its size, and an info series naming
//! it), pressure (the table's `psi_*` gauges: the tree's cgroup's where it has one, else the
//! host's; and every line of both scopes in one labelled family), and the tree's memory
//! cgroup: its other limits, swap, peak, `memory.stat` breakdown and `memory.events`
//! counters. A reading the record lacks is left out, never written as 0.

use std::fmt;

use prometheus_client::registry::Unit;
use provetop_shared::limit::HOST;
use provetop_shared::metric::KERNEL_CSV_COLUMNS;
use provetop_shared::{CgroupReading, Kernel, MemEvents, MemStat, Psi, PsiResource};

use super::labels::cut;
use super::out::{Counter, Gauge, Out, Value};

fn bytes() -> Option<Unit> {
    Some(Unit::Bytes)
}

/// The families of the latest kernel record, and the OOM kills seen in the session.
pub(super) fn kernel_gauges(o: &mut Out<'_, '_>, k: &Kernel) -> fmt::Result {
    // The kernel record's metrics of the table: the same as the CSV's kernel columns.
    for m in KERNEL_CSV_COLUMNS {
        o.metric(m, m.of_kernel(k).map(|v| Value::reading(m.unit(), v)))?;
    }
    if let Some(b) = &k.binding {
        let name = cut(&b.name);
        let kind = if b.name == HOST { "host" } else { "cgroup" };
        o.family(
            Gauge,
            "memory_limit_info",
            "the memory limit that binds the process tree, named (value 1)",
            None,
            ["limit", "kind"],
            [([name.as_str(), kind], 1u64)],
        )?;
        o.gauge(
            "memory_limit_room",
            "bytes left before the memory limit that binds the process tree",
            bytes(),
            b.room(),
        )?;
    }
    pressure(o, k)?;
    if let Some(cg) = &k.cgroup {
        cgroup(o, cg)?;
    }
    Ok(())
}

/// Every pressure line read, labelled by scope, resource and line.
fn pressure(o: &mut Out<'_, '_>, k: &Kernel) -> fmt::Result {
    let mut series: Vec<([&str; 3], Value)> = Vec::new();
    for (scope, psi) in [("host", &k.psi_host), ("cgroup", &k.psi_cgroup)] {
        let Some(psi) = psi else { continue };
        for (resource, r) in resources(psi) {
            series.push((
                [scope, resource, "some"],
                Value::Decimal(r.some.avg10 / 100.0),
            ));
            if let Some(full) = &r.full {
                series.push((
                    [scope, resource, "full"],
                    Value::Decimal(full.avg10 / 100.0),
                ));
            }
        }
    }
    if series.is_empty() {
        return Ok(());
    }
    o.family(
        Gauge,
        "pressure_avg10",
        "share of time tasks stalled on a resource (PSI avg10), host-wide and of the tree's cgroup",
        Some(Unit::Other("ratio".into())),
        ["scope", "resource", "line"],
        series,
    )
}

fn resources(p: &Psi) -> impl Iterator<Item = (&'static str, &PsiResource)> {
    [("memory", &p.memory), ("cpu", &p.cpu), ("io", &p.io)]
        .into_iter()
        .filter_map(|(n, r)| Some((n, r.as_ref()?)))
}

/// The tree's memory cgroup: limits besides the binding one, swap, peak, breakdown, events.
fn cgroup(o: &mut Out<'_, '_>, cg: &CgroupReading) -> fmt::Result {
    let limits: Vec<([&str; 1], u64)> = [
        ("max", cg.max),
        ("high", cg.high),
        ("low", cg.low),
        ("min", cg.min),
        ("soft", cg.soft),
        ("swap_max", cg.swap_max),
    ]
    .into_iter()
    .filter_map(|(k, v)| Some(([k], v?)))
    .collect();
    if !limits.is_empty() {
        o.family(
            Gauge,
            "cgroup_memory_limit",
            "the limits of the tree's memory cgroup (memory.max, .high, .low, .min, v1 soft limit, swap.max); absent when unlimited",
            bytes(),
            ["file"],
            limits,
        )?;
    }
    o.opt_gauge(
        "cgroup_memory_swap",
        "swap used by the tree's memory cgroup",
        bytes(),
        cg.swap,
    )?;
    o.opt_gauge(
        "cgroup_memory_peak",
        "highest usage of the tree's memory cgroup since the reading before (memory.peak, reset through provetop's own file)",
        bytes(),
        cg.peak,
    )?;
    let stat = stat_items(&cg.stat);
    if !stat.is_empty() {
        o.family(
            Gauge,
            "cgroup_memory_stat",
            "memory.stat's breakdown of the tree's memory cgroup",
            bytes(),
            ["item"],
            stat,
        )?;
    }
    let events = event_items(&cg.events);
    if !events.is_empty() {
        o.family(
            Counter,
            "cgroup_memory_events",
            "memory.events counters of the tree's memory cgroup (v1: failcnt and oom_control's oom_kill)",
            None,
            ["event"],
            events,
        )?;
    }
    Ok(())
}

fn stat_items(s: &MemStat) -> Vec<([&'static str; 1], u64)> {
    [
        ("anon", s.anon),
        ("file", s.file),
        ("shmem", s.shmem),
        ("kernel", s.kernel),
        ("kernel_stack", s.kernel_stack),
        ("pagetables", s.pagetables),
        ("sock", s.sock),
        ("slab", s.slab),
        ("file_mapped", s.file_mapped),
        ("file_dirty", s.file_dirty),
        ("file_writeback", s.file_writeback),
        ("anon_thp", s.anon_thp),
        ("unevictable", s.unevictable),
    ]
    .into_iter()
    .filter_map(|(k, v)| Some(([k], v?)))
    .collect()
}

fn event_items(e: &MemEvents) -> Vec<([&'static str; 1], u64)> {
    [
        ("low", e.low),
        ("high", e.high),
        ("max", e.max),
        ("oom", e.oom),
        ("oom_kill", e.oom_kill),
        ("oom_group_kill", e.oom_group_kill),
        ("failcnt", e.failcnt),
    ]
    .into_iter()
    .filter_map(|(k, v)| Some(([k], v?)))
    .collect()
}
