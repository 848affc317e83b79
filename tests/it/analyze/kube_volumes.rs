//! `kube_pods` on pods held by their volume's node, in the realistic cluster of
//! `kube_cluster` with a storage tier added: a database pod Pending because its
//! local-path volume lives on a node that stopped reporting, a pod stranded on that node
//! (not ready while its containers last read ready), a pod whose volume's node is
//! cordoned, one whose node is gone; and pods that are Pending for another reason with a
//! volume that has no node affinity, or is pinned to a Ready node (no such fact). The
//! PersistentVolumes and claims are in the API's wire format, served by the eval fake.

use chrono::{DateTime, TimeDelta, Utc};
use serde_json::{Value, json};
use sre_agent::analyze::{Fact, FactClass, Severity};

use super::kube_cluster::{Cluster, ago, container, objects, pod};
use super::world::lines;

const HOSTNAME: &str = "kubernetes.io/hostname";

fn node(name: &str, ready: &str, since: &str, cordoned: bool) -> Value {
    let (reason, message) = match ready {
        "True" => ("KubeletReady", "kubelet is posting ready status"),
        _ => ("NodeStatusUnknown", "Kubelet stopped posting node status."),
    };
    let mut n = json!({"kind": "Node", "metadata": {"name": name,
        "labels": {HOSTNAME: name, "kubernetes.io/os": "linux", "topology.kubernetes.io/zone": "rack-2"}},
        "spec": {"podCIDR": "10.42.7.0/24"},
        "status": {"allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"},
            "conditions": [{"type": "Ready", "status": ready, "reason": reason, "message": message,
                "lastHeartbeatTime": since, "lastTransitionTime": since}]}});
    if cordoned {
        n["spec"]["unschedulable"] = json!(true);
        n["spec"]["taints"] = json!([{"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule",
            "timeAdded": since}]);
    }
    n
}

/// A bound volume: `class` provisions it, `affinity` the node terms it requires (none:
/// reachable from every node, as NFS).
fn volume(name: &str, ns: &str, claim: &str, class: &str, affinity: Option<Value>) -> Value {
    let mut spec = json!({"capacity": {"storage": "20Gi"}, "accessModes": ["ReadWriteOnce"],
        "claimRef": {"kind": "PersistentVolumeClaim", "namespace": ns, "name": claim,
            "uid": format!("uid-{claim}"), "apiVersion": "v1", "resourceVersion": "4411"},
        "persistentVolumeReclaimPolicy": "Delete", "storageClassName": class, "volumeMode": "Filesystem"});
    match &affinity {
        Some(terms) => {
            spec["hostPath"] = json!({"path": format!("/var/lib/rancher/k3s/storage/{name}_{ns}_{claim}"),
                "type": "DirectoryOrCreate"});
            spec["nodeAffinity"] = json!({"required": {"nodeSelectorTerms": terms}});
        }
        None => {
            spec["csi"] = json!({"driver": "nfs.csi.k8s.io", "volumeHandle": format!("nas#{name}")})
        }
    }
    json!({"kind": "PersistentVolume", "metadata": {"name": name,
        "annotations": {"pv.kubernetes.io/provisioned-by": "rancher.io/local-path"},
        "finalizers": ["kubernetes.io/pv-protection"]},
        "spec": spec, "status": {"phase": "Bound"}})
}

fn on_node(node: &str) -> Value {
    json!([{"matchExpressions": [{"key": HOSTNAME, "operator": "In", "values": [node]}]}])
}

fn claim(ns: &str, name: &str, volume: &str, class: &str, node: Option<&str>) -> Value {
    let mut annotations = json!({"pv.kubernetes.io/bind-completed": "yes",
        "volume.kubernetes.io/storage-provisioner": "rancher.io/local-path"});
    if let Some(n) = node {
        annotations["volume.kubernetes.io/selected-node"] = json!(n);
    }
    json!({"kind": "PersistentVolumeClaim", "metadata": {"name": name, "namespace": ns,
        "annotations": annotations, "finalizers": ["kubernetes.io/pvc-protection"]},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "20Gi"}},
            "volumeName": volume, "storageClassName": class, "volumeMode": "Filesystem"},
        "status": {"phase": "Bound", "accessModes": ["ReadWriteOnce"], "capacity": {"storage": "20Gi"}}})
}

/// A StatefulSet's pod mounting `claim`, Pending since `mins` ago with the scheduler's
/// `message`.
fn pending(ns: &str, name: &str, claim: &str, now: DateTime<Utc>, mins: i64) -> Value {
    let set = name.rsplit_once('-').map_or(name, |(s, _)| s);
    pod(
        ns,
        name,
        ("StatefulSet", set),
        None,
        json!({"containers": [container(set, "registry.example.com/db:16.4", json!({"cpu": "500m", "memory": "2Gi"}), json!({"memory": "4Gi"}))],
            "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": claim}}]}),
        json!({"phase": "Pending", "startTime": ago(now, mins),
            "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                "lastTransitionTime": ago(now, mins),
                "message": "0/6 nodes are available: 1 node(s) had volume node affinity conflict, 5 node(s) didn't match pod anti-affinity rules."}]}),
    )
}

