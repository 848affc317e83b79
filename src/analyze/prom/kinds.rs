//! Counter or gauge. A name ending `_total` is a counter by the naming convention, but
//! many exporters name gauges so (a pool's size `…_addresses_total`, assigned leases
//! `…_assigned_total`, `…_slots_total`). What the exposition declared decides: Prometheus'
//! metadata (`/api/v1/metadata`), read once per sweep and bounded. When it is missing or
//! `unknown` (a backfilled series, an exposition without `# TYPE`), the samples decide: a
//! series that went down without falling to a restart's low, or that held while the series
//! it is read against moved, is a gauge; one that only rose is a counter.

use std::collections::HashMap;
use std::sync::Arc;

use super::Prom;
use crate::analyze::{AnalyzeError, Scope};
use crate::integrations::prometheus::Series;

/// Most metrics whose declared type is read per sweep.
const MAX_METADATA: usize = 20_000;
/// A counter that went down to at most this share of its value restarted (from zero, plus
/// what it counted since); a fall to more than this is a gauge's.
const RESET_SHARE: f64 = 0.5;
/// Points a series is read at to tell how it moves.
const POINTS: u32 = 40;

/// What a metric is, as far as the data tells.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Kind {
    Gauge,
    /// A counter, or a histogram's or summary's series: not a quantity now.
    Counter,
    /// Not declared (or declared `unknown`): the samples must tell.
    #[default]
    Unknown,
}

/// The declared kind of `name`: its own entry, else its family's (OpenMetrics declares a
/// counter `foo` whose samples are `foo_total`). A summary's quantiles carry the family's
/// own name (`rpc_duration_seconds{quantile="0.99"}`): levels, gauges; its `_sum` and
/// `_count` count.
pub fn declared(types: &HashMap<String, String>, name: &str) -> Kind {
    if types.get(name).is_some_and(|t| t == "summary") {
        return Kind::Gauge;
    }
    let family = ["_total", "_count", "_sum", "_bucket"]
        .iter()
        .find_map(|x| name.strip_suffix(x));
    let kind = types
        .get(name)
        .or_else(|| family.and_then(|f| types.get(f)));
    match kind.map(String::as_str) {
        Some("gauge") => Kind::Gauge,
        Some("counter" | "histogram" | "gaugehistogram" | "summary") => Kind::Counter,
        _ => Kind::Unknown,
    }
}

/// Whether `v` went down somewhere to more than [`RESET_SHARE`] of what it had: a gauge
/// falling, not a counter restarting.
pub(crate) fn fell_without_reset(v: &[f64]) -> bool {
    v.windows(2)
        .any(|w| w[1] < w[0] && w[1] > RESET_SHARE * w[0])
}

fn values(s: &Series) -> Vec<f64> {
    s.values
        .iter()
        .map(|(_, v)| *v)
        .filter(|v| v.is_finite())
        .collect()
}

fn held(s: &Series) -> bool {
    let v = values(s);
    v.windows(2).all(|w| w[0] == w[1])
}

impl Prom {
    /// The types the scrapes declared, read by the sweep's first caller and shared (a
    /// failed read is tried again by the next caller).
    pub async fn metric_types(
        &self,
        scope: &Scope,
    ) -> Result<Arc<HashMap<String, String>>, AnalyzeError> {
        let types = scope
            .metric_names
            .types
            .get_or_try_init(|| async {
                self.client.metric_types(MAX_METADATA).await.map(Arc::new)
            })
            .await?;
        Ok(types.clone())
    }

    /// Whether the undeclared `name` moves like a gauge over the scope's window: one of its
    /// series fell without a reset, or all held while one of `partner`'s (the series it is
    /// read against) moved.
    pub async fn moves_like_gauge(
        &self,
        name: &str,
        partner: &str,
        scope: &Scope,
    ) -> Result<bool, AnalyzeError> {
        let own = self.range(name, scope, POINTS).await?;
        if own.iter().any(|s| fell_without_reset(&values(s))) {
            return Ok(true);
        }
        if own.is_empty() || !own.iter().all(held) {
            return Ok(false);
        }
        let partner = self.range(partner, scope, POINTS).await?;
        Ok(partner.iter().any(|s| !held(s)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_declared_type_is_the_names_or_its_familys_and_unknown_decides_nothing() {
        let types: HashMap<String, String> = [
            ("kea_dhcp4_addresses_total", "gauge"),
            ("http_requests", "counter"),
            ("rpc_duration_seconds", "summary"),
            ("legacy_jobs_total", "unknown"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        assert_eq!(declared(&types, "kea_dhcp4_addresses_total"), Kind::Gauge);
        assert_eq!(declared(&types, "http_requests_total"), Kind::Counter);
        assert_eq!(
            declared(&types, "rpc_duration_seconds_count"),
            Kind::Counter
        );
        // The summary's quantiles are levels.
        assert_eq!(declared(&types, "rpc_duration_seconds"), Kind::Gauge);
        assert_eq!(declared(&types, "legacy_jobs_total"), Kind::Unknown);
        assert_eq!(declared(&types, "never_declared_total"), Kind::Unknown);
    }

    #[test]
    fn a_fall_to_more_than_half_is_a_gauge_and_a_fall_to_near_zero_a_restart() {
        assert!(fell_without_reset(&[90.0, 95.0, 70.0, 80.0]));
        assert!(!fell_without_reset(&[9_000.0, 9_500.0, 12.0, 40.0]));
        assert!(!fell_without_reset(&[1.0, 2.0, 3.0]));
        assert!(!fell_without_reset(&[]));
    }
}
