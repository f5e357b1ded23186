//! The sampler's reading of what the kernel enforces and reports about the tree: the root's
//! memory cgroup (accounting, limits, event counters, interval peak), the limits of its
//! ancestors and the host's MemAvailable (the one with least room binds), pressure (host and
//! cgroup), and OOM kills (the cgroup's counter and the kernel log).
//!
//! Each file at the rate it changes: a full [`Kernel`] reading every [`KERNEL_EVERY`] and at
//! once when an event counter moved; the binding cgroup's usage at every sample while a
//! cgroup limit applies; the event counters at every sample on v1 (one cheap kept-open read)
//! and on v2 only when `provetop-kernel` saw the kernel's notification; the kernel log and
//! PSI triggers only when that thread is woken for them.
//!
//! What cannot be read is said once ([`Mark::Note`]) and left `None`: a missing or
//! unreadable file, a kernel without PSI or without the per-file `memory.peak` reset, the
//! cgroup removed while watched, the root moved to another cgroup (then everything is opened
//! anew for the new one, and said).

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use provetop_shared::clock::mono_ns;
use provetop_shared::record::{Binding, Kernel, MemEvents};
use provetop_shared::units::fmt_bytes;
use provetop_shared::{Mark, Record, RecordBody, Sample};

use super::kernel_state::KernelState;
use super::kernel_watch::{v1_oom_notify, KernelWatch, Notify};
use super::tick::Sampler;
use crate::cgroup::accounting::moved;
use crate::cgroup::limits::tightest;
use crate::cgroup::{CgroupReader, Limits, MemCgroup, Room, Version};
use crate::kmsg::{Kmsg, Victim};
use crate::procfile::KeptOpen;
use crate::psi::{PsiFiles, Trigger};

/// How often a full kernel reading is taken (and a [`Kernel`] record pushed).
pub const KERNEL_EVERY: Duration = Duration::from_millis(500);
/// How long an OOM kill seen by the counter waits for the kernel log to name its victim.
const NAME_WAIT: Duration = Duration::from_millis(200);
/// How long a kill the log named in the cgroup stands for the counter's next move.
const NAMED_KEEP: Duration = Duration::from_secs(2);
/// How long, once the root is gone, the log is waited for to say whether it was OOM-killed.
const GONE_WAIT: Duration = Duration::from_millis(50);
/// Memory stall thresholds of the PSI triggers: this share of each window.
const STALL_SOME: f64 = 0.15;
const STALL_FULL: f64 = 0.10;
const STALL_WINDOW_US: u64 = 1_000_000;

impl Sampler {
    /// Open the kernel readers for the root (at start, on a root change, when the root moved
    /// to another cgroup) and say which cgroup it is in and which limits apply.
    pub(super) fn kernel_adopt(&mut self, moved_from: Option<String>) {
        let root = self.root;
        let old_host = self.kernel.host_psi.take();
        let said = std::mem::take(&mut self.kernel.said);
        let gone = std::mem::take(&mut self.kernel.gone);
        // The old watcher thread stops (joined) before the new one starts.
        self.kernel = KernelState {
            root,
            adopted: true,
            said,
            gone,
            ..KernelState::default()
        };
        let k = &mut self.kernel;
        k.pid_cgroup = KeptOpen::open(format!("/proc/{root}/cgroup"), 512).ok();
        if let Some(f) = k.pid_cgroup.as_mut() {
            k.pid_cgroup_text = f.read().map(<[u8]>::to_vec).unwrap_or_default();
        }
        let mut notes = Vec::new();
        // A watched cgroup is the tree's cgroup itself; else the root's.
        let cg = match &self.members {
            Some(m) => super::members::mem_cgroup(m.dir()),
            None => MemCgroup::of_pid(root),
        };
        let mut triggers = Vec::new();
        // Without a cgroup the intro says so (and what binds).
        let events_file = cg
            .as_ref()
            .and_then(|c| open_cgroup(k, c, &mut notes, &mut triggers));
        k.host_psi = match old_host {
            Some(h) => Some(h),
            None => match PsiFiles::host() {
                Ok(p) => Some(p),
                Err(why) => {
                    notes.push(format!("no pressure stall information on this kernel ({why}): pressure unavailable"));
                    None
                }
            },
        };
        if k.host_psi.is_some() {
            for (line, share) in [("some", STALL_SOME), ("full", STALL_FULL)] {
                match Trigger::open(
                    std::path::Path::new("/proc/pressure/memory"),
                    "host",
                    "memory",
                    line,
                    share,
                    STALL_WINDOW_US,
                ) {
                    Ok(t) => triggers.push(t),
                    Err(e) if line == "some" => notes.push(format!(
                        "cannot arm a memory stall trigger on /proc/pressure/memory ({e}; needs root or CAP_SYS_RESOURCE before Linux 6.5): stalls between samples are not marked"
                    )),
                    Err(_) => {}
                }
            }
        }
        let kmsg = match Kmsg::open_at_end() {
            Ok(k) => Some(k),
            Err(e) => {
                notes.push(format!(
                    "cannot read the kernel log /dev/kmsg ({e}): OOM kills are counted, their victims not named"
                ));
                None
            }
        };
        k.kmsg = kmsg.is_some();
        k.notified = events_file.is_some();
        if kmsg.is_some() || events_file.is_some() || !triggers.is_empty() {
            match KernelWatch::spawn(kmsg, events_file, triggers) {
                Ok(w) => k.watch = Some(w),
                Err(e) => {
                    k.kmsg = false;
                    notes.push(format!("cannot start the kernel watcher thread: {e}"));
                }
            }
        }
        k.events = k.cg.as_mut().and_then(|c| c.events(true));
        // The first reading, and the note that names the cgroup and its limits.
        let (rooms, binding) = self.kernel_limits(None);
        let intro = self.kernel_intro(&rooms, binding.as_ref(), moved_from);
        self.note(intro);
        // What is unavailable is said once per session, not again for each cgroup.
        for n in notes {
            if !self.kernel.said.contains(&n) {
                self.kernel.said.push(n.clone());
                self.note(n);
            }
        }
    }

