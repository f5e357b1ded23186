//! The family writer the exposition uses: each call writes one family's descriptor (name,
//! help, unit, type), then its series. A family is written whole or not at all; an absent
//! reading ([`Out::opt_gauge`] of `None`) writes nothing, never a 0.

use std::fmt;

use prometheus_client::encoding::{
    DescriptorEncoder, EncodeCounterValue, EncodeGaugeValue, MetricEncoder, NoLabelSet,
};
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Unit;

use super::hist::Hist;

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
