//! The "PoRep-shaped" synthetic circuit.
//!
//! A sector is proved by P partitions; each partition is one bellperson circuit of exactly
//! the requested number of constraints (as bellperson's prover counts them: the synthesized
//! constraints plus one per public input, the implicit ONE included). A partition opens K
//! challenged leaves of the sector's Merkle tree, the way Filecoin's PoRep does:
//!
//! * the challenged leaf index is decomposed into `depth` boolean bits (the path directions),
//!   and all challenge bits are packed into public inputs (the verifier checks which leaves
//!   were opened);
//! * the leaf's data is decomposed into 255 boolean bits and put through up to
//!   [`LABEL_ROUNDS`] rounds of bitwise XOR labelling (one constraint and one 0/1 variable per
//!   bit per round), the boolean work of real PoRep's SHA-256 layers;
//! * the label is then committed to by a bit-selected product, `acc · gᵢ^bitᵢ` over
//!   [`ACCUMULATE_PER_LABEL`] passes per labelling round (fixed-base exponentiation, the
//!   shape of Pedersen / knapsack commitments): one constraint and one full-width field
//!   element per step. It is the dense arithmetic that makes a CPU prover work hard;
//! * the leaf is hashed into a leaf node, then `depth` levels of conditional swap +
//!   MiMC-style compression lead to the root, which must equal the public input `comm_r`
//!   (the Poseidon-like part);
//! * the accumulation continues over the last leaf's bits to pad the circuit to the exact
//!   count.
//!
//! Where values sit matters to GPU provers and is pinned by a test: in every constraint outside
//! the Merkle hash, the B operand is a single data bit (or ONE plus a multiple of a label bit),
//! so B holds few variables, all 0/1, like a SHA-256 circuit. ec-gpu-gen's cost follows how
//! many variables A and B hold; SupraSeal runs its B-in-G2 MSM over the non-0/1 values on the
//! CPU, so only the Merkle hash's few reach it. About a third of the witness is 0/1.
//!
//! Memory follows the real thing: after synthesis bellperson holds a, b, c (32 B each per
//! constraint) and the auxiliary assignment (32 B per variable, about one per constraint here),
//! ~128 B per constraint per partition.

use std::fmt;
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use bellperson::gadgets::boolean::{AllocatedBit, Boolean};
use bellperson::gadgets::multipack;
use bellperson::gadgets::num::AllocatedNum;
use bellperson::{Circuit, ConstraintSystem, Index, LinearCombination, SynthesisError, Variable};
use blstrs::Scalar as Fr;
use ff::{Field, PrimeField};
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;

use crate::mimc::{compress_gadget, Term, CONSTRAINTS_PER_COMPRESS, ROUNDS};
use crate::sector::{leaf_tag, Sector};

/// Depth of every sector's Merkle tree (1024 leaves).
pub const TREE_DEPTH: u32 = 10;
/// Version of the circuit's constraint structure; part of the SRS cache key.
pub const CIRCUIT_VERSION: u32 = 3;
/// Labelling rounds per challenge when the partition is large enough (255 constraints each).
pub const LABEL_ROUNDS: u32 = 24;
/// Accumulation passes over the label (255 constraints each) per labelling round.
pub const ACCUMULATE_PER_LABEL: u32 = 2;
const LABEL_BITS: u64 = Fr::NUM_BITS as u64;
/// Name reported in `hello`.
pub const CIRCUIT_NAME: &str = "porep-mimc-merkle";

const LEAF_BITS_CONSTRAINTS: u64 = Fr::NUM_BITS as u64 + 1; // 255 booleans + 1 packing
/// Rotation of each labelling round (XOR of bit i with bit i+off): SHA-256's sigma offsets.
const LABEL_OFFSETS: [usize; 6] = [2, 13, 22, 6, 11, 25];

/// How a partition circuit of a given constraint count is built.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    /// Merkle tree depth.
    pub depth: u32,
    /// Challenged leaves per partition.
    pub challenges: u32,
    /// Labelling rounds per challenge (XOR mixing of the leaf's bits).
    pub label_rounds: u32,
    /// Accumulation steps (1 constraint each) that pad to the exact count.
    pub filler: u64,
    /// Constraints as bellperson counts them (synthesized + public inputs incl. ONE).
    pub constraints: u64,
}

