//! `fil-seal`: seals one 2 KiB sector with rust-fil-proofs' `filecoin-proofs` 19.1.0 public API, the
//! way lotus-worker drives it, and verifies it: pre-commit phase 1 and 2, commit phase 1 and 2,
//! verify. Logging is fil_logger's (RUST_LOG, stderr), as in lotus; nothing of provetop is linked
//! in, so whatever provetop shows of this process it learned from the process's output alone.
//!
//! `fil-seal params` generates the 2 KiB PoRep Groth16 parameters and verifying key offline (the
//! parameter cache API with an rng, as fil-proofs-param's paramcache does) into
//! `$FIL_PROOFS_PARAMETER_CACHE`; `fil-seal seal` then reads them from that cache.

use std::fs::File;
use std::io::Write;

use anyhow::{bail, ensure, Context, Result};
use filecoin_proofs::constants::DefaultPieceHasher;
use filecoin_proofs::{
    add_piece, clear_cache, generate_piece_commitment, seal_commit_phase1, seal_commit_phase2,
    seal_pre_commit_phase1, seal_pre_commit_phase2, validate_cache_for_commit,
    validate_cache_for_precommit_phase2, verify_seal, PoRepConfig, SectorShape2KiB,
    SECTOR_SIZE_2_KIB,
};
use log::info;
use rand::{Rng, RngCore, SeedableRng};
use rand_xorshift::XorShiftRng;
use storage_proofs_core::api_version::ApiVersion;
use storage_proofs_core::compound_proof::CompoundProof;
use storage_proofs_core::sector::SectorId;
use storage_proofs_porep::stacked::{StackedCompound, StackedDrg};

type Tree = SectorShape2KiB;

/// The registered seal proof StackedDrg2KiBV1_1 (id 5) as lotus encodes it into the PoRep ID.
const POREP_ID: [u8; 32] = {
    let mut id = [0u8; 32];
    id[0] = 5;
    id
};

fn porep_config() -> PoRepConfig {
    PoRepConfig::new_groth16(SECTOR_SIZE_2_KIB, POREP_ID, ApiVersion::V1_1_0)
}

fn main() -> Result<()> {
    fil_logger::init();
    let mode = std::env::args().nth(1).unwrap_or_default();
    match mode.as_str() {
        "params" => params(),
        "seal" => seal(),
        _ => bail!("usage: fil-seal params|seal (FIL_PROOFS_PARAMETER_CACHE names the cache)"),
    }
}

/// Generates (or finds already there) the Groth16 parameters and verifying key of the 2 KiB
/// PoRep circuit. Random, not the ceremony's: good for proving and verifying here, not on chain.
fn params() -> Result<()> {
    let config = porep_config();
    let public = filecoin_proofs::parameters::public_params::<Tree>(&config)?;
    let mut rng = XorShiftRng::from_seed([7; 16]);
    <StackedCompound<Tree, DefaultPieceHasher> as CompoundProof<
        StackedDrg<'_, Tree, DefaultPieceHasher>,
        _,
    >>::groth_params(Some(&mut rng), &public)?;
    <StackedCompound<Tree, DefaultPieceHasher> as CompoundProof<
        StackedDrg<'_, Tree, DefaultPieceHasher>,
        _,
    >>::verifying_key(Some(&mut rng), &public)?;
    info!("fil-seal: 2 KiB PoRep parameters ready");
    Ok(())
}

fn seal() -> Result<()> {
    let config = porep_config();
    let mut rng = XorShiftRng::from_seed([9; 16]);
    // A prover id that is a canonical field element (little-endian, top byte clear).
    let mut prover_id = [0u8; 32];
    rng.fill_bytes(&mut prover_id[..31]);
    let sector_id = SectorId::from(rng.gen::<u64>());
    let ticket: [u8; 32] = seed32(&mut rng);
    let seed: [u8; 32] = seed32(&mut rng);
    info!(
        "Creating seal proof with ApiVersion {} and PoRep ID {:?}",
        config.api_version, config.porep_id
    );

    let scratch = tempfile::tempdir().context("a scratch directory")?;
    let cache = scratch.path().join("cache");
    std::fs::create_dir(&cache)?;
    let piece_path = scratch.path().join("piece");
    let staged = scratch.path().join("staged");
    let sealed = scratch.path().join("sealed");
    let unpadded = config.unpadded_bytes_amount();
    let piece: Vec<u8> = (0..u64::from(unpadded)).map(|_| rng.gen()).collect();
    File::create(&piece_path)?.write_all(&piece)?;
    File::create(&sealed)?;

    let piece_info = generate_piece_commitment(File::open(&piece_path)?, unpadded)?;
    add_piece(
        File::open(&piece_path)?,
        File::create(&staged)?,
        unpadded,
        &[],
    )?;
    let pieces = vec![piece_info];

    let pc1 = seal_pre_commit_phase1::<_, _, _, Tree>(
        &config, &cache, &staged, &sealed, prover_id, sector_id, ticket, &pieces,
    )?;
    validate_cache_for_precommit_phase2(&cache, &staged, &pc1)?;
    let pc2 = seal_pre_commit_phase2(&config, pc1, &cache, &sealed)?;
    let (comm_r, comm_d) = (pc2.comm_r, pc2.comm_d);

    validate_cache_for_commit::<_, _, Tree>(&cache, &sealed)?;
    let c1 = seal_commit_phase1::<_, Tree>(
        &config, &cache, &sealed, prover_id, sector_id, ticket, seed, pc2, &pieces,
    )?;
    clear_cache(&cache)?;
    let c2 = seal_commit_phase2(&config, c1, prover_id, sector_id)?;

    let valid = verify_seal::<Tree>(
        &config, comm_r, comm_d, prover_id, sector_id, ticket, seed, &c2.proof,
    )?;
    ensure!(valid, "the seal proof of {sector_id:?} did not verify");
    info!("fil-seal: sector {sector_id:?} sealed and verified ({} byte proof)", c2.proof.len());
    Ok(())
}

fn seed32(rng: &mut impl RngCore) -> [u8; 32] {
    let mut bytes = [0u8; 32];
    rng.fill_bytes(&mut bytes);
    bytes
}
