//! A `tracing_subscriber::Layer` that turns spans into provetop phase events.
//!
//! A span's name is mapped ([`SpanKind`], [`default_map`] unless [`PhaseLayer::with_map`]
//! says otherwise) to a proof, a phase, or nothing:
//!
//! * a **proof** span (named `proof` by default) writes `proof_started` when first entered and
//!   `proof_finished` when closed; its id is its `proof_id` field, else the next of 1, 2, 3…;
//!   fields `ok = false` or `error = "…"` make it a failure, `verified = true` says it was
//!   verified (they may be recorded later, with `Span::record`). Its `proof_started` tells
//!   the span's `sectors`, `partitions` and `constraints` (the job's total) fields; a count
//!   the span does not give is the one the previous proof showed (the distinct `partition`
//!   fields of its phase spans; the sum over its partitions of their largest `constraints`
//!   field), and 0 (not known) for a first proof that does not say;
//! * a **phase** span writes `phase_started` when first entered and `phase_ended`, with the
//!   time since, when closed. Its proof is its own `proof_id` field, else that of the nearest
//!   enclosing proof span (or span with a `proof_id` field), else 0; its partition is its own
//!   or the nearest enclosing `partition` field.
//!
//! A span runs from its first entry to the moment it was last left by every thread that had
//! entered it (a span entered on several rayon threads ends with the last of them; an async
//! task's with its last poll), not to its close, which may come much later: arkworks' constraint
//! system keeps a clone of the current span per constraint until it is dropped. Its
//! `phase_ended`/`proof_finished` is written at the close, stamped (`ts`) with that end. A span
//! never entered writes nothing. Use `with_filter` (tracing-subscriber) to keep other libraries' spans out.
//!
//! Before its first event the layer writes `hello` (the protocol version, this process's pid),
//! unless one went out through its emitter already: what [`PhaseLayer::with_hello`] says, else
//! the program's name as its version, the CPU backend, and the first proof's counts as its
//! configuration (0 where not known).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use provetop_shared::clock::mono_ns;
use provetop_shared::protocol::{Backend, BatchMode, Event, Phase, ProverConfig};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::Subscriber;
use tracing_subscriber::layer::Context;
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::Layer;

use crate::Emitter;

/// What a span stands for.
#[derive(Debug, Clone, PartialEq)]
pub enum SpanKind {
    /// A whole proof: `proof_started` … `proof_finished`.
    Proof,
    /// A phase of a proof.
    Phase(Phase),
}

/// The default mapping: `proof` (any case) is a proof; the protocol's phase names and common
/// spellings of them (`synthesize`, `constraint synthesis`, `multiexp h`, `fft`, `setup`, …)
/// are those phases; any other name is a phase kept as it is.
pub fn default_map(name: &str) -> Option<SpanKind> {
    let key = name.trim().to_ascii_lowercase().replace(['-', ' '], "_");
    let phase = match key.as_str() {
        "proof" | "prove_proof" | "proof_job" => return Some(SpanKind::Proof),
        "srs_generate"
        | "setup"
        | "generate_parameters"
        | "generate_random_parameters"
        | "circuit_specific_setup"
        | "paramgen" => Phase::SrsGenerate,
        "srs_load" | "load_parameters" | "load_params" | "read_parameters" => Phase::SrsLoad,
        "synthesis"
        | "synthesize"
        | "constraint_synthesis"
        | "synthesize_circuits"
        | "witness_generation" => Phase::Synthesis,
        "prove" | "prover" | "create_proof" | "groth16_prove" => Phase::Prove,
        "gpu_setup" | "gpu_init" => Phase::GpuSetup,
        "fft_h" | "fft" | "ntt" | "compute_h" | "get_h" | "witness_map" | "r1cs_to_qap" => {
            Phase::FftH
        }
        "msm_h" | "multiexp_h" => Phase::MsmH,
        "msm_l" | "multiexp_l" => Phase::MsmL,
        "msm_a_b1" | "multiexp_a_b_g1" | "msm_a" => Phase::MsmAB1,
        "msm_b2" | "multiexp_b_g2" | "msm_b_g2" => Phase::MsmB2,
        "verify" | "verification" | "verify_proof" => Phase::Verify,
        _ => Phase::Other(name.to_string()),
    };
    Some(SpanKind::Phase(phase))
}

type Map = dyn Fn(&str) -> Option<SpanKind> + Send + Sync;

/// The layer; see the module documentation.
pub struct PhaseLayer {
    emitter: Emitter,
    map: Box<Map>,
    next_proof: AtomicU64,
    /// What `hello` says, when the prover told it ([`PhaseLayer::with_hello`]).
    hello: Option<(String, Backend, Option<ProverConfig>)>,
    /// Whether this layer has passed the point of saying `hello`.
    helloed: AtomicBool,
    /// The previous proof's counts (partitions, constraints), where it showed them.
    learnt: Mutex<Counts>,
}

/// Partitions and constraints of a proof, where known.
#[derive(Debug, Clone, Copy, Default)]
struct Counts {
    partitions: Option<u32>,
    constraints: Option<u64>,
}