/// The requested size cannot hold even one challenge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TooSmall {
    /// Requested constraints.
    pub requested: u64,
    /// Smallest possible.
    pub minimum: u64,
}

impl fmt::Display for TooSmall {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} constraints is too small for one Merkle opening (minimum {})",
            self.requested, self.minimum
        )
    }
}

impl std::error::Error for TooSmall {}

impl Layout {
    /// Constraints one challenge costs.
    pub fn per_challenge(depth: u32, label_rounds: u32) -> u64 {
        let d = depth as u64;
        d // index bits
            + LEAF_BITS_CONSTRAINTS
            + label_rounds as u64 * LABEL_BITS * (1 + ACCUMULATE_PER_LABEL as u64)
            + CONSTRAINTS_PER_COMPRESS // leaf node
            + d * (2 + CONSTRAINTS_PER_COMPRESS) // swap + compress per level
            + 1 // root equality
    }

    fn packed_inputs(depth: u32, challenges: u32) -> u64 {
        let bits = depth as u64 * challenges as u64;
        bits.div_ceil(Fr::CAPACITY as u64)
    }

    /// Public inputs excluding ONE: `comm_r` and the packed challenge bits.
    pub fn public_inputs(&self) -> usize {
        1 + Self::packed_inputs(self.depth, self.challenges) as usize
    }

    fn base(depth: u32, challenges: u32, label_rounds: u32) -> u64 {
        let packed = Self::packed_inputs(depth, challenges);
        (2 + packed) // inputs incl. ONE (bellperson adds one constraint each)
            + packed // packing constraints
            + challenges as u64 * Self::per_challenge(depth, label_rounds)
    }

    /// The layout with exactly `constraints` constraints and as many challenges as fit.
    pub fn for_constraints(constraints: u64) -> Result<Layout, TooSmall> {
        let depth = TREE_DEPTH;
        let minimum = Self::base(depth, 1, 0);
        if constraints < minimum {
            return Err(TooSmall {
                requested: constraints,
                minimum,
            });
        }
        // Full labelling when one such challenge fits, else as many rounds as fit.
        let r = (0..=LABEL_ROUNDS)
            .rev()
            .find(|&r| Self::base(depth, 1, r) <= constraints)
            .unwrap_or(0);
        let mut k = (constraints / Self::per_challenge(depth, r)).clamp(1, u32::MAX as u64) as u32;
        while k > 1 && Self::base(depth, k, r) > constraints {
            k -= 1;
        }
        Ok(Layout {
            depth,
            challenges: k,
            label_rounds: r,
            filler: constraints - Self::base(depth, k, r),
            constraints,
        })
    }

    /// A name that determines the constraint system completely (the SRS cache key).
    pub fn shape_id(&self) -> String {
        format!(
            "{CIRCUIT_NAME}-v{CIRCUIT_VERSION}-r{ROUNDS}-d{}-k{}-l{}x{ACCUMULATE_PER_LABEL}-f{}-n{}",
            self.depth,
            self.challenges,
            self.label_rounds,
            self.filler,
            self.constraints
        )
    }
}

/// Observes synthesis of partition circuits (timing, abort).
pub trait SynthesisHooks: Send + Sync {
    /// Synthesis of `partition` begins (called on the synthesizing thread).
    fn started(&self, partition: u32);
    /// Synthesis of `partition` ended after `seconds` (`ok` false when it failed/aborted).
    fn finished(&self, partition: u32, seconds: f64, ok: bool);
    /// Checked between challenges: returning true aborts synthesis with an error.
    fn should_abort(&self) -> bool;
}

/// The witness of one partition.
#[derive(Clone)]
pub struct PartitionWitness {
    /// The sector.
    pub sector: Arc<Sector>,
    /// Partition index within the sector.
    pub partition: u32,
    /// Challenged leaf indices.
    pub challenges: Vec<u32>,
}

impl PartitionWitness {
    /// The witness of `partition` of `sector` under `layout` (challenges derived from `seed`).
    pub fn new(layout: &Layout, sector: Arc<Sector>, seed: u64, partition: u32) -> Self {
        let challenges = sector.challenges(seed, partition, layout.challenges);
        PartitionWitness {
            sector,
            partition,
            challenges,
        }
    }

