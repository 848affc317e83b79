//! `kube_pod_capacity`: a node at its pod capacity. The kubelet admits at most
//! `status.allocatable.pods` pods (110 by default, else `capacity.pods`); every pod bound
//! to the node that has not finished (phase not `Succeeded` or `Failed`) counts, whatever it
//! runs. A node from [`WARN_SHARE`] of it is a fact ("pods 110 of 110"), since the pod
//! whose arrival brought it there was created, with the pods the scheduler left `Pending`
//! for "Too many pods" and the owners that hold the most of its pods: a Job's pods counted
//! under its CronJob (from the Job's owner reference, else its name), a ReplicaSet's under
//! its Deployment, and since when that owner's first pod there was created (a CronJob
//! whose Jobs never finish piles up a pod per run).
//!
//! Read from the Kubernetes API, as the other `kube_*` analyzers: the API has the nodes'
//! allocatable pods, every pod's node and owner and the scheduler's message, where
//! kube-state-metrics may not run. Pods in every namespace count (the kubelet counts
//! them); owners outside the namespace allow-list are told only as a count.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Node, Pod};
use serde_json::json;

use super::{MAX_FACTS, owner, pod_entity, quantity, time, upstream};
use crate::analyze::{
    AnalyzeError, Analyzer, Entity, Fact, FactClass, Quantity, Scope, Severity, Source,
};
use crate::integrations::kubernetes::KubeClient;

const NAME: &str = "kube_pod_capacity";
/// The share of a node's pod capacity from which it is a fact.
const WARN_SHARE: f64 = 0.9;
/// Owners named on a node's fact, and pending pods named.
const MAX_OWNERS: usize = 3;
const MAX_PENDING: usize = 5;
/// The scheduler's words for a node without room for one more pod.
const TOO_MANY_PODS: &str = "Too many pods";

pub struct KubePodCapacity(pub Arc<KubeClient>);

#[async_trait]
impl Analyzer for KubePodCapacity {
    fn name(&self) -> &'static str {
        NAME
    }

    async fn run(&self, _: &Scope) -> Result<Vec<Fact>, AnalyzeError> {
        let nodes = self.0.nodes().await.map_err(upstream)?;
        let pods = self.0.scheduled_pods().await.map_err(upstream)?;
        // The Jobs tell which CronJob owns them; without them the Job's name does.
        let jobs = match self.0.cronjobs(None).await {
            Ok((_, jobs)) => jobs,
            Err(_) => Vec::new(),
        };
        let client = self.0.clone();
        let allowed = move |ns: &str| client.check_namespace(ns).is_ok();
        Ok(analyze(&nodes, &pods, &jobs, &allowed))
    }
}

/// Who holds a pod: (namespace, kind in lower case, name); the namespace is empty for an
/// owner outside the allow-list.
type OwnerKey = (String, String, String);

/// The facts about `nodes` given the unfinished `pods` and the `jobs` (for their CronJobs);
/// `allowed` says whether a namespace's owners may be named.
pub fn analyze(
    nodes: &[Node],
    pods: &[Pod],
    jobs: &[Job],
    allowed: &dyn Fn(&str) -> bool,
) -> Vec<Fact> {
    let job_owner: HashMap<(&str, &str), &str> = jobs
        .iter()
        .filter_map(|j| {
            let cron = j
                .metadata
                .owner_references
                .iter()
                .flatten()
                .find(|r| r.kind == "CronJob")?;
            Some((
                (
                    j.metadata.namespace.as_deref().unwrap_or_default(),
                    j.metadata.name.as_deref().unwrap_or_default(),
                ),
                cron.name.as_str(),
            ))
        })
        .collect();
    let live = |p: &&Pod| {
        !matches!(
            p.status.as_ref().and_then(|s| s.phase.as_deref()),
            Some("Succeeded" | "Failed")
        )
    };
    let mut by_node: HashMap<&str, Vec<&Pod>> = HashMap::new();
    for p in pods.iter().filter(live) {
        if let Some(n) = p.spec.as_ref().and_then(|s| s.node_name.as_deref()) {
            by_node.entry(n).or_default().push(p);
        }
    }
    let pending: Vec<&Pod> = pods.iter().filter(|p| too_many_pods(p)).collect();
    let mut facts = Vec::new();
    for node in nodes {
        let Some(name) = node.metadata.name.as_deref() else {
            continue;
        };
        let Some(capacity) = pod_capacity(node).filter(|c| *c >= 1.0) else {
            continue;
        };
        let on = by_node.get(name).map(Vec::as_slice).unwrap_or_default();
        let n = on.len() as f64;
        if n < WARN_SHARE * capacity {
            continue;
        }
        facts.push(node_fact(name, capacity, on, &pending, &job_owner, allowed));
    }
    facts.sort_by_key(|f| std::cmp::Reverse(f.severity));
    facts.truncate(MAX_FACTS);
    facts
}

