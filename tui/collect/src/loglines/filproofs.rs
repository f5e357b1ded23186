//! rust-fil-proofs (`filecoin-proofs`, the sealing API lotus and curio call through
//! filecoin-ffi): `seal_pre_commit_phase1:start: SectorId(…)` … `:finish`, likewise
//! `seal_pre_commit_phase2`, `seal_commit_phase1`, `seal_commit_phase2`,
//! `seal_commit_phase2_circuit_proofs`, `verify_seal` and the API's other `name:start` /
//! `name:finish` pairs, and the parameter loading of `storage_proofs_core::parameter_cache`
//! (`parameter set identifier for cache: …` up to `read parameters from cache …` or `read
//! verifying key from cache …`): the whole sealing pipeline as phases of one sector, and
//! bellperson's proof inside C2 nested in it (the same proof id, see [`super::Tracker`]).

use provetop_shared::Phase;

use super::envelope::Envelope;
use super::{At, Hit, Scope};

/// The phase that loading Groth16 parameters (or a verifying key) is shown as.
pub const PARAMS: &str = "params_load";

/// Read a rust-fil-proofs line.
pub fn read(e: &Envelope<'_>, out: &mut Vec<Hit>) -> bool {
    let m = e.msg.trim();
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
    let scope = Scope::Sector(sector);
    let phase = Phase::Other(name.to_string());
    match what {
        "start" => out.push(Hit::Start(At::new(scope, phase, None))),
        "finish" => out.push(Hit::End(At::new(scope, phase, None))),
        _ => return false,
    }
    true
}

/// `SectorId(9259733836259213201)` → the number.
fn sector_id(s: &str) -> Option<String> {
    let n = s.trim().strip_prefix("SectorId(")?.strip_suffix(')')?;
    n.bytes().all(|b| b.is_ascii_digit()).then(|| n.to_string())
}