    /// Public inputs the verifier needs: `comm_r`, then the packed challenge bits.
    pub fn public_inputs(&self, layout: &Layout) -> Vec<Fr> {
        let bits: Vec<bool> = self
            .challenges
            .iter()
            .flat_map(|&c| (0..layout.depth).map(move |l| (c >> l) & 1 == 1))
            .collect();
        let mut out = vec![self.sector.root()];
        out.extend(multipack::compute_multipacking::<Fr>(&bits));
        out
    }
}

/// One partition circuit; without a witness it is the shape used for parameter generation.
#[derive(Clone)]
pub struct PartitionCircuit {
    layout: Layout,
    witness: Option<PartitionWitness>,
    hooks: Option<Arc<dyn SynthesisHooks>>,
    /// Partition number reported to the hooks.
    label: u32,
}

fn aborted() -> SynthesisError {
    SynthesisError::IoError(std::io::Error::new(
        std::io::ErrorKind::Interrupted,
        "aborted",
    ))
}

/// True when a synthesis error is the abort signal of [`SynthesisHooks::should_abort`].
pub fn is_abort(e: &SynthesisError) -> bool {
    matches!(e, SynthesisError::IoError(io) if io.kind() == std::io::ErrorKind::Interrupted)
}

impl PartitionCircuit {
    /// The shape only (no witness), for parameter generation and counting.
    pub fn shape(layout: Layout) -> Self {
        PartitionCircuit {
            layout,
            witness: None,
            hooks: None,
            label: 0,
        }
    }

    /// A provable partition.
    pub fn new(
        layout: Layout,
        witness: PartitionWitness,
        hooks: Option<Arc<dyn SynthesisHooks>>,
    ) -> Self {
        PartitionCircuit {
            layout,
            label: witness.partition,
            witness: Some(witness),
            hooks,
        }
    }

    /// Report this circuit to the hooks as partition `label` (e.g. unique within a
    /// multi-sector proof) instead of its partition within the sector.
    pub fn with_label(mut self, label: u32) -> Self {
        self.label = label;
        self
    }

    fn partition(&self) -> u32 {
        self.label
    }

