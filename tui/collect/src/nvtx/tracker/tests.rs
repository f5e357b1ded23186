use super::*;

fn phases(out: &[Record]) -> Vec<(u64, String, bool, Option<u32>)> {
    out.iter()
        .filter_map(|r| match &r.body {
            RecordBody::Derived(d) => {
                let depth = d.nvtx.as_ref().and_then(|o| o.depth);
                match &d.event {
                    Event::PhaseStarted { phase, .. } => {
                        Some((r.t, phase.to_string(), true, depth))
                    }
                    Event::PhaseEnded { phase, .. } => Some((r.t, phase.to_string(), false, depth)),
                    _ => None,
                }
            }
            _ => None,
        })
        .collect()
}

#[test]
fn nested_ranges_nest_and_a_mapped_name_is_its_protocol_phase() {
    let map = PhaseMap::new(vec![("witgen".into(), Phase::Synthesis)]);
    let mut t = Tracker::new(map, 100);
    let mut out = Vec::new();
    for l in [
        "hello\t7\t0.1.0",
        "thread\t7\t8\tmain",
        "push\t7\t8\t200\t0\t0\t0\touter",
        "push\t7\t8\t300\t0\t1\t0\twitgen",
        "pop\t7\t8\t400\t0\t1",
        "pop\t7\t8\t500\t0\t0",
    ] {
        t.line(l, 1_000, &mut out);
    }
    let got = phases(&out);
    assert_eq!(
        got,
        vec![
            (200, "outer".into(), true, Some(0)),
            (300, "synthesis".into(), true, Some(1)),
            (400, "synthesis".into(), false, Some(1)),
            (500, "outer".into(), false, Some(0)),
        ]
    );
    let RecordBody::Derived(d) = &out[1].body else {
        panic!()
    };
    let o = d.nvtx.as_ref().unwrap();
    assert_eq!(
        (o.name.as_str(), o.thread, o.thread_name.as_deref()),
        ("witgen", 8, Some("main"))
    );
}

#[test]
fn an_end_read_before_its_start_closes_the_range_when_the_start_comes() {
    let mut t = Tracker::new(PhaseMap::default(), 0);
    let mut out = Vec::new();
    t.line("end\t7\t9\t900\t0\t5", 1_000, &mut out);
    t.line("start\t7\t8\t100\t0\t5\t0\tcrossing", 1_000, &mut out);
    assert_eq!(
        phases(&out),
        vec![
            (100, "crossing".into(), true, None),
            (900, "crossing".into(), false, None)
        ]
    );
    assert_eq!(t.open_ranges(), 0);
}

#[test]
fn a_range_open_at_the_end_is_named_and_a_bad_line_is_said_once() {
    let mut t = Tracker::new(PhaseMap::default(), 0);
    let mut out = Vec::new();
    t.line("push\t7\t8\t100\t0\t0\t0\tdoomed", 1_000, &mut out);
    t.line("push\tx", 1_000, &mut out);
    t.line("garbage", 1_000, &mut out);
    t.finish(2_000, &mut out);
    let warnings: Vec<String> = out
        .iter()
        .filter_map(|r| match &r.body {
            RecordBody::Mark(Mark::Warning { text }) => Some(text.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    assert!(warnings[0].contains("not understood"));
    assert!(warnings[1].contains("\"doomed\"") && warnings[1].contains("still open"));
}

#[test]
fn a_flood_is_admitted_whole_ranges_at_a_time_and_the_rest_counted() {
    let mut t = Tracker::new(PhaseMap::default(), 0);
    let mut out = Vec::new();
    let n = BURST; // twice the ranges the burst admits
    for i in 0..n {
        t.line(
            &format!("push\t7\t8\t{}\t0\t0\t0\tr", i * 2 + 1),
            10,
            &mut out,
        );
        t.line(&format!("pop\t7\t8\t{}\t0\t0", i * 2 + 2), 10, &mut out);
    }
    t.finish(20, &mut out);
    let p = phases(&out);
    let starts = p.iter().filter(|x| x.2).count();
    let ends = p.len() - starts;
    assert_eq!(starts, ends, "every admitted range is closed");
    assert_eq!(starts as u64, BURST / 2);
    let dropped: u64 = out
        .iter()
        .filter_map(|r| match &r.body {
            RecordBody::Mark(Mark::Dropped { count, .. }) => Some(*count),
            _ => None,
        })
        .sum();
    assert_eq!(dropped, n - BURST / 2);
}
