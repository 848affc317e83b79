//! Containers near their memory limit (cAdvisor or the kubelet's
//! `container_memory_working_set_bytes`, the figure the OOM killer is measured against)
//! against `container_spec_memory_limit_bytes` (cAdvisor: 0 or a huge number when
//! unlimited) or kube-state-metrics `kube_pod_container_resource_limits{resource="memory"}`:
//! how full, how fast the working set grows and when it reaches the limit.

use std::collections::HashMap;

use async_trait::async_trait;

use super::{Prom, host, labels_map, long_span, pick, selector, steepest};
use crate::analyze::{
    AnalyzeError, Analyzer, Entity, Fact, FactClass, Quantity, Rate, Scope, Severity, Source, Unit,
};
use crate::integrations::prometheus::{Labels, Sample};

/// Per-container working sets (not the pod's or the cgroup hierarchy's sums).
const WORKING_SET: &str = r#"container_memory_working_set_bytes{container!="",container!="POD"}"#;
/// The same for a standalone cAdvisor (Docker), which names containers by `name`.
const WORKING_SET_DOCKER: &str = r#"container_memory_working_set_bytes{container="",name!=""}"#;
/// A limit at or above this is "unlimited" (cgroup v1 reports 2^63 rounded to pages).
const UNLIMITED: f64 = (1u64 << 60) as f64;
/// Share of the limit worth a look, and critical (the kernel kills at the limit).
const WARN_PERCENT: f64 = 85.0;
const CRIT_PERCENT: f64 = 95.0;
/// Time to the limit under which a container is worth a look, and critical.
const WARN_ETA: f64 = 6.0 * 3600.0;
const CRIT_ETA: f64 = 1800.0;
/// Share of the limit a growth must reach over its span to count as a trend.
const MATERIAL_SHARE: f64 = 0.05;

pub struct ContainerMemory(pub Prom);

/// What joins a working set to its limit: namespace, pod and container on Kubernetes, else
/// the instance and the container's name.
fn key(l: &Labels) -> Option<(String, String, String)> {
    let get = |k: &str| l.get(k).cloned().unwrap_or_default();
    match l.get("pod") {
        Some(pod) if !pod.is_empty() => Some((get("namespace"), pod.clone(), get("container"))),
        _ => l
            .get("name")
            .filter(|n| !n.is_empty())
            .map(|n| (get("instance"), n.clone(), String::new())),
    }
}

fn limits(v: Vec<Sample>) -> HashMap<(String, String, String), f64> {
    v.into_iter()
        .filter(|s| s.value.is_finite() && s.value > 0.0 && s.value < UNLIMITED)
        .filter_map(|s| key(&s.metric).map(|k| (k, s.value)))
        .collect()
}

#[async_trait]
impl Analyzer for ContainerMemory {
    fn name(&self) -> &'static str {
        "container_memory"
    }

    async fn run(&self, scope: &Scope) -> Result<Vec<Fact>, AnalyzeError> {
        let mut facts = Vec::new();
        for ws in [WORKING_SET, WORKING_SET_DOCKER] {
            facts.extend(self.variant(ws, scope).await?);
        }
        Ok(facts)
    }
}

impl ContainerMemory {
    async fn variant(&self, ws: &str, scope: &Scope) -> Result<Vec<Fact>, AnalyzeError> {
        let left = super::Lookups::default();
        let now = self.0.vector(ws).await?;
        if now.is_empty() {
            return Ok(Vec::new());
        }
        // kube-state-metrics first, cAdvisor's own spec where it has one.
        let mut limit = limits(
            self.0
                .vector(r#"kube_pod_container_resource_limits{resource="memory"}"#)
                .await?,
        );
        limit.extend(limits(
            self.0.vector("container_spec_memory_limit_bytes").await?,
        ));
        if limit.is_empty() {
            return Ok(Vec::new());
        }
        let slopes = self.0.slopes(ws, &[600, 3600, long_span(scope)]).await?;
        let mut facts = Vec::new();
        for s in now {
            let Some(k) = key(&s.metric) else { continue };
            let Some(&lim) = limit.get(&k) else { continue };
            if !s.value.is_finite() {
                continue;
            }
            let used = 100.0 * s.value / lim;
            let id = super::identity(&s.metric);
            // Growth that has stopped has no ETA: the last ten minutes must still grow.
            let ongoing = slopes
                .first()
                .and_then(|(_, by)| by.get(&id))
                .is_some_and(|d| *d > 0.0);
            let slope = steepest(&slopes, &id, MATERIAL_SHARE * lim, false).filter(|_| ongoing);
            let eta = slope.map(|d| (lim - s.value).max(0.0) / d);
            let severity = match (used, eta) {
                (u, _) if u >= CRIT_PERCENT => Severity::Critical,
                (_, Some(e)) if e < CRIT_ETA => Severity::Critical,
                (u, _) if u >= WARN_PERCENT => Severity::Warning,
                (_, Some(e)) if e < WARN_ETA => Severity::Warning,
                _ => continue,
            };
            let ids = pick(
                &s.metric,
                &["instance", "namespace", "pod", "container", "name"],
            );
            let metric = ws.split('{').next().unwrap_or(ws);
            let query = format!("{metric}{}", selector(ids));
            let since = match used >= WARN_PERCENT {
                true => {
                    let pct = format!("100 * {query} / {lim}");
                    self.0
                        .since(&left, &pct, scope, |v| v >= WARN_PERCENT)
                        .await
                }
                false => None,
            };
            let (ns, pod, container) = k;
            let name = match s.metric.contains_key("pod") {
                true => format!("{ns}/{pod}/{container}"),
                false => pod,
            };
            let host = s.metric.get("node").cloned().or_else(|| host(&s.metric));
            let mut fact = Fact::new(
                FactClass::Exhaustion,
                self.name(),
                Entity::new("container", name)
                    .on_host(host)
                    .with_labels(labels_map(&s.metric)),
                "memory used of its limit",
                severity,
                Source::promql(&query),
            )
            .value(Quantity::percent(used))
            .limit(Quantity::bytes(lim))
            .since(since)
            .detail(format!("working set {}", Quantity::bytes(s.value)));
            if let Some(d) = slope {
                fact = fact.rate(Rate::from_per_second(d, Unit::Bytes));
            }
            if let Some(e) = eta {
                fact = fact.eta(e, "at its limit (OOM kill)");
            }
            facts.push(fact);
        }
        Ok(facts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(kv: &[(&str, &str)]) -> Labels {
        kv.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn limits_join_by_pod_and_container_or_by_docker_name_and_unlimited_ones_are_dropped() {
        let s = |l: &[(&str, &str)], v: f64| Sample {
            metric: labels(l),
            value: v,
            ts: 0.0,
        };
        let got = limits(vec![
            s(
                &[("namespace", "a"), ("pod", "p"), ("container", "c")],
                512.0,
            ),
            s(&[("namespace", "a"), ("pod", "q"), ("container", "c")], 0.0),
            s(
                &[("instance", "h:8080"), ("name", "web")],
                9.223372036854772e18,
            ),
            s(&[("instance", "h:8080"), ("name", "db")], 1024.0),
            s(&[("id", "/system.slice")], 2048.0),
        ]);
        assert_eq!(got.len(), 2);
        assert_eq!(got[&("a".into(), "p".into(), "c".into())], 512.0);
        assert_eq!(got[&("h:8080".into(), "db".into(), String::new())], 1024.0);
    }
}
