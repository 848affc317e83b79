//! `kube_nodes`: nodes in a bad condition: `Ready` False or Unknown (the kubelet stopped
//! reporting), and the pressure conditions the kubelet sets (`MemoryPressure`,
//! `DiskPressure`, `PIDPressure`, `NetworkUnavailable`) when True, each since its
//! `lastTransitionTime`, with the kubelet's reason and message.

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use k8s_openapi::api::core::v1::Node;
use serde_json::json;

use super::{MAX_FACTS, time, upstream};
use crate::analyze::{AnalyzeError, Analyzer, Entity, Fact, FactClass, Scope, Severity, Source};
use crate::integrations::kubernetes::KubeClient;

const NAME: &str = "kube_nodes";

/// Conditions that are bad when True (every other condition but `Ready` is ignored:
/// node-problem-detector and cloud providers add their own, with their own meaning).
const PRESSURE: [&str; 4] = [
    "MemoryPressure",
    "DiskPressure",
    "PIDPressure",
    "NetworkUnavailable",
];

pub struct KubeNodes(pub Arc<KubeClient>);

#[async_trait]
impl Analyzer for KubeNodes {
    fn name(&self) -> &'static str {
        NAME
    }

    async fn run(&self, _: &Scope) -> Result<Vec<Fact>, AnalyzeError> {
        let nodes = self.0.nodes().await.map_err(upstream)?;
        Ok(analyze(&nodes))
    }
}

/// The facts about `nodes`.
pub fn analyze(nodes: &[Node]) -> Vec<Fact> {
    let mut facts = Vec::new();
    for node in nodes {
        let Some(name) = node.metadata.name.clone() else {
            continue;
        };
        let conditions = node.status.as_ref().and_then(|s| s.conditions.as_ref());
        for c in conditions.into_iter().flatten() {
            let severity = match (c.type_.as_str(), c.status.as_str()) {
                ("Ready", "False" | "Unknown") => Severity::Critical,
                (t, "True") if PRESSURE.contains(&t) => Severity::Warning,
                _ => continue,
            };
            let what = match c.type_.as_str() {
                "Ready" => format!("not ready (Ready={})", c.status),
                t => t.to_string(),
            };
            let detail = match (c.reason.as_deref(), c.message.as_deref()) {
                (Some(r), Some(m)) => format!("{r}: {m}"),
                (Some(r), None) => r.to_string(),
                (None, m) => m.unwrap_or_default().to_string(),
            };
            let labels = BTreeMap::from([
                ("node".to_string(), name.clone()),
                ("condition".to_string(), c.type_.clone()),
            ]);
            facts.push(
                Fact::new(
                    FactClass::Kubernetes,
                    NAME,
                    Entity::new("node", name.clone())
                        .on_host(Some(name.clone()))
                        .with_labels(labels),
                    what,
                    severity,
                    Source::new("k8s_nodes", json!({})),
                )
                .since(c.last_transition_time.as_ref().and_then(time))
                .detail(detail),
            );
        }
    }
    facts.sort_by_key(|f| std::cmp::Reverse(f.severity));
    facts.truncate(MAX_FACTS);
    facts
}
