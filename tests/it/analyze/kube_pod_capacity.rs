//! `kube_pod_capacity` over the fake cluster (`kube_cluster`) with a fourth node, `batch-1`
//! (110 allocatable pods), holding 110 unfinished pods: 69 of a CronJob's Jobs that never
//! finish (one pod a run for the last 69 runs, some Jobs listed with their owner reference,
//! the rest known by name), 30 of a Deployment and 11 of a DaemonSet-like set of Jobs-less
//! pods; and two pods the scheduler left Pending for "Too many pods". Decoys: finished pods
//! on the node (they do not count), the cluster's other nodes far below their capacity.

use chrono::{DateTime, TimeDelta, Utc};
use serde_json::{Value, json};
use sre_agent::analyze::{FactClass, Severity, Unit};

use super::kube_cluster::{Cluster, ago, container, objects, pod};
use super::world::{lines, of};

const NODE: &str = "batch-1";

fn running(now: DateTime<Utc>, mins: i64) -> Value {
    json!({"phase": "Running", "startTime": ago(now, mins),
        "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": ago(now, mins)}]})
}

fn spec() -> Value {
    json!({"containers": [container("c", "busybox:1.36", json!({"cpu": "10m"}), json!({}))]})
}

fn with_full_node(now: DateTime<Utc>) -> Vec<Value> {
    let mut o = objects(now);
    o.push(json!({"kind": "Node", "metadata": {"name": NODE},
        "status": {"allocatable": {"cpu": "16", "memory": "64Gi", "pods": "110"},
            "capacity": {"cpu": "16", "memory": "64Gi", "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                "lastTransitionTime": "2026-01-01T00:00:00Z"}]}}));
    o.push(
        json!({"kind": "CronJob", "metadata": {"name": "report-gen", "namespace": "batch"},
        "spec": {"schedule": "*/5 * * * *", "concurrencyPolicy": "Allow",
            "jobTemplate": {"spec": {"template": {"spec": spec()}}}},
        "status": {}}),
    );
    // One run every 5 minutes for the last 69 runs, none finishing.
    for i in 0..69 {
        let mins = 5 * (69 - i);
        let job = format!("report-gen-{}", 29_412_000 + i);
        if i % 2 == 0 {
            o.push(json!({"kind": "Job", "metadata": {"name": job, "namespace": "batch",
                "ownerReferences": [{"apiVersion": "batch/v1", "kind": "CronJob", "name": "report-gen",
                    "uid": "uid-report-gen", "controller": true}]},
                "spec": {"template": {"spec": spec()}},
                "status": {"active": 1, "startTime": ago(now, mins)}}));
        }
        o.push(pod(
            "batch",
            &format!("{job}-x{i:03}"),
            ("Job", &job),
            Some(NODE),
            spec(),
            running(now, mins),
        ));
    }
    for i in 0..30 {
        o.push(pod(
            "shop",
            &format!("cart-5d8c7b9f6-c{i:03}"),
            ("ReplicaSet", "cart-5d8c7b9f6"),
            Some(NODE),
            spec(),
            running(now, 2000),
        ));
    }
    for i in 0..11 {
        o.push(pod(
            "monitoring",
            &format!("agent-{i}"),
            ("StatefulSet", "agent"),
            Some(NODE),
            spec(),
            running(now, 3000),
        ));
    }
    // Finished pods still listed on the node do not count.
    for i in 0..5 {
        let mut p = pod(
            "batch",
            &format!("old-{i}"),
            ("Job", "old"),
            Some(NODE),
            spec(),
            running(now, 4000),
        );
        p["status"]["phase"] = json!("Succeeded");
        o.push(p);
    }
    for name in ["ingest-7c9d5b8f4-aa111", "ingest-7c9d5b8f4-bb222"] {
        let status = json!({"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False",
            "reason": "Unschedulable", "lastTransitionTime": ago(now, 6),
            "message": "0/4 nodes are available: 1 Too many pods, 3 Insufficient cpu. preemption: 0/4 nodes are available: 4 No preemption victims found for incoming pod."}],
            "startTime": ago(now, 6)});
        o.push(pod(
            "shop",
            name,
            ("ReplicaSet", "ingest-7c9d5b8f4"),
            None,
            spec(),
            status,
        ));
    }
    o
}

#[tokio::test]
async fn a_node_at_its_pod_capacity_names_the_cronjob_holding_most_of_its_pods_and_who_waits() {
    let now = Utc::now();
    let cluster = Cluster::start(with_full_node(now), &[]).await;
    let report = cluster.sweep(now, 10).await;
    assert!(report.notes.is_empty(), "{:?}", report.notes);
    let all = lines(&report.facts);
    let found = of(&report.facts, "kube_pod_capacity");
    assert_eq!(found.len(), 1, "{all}");
    let f = &found[0];
    assert_eq!(
        (
            f.class,
            f.severity,
            f.entity.kind.as_str(),
            f.entity.name.as_str()
        ),
        (FactClass::Kubernetes, Severity::Critical, "node", NODE)
    );
    assert_eq!(f.headline(), "pods 110 of 110", "{all}");
    assert_eq!(f.value.map(|v| v.unit), Some(Unit::Count));
    // It reached 99 pods (90 %) when the 99th oldest pod still there was created: after
    // the 41 older pods of the others, the CronJob's 58th run, an hour ago.
    let since = f.since.expect("since");
    let expected = now - TimeDelta::minutes(60);
    assert!(
        (since - expected).num_seconds().abs() <= 60,
        "{since} {all}"
    );
    let detail = f.detail.as_deref().unwrap();
    assert!(
        detail.starts_with(
            "2 pods Pending for \"Too many pods\": shop/ingest-7c9d5b8f4-aa111, shop/ingest-7c9d5b8f4-bb222; \
             100 % of its allocatable pods, most held by 69 of cronjob batch/report-gen (created "
        ),
        "{detail}"
    );
    assert!(
        detail.ends_with("UTC), 30 of deployment shop/cart, 11 of statefulset monitoring/agent"),
        "{detail}"
    );
    assert!(
        f.related
            .iter()
            .any(|e| e.kind == "cronjob" && e.name == "batch/report-gen"),
        "{:?}",
        f.related
    );
    assert!(
        f.related
            .iter()
            .any(|e| e.name == "shop/ingest-7c9d5b8f4-aa111")
    );
    assert_eq!(f.source.tool, "k8s_nodes");

    // With the allow-list, the CronJob's namespace is counted but not named.
    let cluster = Cluster::start(with_full_node(now), &["shop"]).await;
    let report = cluster.sweep(now, 10).await;
    let all = lines(&report.facts);
    let found = of(&report.facts, "kube_pod_capacity");
    assert_eq!(found.len(), 1, "{all}");
    let detail = found[0].detail.as_deref().unwrap();
    assert!(
        detail
            .contains("most held by 80 in namespaces not allowed here, 30 of deployment shop/cart"),
        "{detail}"
    );
    assert!(!detail.contains("report-gen"), "{detail}");
}
