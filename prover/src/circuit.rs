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
//! so B holds few variables, all 0/1 but the Merkle hash's, like a SHA-256 circuit.
//! ec-gpu-gen's cost follows how many variables A and B hold; bellperson's CPU multiexp, how
//! many full-width values; SupraSeal runs its B-in-G2 MSM over the non-0/1 values on the CPU,
//! so only the Merkle hash's few (0.4 % of the variables) reach it. About a quarter of the
//! witness is 0/1.
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
use rayon::prelude::*;

use crate::cs::{Flat, Record, Terms, Value};
use crate::mimc::{compress_gadget, Term, CONSTRAINTS_PER_COMPRESS, ROUNDS};
use crate::sector::{leaf_tag, Sector};

/// Depth of every sector's Merkle tree (1024 leaves).
pub const TREE_DEPTH: u32 = 10;
/// Version of the circuit's constraint structure; part of the SRS cache key.
pub const CIRCUIT_VERSION: u32 = 3;
/// Labelling rounds per challenge when the partition is large enough (255 constraints each).
pub const LABEL_ROUNDS: u32 = 24;
/// Accumulation passes over the label (255 constraints each) per labelling round.
pub const ACCUMULATE_PER_LABEL: u32 = 3;
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
    /// Smallest count that holds one challenge.
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

    /// Opens challenge `k` into `cs`: index bits, labelling, accumulation, the Merkle path
    /// (and, for the last challenge, the padding). Self-contained: it refers to no variable
    /// but its own and ONE, so it can be synthesized into a constraint system of its own.
    fn open<CS: ConstraintSystem<Fr>>(
        &self,
        cs: &mut CS,
        k: usize,
    ) -> Result<Opened, SynthesisError> {
        let l = &self.layout;
        let w = self.witness.as_ref();
        let missing = || SynthesisError::AssignmentMissing;
        if self.hooks.as_ref().is_some_and(|h| h.should_abort()) {
            return Err(aborted());
        }
        let leaf = w.map(|w| w.challenges[k]);
        let path = w.map(|w| w.sector.path(leaf.expect("witness present")));

        let bits = (0..l.depth)
            .map(|lvl| {
                AllocatedBit::alloc(
                    cs.namespace(|| format!("index bit {lvl}")),
                    leaf.map(|i| (i >> lvl) & 1 == 1),
                )
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
                &Boolean::from(bit.clone()),
            )?;
            cur = compress_gadget(
                cs.namespace(|| format!("node {lvl}")),
                &left,
                &Term::num(&right),
            )?;
        }
        if k + 1 == l.challenges as usize {
            // Padding to the exact count: the last accumulation goes on over its label.
            let first = passes * n as u64;
            for i in 0..l.filler {
                if i % 1024 == 0 && self.hooks.as_ref().is_some_and(|h| h.should_abort()) {
                    return Err(aborted());
                }
                let step = first + i;
                acc = select_mul(
                    cs.namespace(|| format!("pad {i}")),
                    &acc,
                    &label[step as usize % n],
                    step,
                )?;
            }
        }
        Ok(Opened {
            bits: bits
                .iter()
                .map(|b| (b.get_variable(), b.get_value()))
                .collect(),
            node: cur.get_variable(),
        })
    }

    /// Opens every challenge, in order, each into its own constraint system on the thread
    /// pool, then appends them to `root`: one partition's synthesis spreads over all cores.
    fn open_parallel<R: ConstraintSystem<Fr>>(
        &self,
        root: &mut R,
    ) -> Result<Vec<Opened>, SynthesisError> {
        let k = self.layout.challenges as usize;
        let mut opened = Vec::with_capacity(k);
        // Auxiliary variables in `root` so far (the partition allocates none of its own).
        let mut aux = 0;
        // A wave of one challenge per thread at a time bounds the copies alive at once.
        let ks: Vec<usize> = (0..k).collect();
        for wave in ks.chunks(rayon::current_num_threads().max(1)) {
            let done = wave
                .par_iter()
                .map(|&k| {
                    let mut cs = Flat(Counted {
                        cs: R::new(),
                        aux: 0,
                    });
                    // bellperson's own convention for a fresh part: ONE first; `extend`
                    // merges it into the root's ONE.
                    cs.alloc_input(|| "one", || Ok(Fr::ONE))?;
                    let o = self.open(&mut cs.namespace(|| format!("challenge {k}")), k)?;
                    let Flat(Counted { cs, aux }) = cs;
                    Ok(Part((cs, aux, o)))
                })
                .collect::<Result<Vec<_>, SynthesisError>>()?;
            for Part((cs, n, o)) in done {
                root.extend(&cs);
                opened.push(o.shifted(aux));
                aux += n;
            }
            #[cfg(test)]
            tests::PARALLEL_OPENINGS
                .fetch_add(wave.len() as u64, std::sync::atomic::Ordering::Relaxed);
        }
        Ok(opened)
    }

    fn synthesize_inner<CS: ConstraintSystem<Fr>>(
        &self,
        cs: &mut CS,
    ) -> Result<(), SynthesisError> {
        let l = &self.layout;
        let w = self.witness.as_ref();
        let root = AllocatedNum::alloc_input(cs.namespace(|| "comm_r"), || {
            w.map(|w| w.sector.root())
                .ok_or(SynthesisError::AssignmentMissing)
        })?;

        let opened = if l.challenges > 1 && parallel_root::<CS::Root>() {
            self.open_parallel(cs.get_root())?
        } else {
            (0..l.challenges as usize)
                .map(|k| self.open(&mut cs.namespace(|| format!("challenge {k}")), k))
                .collect::<Result<Vec<_>, _>>()?
        };
        for (k, o) in opened.iter().enumerate() {
            cs.enforce(
                || format!("root {k} matches comm_r"),
                |lc| lc + o.node,
                |lc| lc + CS::one(),
                |lc| lc + root.get_variable(),
            );
        }
        // The challenged indices, packed into public inputs as bellperson's multipack does
        // (its `pack_into_inputs` wants `Boolean`s; the parts left only variables). The values
        // come from the same `compute_multipacking` as the verifier's `public_inputs`.
        let bits: Vec<_> = opened.iter().flat_map(|o| o.bits.iter().copied()).collect();
        let packed = bits
            .iter()
            .map(|&(_, b)| b)
            .collect::<Option<Vec<bool>>>()
            .map(|b| multipack::compute_multipacking::<Fr>(&b));
        for (i, chunk) in bits.chunks(Fr::CAPACITY as usize).enumerate() {
            let mut lc = LinearCombination::zero();
            let mut coeff = Fr::ONE;
            for &(var, _) in chunk {
                lc = lc + (coeff, var);
                coeff = coeff.double();
            }
            let input = cs.alloc_input(
                || format!("challenge bits {i}"),
                || {
                    packed
                        .as_ref()
                        .map(|p| p[i])
                        .ok_or(SynthesisError::AssignmentMissing)
                },
            )?;
            cs.enforce(
                || format!("packing {i}"),
                |_| lc,
                |lc| lc + CS::one(),
                |lc| lc + input,
            );
        }
        Ok(())
    }
}

