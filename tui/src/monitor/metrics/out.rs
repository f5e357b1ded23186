//! The family writer the exposition uses: each call writes one family's descriptor (name,
//! help, unit, type), then its series. A family is written whole or not at all; an absent
//! reading ([`Out::opt_gauge`] of `None`) writes nothing, never a 0. A metric of the metric
//! table is written from its Prometheus column ([`Out::metric`], [`Out::gpu_metric`]), its
//! readings as [`Value`]s.

use std::fmt;

use prometheus_client::encoding::{
    DescriptorEncoder, EncodeCounterValue, EncodeGaugeValue, GaugeValueEncoder, MetricEncoder,
    NoLabelSet,
};
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Unit;
use provetop_shared::metric::{self, Metric};
use provetop_shared::{Sample, Usage};

use super::hist::Hist;
use super::labels::{gpu_labels, GPU_KEYS};
use super::MAX_GPUS;

/// A reading of a metric of the table as its family writes it.
#[derive(Debug, Clone, Copy)]
pub(super) enum Value {
    /// Whole bytes or a count a record holds, written as an integer.
    Whole(u64),
    /// A rate, a share, a temperature, an estimate: written as a decimal.
    Decimal(f64),
}

impl Value {
    /// A record's reading `v` of a metric in `unit`, in its family's unit: bytes and counts
    /// whole, the rest decimal (a percent as a ratio, 0 to 1).
    pub(super) fn reading(unit: metric::Unit, v: f64) -> Value {
        match unit {
            metric::Unit::Bytes | metric::Unit::Count => Value::Whole(v as u64),
            _ => Value::Decimal(v / unit.prometheus().1),
        }
    }
}

impl EncodeGaugeValue for Value {
    fn encode(&self, e: &mut GaugeValueEncoder) -> fmt::Result {
        match self {
            Value::Whole(v) => EncodeGaugeValue::encode(v, e),
            Value::Decimal(v) => EncodeGaugeValue::encode(v, e),
        }
    }
}

/// The series of `m`, a per-GPU metric of the table, from the sample or usage record it
/// reads: one per GPU with the reading (labels `gpu`, `device`), GPUs beyond [`MAX_GPUS`]
/// left out.
pub(super) fn gpu_series(
    m: Metric,
    s: Option<&Sample>,
    u: Option<&Usage>,
) -> Vec<([String; 2], Value)> {
    m.def()
        .read
        .per_gpu_values(s, u)
        .into_iter()
        .filter(|(index, _)| (*index as usize) < MAX_GPUS)
        .map(|(index, v)| (gpu_labels(index), Value::reading(m.unit(), v)))
        .collect()
}

/// The family name, help and unit of `m` from the table; `None` when it has no family.
fn family_of(m: Metric) -> Option<(&'static str, &'static str, Option<Unit>)> {
    let def = m.def();
    let unit = def.unit.prometheus().0.map(|u| Unit::Other(u.into()));
    Some((def.prom?.name, def.prom_help(), unit))
}

/// A family's descriptor, then its series.
pub(super) struct Out<'a, 'e> {
    pub(super) enc: &'a mut DescriptorEncoder<'e>,
}

impl Out<'_, '_> {
    pub(super) fn gauge(
        &mut self,
        name: &str,
        help: &str,
        unit: Option<Unit>,
        v: impl EncodeGaugeValue,
    ) -> fmt::Result {
        let mut m = self
            .enc
            .encode_descriptor(name, help, unit.as_ref(), MetricType::Gauge)?;
        m.encode_gauge(&v)
    }

    pub(super) fn opt_gauge<V: EncodeGaugeValue>(
        &mut self,
        name: &str,
        help: &str,
        unit: Option<Unit>,
        v: Option<V>,
    ) -> fmt::Result {
        match v {
            Some(v) => self.gauge(name, help, unit, v),
            None => Ok(()),
        }
    }

