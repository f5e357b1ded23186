//! Groth16 parameter generation with progress and abort.
//!
//! bellperson's `generate_parameters` is one opaque call of minutes on large circuits. This is
//! the same algorithm (same inputs → bit-identical [`Parameters`], checked by a test against
//! bellperson itself), split into chunks on rayon so that a counter of finished work can be
//! reported as progress and an abort flag is honoured between chunks.

use std::ops::MulAssign;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

use bellperson::domain::EvaluationDomain;
use bellperson::groth16::{Parameters, VerifyingKey};
use bellperson::{Circuit, ConstraintSystem, Index, LinearCombination, SynthesisError, Variable};
use blstrs::{Bls12, G1Affine, G1Projective, G2Affine, G2Projective, Scalar as Fr};
use ec_gpu_gen::threadpool::Worker;
use ff::Field;
use group::prime::PrimeCurveAffine;
use group::{Curve, Group, Wnaf};
use rand::RngCore;
use rayon::prelude::*;

use crate::cs::{Flat, Record, Terms, Value};

/// Elements per parallel chunk (progress and abort granularity).
const CHUNK: usize = 256;
/// Relative cost of one H element (one G1 exponentiation).
const H_WEIGHT: u64 = 1;
/// Relative cost of one variable's A/B/C evaluation (up to three G1 and one G2 exponentiation).
const VAR_WEIGHT: u64 = 6;

/// The secret randomness of a (test) trusted setup.
#[derive(Clone, Copy)]
pub struct Toxic {
    /// Base of every G1 element: random, as bellperson draws it, not the standard generator.
    pub g1: G1Projective,
    /// Base of every G2 element, random likewise.
    pub g2: G2Projective,
    pub alpha: Fr,
    pub beta: Fr,
    pub gamma: Fr,
    pub delta: Fr,
    pub tau: Fr,
}

impl Toxic {
    /// Draw it from `rng` in the same order as bellperson's `generate_random_parameters`.
    pub fn random<R: RngCore>(rng: &mut R) -> Self {
        Toxic {
            g1: G1Projective::random(&mut *rng),
            g2: G2Projective::random(&mut *rng),
            alpha: Fr::random(&mut *rng),
            beta: Fr::random(&mut *rng),
            gamma: Fr::random(&mut *rng),
            delta: Fr::random(&mut *rng),
            tau: Fr::random(&mut *rng),
        }
    }
}

/// Work done / work in all, in abstract units proportional to time.
#[derive(Debug, Default)]
pub struct Progress {
    pub done: AtomicU64,
    /// Units in all (set once the circuit is synthesized).
    pub total: AtomicU64,
}

/// Why generation stopped.
#[derive(Debug, thiserror::Error)]
pub enum GenError {
    /// The circuit could not be synthesized or is malformed.
    #[error("parameter generation failed: {0}")]
    Synthesis(#[from] SynthesisError),
    /// The abort flag was raised.
    #[error("parameter generation aborted")]
    Aborted,
}

/// Per variable, the constraints of one matrix it appears in, with its coefficient.
type Column = Vec<Vec<(Fr, usize)>>;

/// The columns of one kind of variable (public inputs or auxiliaries) in A, B and C.
#[derive(Default)]
struct Columns {
    at: Column,
    bt: Column,
    ct: Column,
}

impl Columns {
    fn len(&self) -> usize {
        self.at.len()
    }

    /// A new variable, in no constraint yet.
    fn push(&mut self) -> usize {
        self.at.push(vec![]);
        self.bt.push(vec![]);
        self.ct.push(vec![]);
        self.len() - 1
    }
}

/// Records, per variable, in which constraints it appears with which coefficient.
#[derive(Default)]
struct Assembly {
    inputs: Columns,
    aux: Columns,
    num_constraints: usize,
}

impl Record for Assembly {
    fn alloc(&mut self, _: impl Value) -> Result<Variable, SynthesisError> {
        Ok(Variable::new_unchecked(Index::Aux(self.aux.push())))
    }

    fn alloc_input(&mut self, _: impl Value) -> Result<Variable, SynthesisError> {
        Ok(Variable::new_unchecked(Index::Input(self.inputs.push())))
    }

    fn enforce(&mut self, a: impl Terms, b: impl Terms, c: impl Terms) {
        let n = self.num_constraints;
        let mut record = |l: LinearCombination<Fr>, matrix: fn(&mut Columns) -> &mut Column| {
            for (index, coeff) in l.iter() {
                let (columns, id) = match index.get_unchecked() {
                    Index::Input(id) => (&mut self.inputs, id),
                    Index::Aux(id) => (&mut self.aux, id),
                };
                matrix(columns)[id].push((*coeff, n));
            }
        };
        record(a(LinearCombination::zero()), |m| &mut m.at);
        record(b(LinearCombination::zero()), |m| &mut m.bt);
        record(c(LinearCombination::zero()), |m| &mut m.ct);
        self.num_constraints += 1;
    }
}

type G1Wnaf<'a> = Wnaf<usize, &'a [G1Projective], &'a mut Vec<i64>>;
type G2Wnaf<'a> = Wnaf<usize, &'a [G2Projective], &'a mut Vec<i64>>;

fn check_abort(abort: &AtomicBool) -> Result<(), GenError> {
    if abort.load(Relaxed) {
        Err(GenError::Aborted)
    } else {
        Ok(())
    }
}

/// Output slices of one [`eval`] call.
struct EvalOut<'a> {
    a: &'a mut [G1Affine],
    b_g1: &'a mut [G1Affine],
    b_g2: &'a mut [G2Affine],
    ext: &'a mut [G1Affine],
}

