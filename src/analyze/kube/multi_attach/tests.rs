//! The attach/detach controller's Multi-Attach messages as clusters print them, and the
//! holders told from the pod list.

use chrono::{TimeDelta, Utc};
use k8s_openapi::api::core::v1::{Event, Pod};
use serde_json::json;

use super::*;
use crate::analyze::Scope;

fn holders(m: &str) -> Option<(String, Vec<String>, u64)> {
    parse(m).map(|e| (e.volume, e.holders, e.elsewhere))
}

#[test]
fn the_controllers_messages_give_the_volume_and_the_pods_that_hold_it() {
    // As `kubectl describe pod` printed them on AKS and GKE.
    assert_eq!(
        holders(
            "Multi-Attach error for volume \"pvc-ec14e20f-64f4-42ea-b29a-57f1bc3fa788\" Volume is already used by pod(s) webapp-fs-tester-demo-7f94d9db-2bs4j"
        ),
        Some((
            "pvc-ec14e20f-64f4-42ea-b29a-57f1bc3fa788".into(),
            vec!["webapp-fs-tester-demo-7f94d9db-2bs4j".into()],
            0
        ))
    );
    assert_eq!(
        holders(
            "Multi-Attach error for volume \"pvc-031456d9-59c2-4997-bbf5-1161fad275ba\" Volume is already used by pod(s) server-7c56f84b57-6zq5s, server-7c56f84b57-6kvzc"
        )
        .unwrap()
        .1,
        ["server-7c56f84b57-6zq5s", "server-7c56f84b57-6kvzc"]
    );
    assert_eq!(
        holders(
            "Multi-Attach error for volume \"pvc-9\" Volume is already used by pod(s) db-0 and 2 pod(s) in different namespaces"
        ),
        Some(("pvc-9".into(), vec!["db-0".into()], 2))
    );
    assert_eq!(
        holders(
            "Multi-Attach error for volume \"pvc-9\" Volume is already used by 3 pod(s) in different namespaces"
        ),
        Some(("pvc-9".into(), vec![], 3))
    );
    assert_eq!(
        holders(
            "Multi-Attach error for volume \"pvc-9\" Volume is already exclusively attached to one node and can't be attached to another"
        ),
        Some(("pvc-9".into(), vec![], 0))
    );
}

#[test]
fn other_messages_and_broken_ones_are_not_read_as_a_multi_attach_error() {
    for m in [
        "Unable to attach or mount volumes: unmounted volumes=[data], unattached volumes=[data kube-api-access-f9q7s]: timed out waiting for the condition",
        "AttachVolume.Attach failed for volume \"pvc-1\" : rpc error: code = Internal",
        "Multi-Attach error for volume \"pvc-1 Volume is already used by pod(s) a",
        "Multi-Attach error for volume pvc-1 Volume is already used by pod(s) a",
        "Multi-Attach error for volume \"pvc-1\" Volume is already used by pod(s) ",
        "Multi-Attach error for volume \"pvc-1\" Volume is already used by many pod(s) in different namespaces",
        "Multi-Attach error for volume \"",
        "",
    ] {
        assert_eq!(parse(m), None, "{m}");
    }
    // Any UTF-8 in the quoted name, escapes as Go writes them.
    let e = parse("Multi-Attach error for volume \"données-\\\"é\\\"-卷\" Volume is already used by pod(s) ünï-0")
        .unwrap();
    assert_eq!(e.volume, "données-\"é\"-卷");
    assert_eq!(e.holders, ["ünï-0"]);
}

fn pod(name: &str, rs: &str, node: &str, phase: &str, created_mins: i64) -> Pod {
    let hash = rs.rsplit_once('-').map_or("", |(_, h)| h);
    let created = (Utc::now() - TimeDelta::minutes(created_mins))
        .to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": "media", "creationTimestamp": created,
            "labels": {"app": "reader", "pod-template-hash": hash},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": rs,
                "uid": "u", "controller": true}]},
        "spec": {"nodeName": node, "containers": [{"name": "reader"}],
            "volumes": [{"name": "config", "persistentVolumeClaim": {"claimName": "reader-config"}}]},
        "status": {"phase": phase, "containerStatuses": [{"name": "reader", "ready": phase == "Running",
            "restartCount": 0, "image": "r", "imageID": "",
            "state": if phase == "Running" { json!({"running": {}}) }
                     else { json!({"waiting": {"reason": "ContainerCreating"}}) }}]}
    }))
    .unwrap()
}