    fn synthesize_inner<CS: ConstraintSystem<Fr>>(
        &self,
        cs: &mut CS,
    ) -> Result<(), SynthesisError> {
        let l = &self.layout;
        let w = self.witness.as_ref();
        let missing = || SynthesisError::AssignmentMissing;

        let root = AllocatedNum::alloc_input(cs.namespace(|| "comm_r"), || {
            w.map(|w| w.sector.root()).ok_or_else(missing)
        })?;

        let mut all_bits = Vec::with_capacity((l.challenges * l.depth) as usize);
        // The last challenge's accumulator, label and step count: the padding continues it.
        let mut tail = None;
        for k in 0..l.challenges as usize {
            if self.hooks.as_ref().is_some_and(|h| h.should_abort()) {
                return Err(aborted());
            }
            let mut cs = cs.namespace(|| format!("challenge {k}"));
            let leaf = w.map(|w| w.challenges[k]);
            let path = w.map(|w| w.sector.path(leaf.expect("witness present")));

            let bits = (0..l.depth)
                .map(|lvl| {
                    AllocatedBit::alloc(
                        cs.namespace(|| format!("index bit {lvl}")),
                        leaf.map(|i| (i >> lvl) & 1 == 1),
                    )
                    .map(Boolean::from)
                })
                .collect::<Result<Vec<_>, _>>()?;

            let data = AllocatedNum::alloc(cs.namespace(|| "leaf data"), || {
                w.map(|w| w.sector.data[leaf.expect("witness") as usize])
                    .ok_or_else(missing)
            })?;
            // Booleanity of every bit of the leaf, then the labelling rounds: each XORs the
            // label with the data bits rotated by SHA-256's sigma offsets. The data bit is the
            // B operand, so B keeps to the 255 data bits however many rounds run.
            let data_bits = data.to_bits_le(cs.namespace(|| "leaf data bits"))?;
            let n = data_bits.len();
            let mut label = data_bits.clone();
            for r in 0..l.label_rounds as usize {
                let off = LABEL_OFFSETS[r % LABEL_OFFSETS.len()];
                let mut cs = cs.namespace(|| format!("label round {r}"));
                label = (0..n)
                    .map(|i| {
                        Boolean::xor(
                            cs.namespace(|| format!("bit {i}")),
                            &label[i],
                            &data_bits[(i + off) % n],
                        )
                    })
                    .collect::<Result<Vec<_>, _>>()?;
            }
            // The commitment to the label: full-width values, only 0/1 label bits in B.
            let mut acc = data.clone();
            let passes = (l.label_rounds * ACCUMULATE_PER_LABEL) as u64;
            for step in 0..passes * n as u64 {
                acc = select_mul(
                    cs.namespace(|| format!("accumulate {step}")),
                    &acc,
                    &label[step as usize % n],
                    step,
                )?;
            }
            let mut cur = compress_gadget(
                cs.namespace(|| "leaf node"),
                &data,
                &Term::constant::<CS>(leaf_tag()),
            )?;

            for (lvl, bit) in bits.iter().enumerate() {
                let sib = AllocatedNum::alloc(cs.namespace(|| format!("sibling {lvl}")), || {
                    path.as_ref().map(|p| p[lvl]).ok_or_else(missing)
                })?;
                let (left, right) = AllocatedNum::conditionally_reverse(
                    cs.namespace(|| format!("swap {lvl}")),
                    &cur,
                    &sib,
                    bit,
                )?;
                cur = compress_gadget(
                    cs.namespace(|| format!("node {lvl}")),
                    &left,
                    &Term::num(&right),
                )?;
            }
            cs.enforce(
                || "root matches comm_r",
                |lc| lc + cur.get_variable(),
                |lc| lc + CS::one(),
                |lc| lc + root.get_variable(),
            );
            all_bits.extend(bits);
            tail = Some((acc, label, passes * n as u64));
        }
        multipack::pack_into_inputs(cs.namespace(|| "challenge bits"), &all_bits)?;

        // Padding to the exact count: the last accumulation goes on over its label.
        let (mut acc, label, first) = tail.expect("every layout has a challenge");
        for i in 0..l.filler {
            if i % 1024 == 0 && self.hooks.as_ref().is_some_and(|h| h.should_abort()) {
                return Err(aborted());
            }
            let step = first + i;
            acc = select_mul(
                cs.namespace(|| format!("pad {i}")),
                &acc,
                &label[step as usize % label.len()],
                step,
            )?;
        }
        Ok(())
    }
}

/// The constant that step `step` of an accumulation multiplies in when its bit is set.
fn accumulate_constant(step: u64) -> Fr {
    static G: OnceLock<[Fr; 256]> = OnceLock::new();
    let g = G.get_or_init(|| {
        let mut rng = ChaCha20Rng::from_seed(*b"provetop accumulate constants v3");
        std::array::from_fn(|_| Fr::random(&mut rng))
    });
    // A fresh constant per (pass, bit); none is 0 or 1 but with negligible probability.
    g[(step % 256) as usize] + Fr::from(step / 256 + 2)
}

/// `acc · g^bit` for step `step`'s constant `g`: one constraint, `acc` in A and only the bit
/// (with ONE) in B, so the full-width values never reach B.
fn select_mul<CS: ConstraintSystem<Fr>>(
    mut cs: CS,
    acc: &AllocatedNum<Fr>,
    bit: &Boolean,
    step: u64,
) -> Result<AllocatedNum<Fr>, SynthesisError> {
    let g = accumulate_constant(step);
    let out = AllocatedNum::alloc(cs.namespace(|| "acc"), || {
        let a = acc.get_value().ok_or(SynthesisError::AssignmentMissing)?;
        let b = bit.get_value().ok_or(SynthesisError::AssignmentMissing)?;
        Ok(if b { a * g } else { a })
    })?;
    cs.enforce(
        || "select mul",
        |lc| lc + acc.get_variable(),
        |lc| lc + CS::one() + &bit.lc(CS::one(), g - Fr::ONE),
        |lc| lc + out.get_variable(),
    );
    Ok(out)
}