fn scheduling_event(ns: &str, pod: &str, message: &str, now: DateTime<Utc>, mins: i64) -> Value {
    json!({"kind": "Event", "metadata": {"name": format!("{pod}.18a7f"), "namespace": ns},
        "involvedObject": {"kind": "Pod", "namespace": ns, "name": pod, "apiVersion": "v1"},
        "reason": "FailedScheduling", "message": message, "type": "Warning",
        "source": {"component": "default-scheduler"}, "reportingComponent": "default-scheduler",
        "firstTimestamp": ago(now, mins), "lastTimestamp": ago(now, 1), "count": 7})
}

fn storage_tier(now: DateTime<Utc>) -> Vec<Value> {
    let mut o = vec![
        node("store-1", "Unknown", &ago(now, 12), false),
        node("store-2", "True", "2026-01-01T00:00:00Z", false),
        node("store-3", "True", "2026-01-01T00:00:00Z", true),
    ];
    // The database's volume is on store-1, which stopped reporting 12 minutes ago.
    o.push(volume(
        "pvc-3f1c9a2e-5b7d-4c1e-9f0a-2d6b8e4c7a11",
        "data",
        "pgdata-pg-0",
        "local-path",
        Some(on_node("store-1")),
    ));
    o.push(claim(
        "data",
        "pgdata-pg-0",
        "pvc-3f1c9a2e-5b7d-4c1e-9f0a-2d6b8e4c7a11",
        "local-path",
        Some("store-1"),
    ));
    o.push(pending("data", "pg-0", "pgdata-pg-0", now, 10));
    o.push(scheduling_event("data", "pg-0",
        "0/6 nodes are available: 1 node(s) had untolerated taint {node.kubernetes.io/unreachable: }, 5 node(s) had volume node affinity conflict. preemption: 0/6 nodes are available: 6 Preemption is not helpful for scheduling.",
        now, 10));
    // A search pod still bound to store-1: its containers last read ready, the node
    // controller marked it not ready. Its volume is OpenEBS hostpath, pinned by name.
    let mut search = pod(
        "data",
        "search-0",
        ("StatefulSet", "search"),
        Some("store-1"),
        json!({"containers": [container("search", "registry.example.com/search:8.15", json!({"cpu": "1"}), json!({}))],
            "volumes": [{"name": "index", "persistentVolumeClaim": {"claimName": "index-search-0"}}]}),
        json!({"phase": "Running", "startTime": ago(now, 3000),
            "conditions": [{"type": "PodScheduled", "status": "True", "lastTransitionTime": ago(now, 3000)},
                {"type": "Ready", "status": "False", "lastTransitionTime": ago(now, 11)}],
            "containerStatuses": [{"name": "search", "ready": true, "restartCount": 0, "started": true,
                "image": "registry.example.com/search:8.15", "imageID": "registry.example.com/search@sha256:9",
                "state": {"running": {"startedAt": ago(now, 2999)}}}]}),
    );
    search["status"]["hostIP"] = json!("10.0.7.11");
    o.push(search);
    o.push(volume("pvc-77aa0c1d-2e3f-4a5b-8c9d-0e1f2a3b4c5d", "data", "index-search-0", "openebs-hostpath",
        Some(json!([{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["store-1"]}]}]))));
    o.push(claim(
        "data",
        "index-search-0",
        "pvc-77aa0c1d-2e3f-4a5b-8c9d-0e1f2a3b4c5d",
        "openebs-hostpath",
        None,
    ));
    // Cordoned store-3 holds the queue's volume; store-9 was removed with the logs' volume.
    o.push(volume(
        "pvc-a1",
        "data",
        "spool-mq-0",
        "topolvm-provisioner",
        Some(on_node("store-3")),
    ));
    o.push(claim(
        "data",
        "spool-mq-0",
        "pvc-a1",
        "topolvm-provisioner",
        None,
    ));
    o.push(pending("data", "mq-0", "spool-mq-0", now, 6));
    o.push(volume(
        "pvc-b2",
        "data",
        "logs-vl-0",
        "local-path",
        Some(on_node("store-9")),
    ));
    o.push(claim("data", "logs-vl-0", "pvc-b2", "local-path", None));
    o.push(pending("data", "vl-0", "logs-vl-0", now, 30));
    // Pending for memory: its volume is NFS (no affinity), the other's pinned to Ready store-2.
    o.push(volume("pvc-c3", "data", "cache-kv-0", "nfs-client", None));
    o.push(claim("data", "cache-kv-0", "pvc-c3", "nfs-client", None));
    o.push(pending("data", "kv-0", "cache-kv-0", now, 8));
    o.push(scheduling_event(
        "data",
        "kv-0",
        "0/6 nodes are available: 6 Insufficient memory.",
        now,
        8,
    ));
    o.push(volume(
        "pvc-d4",
        "data",
        "wal-ts-0",
        "local-path",
        Some(on_node("store-2")),
    ));
    o.push(claim(
        "data",
        "wal-ts-0",
        "pvc-d4",
        "local-path",
        Some("store-2"),
    ));
    o.push(pending("data", "ts-0", "wal-ts-0", now, 8));
    o.push(scheduling_event(
        "data",
        "ts-0",
        "0/6 nodes are available: 1 Insufficient cpu, 5 node(s) had volume node affinity conflict.",
        now,
        8,
    ));
    o
}

