//! Sessions recorded on the lent H100 (`assets/gpu-checks/`, docs/kernel.md and docs/nvtx.md
//! say how): what the screen makes of them, drawn as replay draws it.
//! * a PyTorch program's `torch.cuda.nvtx` ranges are its phases, with the GPU busy under
//!   its matrix products;
//! * the bundled prover in a cgroup whose `memory.max` is below its peak: the header names
//!   that limit, the chart draws it, the header counts down to the OOM before the kill, and
//!   the kill is named.

use std::path::PathBuf;

use super::drawn::screen_text;
use provetop::app::{App, Screen};
use provetop::theme::Theme;
use provetop_shared::session::load;
use provetop_shared::{Mark, Record, RecordBody};

fn records(name: &str) -> Vec<Record> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../assets/gpu-checks")
        .join(name);
    let l = load(&path).unwrap();
    assert!(l.warnings.is_empty(), "{name}: {:?}", l.warnings);
    l.records
}

/// The screen as it was live (the records applied in order, as replay applies them).
fn replay_app(first: u64) -> App {
    App::new(Screen::Run, Default::default(), Theme::mono(), first)
}

fn apply(app: &mut App, r: &Record) {
    app.clock = app.clock.max(r.t);
    app.model.apply(r);
}

#[test]
fn a_torch_programs_nvtx_ranges_are_the_phases_on_its_screen() {
    let recs = records("h100-torch-nvtx.ptop");
    let mut app = replay_app(recs[0].t);
    // The GPU's utilisation in the samples taken inside each `matmul` range.
    let mut open: Option<u64> = None;
    let mut under_matmul = Vec::new();
    for r in &recs {
        apply(&mut app, r);
        match &r.body {
            RecordBody::Derived(d) if d.nvtx.as_ref().is_some_and(|n| n.name == "matmul") => {
                open = match open {
                    None => Some(r.t),
                    Some(_) => None,
                };
            }
            RecordBody::Sample(s) if open.is_some() => {
                under_matmul.extend(s.gpus.iter().map(|g| g.util));
            }
            _ => {}
        }
    }
    assert!(
        !under_matmul.is_empty(),
        "no GPU reading under a matmul range"
    );
    let mean = under_matmul.iter().map(|&u| u as f64).sum::<f64>() / under_matmul.len() as f64;
    assert!(mean > 50.0, "GPU {mean:.0}% busy under the matrix products");

    let text = screen_text(&app, 100, 30);
    // Row labels are cut to the gutter (`pinned_co…`).
    for name in ["matmul", "pinned_co", "step", "phases from NVTX ranges"] {
        assert!(text.contains(name), "{name} missing:\n{text}");
    }
    assert!(!text.contains("by RSS thresholds"), "{text}");
}

#[test]
fn a_prover_past_its_cgroups_memory_max_is_counted_down_to_its_oom_kill_and_named() {
    let recs = records("h100-prover-oom-34gib.ptop");
    let killed_at = recs
        .iter()
        .find(|r| matches!(r.body, RecordBody::Mark(Mark::OomKill { .. })))
        .map(|r| r.t)
        .expect("the session holds the OOM kill");
    let mut app = replay_app(recs[0].t);
    let mut warned_at = None;
    let mut limit_drawn = false;
    for (i, r) in recs.iter().enumerate() {
        apply(&mut app, r);
        if r.t == killed_at {
            // Killed: nothing is counted down any more, though the dying process frees its
            // memory for a while before its exit is seen.
            let text = screen_text(&app, 80, 24);
            assert!(!text.contains("OOM in"), "{text}");
        }
        if r.t >= killed_at || i % 10 != 0 || !matches!(r.body, RecordBody::Sample(_)) {
            continue;
        }
        let text = screen_text(&app, 80, 24);
        let head: String = text.lines().take(2).collect::<Vec<_>>().join("\n");
        if warned_at.is_none() && head.contains("OOM in") {
            assert!(head.contains("ptop-prover memory.max"), "{head}");
            warned_at = Some(r.t);
        }
        // The ceiling the climb is heading for, drawn on the chart once the data nears it.
        limit_drawn |= text.contains("limit ptop-prover memory.max");
    }
    let warned_at = warned_at.expect("time to OOM shown before the kill");
    assert!(limit_drawn, "the binding limit never drawn on the chart");
    assert!(
        killed_at - warned_at > 1_000_000_000,
        "warned only {} ms before the kill",
        (killed_at - warned_at) / 1_000_000
    );
    let text = screen_text(&app, 80, 24);
    let first = text.lines().next().unwrap_or_default();
    assert!(
        first.contains("OOM kill of pid") && first.contains("provetop-prover"),
        "{text}"
    );
}