/// Evaluate the QAP polynomials of a range of variables at τ, in G1/G2.
#[allow(clippy::too_many_arguments)]
fn eval(
    g1_wnaf: &G1Wnaf<'_>,
    g2_wnaf: &G2Wnaf<'_>,
    lagrange: &[Fr],
    columns: &Columns,
    out: EvalOut<'_>,
    inv: &Fr,
    toxic: &Toxic,
    progress: &Progress,
    abort: &AtomicBool,
) -> Result<(), GenError> {
    let eval_at_tau = |p: &[(Fr, usize)]| -> Fr {
        let mut acc = Fr::ZERO;
        for &(coeff, index) in p {
            acc += lagrange[index] * coeff;
        }
        acc
    };
    out.a
        .par_chunks_mut(CHUNK)
        .zip(out.b_g1.par_chunks_mut(CHUNK))
        .zip(out.b_g2.par_chunks_mut(CHUNK))
        .zip(out.ext.par_chunks_mut(CHUNK))
        .enumerate()
        .try_for_each(|(ci, (((a_out, b1_out), b2_out), ext_out))| {
            check_abort(abort)?;
            let mut g1 = g1_wnaf.shared();
            let mut g2 = g2_wnaf.shared();
            let n = a_out.len();
            let mut a = vec![G1Projective::identity(); n];
            let mut b1 = vec![G1Projective::identity(); n];
            let mut b2 = vec![G2Projective::identity(); n];
            let mut ext = vec![G1Projective::identity(); n];
            for j in 0..n {
                let i = ci * CHUNK + j;
                let mut at_v = eval_at_tau(&columns.at[i]);
                let mut bt_v = eval_at_tau(&columns.bt[i]);
                let ct_v = eval_at_tau(&columns.ct[i]);
                if !bool::from(at_v.is_zero()) {
                    a[j] = g1.scalar(&at_v);
                }
                if !bool::from(bt_v.is_zero()) {
                    b1[j] = g1.scalar(&bt_v);
                    b2[j] = g2.scalar(&bt_v);
                }
                at_v.mul_assign(&toxic.beta);
                bt_v.mul_assign(&toxic.alpha);
                let e = (at_v + bt_v + ct_v) * inv;
                ext[j] = g1.scalar(&e);
            }
            G1Projective::batch_normalize(&a, a_out);
            G1Projective::batch_normalize(&b1, b1_out);
            G2Projective::batch_normalize(&b2, b2_out);
            G1Projective::batch_normalize(&ext, ext_out);
            progress.done.fetch_add(n as u64 * VAR_WEIGHT, Relaxed);
            Ok(())
        })
}