/// The facts about `pod` that say which volume holds it.
fn held<'a>(facts: &'a [Fact], pod: &str) -> Vec<&'a Fact> {
    facts
        .iter()
        .filter(|f| f.entity.name == pod)
        .filter(|f| {
            f.detail
                .as_deref()
                .is_some_and(|d| d.contains(" is pinned to node"))
        })
        .collect()
}

#[tokio::test]
async fn a_pod_whose_volume_is_pinned_to_an_unavailable_node_says_which_volume_and_node() {
    let now = Utc::now();
    let mut o = objects(now);
    o.extend(storage_tier(now));
    let cluster = Cluster::start(o, &[]).await;
    let report = cluster.sweep(now, 10).await;
    assert!(report.notes.is_empty(), "{:?}", report.notes);
    let facts = report.facts;
    let all = lines(&facts);

    let pg = held(&facts, "data/pg-0");
    assert_eq!(pg.len(), 1, "{all}");
    let f = pg[0];
    assert_eq!(f.class, FactClass::Kubernetes);
    assert!(f.what.starts_with("unschedulable"), "{all}");
    let since = (now - TimeDelta::minutes(12)).format("%H:%M UTC");
    let detail = f.detail.as_deref().unwrap();
    assert!(
        detail.starts_with(&format!(
            "claim pgdata-pg-0 (PV pvc-3f1c9a2e-5b7d-4c1e-9f0a-2d6b8e4c7a11, local-path) is pinned to node store-1 (NotReady since {since}); 0/6 nodes are available"
        )),
        "{all}"
    );
    assert_eq!(
        f.severity,
        Severity::Critical,
        "the pod's own severity: {all}"
    );
    assert_eq!(f.entity.host.as_deref(), Some("store-1"));
    assert_eq!(f.entity.labels["persistentvolumeclaim"], "pgdata-pg-0");
    assert_eq!(
        f.entity.labels["persistentvolume"],
        "pvc-3f1c9a2e-5b7d-4c1e-9f0a-2d6b8e4c7a11"
    );

    let search = held(&facts, "data/search-0");
    assert_eq!(search.len(), 1, "{all}");
    let f = search[0];
    assert_eq!(f.severity, Severity::Warning);
    assert_eq!(f.what, "not ready, containers last reported ready", "{all}");
    assert_eq!((now - f.since.unwrap()).num_minutes(), 11);
    let detail = f.detail.as_deref().unwrap();
    assert!(
        detail.contains("openebs-hostpath) is pinned to node store-1 (NotReady since"),
        "{detail}"
    );

    let mq = held(&facts, "data/mq-0");
    assert_eq!(mq.len(), 1, "{all}");
    assert!(
        mq[0].detail.as_deref().unwrap().starts_with(
            "claim spool-mq-0 (PV pvc-a1, topolvm-provisioner) is pinned to node store-3 (cordoned); "
        ),
        "{all}"
    );
    let vl = held(&facts, "data/vl-0");
    assert_eq!(vl.len(), 1, "{all}");
    assert!(
        vl[0]
            .detail
            .as_deref()
            .unwrap()
            .contains("is pinned to node store-9 (gone); "),
        "{all}"
    );

    for fine in ["data/kv-0", "data/ts-0"] {
        assert!(held(&facts, fine).is_empty(), "{fine}: {all}");
        let f = facts.iter().find(|f| f.entity.name == fine);
        assert!(
            f.is_some_and(|f| f.what.starts_with("unschedulable") && f.entity.host.is_none()),
            "{fine} is still reported unschedulable, on no node: {all}"
        );
    }
    // The background cluster's pods have no volume pinned anywhere.
    let pinned = facts
        .iter()
        .filter(|f| {
            f.detail
                .as_deref()
                .is_some_and(|d| d.contains(" is pinned to node"))
        })
        .count();
    assert_eq!(pinned, 4, "{all}");
}