    /// Read the chain's limits and find the binding one (kept for the samples).
    /// `host` is (MemTotal, MemAvailable) as the sample read them (at most
    /// [`super::system::RELAXED_EVERY`] old, every sample when memory runs short); `None`
    /// reads them now.
    fn kernel_limits(&mut self, host: Option<(u64, u64)>) -> (Vec<Room>, Option<Binding>) {
        let rooms = self
            .kernel
            .limits
            .as_mut()
            .map(Limits::read)
            .unwrap_or_default();
        let tight = tightest(&rooms).cloned();
        self.kernel.bound = tight.as_ref().map(|r| (r.member, r.limit));
        let host = host.or_else(|| self.meminfo.as_mut().and_then(|m| m.read().ok()));
        let binding = match (tight, host) {
            (Some(r), Some((_, avail))) if r.room() > avail => None,
            (Some(r), _) => Some(Binding {
                name: r.name.clone(),
                limit: r.limit,
                used: r.used,
            }),
            (None, _) => None,
        }
        .or_else(|| {
            host.map(|(total, avail)| Binding {
                name: "host MemAvailable".into(),
                limit: total,
                used: total.saturating_sub(avail),
            })
        });
        (rooms, binding)
    }

    fn kernel_intro(
        &mut self,
        rooms: &[Room],
        binding: Option<&Binding>,
        moved_from: Option<String>,
    ) -> String {
        let root = self.root;
        // A watched cgroup is named as such, not by a root pid it does not have.
        let who = match &self.members {
            Some(m) => format!("cgroup {}", m.dir().display()),
            None => format!("pid {root}"),
        };
        let Some(cg) = &self.kernel.cg else {
            let mut s = format!(
                "{who}: no memory cgroup readable (the hierarchy's root, no memory controller, or unreadable files): cgroup readings unavailable"
            );
            if let Some(b) = binding {
                s.push_str(&format!("; binding: {}", b.name));
            }
            return s;
        };
        let v = match cg.cgroup().version {
            Version::V1 => "cgroup v1",
            Version::V2 => "cgroup v2",
        };
        let mut s = match (moved_from, &self.members) {
            (Some(from), None) => format!("pid {root} moved from {from} to {} ({v})", cg.path()),
            (_, Some(_)) => format!("watched cgroup {} ({v})", cg.path()),
            (None, None) => format!("pid {root} in {} ({v})", cg.path()),
        };
        if rooms.is_empty() {
            s.push_str(": no cgroup memory limit");
        } else {
            let list: Vec<String> = rooms
                .iter()
                .map(|r| {
                    let who = if r.member == 0 {
                        r.file.to_string()
                    } else {
                        format!("{} {}", r.path, r.file)
                    };
                    format!("{who} {}", fmt_bytes(r.limit))
                })
                .collect();
            s.push_str(&format!(": {}", list.join(", ")));
        }
        if let Some(b) = binding {
            s.push_str(&format!(
                "; binding: {} ({} of {} left)",
                b.name,
                fmt_bytes(b.room()),
                fmt_bytes(b.limit)
            ));
        }
        s
    }

