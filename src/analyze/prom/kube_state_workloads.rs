//! Kubernetes nodes and workloads from kube-state-metrics, the same classes the API
//! analyzers report for users without API access. `kube_state_nodes`: nodes not Ready
//! (`kube_node_status_condition`, status false or unknown) or under memory, disk or PID
//! pressure or without network. `kube_state_rollouts`: Deployments, StatefulSets and
//! DaemonSets whose rollout is stuck (`Progressing` false), in progress (fewer updated
//! replicas than desired) or short of available replicas, whether or not its spec
//! changed in the window (the change itself is another analyzer's). Since when comes
//! from the state's presence over the window.

use std::collections::{BTreeMap, HashMap, HashSet};

use async_trait::async_trait;

use super::kube_state::{run_start, step_of};
use super::{Prom, identity, pick, selector};
use crate::analyze::{
    AnalyzeError, Analyzer, Entity, Fact, FactClass, Quantity, Scope, Severity, Source,
    keep_most_severe,
};
use crate::integrations::prometheus::Labels;

/// Points of the range queries that date a state.
const POINTS: u32 = 120;
/// Most facts per analyzer.
const MAX_FACTS: usize = 40;

pub struct KubeStateNodes(pub Prom);

#[async_trait]
impl Analyzer for KubeStateNodes {
    fn name(&self) -> &'static str {
        "kube_state_nodes"
    }

    async fn run(&self, scope: &Scope) -> Result<Vec<Fact>, AnalyzeError> {
        let expr = "kube_node_status_condition{condition=\"Ready\",status=~\"false|unknown\"} == 1 \
             or kube_node_status_condition{condition=~\"MemoryPressure|DiskPressure|PIDPressure|NetworkUnavailable\",status=\"true\"} == 1";
        let now = self.0.vector(expr).await?;
        if now.is_empty() {
            return Ok(Vec::new());
        }
        let step = step_of(scope, POINTS);
        let start = scope.window_start.timestamp() as f64;
        let history: HashMap<Labels, Vec<(f64, f64)>> = self
            .0
            .range(expr, scope, POINTS)
            .await?
            .into_iter()
            .map(|s| (identity(&s.metric), s.values))
            .collect();
        let mut facts = Vec::new();
        for s in now.iter().take(MAX_FACTS) {
            let l = identity(&s.metric);
            let (Some(node), Some(condition)) = (l.get("node"), l.get("condition")) else {
                continue;
            };
            let status = l.get("status").map(String::as_str).unwrap_or_default();
            let (what, severity) = match condition.as_str() {
                "Ready" => (format!("not ready (Ready={status})"), Severity::Critical),
                c => (c.to_string(), Severity::Warning),
            };
            let labels = BTreeMap::from([
                ("node".to_string(), node.clone()),
                ("condition".to_string(), condition.clone()),
            ]);
            let q = format!(
                "kube_node_status_condition{}",
                selector(pick(&l, &["node", "condition"]))
            );
            facts.push(
                Fact::new(
                    FactClass::Kubernetes,
                    self.name(),
                    Entity::new("node", node.clone())
                        .on_host(Some(node.clone()))
                        .with_labels(labels),
                    what,
                    severity,
                    Source::promql(&q),
                )
                .since(history.get(&l).and_then(|v| run_start(v, step, start))),
            );
        }
        Ok(facts)
    }
}

/// One bad state of one workload kind: `left` compared with the desired count.
struct Check {
    what: &'static str,
    /// The series whose presence is the state; its value is the fact's value.
    expr: String,
    /// The metric a person looks at for it.
    metric: String,
    severity: Severity,
}

/// A workload kind as kube-state-metrics names it.
struct Kind {
    /// `deployment`, `statefulset`, `daemonset`: the label and the metric prefix.
    label: &'static str,
    desired: &'static str,
    updated: &'static str,
    available: &'static str,
}

