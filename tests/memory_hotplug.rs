//! "Memory left" while the host's MemTotal grows. The lent GPU machines balloon (MemTotal grows
//! as memory is used); here the same thing is made real with the kernel's memory hotplug:
//! blocks of RAM taken offline before a session and brought back during it. The session must
//! follow MemTotal as it changes and take the room left from MemAvailable as read, never from a
//! MemTotal read once.

use std::path::{Path, PathBuf};
use std::time::Duration;

use provetop::model::Model;
use provetop_shared::session::load;
use provetop_shared::RecordBody;
use provetop_testkit::faults::headless_cmd;

const MEMORY: &str = "/sys/devices/system/memory";

/// Memory blocks this test took offline; brought back online when dropped (also on a panic).
struct Offline(Vec<PathBuf>);

impl Offline {
    /// Up to `max` blocks taken offline, the highest-numbered first (the kernel refuses the
    /// ones holding pages it cannot move: those are skipped).
    fn take(max: usize) -> Offline {
        let mut blocks: Vec<(u64, PathBuf)> = std::fs::read_dir(MEMORY)
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| {
                let name = e.file_name().into_string().ok()?;
                let n = name.strip_prefix("memory")?.parse().ok()?;
                Some((n, e.path().join("state")))
            })
            .collect();
        blocks.sort();
        let mut taken = Vec::new();
        for (_, state) in blocks.into_iter().rev() {
            if taken.len() == max {
                break;
            }
            let online = std::fs::read_to_string(&state).is_ok_and(|s| s.trim() == "online");
            if online && std::fs::write(&state, "offline").is_ok() {
                taken.push(state);
            }
        }
        Offline(taken)
    }

    fn bring_back(&mut self) {
        for state in self.0.drain(..) {
            if let Err(e) = std::fs::write(&state, "online") {
                eprintln!("could not bring {} back online: {e}", state.display());
            }
        }
    }
}

impl Drop for Offline {
    fn drop(&mut self) {
        self.bring_back();
    }
}

fn block_bytes() -> u64 {
    let hex = std::fs::read_to_string(Path::new(MEMORY).join("block_size_bytes")).unwrap();
    u64::from_str_radix(hex.trim(), 16).unwrap()
}

fn mem_total() -> u64 {
    let info = std::fs::read_to_string("/proc/meminfo").unwrap();
    let line = info.lines().find(|l| l.starts_with("MemTotal:")).unwrap();
    let kb: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kb * 1024
}

#[test]
fn memory_left_follows_memtotal_as_the_host_grows_during_a_session() {
    let mut off = Offline::take(8);
    if off.0.len() < 2 {
        println!(
            "SKIPPED memory_left_follows_memtotal_as_the_host_grows_during_a_session: \
             no memory block could be taken offline here (memory hotplug, root)"
        );
        return;
    }
    let added = off.0.len() as u64 * block_bytes();
    let low = mem_total();
    let dir = tempfile::tempdir().unwrap();
    let session = dir.path().join("grow.ptop");
    let mut child = headless_cmd(dir.path(), &session, &["--hz", "20", "--", "sleep", "3"])
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1200));
    off.bring_back();
    let high = mem_total();
    assert_eq!(high, low + added, "the blocks came back");
    assert!(child.wait().unwrap().success());

    let l = load(&session).unwrap();
    let totals: Vec<u64> = l
        .records
        .iter()
        .filter_map(|r| match &r.body {
            RecordBody::Sample(s) => s.mem_total,
            _ => None,
        })
        .collect();
    assert!(totals.len() > 20, "{} samples", totals.len());
    assert_eq!(totals[0], low, "MemTotal at the start");
    assert_eq!(*totals.last().unwrap(), high, "MemTotal once the host grew");
    assert!(
        totals.windows(2).all(|w| w[0] <= w[1]),
        "MemTotal only grew: {totals:?}"
    );

    // The room left is MemAvailable as last read, "of" the MemTotal as last read.
    let mut m = Model::new(Default::default());
    for r in &l.records {
        m.apply(r);
    }
    let last = m.last_sample.clone().unwrap();
    let (room, of, name) = m.binding().unwrap();
    if name == provetop_shared::limit::HOST {
        assert_eq!(Some(room), last.mem_available);
        assert_eq!(of, Some(high));
    } else {
        // A cgroup limit of the test runner's binds tighter: still no MemTotal cached.
        assert_eq!(last.mem_total, Some(high), "{name}");
    }
}
