//! Writing one sample of a value known at scrape time. Help texts end with
//! a full stop, as the registry writes those of registered families.

use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::registry::Unit;

/// A gauge `name` (with its unit, if any) holding `value`.
pub(super) fn gauge(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    unit: Option<Unit>,
    value: f64,
) -> Result<(), std::fmt::Error> {
    let metric = ConstGauge::new(value);
    let help = format!("{help}.");
    let sample = encoder.encode_descriptor(name, &help, unit.as_ref(), metric.metric_type())?;
    metric.encode(sample)
}

/// A counter `name` (with its unit, if any) at `value`; `_total` is added.
pub(super) fn counter(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    unit: Option<Unit>,
    value: f64,
) -> Result<(), std::fmt::Error> {
    let metric = ConstCounter::new(value);
    let help = format!("{help}.");
    let sample = encoder.encode_descriptor(name, &help, unit.as_ref(), metric.metric_type())?;
    metric.encode(sample)
}
