//! Analyzers over the Kubernetes API (the `KubeClient`, so the namespace allow-list holds):
//! pods not ready with their reason and the events behind it (`pods.rs`, one file per
//! failure class under it; `volume_node.rs`: the volume whose node holds a pod;
//! `multi_attach.rs`: the pod that holds the volume another waits for), node
//! conditions (`nodes.rs`), and rollouts in progress, stuck,
//! or done in the window (`rollouts.rs`), Services whose selector matches no ready pod
//! (`services.rs`), CronJobs held up by a Job running past their interval
//! (`cronjobs.rs`), the Warning events about other objects
//! (`events.rs`), and GitOps controllers that cannot apply what is in git (`gitops.rs`,
//! registered by the sweep with Prometheus as its fallback). Each lists what it needs
//! once per sweep. What
//! they share lives here: times from the API, resource quantities, and the entity of a pod
//! (its namespace, name, node and owning workload).

mod changes;
mod crash;
mod cronjobs;
mod events;
mod gitops;
mod image_pull;
mod multi_attach;
mod nodes;
mod not_ready;
mod pod_capacity;
mod pod_logs;
mod pods;
mod rollouts;
mod scheduling;
mod services;
mod view;
mod volume_node;

use std::collections::BTreeMap;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity as KubeQuantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use serde_json::json;

pub use gitops::GitopsSync;

use super::{AnalyzeError, Analyzer, Entity, Source};
use crate::integrations::kubernetes::{KubeClient, KubeError};

/// The analyzers' names.
const PODS: &str = "kube_pods";
const ROLLOUTS: &str = "kube_rollouts";

/// Most facts one Kubernetes analyzer reports (most severe first, then newest).
const MAX_FACTS: usize = 40;

/// The Kubernetes analyzers, in the order their facts are listed.
pub fn analyzers(client: Arc<KubeClient>) -> Vec<Arc<dyn Analyzer>> {
    vec![
        Arc::new(pods::KubePods(client.clone())),
        Arc::new(nodes::KubeNodes(client.clone())),
        Arc::new(pod_capacity::KubePodCapacity(client.clone())),
        Arc::new(rollouts::KubeRollouts(client.clone())),
        Arc::new(services::KubeServices(client.clone())),
        Arc::new(cronjobs::KubeCronJobs(client.clone())),
        Arc::new(events::KubeEvents(client)),
    ]
}

fn upstream(e: KubeError) -> AnalyzeError {
    AnalyzeError::Other(e.to_string())
}

/// An API time as a chrono time.
pub fn time(t: &Time) -> Option<DateTime<Utc>> {
    timestamp(&t.0)
}

fn timestamp(t: &k8s_openapi::jiff::Timestamp) -> Option<DateTime<Utc>> {
    DateTime::from_timestamp(
        t.as_second(),
        u32::try_from(t.subsec_nanosecond()).unwrap_or(0),
    )
}

/// A resource quantity (`250m`, `1.5`, `128Mi`, `1G`, `1e9`) as a plain number (cores,
/// bytes); `None` when it is not a quantity.
pub fn quantity(q: &KubeQuantity) -> Option<f64> {
    let s = q.0.trim();
    const SUFFIXES: [(&str, f64); 16] = [
        ("Ki", 1024.0),
        ("Mi", 1_048_576.0),
        ("Gi", 1_073_741_824.0),
        ("Ti", 1_099_511_627_776.0),
        ("Pi", 1_125_899_906_842_624.0),
        ("Ei", 1_152_921_504_606_846_976.0),
        ("n", 1e-9),
        ("u", 1e-6),
        ("m", 1e-3),
        ("k", 1e3),
        ("M", 1e6),
        ("G", 1e9),
        ("T", 1e12),
        ("P", 1e15),
        ("E", 1e18),
        ("", 1.0),
    ];
    let (number, mult) = SUFFIXES
        .iter()
        .find_map(|(suffix, mult)| s.strip_suffix(suffix).map(|n| (n, *mult)))?;
    let v = number.parse::<f64>().ok()? * mult;
    v.is_finite().then_some(v)
}