const KINDS: [Kind; 3] = [
    Kind {
        label: "deployment",
        desired: "kube_deployment_spec_replicas",
        updated: "kube_deployment_status_replicas_updated",
        available: "kube_deployment_status_replicas_available",
    },
    Kind {
        label: "statefulset",
        desired: "kube_statefulset_replicas",
        updated: "kube_statefulset_status_replicas_updated",
        available: "kube_statefulset_status_replicas_ready",
    },
    Kind {
        label: "daemonset",
        desired: "kube_daemonset_status_desired_number_scheduled",
        updated: "kube_daemonset_status_updated_number_scheduled",
        available: "kube_daemonset_status_number_available",
    },
];

impl Kind {
    fn checks(&self) -> Vec<Check> {
        let on = format!("on(namespace, {})", self.label);
        let mut checks = Vec::new();
        if self.label == "deployment" {
            let stuck =
                "kube_deployment_status_condition{condition=\"Progressing\",status=\"false\"}";
            checks.push(Check {
                what: "rollout stuck (Progressing=False), available",
                expr: format!("{} and {on} ({stuck} == 1)", self.available),
                metric: stuck.to_string(),
                severity: Severity::Critical,
            });
        }
        checks.push(Check {
            what: "rollout in progress, updated",
            expr: format!("{} < {on} {}", self.updated, self.desired),
            metric: self.updated.to_string(),
            severity: Severity::Warning,
        });
        checks.push(Check {
            what: "replicas available",
            expr: format!("{} < {on} {}", self.available, self.desired),
            metric: self.available.to_string(),
            severity: Severity::Warning,
        });
        checks
    }
}

pub struct KubeStateRollouts(pub Prom);

impl KubeStateRollouts {
    fn entity(kind: &str, l: &Labels) -> Option<Entity> {
        let ns = l.get("namespace")?;
        let name = l.get(kind)?;
        let labels = BTreeMap::from([
            ("namespace".to_string(), ns.clone()),
            (kind.to_string(), name.clone()),
            ("workload".to_string(), name.clone()),
        ]);
        Some(Entity::new(kind, format!("{ns}/{name}")).with_labels(labels))
    }
}

#[async_trait]
impl Analyzer for KubeStateRollouts {
    fn name(&self) -> &'static str {
        "kube_state_rollouts"
    }

    async fn run(&self, scope: &Scope) -> Result<Vec<Fact>, AnalyzeError> {
        let p = &self.0;
        let step = step_of(scope, POINTS);
        let start = scope.window_start.timestamp() as f64;
        let mut facts = Vec::new();
        for kind in &KINDS {
            let desired: HashMap<Labels, f64> = p
                .vector(kind.desired)
                .await?
                .into_iter()
                .map(|s| (pick_key(&s.metric, kind.label), s.value))
                .collect();
            if desired.is_empty() {
                continue;
            }
            let mut seen: HashSet<Labels> = HashSet::new();
            for check in kind.checks() {
                let bad = p.vector(&check.expr).await?;
                if bad.is_empty() {
                    continue;
                }
                let history: HashMap<Labels, Vec<(f64, f64)>> = p
                    .range(&check.expr, scope, POINTS)
                    .await?
                    .into_iter()
                    .map(|s| (pick_key(&s.metric, kind.label), s.values))
                    .collect();
                for s in bad {
                    let key = pick_key(&s.metric, kind.label);
                    if !seen.insert(key.clone()) {
                        continue;
                    }
                    let Some(entity) = Self::entity(kind.label, &key) else {
                        continue;
                    };
                    let sel = selector(pick(&key, &["namespace", kind.label]));
                    let mut fact = Fact::new(
                        FactClass::Kubernetes,
                        self.name(),
                        entity,
                        check.what,
                        check.severity,
                        Source::promql(&format!("{}{sel}", check.metric)),
                    )
                    .value(Quantity::count(s.value))
                    .since(history.get(&key).and_then(|v| run_start(v, step, start)));
                    if let Some(d) = desired.get(&key) {
                        fact = fact.limit(Quantity::count(*d));
                    }
                    facts.push(fact);
                }
            }
        }
        keep_most_severe(&mut facts, MAX_FACTS);
        Ok(facts)
    }
}

/// The labels that name a workload of `kind` (`namespace`, the kind's label).
fn pick_key(l: &Labels, kind: &str) -> Labels {
    pick(l, &["namespace", kind])
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}