    /// At the start of a tick: what the watcher found (victims, stalls, modified counters)
    /// and, on v1, the OOM-kill counter; `true` when a kernel reading is due now.
    pub(super) fn kernel_look(&mut self) -> bool {
        let now = Instant::now();
        let mut due = self.kernel.next.is_none_or(|n| now >= n);
        let mut victims = Vec::new();
        let mut stalls = Vec::new();
        if let Some(w) = &self.kernel.watch {
            if w.shared.pending.swap(false, Ordering::AcqRel) {
                victims = std::mem::take(&mut *lock(&w.shared.victims));
                stalls = std::mem::take(&mut *lock(&w.shared.stalls));
                // Under reclaim `high` moves by the thousand a second: only a kill is worth a
                // reading before the cadence's next one.
                if w.shared.events_moved.swap(false, Ordering::AcqRel) {
                    due |= self.kills_moved();
                }
            }
        }
        for m in stalls {
            self.push(Record::new(mono_ns(), RecordBody::Mark(m)));
        }
        for v in victims {
            self.victim(v);
        }
        let polled = self.kernel.watch.is_some() && self.kernel.notified;
        if !due && !polled {
            due |= self.kills_moved();
        }
        if let Some((n, since)) = self.kernel.unnamed {
            if now.duration_since(since) >= NAME_WAIT {
                self.kernel.unnamed = None;
                let path = self.kernel.cg.as_ref().map(|c| c.path().to_string());
                for _ in 0..n {
                    self.oom_mark(None, None, path.clone(), false, format!(
                        "OOM kill in cgroup {} (its oom_kill counter moved; the kernel log names no victim)",
                        path.as_deref().unwrap_or("?")
                    ));
                }
            }
        }
        due
    }

    /// Whether the cgroup's kill counters (`oom`, `oom_kill`, `oom_group_kill`) moved since
    /// the last full reading: its counters file read now, alone.
    fn kills_moved(&mut self) -> bool {
        let kills = |e: &MemEvents| (e.oom, e.oom_kill, e.oom_group_kill);
        let now = self.kernel.cg.as_mut().and_then(|c| c.events(false));
        now.as_ref().map(kills) != self.kernel.events.as_ref().map(kills)
    }

    /// An OOM victim the kernel log named: marked when it was of the tree or in its cgroup.
    fn victim(&mut self, v: Victim) {
        let watched = self.procs.contains_key(&v.pid)
            || self.kernel.gone.contains(&v.pid)
            || v.pid == self.root;
        let path = self.kernel.cg.as_ref().map(|c| c.path().to_string());
        let in_cgroup = path.as_deref().is_some_and(|p| v.in_cgroup(p));
        if !watched && !in_cgroup {
            return;
        }
        if in_cgroup {
            match self.kernel.unnamed {
                Some((n, since)) => self.kernel.unnamed = (n > 1).then(|| (n - 1, since)),
                // Named before the counter was read: its move is this kill.
                None => self.kernel.named.push(Instant::now()),
            }
        }
        let text = v.describe();
        let cgroup = v.task_memcg.or(v.oom_memcg).or(path);
        self.oom_mark(Some(v.pid), Some(v.command), cgroup, watched, text);
    }

    fn oom_mark(
        &mut self,
        pid: Option<u32>,
        command: Option<String>,
        cgroup: Option<String>,
        watched: bool,
        text: String,
    ) {
        let m = Mark::OomKill {
            pid,
            command,
            cgroup,
            watched,
            text,
        };
        self.push(Record::new(mono_ns(), RecordBody::Mark(m)));
    }