/// The requests (`requests`) or limits of one resource of a pod's containers, summed;
/// `None` when no container sets it.
pub fn pod_resource(pod: &Pod, limits: bool, resource: &str) -> Option<f64> {
    let containers = pod.spec.as_ref().map(|s| s.containers.as_slice())?;
    let values: Vec<f64> = containers
        .iter()
        .filter_map(|c| {
            let r = c.resources.as_ref()?;
            let m = if limits {
                r.limits.as_ref()
            } else {
                r.requests.as_ref()
            }?;
            quantity(m.get(resource)?)
        })
        .collect();
    (!values.is_empty()).then(|| values.iter().sum())
}

/// The memory limit of container `name` in bytes.
pub fn memory_limit(pod: &Pod, name: &str) -> Option<f64> {
    let c = pod
        .spec
        .as_ref()?
        .containers
        .iter()
        .find(|c| c.name == name)?;
    quantity(c.resources.as_ref()?.limits.as_ref()?.get("memory")?)
}

/// The image container `name` runs, as its spec says.
pub fn image_of(pod: &Pod, name: &str) -> Option<String> {
    let spec = pod.spec.as_ref()?;
    spec.containers
        .iter()
        .chain(spec.init_containers.iter().flatten())
        .find(|c| c.name == name)?
        .image
        .clone()
}

/// Characters of the hash Kubernetes appends to generated names (`SafeEncodeString`).
const HASH_ALPHABET: &str = "bcdfghjklmnpqrstvwxz2456789";

/// The workload that owns `pod`: (kind in lower case, name). A ReplicaSet stands for its
/// Deployment (its name without the `pod-template-hash`).
pub fn owner(pod: &Pod) -> Option<(String, String)> {
    let refs = pod.metadata.owner_references.as_ref()?;
    let r = refs
        .iter()
        .find(|r| r.controller == Some(true))
        .or_else(|| refs.first())?;
    if r.kind == "ReplicaSet" {
        let hash = pod
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get("pod-template-hash"));
        let stripped = match hash {
            Some(h) => r.name.strip_suffix(&format!("-{h}")).map(str::to_string),
            None => deployment_of(&r.name).map(str::to_string),
        };
        if let Some(d) = stripped.filter(|d| !d.is_empty()) {
            return Some(("deployment".into(), d));
        }
    }
    Some((r.kind.to_lowercase(), r.name.clone()))
}

/// The Deployment a ReplicaSet named `replicaset` belongs to: its name without a
/// suffix that looks like a `pod-template-hash`.
pub fn deployment_of(replicaset: &str) -> Option<&str> {
    let (base, tail) = replicaset.rsplit_once('-')?;
    let hashed = (5..=10).contains(&tail.len()) && tail.chars().all(|c| HASH_ALPHABET.contains(c));
    (hashed && !base.is_empty()).then_some(base)
}

/// The entity of `pod` (`namespace/name`, on its node), with `container` when the fact is
/// about one.
pub fn pod_entity(pod: &Pod, container: Option<&str>) -> Entity {
    let ns = pod.metadata.namespace.clone().unwrap_or_default();
    let name = pod.metadata.name.clone().unwrap_or_default();
    let node = pod.spec.as_ref().and_then(|s| s.node_name.clone());
    let mut labels = BTreeMap::from([
        ("namespace".to_string(), ns.clone()),
        ("pod".to_string(), name.clone()),
    ]);
    if let Some(c) = container {
        labels.insert("container".into(), c.to_string());
    }
    if let Some(n) = &node {
        labels.insert("node".into(), n.clone());
    }
    if let Some((kind, workload)) = owner(pod) {
        labels.insert("workload".into(), workload.clone());
        labels.entry(kind).or_insert(workload);
    }
    Entity::new("pod", format!("{ns}/{name}"))
        .on_host(node)
        .with_labels(labels)
}

