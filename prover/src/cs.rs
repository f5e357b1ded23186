//! The crate's own constraint systems, written once against a small trait.
//!
//! bellperson's [`ConstraintSystem`] asks every system for annotations and a namespace stack.
//! The systems here (the shape counter, parameter generation's assembly, the counting wrapper
//! of parallel synthesis, a test's placement probe) have no use for either: each implements
//! [`Record`], the three calls that matter, and [`Flat`] makes it a `ConstraintSystem` whose
//! annotations are never evaluated and whose namespaces are no-ops.

use bellperson::{ConstraintSystem, LinearCombination, SynthesisError, Variable};
use blstrs::Scalar as Fr;

/// How a variable's assignment is computed (called only by systems that want the value).
pub(crate) trait Value: FnOnce() -> Result<Fr, SynthesisError> {}
impl<F: FnOnce() -> Result<Fr, SynthesisError>> Value for F {}

/// How one of a constraint's linear combinations is built from the empty one.
pub(crate) trait Terms: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr> {}
impl<F: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>> Terms for F {}

/// What a flat constraint system does with allocations and constraints.
pub(crate) trait Record: Send {
    /// A new auxiliary (private) variable.
    fn alloc(&mut self, value: impl Value) -> Result<Variable, SynthesisError>;
    /// A new public input.
    fn alloc_input(&mut self, value: impl Value) -> Result<Variable, SynthesisError>;
    /// The constraint `a · b = c`.
    fn enforce(&mut self, a: impl Terms, b: impl Terms, c: impl Terms);
}

/// A [`Record`] as a bellperson constraint system without annotations or namespaces.
pub(crate) struct Flat<R>(pub R);

impl<R: Record> ConstraintSystem<Fr> for Flat<R> {
    type Root = Self;

    fn alloc<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Fr, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.0.alloc(f)
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Fr, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.0.alloc_input(f)
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, a: LA, b: LB, c: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
        LB: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
        LC: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
    {
        self.0.enforce(a, b, c)
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