/// Most distinct partitions one proof's counting keeps.
const MAX_COUNTED_PARTITIONS: usize = 1 << 16;

impl PhaseLayer {
    /// A layer writing to `emitter` with [`default_map`].
    pub fn new(emitter: Emitter) -> Self {
        PhaseLayer {
            emitter,
            map: Box::new(default_map),
            next_proof: AtomicU64::new(1),
            hello: None,
            helloed: AtomicBool::new(false),
            learnt: Mutex::new(Counts::default()),
        }
    }

    /// Say this in the `hello` the layer writes before its first event: the prover's version,
    /// its backend and, where given, its configuration (else the first proof's counts).
    pub fn with_hello(
        mut self,
        prover_version: &str,
        backend: Backend,
        config: Option<ProverConfig>,
    ) -> Self {
        self.hello = Some((prover_version.to_string(), backend, config));
        self
    }

    /// Write `hello` once, before the layer's first event, unless one went out already.
    fn say_hello(&self, first: Counts) {
        if self.helloed.swap(true, Ordering::AcqRel) || self.emitter.said_hello() {
            return;
        }
        let (version, backend, config) = self.hello.clone().unwrap_or_else(|| {
            let program = std::env::args_os()
                .next()
                .map(|a| {
                    std::path::Path::new(&a)
                        .file_name()
                        .unwrap_or(a.as_os_str())
                        .to_string_lossy()
                        .into_owned()
                })
                .unwrap_or_default();
            (program, Backend::Cpu, None)
        });
        let config = config.unwrap_or_else(|| {
            let partitions = first.partitions.unwrap_or(0);
            ProverConfig {
                partitions,
                constraints: first
                    .constraints
                    .map_or(0, |c| c / u64::from(partitions.max(1))),
                circuit: String::new(),
                mode: BatchMode::Single,
                threads: None,
            }
        });
        self.emitter.hello(&version, backend, config);
    }

    /// A proof closed having counted `counted`: the next proof that does not say its counts
    /// takes these.
    fn learn(&self, counted: &BTreeMap<Option<u32>, u64>) {
        let named = counted.keys().filter(|k| k.is_some()).count();
        let total = counted.values().fold(0u64, |a, c| a.saturating_add(*c));
        let mut learnt = self.learnt.lock().unwrap_or_else(|p| p.into_inner());
        if named > 0 {
            learnt.partitions = u32::try_from(named).ok();
        }
        if total > 0 {
            learnt.constraints = Some(total);
        }
    }

    fn learnt(&self) -> Counts {
        *self.learnt.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Map span names with `map` instead: `None` leaves a span out.
    pub fn with_map(
        mut self,
        map: impl Fn(&str) -> Option<SpanKind> + Send + Sync + 'static,
    ) -> Self {
        self.map = Box::new(map);
        self
    }
}

/// What the layer keeps in a span's extensions.
struct Tracked {
    kind: SpanKind,
    fields: Fields,
    /// When first entered, with the proof id and partition then resolved.
    started: Option<(Instant, u64, Option<u32>)>,
    /// For a proof span: the largest `constraints` field of its phase spans per partition (or
    /// none), as they close.
    counted: BTreeMap<Option<u32>, u64>,
    /// Entries not yet left (a span may be entered on several threads at once).
    entered: usize,
    /// When it was last left by every thread that had entered it (instant, monotonic ns).
    left: Option<(Instant, u64)>,
}

#[derive(Default)]
struct Fields {
    proof_id: Option<u64>,
    partition: Option<u32>,
    sectors: Option<u32>,
    partitions: Option<u32>,
    constraints: Option<u64>,
    ok: Option<bool>,
    verified: bool,
    error: Option<String>,
}

impl Visit for Fields {
    fn record_u64(&mut self, field: &Field, value: u64) {
        match field.name() {
            "proof_id" => self.proof_id = Some(value),
            "partition" => self.partition = u32::try_from(value).ok(),
            "sectors" => self.sectors = u32::try_from(value).ok(),
            "partitions" => self.partitions = u32::try_from(value).ok(),
            "constraints" => self.constraints = Some(value),
            _ => {}
        }
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        if let Ok(v) = u64::try_from(value) {
            self.record_u64(field, v);
        }
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        match field.name() {
            "ok" => self.ok = Some(value),
            "verified" => self.verified = value,
            _ => {}
        }
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "error" {
            self.error = Some(value.to_string());
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "error" {
            self.error = Some(format!("{value:?}"));
        }
    }
}

impl<S> Layer<S> for PhaseLayer
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let Some(kind) = (self.map)(attrs.metadata().name()) else {
            return;
        };
        let Some(span) = ctx.span(id) else { return };
        let mut fields = Fields::default();
        attrs.record(&mut fields);
        span.extensions_mut().insert(Tracked {
            kind,
            fields,
            started: None,
            counted: BTreeMap::new(),
            entered: 0,
            left: None,
        });
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(id) else { return };
        let mut ext = span.extensions_mut();
        if let Some(t) = ext.get_mut::<Tracked>() {
            values.record(&mut t.fields);
        }
    }