/// What one opened challenge leaves for the partition to tie together.
struct Opened {
    /// Index bits (variable, value), packed into public inputs.
    bits: Vec<(Variable, Option<bool>)>,
    /// The root its Merkle path computed.
    node: Variable,
}

impl Opened {
    /// The same variables once the part is appended after `by` auxiliary variables.
    fn shifted(self, by: usize) -> Self {
        let shift = |v: Variable| match v.get_unchecked() {
            Index::Aux(i) => Variable::new_unchecked(Index::Aux(i + by)),
            Index::Input(_) => v,
        };
        Opened {
            bits: self.bits.into_iter().map(|(v, b)| (shift(v), b)).collect(),
            node: shift(self.node),
        }
    }
}

/// Whether parts of a partition may be synthesized into `R`s on other threads and joined
/// with `extend`: only bellperson's proving assignment. Parameter generation's system is not
/// extensible (bellperson wants its shape synthesized in order), and test systems run in
/// order too; the parallel path must produce the same system, which every proof's
/// verification against parameters from the sequential path checks.
fn parallel_root<R: ConstraintSystem<Fr>>() -> bool {
    R::is_extensible() && std::any::type_name::<R>() == PROVING_ASSIGNMENT
}

/// The type name of bellperson's (private) proving assignment over our field.
const PROVING_ASSIGNMENT: &str =
    "bellperson::groth16::prover::ProvingAssignment<blstrs::scalar::Scalar>";

/// A part of a partition on its way back from a pool thread.
struct Part<R>((R, usize, Opened));

// SAFETY: a `Part` is only built in `open_parallel`, which `synthesize_inner` calls only when
// `parallel_root` matched `R` by name to bellperson 0.27.0's `ProvingAssignment<Scalar>` (the
// version is pinned with `=` in Cargo.toml). That type holds only `Vec<Scalar>`s and
// `DensityTracker`s (a `BitVec` and a count): owned, plain data, `Send` in fact though the
// generic bound cannot say so. The part is moved to one other thread, never shared.
unsafe impl<R> Send for Part<R> {}

/// A constraint system that counts the auxiliary variables allocated through it (where a
/// part's variables land once appended). Annotations and namespaces are dropped on the way,
/// as the proving assignment (the only system parts are synthesized into, see
/// [`parallel_root`]) drops them itself.
struct Counted<R> {
    cs: R,
    aux: usize,
}

impl<R: ConstraintSystem<Fr>> Record for Counted<R> {
    fn alloc(&mut self, value: impl Value) -> Result<Variable, SynthesisError> {
        let v = self.cs.alloc(|| "", value)?;
        self.aux += 1;
        Ok(v)
    }

    fn alloc_input(&mut self, value: impl Value) -> Result<Variable, SynthesisError> {
        self.cs.alloc_input(|| "", value)
    }

