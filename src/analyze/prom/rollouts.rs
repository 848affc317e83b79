//! Rollouts and image changes in the window, from kube-state-metrics when it is scraped:
//! a Deployment, StatefulSet or DaemonSet whose spec generation changed (when, from which
//! generation, and how far the rollout got), and a container whose image is not one it
//! ran at the window's start (pods replaced with a new image). A rollout whose
//! Deployment reports `Progressing` false (its deadline exceeded) failed.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use async_trait::async_trait;

use super::history::{first_seen, last_transition};
use super::{Prom, labels_map, pick, selector};
use crate::analyze::{AnalyzeError, Analyzer, Entity, Fact, FactClass, Scope, Severity, Source};
use crate::integrations::prometheus::{Labels, Sample};

/// The workload kinds kube-state-metrics reports a generation for (metric infix and label).
const KINDS: [&str; 3] = ["deployment", "statefulset", "daemonset"];
/// Images per container, now and at the window's start.
const IMAGES: &str = "group by (namespace, container, image) (kube_pod_container_info)";

pub struct Rollouts(pub Prom);

#[async_trait]
impl Analyzer for Rollouts {
    fn name(&self) -> &'static str {
        "rollouts"
    }

    async fn run(&self, scope: &Scope) -> Result<Vec<Fact>, AnalyzeError> {
        let mut facts = Vec::new();
        for kind in KINDS {
            facts.extend(self.generations(kind, scope).await?);
        }
        facts.extend(self.images(scope).await?);
        Ok(facts)
    }
}

impl Rollouts {
    async fn generations(&self, kind: &str, scope: &Scope) -> Result<Vec<Fact>, AnalyzeError> {
        let generation = format!("kube_{kind}_metadata_generation");
        let changed = self
            .0
            .vector(&format!(
                "changes({generation}{}) > 0",
                scope.promql_range()
            ))
            .await?;
        if changed.is_empty() {
            return Ok(Vec::new());
        }
        let ids = ["namespace", kind];
        let queries: Vec<String> = changed
            .iter()
            .map(|s| format!("{generation}{}", selector(pick(&s.metric, &ids))))
            .collect();
        let stuck = format!(
            "kube_{kind}_status_condition{{condition=\"Progressing\",status=\"false\"}} == 1"
        );
        let updated = format!("kube_{kind}_status_replicas_updated");
        let wanted = format!("kube_{kind}_spec_replicas");
        let (histories, updated, wanted, stuck) = tokio::join!(
            self.0.histories(&queries, scope),
            self.0.vector(&updated),
            self.0.vector(&wanted),
            self.0.vector(&stuck),
        );
        let histories = histories?;
        let by_workload = |v: Vec<Sample>| -> HashMap<(String, String), f64> {
            v.into_iter()
                .map(|s| (workload(&s.metric, kind), s.value))
                .collect()
        };
        let (updated, wanted, stuck) = (
            by_workload(updated?),
            by_workload(wanted?),
            by_workload(stuck?),
        );
        let mut facts = Vec::new();
        for (i, s) in changed.iter().enumerate() {
            let key = workload(&s.metric, kind);
            let history = histories.get(i).and_then(|h| h.first());
            let transition = history.and_then(|h| last_transition(&h.values));
            let mut detail = match (transition, history.and_then(|h| h.values.last())) {
                (Some((_, before)), Some((_, now))) => format!("generation {before} → {now}"),
                _ => "spec changed".to_string(),
            };
            if let (Some(u), Some(w)) = (updated.get(&key), wanted.get(&key)) {
                detail.push_str(&format!("; {u} of {w} replicas updated"));
            }
            let failed = stuck.contains_key(&key);
            if failed {
                detail.push_str("; Progressing is false (deadline exceeded)");
            }
            facts.push(
                Fact::new(
                    FactClass::Change,
                    self.name(),
                    Entity::new(kind, format!("{}/{}", key.0, key.1))
                        .with_labels(labels_map(&s.metric)),
                    if failed {
                        "rollout failed"
                    } else {
                        "rolled out"
                    },
                    if failed {
                        Severity::Warning
                    } else {
                        Severity::Info
                    },
                    Source::promql(&queries[i]),
                )
                .since(transition.map(|(t, _)| t))
                .detail(detail),
            );
        }
        Ok(facts)
    }

    async fn images(&self, scope: &Scope) -> Result<Vec<Fact>, AnalyzeError> {
        let (now, then) = tokio::join!(
            self.0.vector(IMAGES),
            self.0.vector_at(IMAGES, scope.window_start)
        );
        let images = |v: Vec<Sample>| {
            let mut out: BTreeMap<(String, String), BTreeSet<String>> = BTreeMap::new();
            for s in v {
                let get = |k: &str| s.metric.get(k).cloned().unwrap_or_default();
                out.entry((get("namespace"), get("container")))
                    .or_default()
                    .insert(get("image"));
            }
            out
        };
        let (now, then) = (images(now?), images(then?));
        let mut changes = Vec::new();
        for (key, after) in &now {
            let Some(before) = then.get(key) else {
                continue;
            };
            let fresh: Vec<&String> = after.difference(before).collect();
            if let Some(image) = fresh.first() {
                changes.push((key, before, *image));
            }
        }
        let queries: Vec<String> = changes
            .iter()
            .map(|((ns, c), _, image)| {
                format!(
                    "group by (image) (kube_pod_container_info{})",
                    selector([
                        ("namespace", ns.as_str()),
                        ("container", c.as_str()),
                        ("image", image.as_str())
                    ])
                )
            })
            .collect();
        let histories = self.0.histories(&queries, scope).await?;
        let mut facts = Vec::new();
        for (i, ((ns, c), before, image)) in changes.iter().enumerate() {
            let old: Vec<&str> = before.iter().map(String::as_str).collect();
            facts.push(
                Fact::new(
                    FactClass::Change,
                    self.name(),
                    Entity::new("container", format!("{ns}/{c}")).with_labels(
                        [("namespace", ns), ("container", c)]
                            .into_iter()
                            .map(|(k, v)| (k.to_string(), v.clone()))
                            .collect(),
                    ),
                    "image changed",
                    Severity::Info,
                    Source::promql(&queries[i]),
                )
                .since(histories.get(i).and_then(|h| first_seen(h)))
                .detail(format!("image {} → {image}", old.join(", "))),
            );
        }
        Ok(facts)
    }
}

/// A workload's namespace and name.
fn workload(labels: &Labels, kind: &str) -> (String, String) {
    let get = |k: &str| labels.get(k).cloned().unwrap_or_default();
    (get("namespace"), get(kind))
}
