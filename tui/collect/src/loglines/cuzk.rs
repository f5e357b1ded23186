//! cuzk (curio's proving daemon, `extern/cuzk`) and its SupraSeal C2 kernels:
//!
//! * `TIMELINE,{offset_ms},{EVENT},{job_id},{detail}` (`cuzk-core/src/engine.rs`), detail
//!   `key=value` pairs: `SYNTH_START`/`SYNTH_END` (per `partition=`, or the whole job),
//!   `GPU_QUEUE` … `GPU_PICKUP` (waiting for a GPU worker), `GPU_START`/`GPU_END` (per
//!   `worker=` and `partition=`). The offset is milliseconds since the engine started: lines
//!   are placed by it, anchored at the first one's arrival.
//! * `CUZK_TIMING: key_ms=N …` and `CUZK_NTT_H: stage=Nms … total=Nms`
//!   (`supraseal-c2/cuda/groth16_*.cu`): stage durations, each a span ending at the line.

use provetop_shared::Phase;

use super::duration::parse_secs;
use super::envelope::Envelope;
use super::{At, Hit, Scope};

/// Read a cuzk line.
pub fn read(e: &Envelope<'_>, out: &mut Vec<Hit>) -> bool {
    let m = e.msg.trim();
    if let Some(rest) = m.strip_prefix("TIMELINE,") {
        return timeline(rest, out);
    }
    if let Some(rest) = m.strip_prefix("CUZK_TIMING:") {
        let mut any = false;
        for kv in rest.split_whitespace() {
            let Some((k, v)) = kv.split_once('=') else {
                continue;
            };
            let Some(stage) = k.strip_suffix("_ms") else {
                continue;
            };
            let Ok(ms) = v.parse::<u64>() else { continue };
            out.push(Hit::Took {
                at: At::new(Scope::Grammar, Phase::Other(format!("cuzk_{stage}")), None),
                secs: ms as f64 / 1e3,
                ago: 0.0,
            });
            any = true;
        }
        return any;
    }
    if let Some(rest) = m.strip_prefix("CUZK_NTT_H:") {
        // Stages in order, one after the other, the last ending now; `total` spans them.
        let stages: Vec<(&str, f64)> = rest
            .split_whitespace()
            .filter_map(|kv| kv.split_once('='))
            .filter_map(|(k, v)| Some((k, parse_secs(v)?)))
            .collect();
        let mut ago = 0.0;
        for (k, secs) in stages.iter().rev() {
            if *k == "total" {
                out.push(Hit::Took {
                    at: At::new(Scope::Grammar, Phase::Other("cuzk_ntt_h".into()), None),
                    secs: *secs,
                    ago: 0.0,
                });
                continue;
            }
            out.push(Hit::Took {
                at: At::new(
                    Scope::Grammar,
                    Phase::Other(format!("cuzk_ntt_h_{k}")),
                    None,
                ),
                secs: *secs,
                ago,
            });
            ago += secs;
        }
        return !stages.is_empty();
    }
    false
}

fn timeline(rest: &str, out: &mut Vec<Hit>) -> bool {
    let mut parts = rest.splitn(4, ',');
    let (Some(ms), Some(event), Some(job)) = (parts.next(), parts.next(), parts.next()) else {
        return false;
    };
    let Ok(offset_ms) = ms.parse::<u64>() else {
        return false;
    };
    let detail = parts.next().unwrap_or("");
    let field = |name: &str| {
        detail
            .split(',')
            .filter_map(|kv| kv.split_once('='))
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v)
    };
    let partition = field("partition").and_then(|p| p.parse::<u32>().ok());
    let scope = Scope::Job(job.to_string());
    let hit = |start: bool, phase: Phase| {
        if start {
            Hit::Start(At::new(scope.clone(), phase, partition))
        } else {
            Hit::End(At::new(scope.clone(), phase, partition))
        }
    };
    let queue = || Phase::Other("gpu_queue".into());
    let hits = match event {
        "SYNTH_START" => vec![hit(true, Phase::Synthesis)],
        "SYNTH_END" => vec![hit(false, Phase::Synthesis)],
        "GPU_QUEUE" => vec![hit(true, queue())],
        "GPU_PICKUP" => vec![hit(false, queue())],
        "GPU_START" => vec![hit(true, Phase::Prove)],
        "GPU_END" => vec![hit(false, Phase::Prove)],
        _ => return false,
    };
    out.push(Hit::Offset { ms: offset_ms });
    out.extend(hits);
    true
}