    fn enforce(&mut self, a: impl Terms, b: impl Terms, c: impl Terms) {
        self.cs.enforce(|| "", a, b, c)
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

impl Record for CountCs {
    fn alloc(&mut self, _: impl Value) -> Result<Variable, SynthesisError> {
        self.0.aux += 1;
        Ok(Variable::new_unchecked(Index::Aux(self.0.aux as usize - 1)))
    }

    fn alloc_input(&mut self, _: impl Value) -> Result<Variable, SynthesisError> {
        self.0.inputs += 1;
        Ok(Variable::new_unchecked(Index::Input(
            self.0.inputs as usize - 1,
        )))
    }

    fn enforce(&mut self, _: impl Terms, _: impl Terms, _: impl Terms) {
        self.0.constraints += 1;
    }
}

/// Count a layout's circuit by synthesizing its shape.
pub fn count(layout: Layout) -> ShapeCount {
    let mut cs = Flat(CountCs(ShapeCount {
        inputs: 1, // ONE
        ..Default::default()
    }));
    PartitionCircuit::shape(layout)
        .synthesize(&mut cs)
        .expect("shape synthesis needs no witness");
    let Flat(CountCs(mut c)) = cs;
    c.constraints += c.inputs;
    c
}

#[cfg(test)]
mod tests {
    use super::*;
    use bellperson::util_cs::test_cs::TestConstraintSystem;
    use ff::Field;
    use std::sync::atomic::AtomicU64;

    /// Challenges synthesized on the parallel path so far (a test checks that path ran).
    pub(super) static PARALLEL_OPENINGS: AtomicU64 = AtomicU64::new(0);

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
        assert_eq!(Layout::for_constraints(4096).unwrap().label_rounds, 3);
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

    impl Record for Placement {
        fn alloc(&mut self, value: impl Value) -> Result<Variable, SynthesisError> {
            self.values.push(value()?);
            self.in_a.push(false);
            self.in_b.push(false);
            Ok(Variable::new_unchecked(Index::Aux(self.values.len() - 1)))
        }

        fn alloc_input(&mut self, value: impl Value) -> Result<Variable, SynthesisError> {
            value()?;
            self.constraints += 1;
            Ok(Variable::new_unchecked(Index::Input(self.constraints)))
        }

        fn enforce(&mut self, a: impl Terms, b: impl Terms, _: impl Terms) {
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
        let mut cs = Flat(Placement {
            constraints: 1, // ONE
            ..Default::default()
        });
        PartitionCircuit::new(l, PartitionWitness::new(&l, sector, 1, 0), None)
            .synthesize(&mut cs)
            .unwrap();
        let Flat(cs) = cs;
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
        assert!(in_b < 0.03, "B holds {in_b} of n");
        assert!(
            wide_in_b < 0.005,
            "full-width values in B: {wide_in_b} of n"
        );
        assert!(in_a > 0.95, "A holds {in_a} of n");
        assert!((0.15..0.30).contains(&bits), "0/1 share {bits}");
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

    /// A real bellperson proof of a partition with several challenges: the prover synthesizes
    /// them in parallel parts, the parameters come from the sequential shape, and the proof
    /// verifies only if both built the same system. (With `supraseal`, bellperson's proving
    /// API takes SupraSeal's pinned parameters and needs a GPU; its proofs are verified by the
    /// daemon on a GPU machine.)
    #[cfg(not(feature = "supraseal"))]
    #[test]
    fn parallel_synthesis_proves_what_the_shape_describes() {
        use bellperson::groth16::{
            create_random_proof, generate_random_parameters, prepare_verifying_key, verify_proof,
        };
        use blstrs::Bls12;
        use std::sync::atomic::Ordering::Relaxed;

        let l = Layout::for_constraints(1 << 16).unwrap();
        assert_eq!(l.challenges, 2);
        let mut rng = ChaCha20Rng::from_seed([7; 32]);
        let params =
            generate_random_parameters::<Bls12, _, _>(PartitionCircuit::shape(l), &mut rng)
                .unwrap();
        let pvk = prepare_verifying_key(&params.vk);
        let sector = Arc::new(Sector::generate(1, 0, l.depth));
        let w = PartitionWitness::new(&l, sector, 1, 0);
        let inputs = w.public_inputs(&l);
        let before = PARALLEL_OPENINGS.load(Relaxed);
        let proof =
            create_random_proof(PartitionCircuit::new(l, w, None), &params, &mut rng).unwrap();
        assert!(
            PARALLEL_OPENINGS.load(Relaxed) >= before + 2,
            "the parallel path ran"
        );
        assert!(verify_proof(&pvk, &proof, &inputs).unwrap());
        let mut wrong = inputs.clone();
        wrong[1] += Fr::ONE; // another set of challenged leaves
        assert!(!verify_proof(&pvk, &proof, &wrong).unwrap());
    }

    #[test]
    fn satisfied_with_witness() {
        let (cs, inputs) = satisfied(Layout::for_constraints(2000).unwrap());
        let mut wrong = inputs.clone();
        wrong[0] += Fr::from(1u64);
        assert!(!cs.verify(&wrong));
    }
}