    /// The sample's cgroup fields and, when `due`, a full kernel reading (pushed by the
    /// caller after the sample). `rss` is the tree's.
    pub(super) fn kernel_sample(&mut self, s: &mut Sample, due: bool) -> Option<Record> {
        // The interval peak: the cgroup's highest usage since the sample before, above its
        // usage now, added to the tree's RSS (exact where the tree is what moves in it).
        if !self.cfg.reset_peak {
            if let Some(cg) = self.kernel.cg.as_mut().filter(|c| c.has_peak()) {
                if let (Some(p), Some(c)) = (cg.interval_peak(), cg.current()) {
                    s.peak = Some(s.rss + p.saturating_sub(c));
                }
            }
        }
        let rec = due.then(|| self.kernel_reading(s)).flatten();
        if let (Some((member, limit)), Some(l)) = (self.kernel.bound, self.kernel.limits.as_mut()) {
            if s.cgroup_current.is_none() {
                s.cgroup_current = l.used(member);
            }
            s.cgroup_max = s.cgroup_current.map(|_| limit);
        }
        rec
    }

    /// A full reading: the record, its marks pushed (moved counters, OOM kills, the cgroup's
    /// removal or the root's move, said once).
    fn kernel_reading(&mut self, s: &mut Sample) -> Option<Record> {
        let t = mono_ns();
        self.kernel.next = Some(Instant::now() + KERNEL_EVERY);
        // A move is rare and the file lists every hierarchy: looked at every other reading.
        self.kernel.readings += 1;
        if self.kernel.readings % 2 == 0 && self.kernel_moved() {
            return None;
        }
        let (rooms, binding) = self.kernel_limits(s.mem_total.zip(s.mem_available));
        // A watched cgroup's removal ends the watch, which says so itself.
        let watched = self.members.is_some();
        let k = &mut self.kernel;
        let mut cgroup = None;
        if let Some(cg) = k.cg.as_mut() {
            if cg.removed() {
                if !std::mem::replace(&mut k.removed_said, true) && !watched {
                    let text = format!(
                        "cgroup {} was removed while watched: its readings are unavailable",
                        cg.path()
                    );
                    self.note(text);
                }
            } else {
                if self.cfg.reset_peak {
                    cg.interval_peak();
                }
                let events = cg.events(true);
                let r = cg.reading(&rooms, events.clone());
                if let (Some(before), Some(now)) = (&k.events, &events) {
                    let path = r.path.clone();
                    let moves = moved(before, now);
                    let kills = moves
                        .iter()
                        .find(|(c, _, _)| *c == "oom_kill")
                        .map(|&(_, d, _)| d);
                    let marked = self
                        .kernel
                        .counter_marks
                        .marks(moves.clone(), Instant::now());
                    for (counter, delta, total) in marked {
                        self.push(Record::new(
                            t,
                            RecordBody::Mark(Mark::MemoryEvent {
                                cgroup: path.clone(),
                                counter: counter.into(),
                                delta,
                                total,
                            }),
                        ));
                    }
                    if let Some(d) = kills {
                        let k = &mut self.kernel;
                        k.named.retain(|at| at.elapsed() < NAMED_KEEP);
                        let credit = (k.named.len() as u64).min(d);
                        k.named.drain(..credit as usize);
                        let d = d - credit;
                        let n = k.unnamed.map_or(0, |u| u.0) + d;
                        if n > 0 {
                            k.unnamed = Some((n, Instant::now()));
                            if !k.kmsg {
                                // Nothing will name them: marked at the next look.
                                k.unnamed = Some((n, already_waited()));
                            }
                        }
                    }
                }
                if events.is_some() {
                    self.kernel.events = events;
                }
                if s.cgroup_current.is_none() && self.kernel.bound.is_none() {
                    s.cgroup_current = r.current;
                }
                cgroup = Some(r);
            }
        }
        let psi_host = self.kernel.host_psi.as_mut().map(|p| p.read(t));
        let psi_cgroup = self.kernel.cg_psi.as_mut().map(|p| p.read(t));
        Some(Record::new(
            t,
            RecordBody::Kernel(Box::new(Kernel {
                cgroup,
                binding,
                psi_host,
                psi_cgroup,
            })),
        ))
    }

