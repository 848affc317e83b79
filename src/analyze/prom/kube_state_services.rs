//! `kube_state_endpoints`: a Service whose Endpoints hold no ready address, so the
//! ingress and every client of it get "no endpoints" (503), from kube-state-metrics for
//! users without API access (`kube/services.rs` says which pods nearly match). Ready
//! addresses per Endpoints object are `kube_endpoint_address_available` (before ksm 2.6,
//! with `kube_endpoint_address_not_ready`) or the count of `kube_endpoint_address`
//! series with `ready="true"` (ksm 2.6 on, one series per address; an Endpoints object
//! without any has only `kube_endpoint_info`). Critical when it had ready addresses
//! earlier in the lookback (it went to none, since then); warning when it had none all
//! along (a Service that never had a backend, or one scaled to zero).

use std::collections::{BTreeMap, HashMap};

use async_trait::async_trait;
use chrono::TimeDelta;

use super::history::last_transition;
use super::{Prom, identity, pick, selector};
use crate::analyze::{
    AnalyzeError, Analyzer, Entity, Fact, FactClass, Quantity, Scope, Severity, Source,
    keep_most_severe,
};
use crate::integrations::prometheus::Labels;

const NAME: &str = "kube_state_endpoints";
/// Ready addresses per Endpoints object, whichever kube-state-metrics serves them.
const READY: &str = "max by (namespace, endpoint) (kube_endpoint_address_available) \
     or (count by (namespace, endpoint) (kube_endpoint_address{ready=\"true\"}) \
     or on (namespace, endpoint) 0 * count by (namespace, endpoint) (kube_endpoint_info))";
/// Addresses not ready per Endpoints object.
const NOT_READY: &str = "max by (namespace, endpoint) (kube_endpoint_address_not_ready) \
     or count by (namespace, endpoint) (kube_endpoint_address{ready=\"false\"})";
/// The shortest lookback a drop to zero is looked for in.
const MIN_LOOKBACK: TimeDelta = TimeDelta::hours(6);
const POINTS: u32 = 240;
const MAX_FACTS: usize = 20;

pub struct KubeStateEndpoints(pub Prom);

#[async_trait]
impl Analyzer for KubeStateEndpoints {
    fn name(&self) -> &'static str {
        NAME
    }

    async fn run(&self, scope: &Scope) -> Result<Vec<Fact>, AnalyzeError> {
        let now = self.0.vector(READY).await?;
        let empty: Vec<Labels> = now
            .iter()
            .filter(|s| s.value == 0.0)
            .map(|s| identity(&s.metric))
            .collect();
        if empty.is_empty() {
            return Ok(Vec::new());
        }
        let not_ready: HashMap<Labels, f64> = self
            .0
            .vector(NOT_READY)
            .await?
            .into_iter()
            .map(|s| (identity(&s.metric), s.value))
            .collect();
        let window_start = scope
            .now
            .checked_sub_signed(scope.window().max(MIN_LOOKBACK))
            .unwrap_or(scope.window_start);
        let lookback = Scope {
            window_start,
            started: scope.started.max(window_start),
            metric_names: super::MetricNames::default(),
            ..scope.clone()
        };
        let history: HashMap<Labels, Vec<(f64, f64)>> = self
            .0
            .range(READY, &lookback, POINTS)
            .await?
            .into_iter()
            .map(|s| (identity(&s.metric), s.values))
            .collect();
        let mut facts: Vec<Fact> = empty
            .iter()
            .filter_map(|l| {
                let values = history.get(l).map(Vec::as_slice).unwrap_or_default();
                fact(l, values, not_ready.get(l).copied().unwrap_or(0.0))
            })
            .collect();
        keep_most_severe(&mut facts, MAX_FACTS);
        Ok(facts)
    }
}

/// The fact of the Endpoints object `l` with no ready address: `history` its ready
/// addresses over the lookback, `not_ready` its addresses not ready now.
pub fn fact(l: &Labels, history: &[(f64, f64)], not_ready: f64) -> Option<Fact> {
    let (ns, name) = (l.get("namespace")?, l.get("endpoint")?);
    let dropped = last_transition(history).filter(|(_, before)| *before > 0.0);
    let severity = match dropped {
        Some(_) => Severity::Critical,
        None => Severity::Warning,
    };
    let mut detail = match dropped {
        Some((t, before)) => format!(
            "{before} ready address(es) until {}, none since",
            t.format("%Y-%m-%d %H:%M UTC")
        ),
        None => "no ready address in the whole lookback".to_string(),
    };
    if not_ready > 0.0 {
        detail.push_str(&format!(
            "; {not_ready} address(es) not ready: the pods the Service selects exist but none is ready"
        ));
    } else {
        detail.push_str(
            "; no address at all, ready or not: the Service's selector matches no running pod (pods relabelled, a selector typo, or scaled to zero)",
        );
    }
    detail.push_str("; clients and the ingress get 503 / \"no endpoints available\"");
    let labels = BTreeMap::from([
        ("namespace".to_string(), ns.clone()),
        ("service".to_string(), name.clone()),
    ]);
    let query = format!(
        "kube_endpoint_address_available{0} or kube_endpoint_address{0}",
        selector(pick(l, &["namespace", "endpoint"]))
    );
    Some(
        Fact::new(
            FactClass::Kubernetes,
            NAME,
            Entity::new("service", format!("{ns}/{name}")).with_labels(labels),
            "no ready endpoint: ready addresses",
            severity,
            Source::promql(&query),
        )
        .value(Quantity::count(0.0))
        .since(dropped.map(|(t, _)| t))
        .detail(detail),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn l(ns: &str, ep: &str) -> Labels {
        Labels::from([
            ("namespace".to_string(), ns.to_string()),
            ("endpoint".to_string(), ep.to_string()),
        ])
    }

    #[test]
    fn an_endpoint_that_lost_its_ready_addresses_is_critical_since_then() {
        let h = [(600.0, 3.0), (660.0, 3.0), (720.0, 0.0), (780.0, 0.0)];
        let f = fact(&l("wiki", "bookstack"), &h, 0.0).unwrap();
        assert_eq!(f.severity, Severity::Critical);
        assert_eq!(f.entity.kind, "service");
        assert_eq!(f.entity.name, "wiki/bookstack");
        assert_eq!(f.since.unwrap().timestamp(), 720);
        let d = f.detail.unwrap();
        assert!(d.starts_with("3 ready address(es) until"), "{d}");
        assert!(d.contains("matches no running pod"), "{d}");
    }

    #[test]
    fn an_endpoint_never_ready_is_a_warning_and_unready_backends_are_told_apart() {
        let h = [(600.0, 0.0), (660.0, 0.0)];
        let f = fact(&l("wiki", "search"), &h, 2.0).unwrap();
        assert_eq!(f.severity, Severity::Warning);
        assert_eq!(f.since, None);
        assert!(f.detail.unwrap().contains("2 address(es) not ready"));
        assert!(fact(&Labels::new(), &h, 0.0).is_none());
    }
}