    pub(super) fn counter(
        &mut self,
        name: &str,
        help: &str,
        unit: Option<Unit>,
        v: u64,
    ) -> fmt::Result {
        let mut m = self
            .enc
            .encode_descriptor(name, help, unit.as_ref(), MetricType::Counter)?;
        m.encode_counter::<NoLabelSet, _, u64>(&v, None)
    }

    /// A family of `kind` ([`Gauge`] or [`Counter`]) over `series`: (label values, value),
    /// all with the label names `keys`.
    pub(super) fn family<'v, K: Kind<V>, V, const N: usize>(
        &mut self,
        _kind: K,
        name: &str,
        help: &str,
        unit: Option<Unit>,
        keys: [&str; N],
        series: impl IntoIterator<Item = ([&'v str; N], V)>,
    ) -> fmt::Result {
        let mut m = self
            .enc
            .encode_descriptor(name, help, unit.as_ref(), K::TYPE)?;
        for (values, v) in series {
            let labels: [(&str, &str); N] = std::array::from_fn(|i| (keys[i], values[i]));
            K::put(m.encode_family(&labels)?, &v)?;
        }
        Ok(())
    }

    /// The family of `m`, a metric of the table, with one series of `v`; nothing when `v` is
    /// `None` or `m` has no family.
    pub(super) fn metric(&mut self, m: Metric, v: Option<Value>) -> fmt::Result {
        match (family_of(m), v) {
            (Some((name, help, unit)), Some(v)) => self.gauge(name, help, unit, v),
            _ => Ok(()),
        }
    }

    /// The family of `m`, a per-GPU metric of the table: one series per GPU of `series`
    /// (labels `gpu`, `device`), the family written even when `series` is empty.
    pub(super) fn gpu_metric(&mut self, m: Metric, series: &[([String; 2], Value)]) -> fmt::Result {
        let Some((name, help, unit)) = family_of(m) else {
            return Ok(());
        };
        let series = series
            .iter()
            .map(|(l, v)| ([l[0].as_str(), l[1].as_str()], *v));
        self.family(Gauge, name, help, unit, GPU_KEYS, series)
    }

    /// A histogram family of durations, seconds: one series per `series` item, labelled
    /// `key=value` (no label without a key).
    pub(super) fn histograms<'h>(
        &mut self,
        name: &str,
        help: &str,
        key: Option<&str>,
        series: impl IntoIterator<Item = (&'static str, &'h Hist)>,
    ) -> fmt::Result {
        let unit = Unit::Seconds;
        let mut m = self
            .enc
            .encode_descriptor(name, help, Some(&unit), MetricType::Histogram)?;
        for (value, h) in series {
            let buckets = h.buckets();
            match key {
                Some(k) => m
                    .encode_family(&[(k, value)])?
                    .encode_histogram::<NoLabelSet>(h.sum, h.count, &buckets, None)?,
                None => m.encode_histogram::<NoLabelSet>(h.sum, h.count, &buckets, None)?,
            }
        }
        Ok(())
    }
}

/// What a labelled family holds, and how one of its values is written.
pub(super) trait Kind<V> {
    const TYPE: MetricType;
    fn put(m: MetricEncoder<'_>, v: &V) -> fmt::Result;
}

/// A gauge family (for [`Out::family`]).
pub(super) struct Gauge;

impl<V: EncodeGaugeValue> Kind<V> for Gauge {
    const TYPE: MetricType = MetricType::Gauge;
    fn put(mut m: MetricEncoder<'_>, v: &V) -> fmt::Result {
        m.encode_gauge(v)
    }
}

/// A counter family (for [`Out::family`]).
pub(super) struct Counter;

impl<V: EncodeCounterValue> Kind<V> for Counter {
    const TYPE: MetricType = MetricType::Counter;
    fn put(mut m: MetricEncoder<'_>, v: &V) -> fmt::Result {
        m.encode_counter::<NoLabelSet, _, u64>(v, None)
    }
}