    /// Whether the root moved to another cgroup (then all is opened anew and said).
    fn kernel_moved(&mut self) -> bool {
        let k = &mut self.kernel;
        let Some(f) = k.pid_cgroup.as_mut() else {
            return false;
        };
        let Ok(text) = f.read() else {
            return false;
        };
        if text == k.pid_cgroup_text.as_slice() {
            return false;
        }
        k.pid_cgroup_text = text.to_vec();
        // An exiting process leaves its cgroups (v1 shows it in the root) before it is gone.
        if exiting(self.root) {
            return false;
        }
        // Another controller's move (cpu, …) changes the file too: only a new memory cgroup
        // counts.
        let now = MemCgroup::of_pid(self.root);
        let k = &mut self.kernel;
        if now.as_ref().map(|c| &c.dir) == k.cg.as_ref().map(|c| &c.cgroup().dir) {
            return false;
        }
        let from = k.cg.as_ref().map(|c| c.path().to_string());
        let removed = k.cg.as_ref().is_some_and(CgroupReader::removed);
        if removed && !k.removed_said {
            let text = format!(
                "cgroup {} was removed while watched: its readings are unavailable",
                from.as_deref().unwrap_or("?")
            );
            self.note(text);
        }
        self.kernel_adopt(Some(from.unwrap_or_else(|| "no memory cgroup".into())));
        true
    }

    /// The root is gone: whether the kernel log says it was OOM-killed (waiting briefly for
    /// the line), and any kill the counter saw.
    pub(super) fn kernel_root_gone(&mut self) {
        let root = self.root;
        self.kernel.gone.push(root);
        let end = Instant::now() + GONE_WAIT;
        if self.kernel.kmsg {
            loop {
                let named = self
                    .kernel
                    .watch
                    .as_ref()
                    .is_some_and(|w| lock(&w.shared.victims).iter().any(|v| v.pid == root));
                if named || Instant::now() >= end {
                    break;
                }
                std::thread::sleep(Duration::from_millis(5));
            }
        }
        self.kernel.next = None;
        let mut s = Sample::default();
        if self.kernel_look() {
            if let Some(r) = self.kernel_reading(&mut s) {
                self.push(r);
            }
        }
        if let Some((n, _)) = self.kernel.unnamed {
            self.kernel.unnamed = Some((n, already_waited()));
            self.kernel_look();
        }
    }

    /// Remember processes that left the tree (bounded).
    pub(super) fn kernel_left(&mut self, pids: &[u32]) {
        let g = &mut self.kernel.gone;
        g.extend_from_slice(pids);
        if g.len() > 256 {
            g.drain(..g.len() - 256);
        }
    }

    fn note(&mut self, text: String) {
        self.push(Record::new(
            mono_ns(),
            RecordBody::Mark(Mark::Note { text }),
        ));
    }
}

fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// A time [`NAME_WAIT`] ago (now, that early after boot): an unnamed kill marked at the next
/// look.
fn already_waited() -> Instant {
    let now = Instant::now();
    now.checked_sub(NAME_WAIT).unwrap_or(now)
}

/// Whether `pid` is exiting or gone (`PF_EXITING` in its stat flags, or a zombie).
fn exiting(pid: u32) -> bool {
    const PF_EXITING: u64 = 0x4;
    let Some(stat) = crate::procfile::read_stat(pid) else {
        return true;
    };
    let Some(f) = crate::procfile::StatFields::parse(stat.as_bytes()) else {
        return true;
    };
    matches!(f.state(), Some('Z' | 'X' | 'x'))
        || f.num::<u64>(9).is_some_and(|fl| fl & PF_EXITING != 0)
}

/// Open the readers of the root's cgroup `c` into `k`, arm its pressure triggers, and say how
/// its counters' moves will be told (v2 `memory.events`, v1 an OOM eventfd; `None`: read at
/// every sample).
fn open_cgroup(
    k: &mut KernelState,
    c: &MemCgroup,
    notes: &mut Vec<String>,
    triggers: &mut Vec<Trigger>,
) -> Option<Notify> {
    let (r, unavailable) = CgroupReader::open(c);
    notes.extend(unavailable);
    k.cg = Some(r);
    k.limits = Some(Limits::open(c));
    if c.version == Version::V1 {
        return v1_oom_notify(&c.dir).ok();
    }
    match PsiFiles::cgroup(&c.dir) {
        Ok(p) => k.cg_psi = Some(p),
        Err(why) => notes.push(format!("cgroup pressure unavailable: {why}")),
    }
    for (line, share) in [("some", STALL_SOME), ("full", STALL_FULL)] {
        if let Ok(t) = Trigger::open(
            &c.dir.join("memory.pressure"),
            "cgroup",
            "memory",
            line,
            share,
            STALL_WINDOW_US,
        ) {
            triggers.push(t);
        }
    }
    std::fs::File::open(c.dir.join("memory.events"))
        .ok()
        .map(Notify::Events)
}
