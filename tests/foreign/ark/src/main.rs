//! `ark-prove`: a small arkworks Groth16 prover (ark-groth16 0.5 on BLS12-381) proving a MiMC-style
//! chain of cubings, `x ← (x + cᵢ)³`, two constraints a round.
//!
//! It tells of its phases in two independent ways, the two provetop reads:
//! * ark-std's `print-trace` lines on stdout (`Start:   Groth16::Prover`, `··Start:   Constraint
//!   synthesis`, `End:     … 1.234s`), which arkworks prints by itself with the feature on;
//! * `tracing` spans (`proof` > `prove` > `synthesis`, `setup`, `verify`) turned into protocol
//!   events by provetop-emit's Layer on `$PROVETOP_EVENTS_FD` (nothing without it, or with
//!   `PROVETOP_EVENTS=off`);
//! * with `--fmt`, those spans also as `tracing_subscriber::fmt` close lines on stderr
//!   (`… prove:synthesis: ark_prove: close time.busy=1.2ms time.idle=3µs`), as SP1 or Plonky3
//!   log theirs.
//!
//! Usage: `ark-prove [--proofs N] [--rounds R] [--fmt]` (defaults 2 proofs, 2^14 rounds).

use ark_bls12_381::{Bls12_381, Fr};
use ark_ff::Field;
use ark_groth16::Groth16;
use ark_relations::r1cs::{ConstraintSynthesizer, ConstraintSystemRef, SynthesisError};
use ark_snark::SNARK;
use provetop_emit::layer::PhaseLayer;
use provetop_emit::{Backend, BatchMode, ProverConfig};
use rand::{rngs::StdRng, SeedableRng};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

/// `x ← (x + cᵢ)³` for `rounds` rounds from a private start; the end value is public.
#[derive(Clone)]
struct Cubes {
    start: Fr,
    constants: Vec<Fr>,
}

impl Cubes {
    fn end(&self) -> Fr {
        self.constants.iter().fold(self.start, |x, c| {
            let y = x + c;
            y.square() * y
        })
    }
}

impl ConstraintSynthesizer<Fr> for Cubes {
    fn generate_constraints(self, cs: ConstraintSystemRef<Fr>) -> Result<(), SynthesisError> {
        let _span = tracing::info_span!("synthesis").entered();
        use ark_relations::lc;
        use ark_relations::r1cs::Variable;
        let end = cs.new_input_variable(|| Ok(self.end()))?;
        let mut x_val = self.start;
        let mut x = cs.new_witness_variable(|| Ok(x_val))?;
        let last = self.constants.len().saturating_sub(1);
        for (i, c) in self.constants.iter().enumerate() {
            let y_val = x_val + c;
            let sq_val = y_val.square();
            let cube_val = sq_val * y_val;
            let sq = cs.new_witness_variable(|| Ok(sq_val))?;
            // (x + c)·(x + c) = sq
            cs.enforce_constraint(
                lc!() + x + (*c, Variable::One),
                lc!() + x + (*c, Variable::One),
                lc!() + sq,
            )?;
            let cube = if i == last {
                end
            } else {
                cs.new_witness_variable(|| Ok(cube_val))?
            };
            // sq·(x + c) = cube
            cs.enforce_constraint(lc!() + sq, lc!() + x + (*c, Variable::One), lc!() + cube)?;
            x = cube;
            x_val = cube_val;
        }
        Ok(())
    }
}

fn arg(args: &[String], name: &str, default: usize) -> usize {
    match args.iter().position(|a| a == name) {
        None => default,
        Some(i) => match args.get(i + 1).and_then(|v| v.parse().ok()) {
            Some(v) => v,
            None => {
                eprintln!("ark-prove: {name} needs a number (usage: ark-prove [--proofs N] [--rounds R] [--fmt])");
                std::process::exit(2);
            }
        },
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let proofs = arg(&args, "--proofs", 2);
    let rounds = arg(&args, "--rounds", 1 << 14).max(1);

    let events = provetop_emit::from_env();
    events.hello(
        env!("CARGO_PKG_VERSION"),
        Backend::Cpu,
        ProverConfig {
            partitions: 1,
            constraints: 2 * rounds as u64,
            circuit: "ark-mimc-cubes".to_string(),
            mode: BatchMode::Single,
            threads: None,
        },
    );
    let fmt = args.iter().any(|a| a == "--fmt").then(|| {
        tracing_subscriber::fmt::layer()
            .with_writer(std::io::stderr)
            .with_ansi(false)
            .with_span_events(tracing_subscriber::fmt::format::FmtSpan::CLOSE)
    });
    tracing_subscriber::registry()
        .with(PhaseLayer::new(events.clone()))
        .with(fmt)
        .init();

    let mut rng = StdRng::seed_from_u64(42);
    let constants: Vec<Fr> = (0..rounds as u64).map(|i| Fr::from(i * 7 + 3)).collect();
    let circuit = Cubes {
        start: Fr::from(5u64),
        constants,
    };
    let (pk, vk) = {
        let _span = tracing::info_span!("setup").entered();
        Groth16::<Bls12_381>::circuit_specific_setup(circuit.clone(), &mut rng)
            .expect("setup of a satisfiable circuit")
    };
    let public = [circuit.end()];
    for id in 1..=proofs as u64 {
        let proof_span = tracing::info_span!("proof", proof_id = id, verified = false);
        let _p = proof_span.enter();
        let proof = {
            let _span = tracing::info_span!("prove").entered();
            Groth16::<Bls12_381>::prove(&pk, circuit.clone(), &mut rng).expect("proving")
        };
        let ok = {
            let _span = tracing::info_span!("verify").entered();
            Groth16::<Bls12_381>::verify(&vk, &public, &proof).expect("verifying")
        };
        proof_span.record("verified", ok);
        if !ok {
            eprintln!("ark-prove: proof {id} did not verify");
            std::process::exit(1);
        }
        eprintln!("ark-prove: proof {id} of {proofs} verified");
    }
    events.bye("done", proofs as u64);
}