/// The node's pod capacity: allocatable pods, else its capacity.
fn pod_capacity(node: &Node) -> Option<f64> {
    let status = node.status.as_ref()?;
    let of = |m: Option<
        &BTreeMap<String, k8s_openapi::apimachinery::pkg::api::resource::Quantity>,
    >| { m.and_then(|m| m.get("pods")).and_then(quantity) };
    of(status.allocatable.as_ref()).or_else(|| of(status.capacity.as_ref()))
}

/// Whether the scheduler left `pod` Pending because no node had room for one more pod.
fn too_many_pods(pod: &Pod) -> bool {
    let Some(status) = pod.status.as_ref() else {
        return false;
    };
    status.phase.as_deref() == Some("Pending")
        && status.conditions.iter().flatten().any(|c| {
            c.type_ == "PodScheduled"
                && c.status == "False"
                && c.message
                    .as_deref()
                    .is_some_and(|m| m.contains(TOO_MANY_PODS))
        })
}

/// When a pod was created.
fn created(p: &Pod) -> Option<DateTime<Utc>> {
    p.metadata.creation_timestamp.as_ref().and_then(time)
}

/// Who holds `pod`: a Job's CronJob, a ReplicaSet's Deployment, else its owner; itself
/// when it has none.
fn holder(
    pod: &Pod,
    job_owner: &HashMap<(&str, &str), &str>,
    allowed: &dyn Fn(&str) -> bool,
) -> OwnerKey {
    let ns = pod.metadata.namespace.clone().unwrap_or_default();
    if !allowed(&ns) {
        return (String::new(), String::new(), String::new());
    }
    let (kind, name) = match owner(pod) {
        Some((kind, job)) if kind == "job" => match job_owner.get(&(ns.as_str(), job.as_str())) {
            Some(cron) => ("cronjob".to_string(), cron.to_string()),
            None => match cronjob_of(&job) {
                Some(cron) => ("cronjob".to_string(), cron.to_string()),
                None => (kind, job),
            },
        },
        Some(o) => o,
        None => ("pod".into(), pod.metadata.name.clone().unwrap_or_default()),
    };
    (ns, kind, name)
}

/// The CronJob a Job named `job` was created by: its name without the scheduled time in
/// minutes the controller appends (`report-29412345` → `report`).
fn cronjob_of(job: &str) -> Option<&str> {
    let (base, tail) = job.rsplit_once('-')?;
    (tail.len() >= 8 && tail.chars().all(|c| c.is_ascii_digit()) && !base.is_empty())
        .then_some(base)
}