fn event(reason: &str, message: &str) -> Event {
    serde_json::from_value(json!({
        "metadata": {"name": "e", "namespace": "media"},
        "involvedObject": {"kind": "Pod", "namespace": "media", "name": "reader-7c9d5b6f48-x2x9q"},
        "reason": reason, "message": message, "type": "Warning"
    }))
    .unwrap()
}

#[test]
fn the_waiting_pods_fact_names_the_holder_of_the_older_replicaset_and_relates_it() {
    let old = pod(
        "reader-5f6d8c7b9-q7t2m",
        "reader-5f6d8c7b9",
        "w1",
        "Running",
        900,
    );
    let new = pod(
        "reader-7c9d5b6f48-x2x9q",
        "reader-7c9d5b6f48",
        "w2",
        "Pending",
        6,
    );
    let attach = event(
        "FailedAttachVolume",
        "Multi-Attach error for volume \"pvc-3b0e\" Volume is already used by pod(s) reader-5f6d8c7b9-q7t2m",
    );
    let mount = event(
        "FailedMount",
        "Unable to attach or mount volumes: unmounted volumes=[config], unattached volumes=[config]: timed out waiting for the condition",
    );
    let scope = Scope::new(Utc::now(), None);
    let pods = [old.clone(), new.clone()];
    let v = PodView {
        pod: &new,
        events: vec![&attach, &mount],
        claims: Vec::new(),
        scope: &scope,
    };
    let base = Fact::new(
        FactClass::Kubernetes,
        PODS,
        pod_entity(&new, Some("reader")),
        "container reader not ready, waiting: ContainerCreating",
        Severity::Warning,
        describe_source(&new),
    )
    .detail("FailedMount: Unable to attach or mount volumes: timed out");
    let mut facts = vec![base];
    tell(&v, &pods, &mut facts);
    let f = &facts[0];
    assert_eq!(
        f.detail.as_deref(),
        Some(
            "Multi-Attach error for volume \"pvc-3b0e\": held by pod reader-5f6d8c7b9-q7t2m of the older ReplicaSet reader-5f6d8c7b9 (Deployment reader) on node w1, still Running; FailedMount: Unable to attach or mount volumes: timed out"
        )
    );
    assert_eq!(f.related.len(), 1);
    assert_eq!(f.related[0].name, "media/reader-5f6d8c7b9-q7t2m");
    assert_eq!(f.related[0].host.as_deref(), Some("w1"));
    assert_eq!(f.entity.labels["persistentvolume"], "pvc-3b0e");

    // No other class reported it: the error is its fact. A holder not listed is said so.
    let gone = event(
        "FailedAttachVolume",
        "Multi-Attach error for volume \"pvc-3b0e\" Volume is already used by pod(s) reader-0ld",
    );
    let v = PodView {
        events: vec![&gone],
        ..v
    };
    let mut facts = Vec::new();
    tell(&v, &pods, &mut facts);
    assert_eq!(facts.len(), 1);
    assert_eq!(facts[0].what, "cannot attach its volume");
    assert!(
        facts[0]
            .detail
            .as_deref()
            .unwrap()
            .ends_with("held by pod reader-0ld (no longer listed)"),
        "{:?}",
        facts[0].detail
    );

    // A running pod's old error is history.
    let v = PodView { pod: &old, ..v };
    let mut facts = Vec::new();
    tell(&v, &pods, &mut facts);
    assert!(facts.is_empty());
}

#[test]
fn a_holder_of_another_workload_or_being_deleted_is_told_as_such() {
    let new = pod(
        "reader-7c9d5b6f48-x2x9q",
        "reader-7c9d5b6f48",
        "w2",
        "Pending",
        6,
    );
    let mut other = pod(
        "backup-6d5c4b3a2-m8n7p",
        "backup-6d5c4b3a2",
        "w3",
        "Running",
        60,
    );
    assert_eq!(
        holder(&new, &other),
        " of ReplicaSet backup-6d5c4b3a2 (Deployment backup) on node w3, Running"
    );
    other.metadata.deletion_timestamp =
        Some(serde_json::from_value(json!("2026-11-28T14:05:00Z")).unwrap());
    assert_eq!(
        holder(&new, &other),
        " of ReplicaSet backup-6d5c4b3a2 (Deployment backup) on node w3, being deleted (deadline 14:05 UTC)"
    );
}