impl Circuit<Fr> for PartitionCircuit {
    fn synthesize<CS: ConstraintSystem<Fr>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let partition = self.partition();
        let start = self.hooks.as_ref().map(|h| {
            h.started(partition);
            Instant::now()
        });
        let res = self.synthesize_inner(cs);
        if let (Some(h), Some(t)) = (&self.hooks, start) {
            h.finished(partition, t.elapsed().as_secs_f64(), res.is_ok());
        }
        res
    }
}

/// Sizes of a circuit as bellperson's prover sees them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ShapeCount {
    /// Constraints including the one bellperson adds per public input (ONE included).
    pub constraints: u64,
    /// Public inputs including ONE.
    pub inputs: u64,
    /// Auxiliary (private) variables.
    pub aux: u64,
}

struct CountCs(ShapeCount);

impl ConstraintSystem<Fr> for CountCs {
    type Root = Self;

    fn alloc<F, A, AR>(&mut self, _: A, _: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Fr, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.0.aux += 1;
        Ok(Variable::new_unchecked(Index::Aux(self.0.aux as usize - 1)))
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, _: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Fr, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.0.inputs += 1;
        Ok(Variable::new_unchecked(Index::Input(
            self.0.inputs as usize - 1,
        )))
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, _: LA, _: LB, _: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
        LB: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
        LC: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
    {
        self.0.constraints += 1;
    }

    fn push_namespace<NR, N>(&mut self, _: N)
    where
        NR: Into<String>,
        N: FnOnce() -> NR,
    {
    }

    fn pop_namespace(&mut self) {}

    fn get_root(&mut self) -> &mut Self::Root {
        self
    }
}

/// Count a layout's circuit by synthesizing its shape.
pub fn count(layout: Layout) -> ShapeCount {
    let mut cs = CountCs(ShapeCount {
        inputs: 1, // ONE
        ..Default::default()
    });
    PartitionCircuit::shape(layout)
        .synthesize(&mut cs)
        .expect("shape synthesis needs no witness");
    let mut c = cs.0;
    c.constraints += c.inputs;
    c
}

#[cfg(test)]
mod tests {
    use super::*;
    use bellperson::util_cs::test_cs::TestConstraintSystem;
    use ff::Field;

    #[test]
    fn exact_counts() {
        for n in [Layout::base(TREE_DEPTH, 1, 0), 1024, 5000, 1 << 14, 100_003] {
            let l = Layout::for_constraints(n).unwrap();
            let c = count(l);
            assert_eq!(c.constraints, n, "{l:?}");
            assert_eq!(c.inputs as usize, 1 + l.public_inputs());
            // About one auxiliary variable per constraint, like the real circuits.
            let ratio = c.aux as f64 / c.constraints as f64;
            assert!((0.9..1.1).contains(&ratio), "aux/constraint {ratio}");
        }
        assert!(Layout::for_constraints(100).is_err());
        assert_eq!(Layout::for_constraints(1024).unwrap().label_rounds, 0);
        assert_eq!(Layout::for_constraints(4096).unwrap().label_rounds, 4);
        let full = Layout::for_constraints(1 << 16).unwrap();
        assert_eq!(full.label_rounds, LABEL_ROUNDS);
        // Padding stays below one challenge.
        assert!(full.filler < Layout::per_challenge(full.depth, LABEL_ROUNDS));
    }

    /// Which auxiliary variables a circuit puts in A and in B, with their values.
    #[derive(Default)]
    struct Placement {
        values: Vec<Fr>,
        in_a: Vec<bool>,
        in_b: Vec<bool>,
        constraints: usize,
    }

    impl ConstraintSystem<Fr> for Placement {
        type Root = Self;

        fn alloc<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
        where
            F: FnOnce() -> Result<Fr, SynthesisError>,
            A: FnOnce() -> AR,
            AR: Into<String>,
        {
            self.values.push(f()?);
            self.in_a.push(false);
            self.in_b.push(false);
            Ok(Variable::new_unchecked(Index::Aux(self.values.len() - 1)))
        }

