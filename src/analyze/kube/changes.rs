//! What changed: a Deployment's rollout in the window, read from its ReplicaSets (each
//! revision is one, with the `deployment.kubernetes.io/revision` annotation, its creation
//! time and its pod template). The newest revision created in the window is a change, with
//! the images it changed from the revision before it.

use std::collections::{BTreeMap, HashMap};

use chrono::{DateTime, Utc};
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};

use super::ROLLOUTS as NAME;
use super::{key, time, workload};
use crate::analyze::{Fact, FactClass, Quantity, Scope, Severity, Unit};

/// The annotation a Deployment's controller puts on each of its ReplicaSets.
const REVISION: &str = "deployment.kubernetes.io/revision";

/// One revision of a Deployment.
pub struct Revision {
    pub number: u64,
    pub name: String,
    pub created: Option<DateTime<Utc>>,
    /// Container name → image.
    pub images: BTreeMap<String, String>,
}

/// The revisions of each Deployment `(namespace, name)`, oldest first.
pub fn revisions(replicasets: &[ReplicaSet]) -> HashMap<(String, String), Vec<Revision>> {
    let mut out: HashMap<(String, String), Vec<Revision>> = HashMap::new();
    for rs in replicasets {
        let m = &rs.metadata;
        let Some(owner) = m
            .owner_references
            .iter()
            .flatten()
            .find(|o| o.kind == "Deployment")
        else {
            continue;
        };
        let Some(number) = m
            .annotations
            .as_ref()
            .and_then(|a| a.get(REVISION))
            .and_then(|r| r.parse::<u64>().ok())
        else {
            continue;
        };
        let images = rs
            .spec
            .template
            .as_ref()
            .and_then(|t| t.spec.as_ref())
            .map(|s| {
                s.containers
                    .iter()
                    .map(|c| (c.name.clone(), c.image.clone().unwrap_or_default()))
                    .collect()
            })
            .unwrap_or_default();
        let ns = m.namespace.clone().unwrap_or_default();
        out.entry((ns, owner.name.clone()))
            .or_default()
            .push(Revision {
                number,
                name: m.name.clone().unwrap_or_default(),
                created: m.creation_timestamp.as_ref().and_then(time),
                images,
            });
    }
    for revs in out.values_mut() {
        revs.sort_by_key(|r| r.number);
    }
    out
}

/// The change fact of `d` when its newest revision was created in the window.
pub fn fact(
    d: &Deployment,
    revisions: &HashMap<(String, String), Vec<Revision>>,
    scope: &Scope,
) -> Option<Fact> {
    let revs = revisions.get(&key(&d.metadata))?;
    let newest = revs.last()?;
    let created = newest.created.filter(|c| *c >= scope.window_start)?;
    let previous = revs.len().checked_sub(2).and_then(|i| revs.get(i));
    let changed: Vec<String> = newest
        .images
        .iter()
        .filter_map(|(c, image)| {
            let before = previous?.images.get(c)?;
            (before != image).then(|| format!("{c}: {before} → {image}"))
        })
        .collect();
    let detail = match (previous, changed.is_empty()) {
        (Some(_), false) => format!("image {}", changed.join("; ")),
        (Some(p), true) => format!(
            "pod template changed from revision {} (images unchanged: {})",
            p.number,
            images(newest)
        ),
        (None, _) => format!("new ReplicaSet {} with {}", newest.name, images(newest)),
    };
    let (mut entity, source) = workload("deployment", &d.metadata);
    entity
        .labels
        .insert("replicaset".into(), newest.name.clone());
    Some(
        Fact::new(
            FactClass::Change,
            NAME,
            entity,
            "rolled out revision",
            Severity::Info,
            source,
        )
        .value(Quantity::new(newest.number as f64, Unit::Plain))
        .since(Some(created))
        .detail(detail),
    )
}

fn images(r: &Revision) -> String {
    r.images.values().cloned().collect::<Vec<_>>().join(", ")
}

/// Most rollouts whose new pods' logs are read per sweep, lines read from each log's end,
/// and the time for all the reads.
const MAX_LOG_READS: usize = 2;
const LOG_TAIL: i64 = 60;
const LOG_TIME_LIMIT: std::time::Duration = std::time::Duration::from_millis(2000);

/// A rollout whose new pods log errors is a suspect change, Ready or not (a health check
/// that does not touch the database passes while every real request fails): adds to the
/// newest rollouts' facts the bad-looking lines of one pod of their new ReplicaSet, and
/// makes them warnings. A log that cannot be read leaves the fact as it was.
pub async fn new_pods_log(
    client: &crate::integrations::kubernetes::KubeClient,
    facts: &mut [Fact],
) {
    let mut rollouts: Vec<usize> = (0..facts.len())
        .filter(|i| facts[*i].what == "rolled out revision")
        .collect();
    rollouts.sort_by_key(|i| std::cmp::Reverse(facts[*i].since));
    rollouts.truncate(MAX_LOG_READS);
    let reads = rollouts.iter().map(|i| {
        let labels = facts[*i].entity.labels.clone();
        async move {
            let ns = labels.get("namespace")?;
            let set = labels.get("replicaset")?;
            let pods = client.pods(Some(ns), None).await.ok()?;
            let pod = pods.into_iter().find(|p| {
                p.metadata
                    .owner_references
                    .iter()
                    .flatten()
                    .any(|o| o.kind == "ReplicaSet" && &o.name == set)
            })?;
            let name = pod.metadata.name.clone()?;
            let log = client.logs(ns, &name, None, false, LOG_TAIL).await.ok()?;
            let lines = super::pod_logs::bad_lines(&log);
            (!lines.is_empty()).then(|| format!("its new pod {name} logs: {}", lines.join(" | ")))
        }
    });
    let Ok(said) = tokio::time::timeout(LOG_TIME_LIMIT, futures::future::join_all(reads)).await
    else {
        return;
    };
    for (i, text) in rollouts.into_iter().zip(said) {
        let Some(text) = text else { continue };
        let f = &mut facts[i];
        let detail = f.detail.take().map_or(String::new(), |d| format!("{d}; "));
        f.detail = Some(format!("{detail}{text}"));
        f.severity = Severity::Warning;
    }
}
