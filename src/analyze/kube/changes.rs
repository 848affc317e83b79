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
