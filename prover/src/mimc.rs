//! A MiMC-style compression function over the BLS12-381 scalar field, natively and as a
//! bellperson gadget.
//!
//! `compress(l, r)`: `x₀ = l`, `xᵢ₊₁ = (xᵢ + r + cᵢ)⁵` for [`ROUNDS`] rounds, output `x_R + l`
//! (a Miyaguchi–Preneel style feed-forward). `x ↦ x⁵` is a permutation of this field because
//! 5 does not divide `p − 1`. Each round costs 3 R1CS constraints (square, square, multiply),
//! so a compression is `3 · ROUNDS` constraints: fine-grained enough to hit any constraint
//! count closely, unlike SHA-256 (~27k constraints per block).
//!
//! This is a synthetic workload for memory and timing behaviour, not a vetted hash: the round
//! count is far below what a security analysis of MiMC would ask for. It is kept low (4) on
//! purpose: each round puts two full-width values in B, and SupraSeal proves those on the CPU.

use std::sync::OnceLock;

use bellperson::gadgets::num::AllocatedNum;
use bellperson::{ConstraintSystem, LinearCombination, SynthesisError};
use blstrs::Scalar as Fr;
use ff::Field;
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;

/// Rounds per compression.
pub const ROUNDS: usize = 4;

/// Constraints one [`compress_gadget`] call adds.
pub const CONSTRAINTS_PER_COMPRESS: u64 = 3 * ROUNDS as u64;

/// Round constants, fixed for all time (they are part of the circuit shape, hence of the SRS).
pub fn round_constants() -> &'static [Fr; ROUNDS] {
    static C: OnceLock<[Fr; ROUNDS]> = OnceLock::new();
    C.get_or_init(|| {
        let mut rng = ChaCha20Rng::from_seed(*b"provetop mimc round constants v1");
        std::array::from_fn(|_| Fr::random(&mut rng))
    })
}

/// Native compression.
pub fn compress(l: Fr, r: Fr) -> Fr {
    let mut x = l;
    for c in round_constants() {
        let t = x + r + c;
        x = t.square().square() * t;
    }
    x + l
}

/// A value in a circuit: a linear combination of variables and its witness value (absent
/// while generating parameters).
#[derive(Clone)]
pub struct Term {
    /// The linear combination.
    pub lc: LinearCombination<Fr>,
    /// Its value, when a witness is present.
    pub value: Option<Fr>,
}

impl Term {
    /// An allocated number as a term.
    pub fn num(n: &AllocatedNum<Fr>) -> Self {
        Term {
            lc: LinearCombination::zero() + n.get_variable(),
            value: n.get_value(),
        }
    }

    /// A constant (a multiple of the ONE input).
    pub fn constant<CS: ConstraintSystem<Fr>>(c: Fr) -> Self {
        Term {
            lc: LinearCombination::zero() + (c, CS::one()),
            value: Some(c),
        }
    }
}

/// Allocate `value = a · b` and enforce it; returns the product.
fn mul<CS: ConstraintSystem<Fr>>(
    mut cs: CS,
    a: &Term,
    b: &Term,
    minus: Option<&Term>,
) -> Result<AllocatedNum<Fr>, SynthesisError> {
    // With `minus = Some(m)` the allocated value is a·b + m, enforced as a·b = out − m.
    let out = AllocatedNum::alloc(cs.namespace(|| "out"), || {
        let v = *a.value.as_ref().ok_or(SynthesisError::AssignmentMissing)?
            * b.value.as_ref().ok_or(SynthesisError::AssignmentMissing)?;
        match minus {
            Some(m) => Ok(v + m.value.as_ref().ok_or(SynthesisError::AssignmentMissing)?),
            None => Ok(v),
        }
    })?;
    cs.enforce(
        || "mul",
        |lc| lc + &a.lc,
        |lc| lc + &b.lc,
        |lc| match minus {
            Some(m) => lc + out.get_variable() - &m.lc,
            None => lc + out.get_variable(),
        },
    );
    Ok(out)
}

/// `x⁵` of a term, 3 constraints; with `feed` the result is `x⁵ + feed` (same cost).
pub fn pow5_gadget<CS: ConstraintSystem<Fr>>(
    mut cs: CS,
    t: &Term,
    feed: Option<&Term>,
) -> Result<AllocatedNum<Fr>, SynthesisError> {
    let x2 = mul(cs.namespace(|| "x2"), t, t, None)?;
    let x2 = Term::num(&x2);
    let x4 = mul(cs.namespace(|| "x4"), &x2, &x2, None)?;
    mul(cs.namespace(|| "x5"), &Term::num(&x4), t, feed)
}

/// The compression as a gadget: `3 · ROUNDS` constraints and as many auxiliary variables.
pub fn compress_gadget<CS: ConstraintSystem<Fr>>(
    mut cs: CS,
    l: &AllocatedNum<Fr>,
    r: &Term,
) -> Result<AllocatedNum<Fr>, SynthesisError> {
    let l_term = Term::num(l);
    let mut x = l_term.clone();
    let consts = round_constants();
    let mut out = None;
    for (i, c) in consts.iter().enumerate() {
        let t = Term {
            lc: x.lc.clone() + &r.lc + (*c, CS::one()),
            value: match (x.value, r.value) {
                (Some(x), Some(r)) => Some(x + r + c),
                _ => None,
            },
        };
        let last = i + 1 == ROUNDS;
        let y = pow5_gadget(
            cs.namespace(|| format!("round {i}")),
            &t,
            last.then_some(&l_term),
        )?;
        x = Term::num(&y);
        out = Some(y);
    }
    Ok(out.expect("ROUNDS > 0"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use bellperson::util_cs::test_cs::TestConstraintSystem;

    #[test]
    fn gadget_matches_native() {
        let mut cs = TestConstraintSystem::<Fr>::new();
        let l = Fr::from(7u64);
        let r = Fr::from(11u64);
        let ln = AllocatedNum::alloc(cs.namespace(|| "l"), || Ok(l)).unwrap();
        let rn = AllocatedNum::alloc(cs.namespace(|| "r"), || Ok(r)).unwrap();
        let out = compress_gadget(cs.namespace(|| "h"), &ln, &Term::num(&rn)).unwrap();
        assert_eq!(out.get_value(), Some(compress(l, r)));
        assert!(cs.is_satisfied());
        assert_eq!(cs.num_constraints() as u64, CONSTRAINTS_PER_COMPRESS);
        // A constant right-hand side costs the same.
        let out2 = compress_gadget(
            cs.namespace(|| "h2"),
            &ln,
            &Term::constant::<TestConstraintSystem<Fr>>(r),
        )
        .unwrap();
        assert_eq!(out2.get_value(), Some(compress(l, r)));
        assert!(cs.is_satisfied());
        assert_ne!(compress(l, r), compress(r, l));
    }
}