/// The fact of node `name` holding the pods `on` of its `capacity`.
fn node_fact(
    name: &str,
    capacity: f64,
    on: &[&Pod],
    pending: &[&Pod],
    job_owner: &HashMap<(&str, &str), &str>,
    allowed: &dyn Fn(&str) -> bool,
) -> Fact {
    let n = on.len();
    let mut times: Vec<DateTime<Utc>> = on.iter().filter_map(|p| created(p)).collect();
    times.sort_unstable();
    // The pod whose arrival brought the node to the share (finished pods are gone, so
    // this is when the pods still there had reached it).
    let at = ((WARN_SHARE * capacity).ceil() as usize).saturating_sub(1);
    let since = times.get(at.min(times.len().saturating_sub(1))).copied();
    let mut owners: HashMap<OwnerKey, Vec<&Pod>> = HashMap::new();
    for p in on {
        owners
            .entry(holder(p, job_owner, allowed))
            .or_default()
            .push(p);
    }
    let mut ranked: Vec<(OwnerKey, Vec<&Pod>)> = owners.into_iter().collect();
    ranked.sort_by(|a, b| b.1.len().cmp(&a.1.len()).then_with(|| a.0.cmp(&b.0)));
    let mut told = Vec::new();
    let mut related = Vec::new();
    for ((ns, kind, owner), pods) in ranked.iter().take(MAX_OWNERS) {
        if ns.is_empty() {
            told.push(format!("{} in namespaces not allowed here", pods.len()));
            continue;
        }
        let mut s = format!("{} of {kind} {ns}/{owner}", pods.len());
        // When the owner holding the most pods made them: the one that piled up.
        if told.is_empty() {
            let first = pods.iter().filter_map(|p| created(p)).min();
            let last = pods.iter().filter_map(|p| created(p)).max();
            match (first, last) {
                (Some(f), Some(l)) if pods.len() > 1 => {
                    let from = match f.date_naive() == l.date_naive() {
                        true => f.format("%H:%M"),
                        false => f.format("%Y-%m-%d %H:%M"),
                    };
                    s.push_str(&format!(" (created {from} to {} UTC)", l.format("%H:%M")));
                }
                (Some(f), _) => {
                    s.push_str(&format!(" (created {})", f.format("%Y-%m-%d %H:%M UTC")))
                }
                _ => {}
            }
        }
        told.push(s);
        if related.is_empty() {
            let labels = BTreeMap::from([
                ("namespace".to_string(), ns.clone()),
                (kind.clone(), owner.clone()),
                ("workload".to_string(), owner.clone()),
            ]);
            related.push(Entity::new(kind, format!("{ns}/{owner}")).with_labels(labels));
        }
    }
    // Who waits first, then who holds the slots: the detail is cut at its length limit.
    let mut detail = String::new();
    if !pending.is_empty() {
        let names: Vec<String> = pending
            .iter()
            .take(MAX_PENDING)
            .map(|p| pod_entity(p, None).name)
            .collect();
        detail.push_str(&format!(
            "{} pod{} Pending for \"{TOO_MANY_PODS}\": {}; ",
            pending.len(),
            if pending.len() == 1 { "" } else { "s" },
            names.join(", ")
        ));
        related.extend(
            pending
                .iter()
                .take(MAX_PENDING)
                .map(|p| pod_entity(p, None)),
        );
    }
    detail.push_str(&format!(
        "{} of its allocatable pods, most held by {}",
        Quantity::percent(100.0 * n as f64 / capacity),
        told.join(", ")
    ));
    let full = n as f64 >= capacity;
    let severity = match full || !pending.is_empty() {
        true => Severity::Critical,
        false => Severity::Warning,
    };
    let labels = BTreeMap::from([("node".to_string(), name.to_string())]);
    let mut fact = Fact::new(
        FactClass::Kubernetes,
        NAME,
        Entity::new("node", name)
            .on_host(Some(name.to_string()))
            .with_labels(labels),
        "pods",
        severity,
        Source::new("k8s_nodes", json!({})),
    )
    .value(Quantity::count(n as f64))
    .limit(Quantity::count(capacity))
    .since(since)
    .detail(detail);
    for e in related {
        fact = fact.related(e);
    }
    fact
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cronjobs_job_is_named_after_it_and_its_scheduled_minute() {
        assert_eq!(cronjob_of("report-29412345"), Some("report"));
        assert_eq!(
            cronjob_of("db-backup-nightly-29412345"),
            Some("db-backup-nightly")
        );
        assert_eq!(cronjob_of("migrate-42"), None);
        assert_eq!(cronjob_of("migrate"), None);
        assert_eq!(cronjob_of("-29412345"), None);
    }

    #[test]
    fn a_node_without_allocatable_pods_falls_back_to_its_capacity() {
        let node: Node = serde_json::from_value(json!({"metadata": {"name": "n"},
            "status": {"capacity": {"pods": "250"}}}))
        .unwrap();
        assert_eq!(pod_capacity(&node), Some(250.0));
        let node: Node = serde_json::from_value(json!({"metadata": {"name": "n"},
            "status": {"allocatable": {"pods": "110"}, "capacity": {"pods": "250"}}}))
        .unwrap();
        assert_eq!(pod_capacity(&node), Some(110.0));
        let node: Node = serde_json::from_value(json!({"metadata": {"name": "n"}})).unwrap();
        assert_eq!(pod_capacity(&node), None);
    }
}