    fn on_enter(&self, id: &Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(id) else { return };
        let (kind, own_proof, own_partition, own_counts, sectors) = {
            let mut ext = span.extensions_mut();
            let Some(t) = ext.get_mut::<Tracked>() else {
                return;
            };
            t.entered += 1;
            if t.started.is_some() {
                return;
            }
            let f = &t.fields;
            let own = Counts {
                partitions: f.partitions,
                constraints: f.constraints,
            };
            (t.kind.clone(), f.proof_id, f.partition, own, f.sectors)
        };
        let event = match kind {
            SpanKind::Proof => {
                let proof_id =
                    own_proof.unwrap_or_else(|| self.next_proof.fetch_add(1, Ordering::Relaxed));
                set_started(&span, proof_id, None);
                let learnt = self.learnt();
                let counts = Counts {
                    partitions: own_counts.partitions.or(learnt.partitions),
                    constraints: own_counts.constraints.or(learnt.constraints),
                };
                self.say_hello(counts);
                Event::ProofStarted {
                    proof_id,
                    mode: BatchMode::Single,
                    sectors: sectors.unwrap_or(1),
                    partitions: counts.partitions.unwrap_or(0),
                    constraints: counts.constraints.unwrap_or(0),
                }
            }
            SpanKind::Phase(phase) => {
                let mut proof_id = own_proof;
                let mut partition = own_partition;
                for outer in span.scope().skip(1) {
                    let ext = outer.extensions();
                    let Some(t) = ext.get::<Tracked>() else {
                        continue;
                    };
                    // An entered ancestor has its proof resolved already; one not entered yet
                    // (entered after its child, unusual) offers only its own field.
                    proof_id = proof_id.or(t.started.map(|s| s.1)).or(t.fields.proof_id);
                    partition = partition
                        .or(t.started.and_then(|s| s.2))
                        .or(t.fields.partition);
                }
                let proof_id = proof_id.unwrap_or(0);
                set_started(&span, proof_id, partition);
                self.say_hello(self.learnt());
                Event::PhaseStarted {
                    proof_id,
                    phase,
                    partition,
                }
            }
        };
        self.emitter.emit(event);
    }

    fn on_exit(&self, id: &Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(id) else { return };
        let mut ext = span.extensions_mut();
        if let Some(t) = ext.get_mut::<Tracked>() {
            t.entered = t.entered.saturating_sub(1);
            if t.entered == 0 {
                t.left = Some((Instant::now(), mono_ns()));
            }
        }
    }

    fn on_close(&self, id: Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(&id) else { return };
        let Some(t) = span.extensions_mut().remove::<Tracked>() else {
            return;
        };
        let Some((at, proof_id, partition)) = t.started else {
            return;
        };
        // The work ended when the span was last left, not when its last handle went: arkworks'
        // constraint system keeps a clone of the current span per constraint, until it is
        // dropped long after synthesis.
        let (end, end_ns) = match t.left {
            Some(left) if t.entered == 0 => left,
            _ => (Instant::now(), mono_ns()),
        };
        let duration_s = end.duration_since(at).as_secs_f64();
        let event = match t.kind {
            SpanKind::Proof => {
                self.learn(&t.counted);
                let failed = t.fields.ok == Some(false) || t.fields.error.is_some();
                Event::ProofFinished {
                    proof_id,
                    ok: !failed,
                    verified: t.fields.verified,
                    duration_s,
                    mode: BatchMode::Single,
                    phases: Vec::new(),
                    error: if failed {
                        Some(t.fields.error.unwrap_or_else(|| "failed".to_string()))
                    } else {
                        None
                    },
                    cancelled: false,
                    requeued_as: Vec::new(),
                }
            }
            SpanKind::Phase(phase) => {
                count_in_proof(&span, partition, t.fields.constraints);
                Event::PhaseEnded {
                    proof_id,
                    phase,
                    partition,
                    duration_s,
                }
            }
        };
        self.emitter.emit_at(end_ns, event);
    }
}

/// A phase span of `partition` that said `constraints` closed: count both in its proof span.
fn count_in_proof<'a, S: LookupSpan<'a>>(
    span: &tracing_subscriber::registry::SpanRef<'a, S>,
    partition: Option<u32>,
    constraints: Option<u64>,
) {
    for outer in span.scope().skip(1) {
        let mut ext = outer.extensions_mut();
        let Some(t) = ext.get_mut::<Tracked>() else {
            continue;
        };
        if t.kind != SpanKind::Proof {
            continue;
        }
        if t.counted.len() < MAX_COUNTED_PARTITIONS || t.counted.contains_key(&partition) {
            let c = t.counted.entry(partition).or_default();
            *c = (*c).max(constraints.unwrap_or(0));
        }
        return;
    }
}

fn set_started<'a, S: LookupSpan<'a>>(
    span: &tracing_subscriber::registry::SpanRef<'a, S>,
    proof_id: u64,
    partition: Option<u32>,
) {
    if let Some(t) = span.extensions_mut().get_mut::<Tracked>() {
        t.started = Some((Instant::now(), proof_id, partition));
    }
}
