//! Pods the scheduler cannot place: `Pending` with `PodScheduled=False`, with the
//! scheduler's message (from the newest `FailedScheduling` event, else the condition) and
//! what the pod asks for (CPU and memory requests summed over its containers), since the
//! first time the scheduler said so; a claim the pod waits for says why it is not bound
//! (its newest warning: a storage class not found, no provisioner).

use super::PODS as NAME;
use super::view::{PodView, first_seen};
use super::{describe_source, pod_entity, pod_resource};
use crate::analyze::{Fact, FactClass, Quantity, Severity, round_sig};

/// The event reason the scheduler gives.
const FAILED_SCHEDULING: &str = "FailedScheduling";

/// The fact about the pod when it cannot be scheduled.
pub fn fact(v: &PodView) -> Option<Fact> {
    let status = v.pod.status.as_ref()?;
    if status.phase.as_deref() != Some("Pending") {
        return None;
    }
    let condition = status
        .conditions
        .iter()
        .flatten()
        .find(|c| c.type_ == "PodScheduled" && c.status == "False");
    let event = v.event(Some(FAILED_SCHEDULING), |_| true);
    if condition.is_none() && event.is_none() {
        return None;
    }
    let message = event
        .and_then(|e| e.message.clone())
        .or_else(|| condition.and_then(|c| c.message.clone()))
        .unwrap_or_default();
    // The newest warning about each claim it waits for (not provisioned: why).
    let mut message = message;
    for (claim, events) in &v.claims {
        if let Some(e) = events.last() {
            message.push_str(&format!(
                "; its claim {claim}: {}: {}",
                e.reason.as_deref().unwrap_or("Warning"),
                e.message.as_deref().unwrap_or_default()
            ));
        }
    }
    let since = v
        .events
        .iter()
        .filter(|e| e.reason.as_deref() == Some(FAILED_SCHEDULING))
        .filter_map(|e| first_seen(e))
        .min()
        .or_else(|| v.condition_since("PodScheduled", "False"))
        .or_else(|| v.created());
    let cpu = pod_resource(v.pod, false, "cpu");
    let memory = pod_resource(v.pod, false, "memory");
    // The memory request is the typed value, read after the words that name it.
    let mut what = String::from("unschedulable, requests");
    if let Some(c) = cpu {
        what.push_str(&format!(" cpu {}", round_sig(c)));
    }
    match (cpu, memory) {
        (_, Some(_)) if cpu.is_some() => what.push_str(", memory"),
        (_, Some(_)) => what.push_str(" memory"),
        (None, None) => what = "unschedulable (no requests)".to_string(),
        _ => {}
    }
    let mut fact = Fact::new(
        FactClass::Kubernetes,
        NAME,
        pod_entity(v.pod, None),
        what,
        Severity::Critical,
        describe_source(v.pod),
    )
    .since(since)
    .detail(message);
    if let Some(m) = memory {
        fact = fact.value(Quantity::bytes(m));
    }
    Some(fact)
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{Event, Pod};

    #[test]
    fn a_pod_waiting_for_its_claim_says_why_the_claim_is_not_bound() {
        let pod: Pod = serde_json::from_value(serde_json::json!({
            "metadata": { "name": "wiki-7f9c-x2", "namespace": "docs" },
            "spec": {
                "containers": [{ "name": "wiki", "resources": { "requests": { "cpu": "250m" } } }],
                "volumes": [
                    { "name": "data", "persistentVolumeClaim": { "claimName": "wiki-data" } },
                    { "name": "tmp", "emptyDir": {} }
                ]
            },
            "status": {
                "phase": "Pending",
                "conditions": [{ "type": "PodScheduled", "status": "False",
                    "message": "0/3 nodes are available: pod has unbound immediate PersistentVolumeClaims." }]
            }
        }))
        .unwrap();
        let claim: Event = serde_json::from_value(serde_json::json!({
            "metadata": { "name": "wiki-data.1", "namespace": "docs" },
            "involvedObject": { "kind": "PersistentVolumeClaim", "name": "wiki-data", "namespace": "docs" },
            "reason": "ProvisioningFailed",
            "message": "storageclass.storage.k8s.io \"fast-ssd\" not found",
            "type": "Warning"
        }))
        .unwrap();
        let scope = crate::analyze::Scope::new(chrono::Utc::now(), None);
        assert_eq!(PodView::claim_names(&pod), ["wiki-data"]);
        let v = PodView {
            pod: &pod,
            events: Vec::new(),
            claims: vec![("wiki-data", vec![&claim])],
            scope: &scope,
        };
        let f = fact(&v).expect("unschedulable");
        let detail = f.detail.unwrap();
        assert!(detail.starts_with("0/3 nodes are available"), "{detail}");
        assert!(
            detail.ends_with("; its claim wiki-data: ProvisioningFailed: storageclass.storage.k8s.io \"fast-ssd\" not found"),
            "{detail}"
        );
    }
}