        fn alloc_input<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
        where
            F: FnOnce() -> Result<Fr, SynthesisError>,
            A: FnOnce() -> AR,
            AR: Into<String>,
        {
            f()?;
            self.constraints += 1;
            Ok(Variable::new_unchecked(Index::Input(self.constraints)))
        }

        fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, a: LA, b: LB, _: LC)
        where
            A: FnOnce() -> AR,
            AR: Into<String>,
            LA: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
            LB: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
            LC: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
        {
            self.constraints += 1;
            for (v, _) in a(LinearCombination::zero()).iter() {
                if let Index::Aux(i) = v.get_unchecked() {
                    self.in_a[i] = true;
                }
            }
            for (v, _) in b(LinearCombination::zero()).iter() {
                if let Index::Aux(i) = v.get_unchecked() {
                    self.in_b[i] = true;
                }
            }
        }

        fn push_namespace<NR, N>(&mut self, _: N)
        where
            NR: Into<String>,
            N: FnOnce() -> NR,
        {
        }

        fn pop_namespace(&mut self) {}

        fn get_root(&mut self) -> &mut Self::Root {
            self
        }
    }

    /// The profile GPU provers see (the module docs say why it matters): B holds few
    /// variables and nearly all of them 0/1 (only the Merkle hash's are not), A holds nearly
    /// every variable, and both kinds of work are there: a third of the witness is 0/1 label
    /// bits, most of the rest full-width accumulator values.
    #[test]
    fn witness_placement_suits_gpu_provers() {
        let l = Layout::for_constraints(1 << 16).unwrap();
        assert_eq!(l.label_rounds, LABEL_ROUNDS);
        let sector = Arc::new(Sector::generate(1, 0, l.depth));
        let mut cs = Placement {
            constraints: 1, // ONE
            ..Default::default()
        };
        PartitionCircuit::new(l, PartitionWitness::new(&l, sector, 1, 0), None)
            .synthesize(&mut cs)
            .unwrap();
        assert_eq!(cs.constraints as u64, l.constraints);
        let n = l.constraints as f64;
        let is_bit = |v: &Fr| *v == Fr::ZERO || *v == Fr::ONE;
        let share =
            |f: &dyn Fn(usize) -> bool| (0..cs.values.len()).filter(|&i| f(i)).count() as f64 / n;
        let in_b = share(&|i| cs.in_b[i]);
        let wide_in_b = share(&|i| cs.in_b[i] && !is_bit(&cs.values[i]));
        let in_a = share(&|i| cs.in_a[i]);
        let bits = share(&|i| is_bit(&cs.values[i]));
        let ones = share(&|i| cs.values[i] == Fr::ONE);
        assert!(in_b < 0.06, "B holds {in_b} of n");
        assert!(
            wide_in_b < 0.025,
            "full-width values in B: {wide_in_b} of n"
        );
        assert!(in_a > 0.95, "A holds {in_a} of n");
        assert!((0.25..0.40).contains(&bits), "0/1 share {bits}");
        // The labelling keeps the bits balanced rather than collapsing to zeros.
        assert!(
            (0.3..0.7).contains(&(ones / bits)),
            "ones among bits {}",
            ones / bits
        );
    }

    /// Partition 0 of sector 0 under `l`, synthesized with its witness: every constraint
    /// holds and its public inputs verify. Returns the system and those inputs.
    fn satisfied(l: Layout) -> (TestConstraintSystem<Fr>, Vec<Fr>) {
        let sector = Arc::new(Sector::generate(1, 0, l.depth));
        let w = PartitionWitness::new(&l, sector, 1, 0);
        let inputs = w.public_inputs(&l);
        let mut cs = TestConstraintSystem::<Fr>::new();
        PartitionCircuit::new(l, w, None)
            .synthesize(&mut cs)
            .unwrap();
        assert!(cs.is_satisfied(), "{:?}", cs.which_is_unsatisfied());
        assert!(cs.verify(&inputs));
        (cs, inputs)
    }

    #[test]
    fn satisfied_with_witness() {
        let (cs, inputs) = satisfied(Layout::for_constraints(2000).unwrap());
        let mut wrong = inputs.clone();
        wrong[0] += Fr::from(1u64);
        assert!(!cs.verify(&wrong));
    }
}
