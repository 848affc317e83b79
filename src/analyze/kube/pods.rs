//! `kube_pods`: pods not ready and why. Lists the pods (every allowed namespace) and the
//! Warning events once, gives each pod the events about it, and asks each failure class in
//! turn about each container: image pulls (`image_pull.rs`), crash loops, OOM kills and
//! recent crashes (`crash.rs`), containers not ready for another reason (`not_ready.rs`);
//! then the pod as a whole: unschedulable (`scheduling.rs`), failed or stranded on a node
//! that stopped answering (`not_ready.rs`). A container gets one fact, from the first
//! class that claims it; a failed run's log lines are added to it (`pod_logs.rs`), and a
//! pod held by a volume pinned to an unavailable node gets a fact saying so
//! (`volume_node.rs`), and one waiting for a volume another pod holds names that pod
//! (`multi_attach.rs`).

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use k8s_openapi::api::core::v1::{Event, Pod};

use super::view::PodView;
use super::{
    MAX_FACTS, crash, image_pull, multi_attach, not_ready, pod_logs, scheduling, time, upstream,
    volume_node,
};
use crate::analyze::{AnalyzeError, Analyzer, Fact, Scope, keep_most_severe};
use crate::integrations::kubernetes::KubeClient;

/// How long a pod may take to terminate before it counts as stuck.
const DELETING_GRACE_SECS: i64 = 300;

pub struct KubePods(pub Arc<KubeClient>);
#[async_trait]
impl Analyzer for KubePods {
    fn name(&self) -> &'static str {
        super::PODS
    }

    async fn run(&self, scope: &Scope) -> Result<Vec<Fact>, AnalyzeError> {
        let pods = self.0.pods(None, None).await.map_err(upstream)?;
        let events = self.0.events(None, true).await.map_err(upstream)?;
        let mut facts = analyze(&pods, &events, scope);
        pod_logs::attach(&self.0, &pods, &mut facts, scope).await;
        volume_node::attach(&self.0, &pods, &mut facts).await;
        Ok(facts)
    }
}

/// The facts about `pods` given the Warning `events` (oldest first).
pub fn analyze(pods: &[Pod], events: &[Event], scope: &Scope) -> Vec<Fact> {
    // Events about pods, and about the claims pods wait for (a claim not provisioned
    // keeps its pod from being scheduled: its reason is on the claim).
    let mut by_pod: HashMap<(&str, &str), Vec<&Event>> = HashMap::new();
    let mut by_claim: HashMap<(&str, &str), Vec<&Event>> = HashMap::new();
    for e in events {
        let o = &e.involved_object;
        let index = match o.kind.as_deref() {
            Some("Pod") => &mut by_pod,
            Some("PersistentVolumeClaim") => &mut by_claim,
            _ => continue,
        };
        let ns = o
            .namespace
            .as_deref()
            .or(e.metadata.namespace.as_deref())
            .unwrap_or_default();
        if let Some(name) = o.name.as_deref() {
            index.entry((ns, name)).or_default().push(e);
        }
    }
    let mut facts = Vec::new();
    for pod in pods {
        let key = (
            pod.metadata.namespace.as_deref().unwrap_or_default(),
            pod.metadata.name.as_deref().unwrap_or_default(),
        );
        let claims = PodView::claim_names(pod)
            .into_iter()
            .map(|c| (c, by_claim.get(&(key.0, c)).cloned().unwrap_or_default()))
            .collect();
        let view = PodView {
            pod,
            events: by_pod.remove(&key).unwrap_or_default(),
            claims,
            scope,
        };
        let mut found = pod_facts(&view);
        if !gone(&view) {
            multi_attach::tell(&view, pods, &mut found);
        }
        facts.extend(found);
    }
    keep_most_severe(&mut facts, MAX_FACTS);
    facts
}

/// Whether the pod is being deleted, within its grace: not ready on purpose.
fn gone(v: &PodView) -> bool {
    let deleting = v.pod.metadata.deletion_timestamp.as_ref().and_then(time);
    deleting.is_some_and(|t| (v.scope.now - t).num_seconds() < DELETING_GRACE_SECS)
}

fn pod_facts(v: &PodView) -> Vec<Fact> {
    let Some(status) = &v.pod.status else {
        return Vec::new();
    };
    // A pod being deleted is not ready on purpose, for its grace period.
    let deleting = v.pod.metadata.deletion_timestamp.as_ref().and_then(time);
    if gone(v) {
        return Vec::new();
    }
    match status.phase.as_deref() {
        Some("Succeeded") => return Vec::new(),
        Some("Failed") => return not_ready::failed_pod(v).into_iter().collect(),
        _ => {}
    }
    let mut facts = Vec::new();
    let containers = status
        .init_container_statuses
        .iter()
        .flatten()
        .chain(status.container_statuses.iter().flatten());
    for cs in containers {
        let fact = image_pull::fact(v, cs)
            .or_else(|| crash::fact(v, cs))
            .or_else(|| not_ready::container(v, cs));
        facts.extend(fact);
    }
    if facts.is_empty() {
        facts.extend(scheduling::fact(v));
    }
    if facts.is_empty() {
        facts.extend(not_ready::stranded(v, deleting));
    }
    facts
}
