//! A bellperson `ParameterSource` that measures when each multiexp really runs.
//!
//! On the CPU, bellperson's prover *dispatches* its multiexps (h, l, a, b_g1, b_g2) to a
//! thread pool and collects them at the end, so its `log` lines ("multiexp h" …) mark dispatch
//! times, not work. This source hands bellperson bases through builders that report:
//!
//! * **task started**: the first time a multiexp asks for its bases (`new` on the CPU path,
//!   `get` on the GPU path);
//! * **task finished**: when the last handle of that multiexp's bases is dropped — after its
//!   last window has been summed (CPU) or the kernel has returned (GPU).
//!
//! A *task* is one multiexp call: bellperson clones the builder it got from `get_h`/`get_l`/…
//! once per multiexp, so every clone of a root builder starts a new task and clones of that
//! clone (one per window) belong to it. The bases also check the abort flag, so an abort stops
//! the multiexps within a window's work instead of after the whole proof.

use std::io;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;

use bellperson::groth16::{ParameterSource, Parameters, VerifyingKey};
use bellperson::SynthesisError;
use blstrs::{Bls12, G1Affine, G2Affine};
use ec_gpu_gen::multiexp_cpu::{Source, SourceBuilder};
use ec_gpu_gen::EcError;
use group::prime::PrimeCurveAffine;

/// Which query a multiexp runs over.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MsmKind {
    /// The h query (quotient polynomial).
    H,
    /// The l query (private inputs).
    L,
    /// The a query.
    A,
    /// The b query in G1.
    BG1,
    /// The b query in G2.
    BG2,
}

/// Receives task transitions (from bellperson's worker threads).
pub trait MsmObserver: Send + Sync {
    /// A multiexp over `kind` started computing.
    fn task_started(&self, kind: MsmKind);
    /// A multiexp over `kind` finished (or was abandoned).
    fn task_finished(&self, kind: MsmKind);
}

struct Task {
    kind: MsmKind,
    started: AtomicBool,
    observer: Arc<dyn MsmObserver>,
}

impl Task {
    fn start(&self) {
        if !self.started.swap(true, Relaxed) {
            self.observer.task_started(self.kind);
        }
    }
}

impl Drop for Task {
    fn drop(&mut self) {
        self.observer.task_finished(self.kind);
    }
}

/// Bases for one multiexp, with task tracking and abort.
pub struct TimedBuilder<G> {
    bases: Arc<Vec<G>>,
    skip: usize,
    kind: MsmKind,
    observer: Arc<dyn MsmObserver>,
    abort: Arc<AtomicBool>,
    /// `None` on the root builder bellperson keeps; every clone of the root is a new task.
    task: Option<Arc<Task>>,
}

impl<G> Clone for TimedBuilder<G> {
    fn clone(&self) -> Self {
        let task = match &self.task {
            Some(t) => t.clone(),
            None => Arc::new(Task {
                kind: self.kind,
                started: AtomicBool::new(false),
                observer: self.observer.clone(),
            }),
        };
        TimedBuilder {
            bases: self.bases.clone(),
            skip: self.skip,
            kind: self.kind,
            observer: self.observer.clone(),
            abort: self.abort.clone(),
            task: Some(task),
        }
    }
}

/// The source a multiexp window reads bases from.
pub struct TimedSource<G> {
    bases: Arc<Vec<G>>,
    pos: usize,
    abort: Arc<AtomicBool>,
    _task: Option<Arc<Task>>,
}

impl<G: PrimeCurveAffine> SourceBuilder<G> for TimedBuilder<G> {
    type Source = TimedSource<G>;

    fn new(self) -> TimedSource<G> {
        if let Some(t) = &self.task {
            t.start();
        }
        TimedSource {
            bases: self.bases.clone(),
            pos: self.skip,
            abort: self.abort.clone(),
            _task: self.task.clone(),
        }
    }

    fn get(self) -> (Arc<Vec<G>>, usize) {
        // GPU path: the kernel runs synchronously while the caller still holds a handle.
        if let Some(t) = &self.task {
            t.start();
        }
        (self.bases.clone(), self.skip)
    }
}

fn eof() -> EcError {
    io::Error::new(
        io::ErrorKind::UnexpectedEof,
        "Expected more bases from source.",
    )
    .into()
}

impl<G: PrimeCurveAffine> Source<G> for TimedSource<G> {
    fn add_assign_mixed(&mut self, to: &mut <G as PrimeCurveAffine>::Curve) -> Result<(), EcError> {
        if self.abort.load(Relaxed) {
            return Err(EcError::Simple("aborted"));
        }
        let b = self.bases.get(self.pos).ok_or_else(eof)?;
        if bool::from(b.is_identity()) {
            return Err(EcError::Simple(
                "Encountered an identity element in the CRS.",
            ));
        }
        *to += b;
        self.pos += 1;
        Ok(())
    }

    fn skip(&mut self, amt: usize) -> Result<(), EcError> {
        if self.pos >= self.bases.len() {
            return Err(eof());
        }
        self.pos += amt;
        Ok(())
    }
}

/// Resident parameters seen through task-tracking builders.
pub struct TimedParams<'a> {
    params: &'a Parameters<Bls12>,
    observer: Arc<dyn MsmObserver>,
    abort: Arc<AtomicBool>,
}

impl<'a> TimedParams<'a> {
    /// Wrap `params`; `observer` receives the task transitions of one proving call.
    pub fn new(
        params: &'a Parameters<Bls12>,
        observer: Arc<dyn MsmObserver>,
        abort: Arc<AtomicBool>,
    ) -> Self {
        TimedParams {
            params,
            observer,
            abort,
        }
    }

    fn root<G>(&self, bases: &Arc<Vec<G>>, skip: usize, kind: MsmKind) -> TimedBuilder<G> {
        TimedBuilder {
            bases: bases.clone(),
            skip,
            kind,
            observer: self.observer.clone(),
            abort: self.abort.clone(),
            task: None,
        }
    }
}

type Pair<B> = Result<(B, B), SynthesisError>;

impl ParameterSource<Bls12> for TimedParams<'_> {
    type G1Builder = TimedBuilder<G1Affine>;
    type G2Builder = TimedBuilder<G2Affine>;

    fn get_vk(&self, _: usize) -> Result<&VerifyingKey<Bls12>, SynthesisError> {
        Ok(&self.params.vk)
    }

    fn get_h(&self, _: usize) -> Result<Self::G1Builder, SynthesisError> {
        Ok(self.root(&self.params.h, 0, MsmKind::H))
    }

    fn get_l(&self, _: usize) -> Result<Self::G1Builder, SynthesisError> {
        Ok(self.root(&self.params.l, 0, MsmKind::L))
    }

    fn get_a(&self, num_inputs: usize, _: usize) -> Pair<Self::G1Builder> {
        Ok((
            self.root(&self.params.a, 0, MsmKind::A),
            self.root(&self.params.a, num_inputs, MsmKind::A),
        ))
    }

    fn get_b_g1(&self, num_inputs: usize, _: usize) -> Pair<Self::G1Builder> {
        Ok((
            self.root(&self.params.b_g1, 0, MsmKind::BG1),
            self.root(&self.params.b_g1, num_inputs, MsmKind::BG1),
        ))
    }

    fn get_b_g2(&self, num_inputs: usize, _: usize) -> Pair<Self::G2Builder> {
        Ok((
            self.root(&self.params.b_g2, 0, MsmKind::BG2),
            self.root(&self.params.b_g2, num_inputs, MsmKind::BG2),
        ))
    }
}