/// `k8s_describe_pod` of `pod`: its state, containers and events.
pub fn describe_source(pod: &Pod) -> Source {
    Source::new(
        "k8s_describe_pod",
        json!({
            "namespace": pod.metadata.namespace.as_deref().unwrap_or_default(),
            "name": pod.metadata.name.as_deref().unwrap_or_default(),
        }),
    )
}

/// `(namespace, name)` of an object.
pub fn key(m: &ObjectMeta) -> (String, String) {
    (
        m.namespace.clone().unwrap_or_default(),
        m.name.clone().unwrap_or_default(),
    )
}

/// The entity of a workload (`namespace/name`, labelled with its kind's name) and the
/// tool call that lists its namespace's rollouts.
pub fn workload(kind: &str, m: &ObjectMeta) -> (Entity, Source) {
    let (ns, name) = key(m);
    let labels = BTreeMap::from([
        ("namespace".to_string(), ns.clone()),
        (kind.to_string(), name.clone()),
        ("workload".to_string(), name.clone()),
    ]);
    let source = Source::new("k8s_workloads", json!({ "namespace": ns }));
    (
        Entity::new(kind, format!("{ns}/{name}")).with_labels(labels),
        source,
    )
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn q(s: &str) -> Option<f64> {
        quantity(&KubeQuantity(s.into()))
    }

    #[test]
    fn quantities_read_every_suffix_and_refuse_what_is_not_one() {
        assert_eq!(q("250m"), Some(0.25));
        assert_eq!(q("2"), Some(2.0));
        assert_eq!(q("128Mi"), Some(134_217_728.0));
        assert_eq!(q("1G"), Some(1e9));
        assert_eq!(q("1e3"), Some(1000.0));
        assert_eq!(q("1.5Gi"), Some(1.5 * 1_073_741_824.0));
        assert_eq!(q("lots"), None);
        assert_eq!(q(""), None);
    }

    #[test]
    fn a_pod_of_a_replicaset_belongs_to_its_deployment() {
        let pod: Pod = serde_json::from_value(json!({
            "metadata": {"name": "api-6b7f9c5d48-k2x9q", "namespace": "shop",
                "labels": {"pod-template-hash": "6b7f9c5d48"},
                "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                    "name": "api-6b7f9c5d48", "uid": "u", "controller": true}]},
            "spec": {"nodeName": "worker-2", "containers": [
                {"name": "api", "image": "r/api:2", "resources": {
                    "requests": {"cpu": "500m", "memory": "1Gi"}, "limits": {"memory": "2Gi"}}},
                {"name": "proxy", "image": "r/proxy:1", "resources": {
                    "requests": {"cpu": "100m", "memory": "64Mi"}}}]}
        }))
        .unwrap();
        assert_eq!(owner(&pod), Some(("deployment".into(), "api".into())));
        let e = pod_entity(&pod, Some("api"));
        assert_eq!(e.name, "shop/api-6b7f9c5d48-k2x9q");
        assert_eq!(e.host.as_deref(), Some("worker-2"));
        assert_eq!(e.labels["deployment"], "api");
        assert_eq!(e.labels["container"], "api");
        assert_eq!(pod_resource(&pod, false, "cpu"), Some(0.6));
        assert_eq!(
            pod_resource(&pod, false, "memory"),
            Some(1_073_741_824.0 + 67_108_864.0)
        );
        assert_eq!(memory_limit(&pod, "api"), Some(2.0 * 1_073_741_824.0));
        assert_eq!(memory_limit(&pod, "proxy"), None);
    }

    #[test]
    fn a_replicaset_name_without_the_hash_label_loses_only_a_hash_looking_suffix() {
        let pod = |rs: &str| -> Pod {
            serde_json::from_value(json!({"metadata": {"name": "x", "ownerReferences": [
                {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": rs, "uid": "u"}]}}))
            .unwrap()
        };
        assert_eq!(
            owner(&pod("web-7d4b9c")),
            Some(("deployment".into(), "web".into()))
        );
        assert_eq!(
            owner(&pod("web-frontend")),
            Some(("replicaset".into(), "web-frontend".into()))
        );
    }
}
