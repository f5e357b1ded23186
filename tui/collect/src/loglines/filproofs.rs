//! rust-fil-proofs (`filecoin-proofs`, the sealing API lotus and curio call through
//! filecoin-ffi): `seal_pre_commit_phase1:start: SectorId(…)` … `:finish`, likewise
//! `seal_pre_commit_phase2`, `seal_commit_phase1`, `seal_commit_phase2`,
//! `seal_commit_phase2_circuit_proofs`, `verify_seal` and the API's other `name:start` /
//! `name:finish` pairs, and the parameter loading of `storage_proofs_core::parameter_cache`
//! (`parameter set identifier for cache: …` up to `read parameters from cache …` or `read
//! verifying key from cache …`): the whole sealing pipeline as phases of one sector, and
//! bellperson's proof inside C2 nested in it (the same proof id, see [`super::Tracker`]).
//!
//! A call that names no sector (`seal_pre_commit_phase2:start`, `generate_window_post:start`)
//! is a proof of its own, never the sector named last. A call that fails logs no `:finish`:
//! an error line that names the call (`seal_commit_phase2 failed: …`), or any error line of
//! the proofs' own targets (`filecoin_proofs`, `storage_proofs_*`, `filcrypto`), ends the
//! innermost such call, failed; so do the next start of the same call and the child's exit.

use provetop_shared::Phase;

use super::envelope::{Envelope, Level};
use super::{At, Hit, Scope};

/// Targets whose error lines end the innermost open call, whatever they say.
const ERROR_TARGETS: [&str; 3] = ["filecoin_proofs", "storage_proofs", "filcrypto"];

/// The phase that loading Groth16 parameters (or a verifying key) is shown as.
pub const PARAMS: &str = "params_load";

/// Read a rust-fil-proofs line.
pub fn read(e: &Envelope<'_>, out: &mut Vec<Hit>) -> bool {
    let m = e.msg.trim();
    if e.level == Some(Level::Error) {
        let call = called(m);
        let ours = e
            .target
            .as_deref()
            .is_some_and(|t| ERROR_TARGETS.iter().any(|p| t.starts_with(p)));
        if call.is_some() || ours {
            out.push(Hit::CallFailed {
                call: call.map(str::to_string),
                message: m.to_string(),
            });
            return true;
        }
    }
    if e.target_is(&["storage_proofs_core::parameter_cache"]) {
        if m.starts_with("parameter set identifier for cache:") {
            out.push(Hit::Start(At::new(
                Scope::Sector(None),
                Phase::Other(PARAMS.into()),
                None,
            )));
            return true;
        }
        if m.starts_with("read parameters from cache")
            || m.starts_with("read verifying key from cache")
        {
            out.push(Hit::End(At::new(
                Scope::Sector(None),
                Phase::Other(PARAMS.into()),
                None,
            )));
            return true;
        }
    }
    if !e.target_is(&["filecoin_proofs"]) {
        return false;
    }
    let (name, rest) = match m.split_once(':') {
        Some(x) => x,
        None => return false,
    };
    if name.is_empty()
        || !name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
    {
        return false;
    }
    let (what, sector) = match rest.split_once(": ") {
        Some((w, s)) => (w, sector_id(s)),
        None => (rest, None),
    };
    // A call that names no sector is one of its own, not the sector named last.
    let scope = match sector {
        Some(s) => Scope::Sector(Some(s)),
        None => Scope::Job(format!("fil_proofs:{name}")),
    };
    let phase = Phase::Other(name.to_string());
    match what {
        "start" => out.push(Hit::CallStart(At::new(scope, phase, None))),
        "finish" => out.push(Hit::CallEnd(At::new(scope, phase, None))),
        _ => return false,
    }
    true
}

/// The call an error line names at its head: `seal_commit_phase2: …`,
/// `generate_window_post failed …`.
fn called(m: &str) -> Option<&str> {
    let end = m
        .find(|c: char| !(c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'))
        .unwrap_or(m.len());
    let (name, rest) = m.split_at(end);
    let rest = rest.trim_start();
    let named = name.contains('_')
        && (rest.starts_with(':') || rest.starts_with("failed") || rest.starts_with("error"));
    named.then_some(name)
}

/// Whether a call makes a proof (a SNARK): sealing's C2, the PoSts, the snap-deals update
/// proofs, aggregation. Nested ones (a PoSt's `_with_vanilla` inside it) are the outer's.
pub fn is_proof_call(name: &str) -> bool {
    name == "seal_commit_phase2"
        || (name.starts_with("generate_") && name.contains("_post"))
        || name.starts_with("generate_empty_sector_update_proof")
        || name == "generate_partition_proofs"
        || name == "generate_single_partition_proof"
        || name.starts_with("aggregate_seal_commit_proofs")
}

/// `SectorId(9259733836259213201)` → the number.
fn sector_id(s: &str) -> Option<String> {
    let n = s.trim().strip_prefix("SectorId(")?.strip_suffix(')')?;
    n.bytes().all(|b| b.is_ascii_digit()).then(|| n.to_string())
}