/// Generate Groth16 parameters for `circuit` from `toxic`, reporting into `progress`.
pub fn generate<C: Circuit<Fr>>(
    circuit: C,
    toxic: &Toxic,
    progress: &Progress,
    abort: &AtomicBool,
) -> Result<Parameters<Bls12>, GenError> {
    let mut cs = Flat(Assembly::default());
    cs.alloc_input(|| "", || Ok(Fr::ONE))?;
    circuit.synthesize(&mut cs)?;
    let Flat(mut asm) = cs;
    // Input constraints x · 0 = 0 give the IC query full density (as bellperson does).
    for i in 0..asm.inputs.len() {
        asm.enforce(
            |lc| lc + Variable::new_unchecked(Index::Input(i)),
            |lc| lc,
            |lc| lc,
        );
    }

    let mut powers = EvaluationDomain::<Fr>::from_coeffs(vec![Fr::ZERO; asm.num_constraints])?;
    let m = powers.as_ref().len();
    let vars = asm.inputs.len() + asm.aux.len();
    progress.total.store(
        (m as u64 - 1) * H_WEIGHT + vars as u64 * VAR_WEIGHT,
        Relaxed,
    );

    let mut g1_table = Wnaf::new();
    let g1_wnaf = g1_table.base(toxic.g1, (m - 1) + 3 * vars);
    let mut g2_table = Wnaf::new();
    let g2_wnaf = g2_table.base(toxic.g2, vars);

    let gamma_inverse: Fr =
        Option::from(toxic.gamma.invert()).ok_or(SynthesisError::UnexpectedIdentity)?;
    let delta_inverse: Fr =
        Option::from(toxic.delta.invert()).ok_or(SynthesisError::UnexpectedIdentity)?;

    // Powers of τ.
    {
        let tau = toxic.tau;
        powers
            .as_mut()
            .par_chunks_mut(CHUNK * 16)
            .enumerate()
            .for_each(|(i, chunk)| {
                let mut cur = tau.pow_vartime([(i * CHUNK * 16) as u64]);
                for p in chunk {
                    *p = cur;
                    cur.mul_assign(&tau);
                }
            });
    }

    // H query: g1^{τ^i · t(τ) / δ}.
    let coeff = powers.z(&toxic.tau) * delta_inverse;
    let mut h = vec![G1Affine::identity(); m - 1];
    h.par_chunks_mut(CHUNK)
        .zip(powers.as_ref()[..m - 1].par_chunks(CHUNK))
        .try_for_each(|(out, p)| {
            check_abort(abort)?;
            let mut w = g1_wnaf.shared();
            let proj: Vec<G1Projective> = p.iter().map(|p| w.scalar(&(*p * coeff))).collect();
            G1Projective::batch_normalize(&proj, out);
            progress
                .done
                .fetch_add(out.len() as u64 * H_WEIGHT, Relaxed);
            Ok::<_, GenError>(())
        })?;

    // Powers of τ → Lagrange coefficients.
    powers
        .ifft(&Worker::new(), &mut None)
        .map_err(SynthesisError::from)?;
    let lagrange = powers.into_coeffs();

    let mut a = vec![G1Affine::identity(); vars];
    let mut b_g1 = vec![G1Affine::identity(); vars];
    let mut b_g2 = vec![G2Affine::identity(); vars];
    let mut ic = vec![G1Affine::identity(); asm.inputs.len()];
    let mut l = vec![G1Affine::identity(); asm.aux.len()];
    let ni = asm.inputs.len();

    eval(
        &g1_wnaf,
        &g2_wnaf,
        &lagrange,
        &asm.inputs,
        EvalOut {
            a: &mut a[..ni],
            b_g1: &mut b_g1[..ni],
            b_g2: &mut b_g2[..ni],
            ext: &mut ic,
        },
        &gamma_inverse,
        toxic,
        progress,
        abort,
    )?;
    eval(
        &g1_wnaf,
        &g2_wnaf,
        &lagrange,
        &asm.aux,
        EvalOut {
            a: &mut a[ni..],
            b_g1: &mut b_g1[ni..],
            b_g2: &mut b_g2[ni..],
            ext: &mut l,
        },
        &delta_inverse,
        toxic,
        progress,
        abort,
    )?;

    // An unconstrained variable would leave a hole in the (dense) L query.
    if l.iter().any(|e| bool::from(e.is_identity())) {
        return Err(SynthesisError::UnconstrainedVariable.into());
    }

    let g1 = toxic.g1.to_affine();
    let g2 = toxic.g2.to_affine();
    let vk = VerifyingKey::<Bls12> {
        alpha_g1: (g1 * toxic.alpha).to_affine(),
        beta_g1: (g1 * toxic.beta).to_affine(),
        beta_g2: (g2 * toxic.beta).to_affine(),
        gamma_g2: (g2 * toxic.gamma).to_affine(),
        delta_g1: (g1 * toxic.delta).to_affine(),
        delta_g2: (g2 * toxic.delta).to_affine(),
        ic,
    };
    let not_identity_g1 = |v: Vec<G1Affine>| -> Vec<G1Affine> {
        v.into_iter()
            .filter(|e| !bool::from(e.is_identity()))
            .collect()
    };
    Ok(Parameters {
        vk,
        h: Arc::new(h),
        l: Arc::new(l),
        a: Arc::new(not_identity_g1(a)),
        b_g1: Arc::new(not_identity_g1(b_g1)),
        b_g2: Arc::new(
            b_g2.into_iter()
                .filter(|e| !bool::from(e.is_identity()))
                .collect(),
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::circuit::{Layout, PartitionCircuit};
    use rand::SeedableRng;

    #[test]
    fn identical_to_bellperson() {
        let layout = Layout::for_constraints(1000).unwrap();
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(5);
        let toxic = Toxic::random(&mut rng);
        let progress = Progress::default();
        let ours = generate(
            PartitionCircuit::shape(layout),
            &toxic,
            &progress,
            &AtomicBool::new(false),
        )
        .unwrap();
        let theirs = bellperson::groth16::generate_parameters::<Bls12, _>(
            PartitionCircuit::shape(layout),
            toxic.g1,
            toxic.g2,
            toxic.alpha,
            toxic.beta,
            toxic.gamma,
            toxic.delta,
            toxic.tau,
        )
        .unwrap();
        assert!(ours == theirs, "parameters differ from bellperson's");
        let total = progress.total.load(Relaxed);
        assert!(total > 0);
        assert_eq!(progress.done.load(Relaxed), total);

        let err = generate(
            PartitionCircuit::shape(layout),
            &toxic,
            &Progress::default(),
            &AtomicBool::new(true),
        );
        assert!(matches!(err, Err(GenError::Aborted)));
    }
}
