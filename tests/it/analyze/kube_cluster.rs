//! A small but realistic cluster for the Kubernetes analyzers, as the API server returns
//! it: three nodes, four namespaces, healthy Deployments, a StatefulSet, a DaemonSet and a
//! finished Job, with a few problems written in (an image that cannot be pulled, a pod
//! that cannot be scheduled, a crash loop of OOM kills, a failing readiness probe, a node
//! under memory pressure and one that stopped reporting) and decoys that are not problems
//! (an old OOM kill, a pod still starting, a Job that completed). Served by the eval fake
//! (`kubernetes_router`), reached through the real `KubeClient`.

use std::collections::BTreeMap;
use std::sync::Arc;

use chrono::{DateTime, TimeDelta, Utc};
use serde_json::{Value, json};
use sre_agent::config::KubernetesConfig;
use sre_agent::eval::fakes::{FakeServer, kubeconfig, kubernetes_router};
use sre_agent::integrations::kubernetes::KubeClient;
use tempfile::TempDir;

/// RFC 3339 time `mins` minutes before `now`.
pub fn ago(now: DateTime<Utc>, mins: i64) -> String {
    (now - TimeDelta::minutes(mins)).to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// A pod of `owner` (`ReplicaSet` name with its hash, or a StatefulSet/DaemonSet/Job).
pub fn pod(
    ns: &str,
    name: &str,
    owner: (&str, &str),
    node: Option<&str>,
    spec: Value,
    status: Value,
) -> Value {
    let (kind, owner_name) = owner;
    let mut labels = json!({"app": owner_name.split('-').next().unwrap_or(owner_name)});
    if kind == "ReplicaSet"
        && let Some((_, hash)) = owner_name.rsplit_once('-')
    {
        labels["pod-template-hash"] = json!(hash);
    }
    let mut spec = spec;
    if let Some(n) = node {
        spec["nodeName"] = json!(n);
    }
    json!({"kind": "Pod", "metadata": {"name": name, "namespace": ns, "uid": format!("uid-{name}"),
        "labels": labels, "creationTimestamp": status["startTime"].clone(),
        "ownerReferences": [{"apiVersion": "apps/v1", "kind": kind, "name": owner_name,
            "uid": format!("uid-{owner_name}"), "controller": true}]},
        "spec": spec, "status": status})
}

pub fn container(name: &str, image: &str, requests: Value, limits: Value) -> Value {
    json!({"name": name, "image": image, "resources": {"requests": requests, "limits": limits}})
}

fn running(name: &str, image: &str, since: &str) -> Value {
    json!({"name": name, "ready": true, "restartCount": 0, "image": image, "imageID": format!("{image}@sha256:1"),
        "started": true, "state": {"running": {"startedAt": since}}})
}

fn healthy(
    ns: &str,
    name: &str,
    owner: (&str, &str),
    node: &str,
    image: &str,
    now: DateTime<Utc>,
) -> Value {
    let c = name.split('-').next().unwrap_or(name);
    pod(
        ns,
        name,
        owner,
        Some(node),
        json!({"containers": [container(c, image, json!({"cpu": "100m", "memory": "128Mi"}), json!({"memory": "256Mi"}))]}),
        json!({"phase": "Running", "startTime": ago(now, 4000), "hostIP": "10.0.0.1", "podIP": "10.42.1.5",
            "conditions": [{"type": "PodScheduled", "status": "True", "lastTransitionTime": ago(now, 4000)},
                           {"type": "Ready", "status": "True", "lastTransitionTime": ago(now, 3990)}],
            "containerStatuses": [running(c, image, &ago(now, 3995))]}),
    )
}

fn event(
    ns: &str,
    pod: &str,
    reason: &str,
    message: &str,
    field: Option<&str>,
    (first, last, count): (&str, &str, u32),
) -> Value {
    let mut obj = json!({"kind": "Pod", "namespace": ns, "name": pod, "apiVersion": "v1"});
    if let Some(f) = field {
        obj["fieldPath"] = json!(f);
    }
    json!({"kind": "Event", "metadata": {"name": format!("{pod}.{reason}.{count}"), "namespace": ns},
        "involvedObject": obj, "reason": reason, "message": message, "type": "Warning",
        "source": {"component": "kubelet"}, "firstTimestamp": first, "lastTimestamp": last, "count": count})
}

fn node(name: &str, ready: (&str, &str, &str, &str), memory_pressure: (&str, &str)) -> Value {
    let (status, reason, message, since) = ready;
    json!({"kind": "Node", "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {"allocatable": {"cpu": "4", "memory": "16Gi", "pods": "110"},
            "conditions": [
                {"type": "MemoryPressure", "status": memory_pressure.0, "reason": "KubeletHasInsufficientMemory",
                 "message": "kubelet has insufficient memory available", "lastTransitionTime": memory_pressure.1},
                {"type": "DiskPressure", "status": "False", "reason": "KubeletHasNoDiskPressure", "lastTransitionTime": "2026-01-01T00:00:00Z"},
                {"type": "PIDPressure", "status": "False", "reason": "KubeletHasSufficientPID", "lastTransitionTime": "2026-01-01T00:00:00Z"},
                {"type": "Ready", "status": status, "reason": reason, "message": message, "lastTransitionTime": since}]}})
}

fn replicaset(
    ns: &str,
    deploy: &str,
    hash: &str,
    revision: u32,
    image: &str,
    created: &str,
) -> Value {
    json!({"kind": "ReplicaSet", "metadata": {"name": format!("{deploy}-{hash}"), "namespace": ns,
        "creationTimestamp": created, "annotations": {"deployment.kubernetes.io/revision": revision.to_string()},
        "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": deploy, "uid": format!("uid-{deploy}"), "controller": true}]},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": deploy}},
            "template": {"metadata": {"labels": {"app": deploy}}, "spec": {"containers": [{"name": deploy, "image": image}]}}}})
}

fn deployment(
    ns: &str,
    name: &str,
    desired: i32,
    updated: i32,
    available: i32,
    conditions: Value,
) -> Value {
    json!({"kind": "Deployment", "metadata": {"name": name, "namespace": ns, "generation": 4},
        "spec": {"replicas": desired, "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": [{"name": name, "image": "x"}]}}},
        "status": {"observedGeneration": 4, "replicas": desired, "updatedReplicas": updated,
            "readyReplicas": available, "availableReplicas": available, "conditions": conditions}})
}

/// The cluster's objects at `now`.
pub fn objects(now: DateTime<Utc>) -> Vec<Value> {
    let t = |m| ago(now, m);
    let mut o = vec![
        node(
            "worker-1",
            (
                "True",
                "KubeletReady",
                "kubelet is posting ready status",
                "2026-01-01T00:00:00Z",
            ),
            ("False", "2026-01-01T00:00:00Z"),
        ),
        node(
            "worker-2",
            (
                "True",
                "KubeletReady",
                "kubelet is posting ready status",
                "2026-01-01T00:00:00Z",
            ),
            ("True", &t(25)),
        ),
        node(
            "worker-3",
            (
                "Unknown",
                "NodeStatusUnknown",
                "Kubelet stopped posting node status.",
                &t(14),
            ),
            ("Unknown", &t(14)),
        ),
    ];
    for (i, n) in ["worker-1", "worker-2", "worker-3"].iter().enumerate() {
        o.push(healthy(
            "shop",
            &format!("api-6b7f9c5d48-{}x2q", ["k", "m", "p"][i]),
            ("ReplicaSet", "api-6b7f9c5d48"),
            n,
            "registry.example.com/shop/api:7.1.0",
            now,
        ));
        o.push(healthy(
            "monitoring",
            &format!("node-exporter-{}", ["4kq2z", "8f7wd", "t2m9x"][i]),
            ("DaemonSet", "node-exporter"),
            n,
            "quay.io/prometheus/node-exporter:v1.8.2",
            now,
        ));
    }
    o.push(healthy(
        "kube-system",
        "coredns-5d78c9869d-h7k2v",
        ("ReplicaSet", "coredns-5d78c9869d"),
        "worker-1",
        "registry.k8s.io/coredns/coredns:v1.11.1",
        now,
    ));
    // Decoy: an OOM kill three days ago in a container that has run fine since.
    let mut old_oom = healthy(
        "media",
        "jellyfin-7c9d8b6f5-zq8xw",
        ("ReplicaSet", "jellyfin-7c9d8b6f5"),
        "worker-1",
        "jellyfin/jellyfin:10.9.7",
        now,
    );
    old_oom["status"]["containerStatuses"][0]["restartCount"] = json!(1);
    old_oom["status"]["containerStatuses"][0]["lastState"] = json!({"terminated": {"exitCode": 137, "reason": "OOMKilled",
        "startedAt": t(4400), "finishedAt": t(4320)}});
    o.push(old_oom);
    // Decoy: a Job that finished.
    o.push(pod("media", "thumbs-29012345-8kq2z", ("Job", "thumbs-29012345"), Some("worker-2"),
        json!({"containers": [container("thumbs", "r/thumbs:1", json!({}), json!({}))]}),
        json!({"phase": "Succeeded", "startTime": t(50), "containerStatuses": [{"name": "thumbs", "ready": false, "restartCount": 0,
            "image": "r/thumbs:1", "imageID": "r/thumbs@sha256:2",
            "state": {"terminated": {"exitCode": 0, "reason": "Completed", "startedAt": t(50), "finishedAt": t(48)}}}]})));
    // Decoy: a pod created 30 s ago, its container still being created.
    o.push(pod("shop", "api-6b7f9c5d48-zz4wn", ("ReplicaSet", "api-6b7f9c5d48"), Some("worker-1"),
        json!({"containers": [container("api", "registry.example.com/shop/api:7.1.0", json!({}), json!({}))]}),
        json!({"phase": "Pending", "startTime": (now - TimeDelta::seconds(30)).to_rfc3339(),
            "conditions": [{"type": "Ready", "status": "False", "reason": "ContainersNotReady", "lastTransitionTime": (now - TimeDelta::seconds(30)).to_rfc3339()}],
            "containerStatuses": [{"name": "api", "ready": false, "restartCount": 0, "image": "registry.example.com/shop/api:7.1.0", "imageID": "",
                "state": {"waiting": {"reason": "ContainerCreating"}}}]})));

    // Decoy: a pod draining for its 10-minute grace period, not ready on purpose.
    let mut draining = healthy(
        "shop",
        "api-6b7f9c5d48-old9z",
        ("ReplicaSet", "api-6b7f9c5d48"),
        "worker-3",
        "registry.example.com/shop/api:7.1.0",
        now,
    );
    draining["metadata"]["deletionTimestamp"] = json!((now + TimeDelta::minutes(7)).to_rfc3339());
    draining["status"]["conditions"][1] = json!({"type": "Ready", "status": "False", "reason": "ContainersNotReady", "lastTransitionTime": t(3)});
    draining["status"]["containerStatuses"][0]["ready"] = json!(false);
    o.push(draining);
    o.push(event("shop", "api-6b7f9c5d48-old9z", "Unhealthy", "Readiness probe failed: Get \"http://10.42.3.7:8080/ready\": dial tcp 10.42.3.7:8080: connect: connection refused",
        Some("spec.containers{api}"), (&t(3), &t(0), 18)));

    // Problem: an image that does not exist, for 18 minutes.
    let image = "registry.example.com/shop/checkout:2.4.1";
    o.push(pod("shop", "checkout-84d5f7b9c6-w7x2k", ("ReplicaSet", "checkout-84d5f7b9c6"), Some("worker-2"),
        json!({"containers": [container("checkout", image, json!({"cpu": "250m", "memory": "256Mi"}), json!({"memory": "512Mi"}))]}),
        json!({"phase": "Pending", "startTime": t(18),
            "conditions": [{"type": "PodScheduled", "status": "True", "lastTransitionTime": t(18)},
                           {"type": "Ready", "status": "False", "reason": "ContainersNotReady", "lastTransitionTime": t(18)}],
            "containerStatuses": [{"name": "checkout", "ready": false, "restartCount": 0, "image": image, "imageID": "",
                "state": {"waiting": {"reason": "ImagePullBackOff", "message": format!("Back-off pulling image \"{image}\"")}}}]})));
    let pull_error = format!(
        "Failed to pull image \"{image}\": rpc error: code = NotFound desc = failed to pull and unpack image \"{image}\": failed to resolve reference \"{image}\": {image}: not found"
    );
    let field = Some("spec.containers{checkout}");
    o.push(event(
        "shop",
        "checkout-84d5f7b9c6-w7x2k",
        "Failed",
        &pull_error,
        field,
        (&t(17), &t(2), 8),
    ));
    o.push(event(
        "shop",
        "checkout-84d5f7b9c6-w7x2k",
        "Failed",
        "Error: ErrImagePull",
        field,
        (&t(17), &t(2), 8),
    ));
    o.push(event(
        "shop",
        "checkout-84d5f7b9c6-w7x2k",
        "BackOff",
        &format!("Back-off pulling image \"{image}\""),
        field,
        (&t(17), &t(1), 70),
    ));
    o.push(event(
        "shop",
        "checkout-84d5f7b9c6-w7x2k",
        "Failed",
        "Error: ImagePullBackOff",
        field,
        (&t(17), &t(1), 70),
    ));

    // Problem: a pod asking for more memory than any node has free, for 9 minutes.
    o.push(pod("media", "transcoder-5f6d7c8b9-qk4wz", ("ReplicaSet", "transcoder-5f6d7c8b9"), None,
        json!({"containers": [
            container("ffmpeg", "r/ffmpeg:6.1", json!({"cpu": "1500m", "memory": "12Gi"}), json!({"memory": "16Gi"})),
            container("uploader", "r/uploader:1.2", json!({"cpu": "500m", "memory": "512Mi"}), json!({}))]}),
        json!({"phase": "Pending", "startTime": t(9),
            "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "lastTransitionTime": t(9),
                "message": "0/3 nodes are available: 1 node(s) had untolerated taint {node.kubernetes.io/unreachable: }, 2 Insufficient memory."}]})));
    let unschedulable = "0/3 nodes are available: 1 node(s) had untolerated taint {node.kubernetes.io/unreachable: }, 2 Insufficient memory. preemption: 0/3 nodes are available: 1 Preemption is not helpful for scheduling, 2 No preemption victims found for incoming pod.";
    o.push(event(
        "media",
        "transcoder-5f6d7c8b9-qk4wz",
        "FailedScheduling",
        unschedulable,
        None,
        (&t(9), &t(1), 6),
    ));

    // Problem: a StatefulSet's pod killed at its memory limit, over and over.
    o.push(pod("monitoring", "loki-0", ("StatefulSet", "loki"), Some("worker-1"),
        json!({"containers": [container("loki", "grafana/loki:3.1.1", json!({"cpu": "200m", "memory": "256Mi"}), json!({"memory": "512Mi"}))]}),
        json!({"phase": "Running", "startTime": t(300),
            "conditions": [{"type": "Ready", "status": "False", "reason": "ContainersNotReady", "lastTransitionTime": t(40)}],
            "containerStatuses": [{"name": "loki", "ready": false, "restartCount": 9, "image": "grafana/loki:3.1.1", "imageID": "grafana/loki@sha256:3",
                "state": {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off 5m0s restarting failed container=loki pod=loki-0_monitoring(uid-loki-0)"}},
                "lastState": {"terminated": {"exitCode": 137, "reason": "OOMKilled", "startedAt": t(6), "finishedAt": t(4)}}}]})));
    o.push(event(
        "monitoring",
        "loki-0",
        "BackOff",
        "Back-off restarting failed container loki in pod loki-0_monitoring(uid-loki-0)",
        Some("spec.containers{loki}"),
        (&t(38), &t(1), 40),
    ));

    // Problem: a readiness probe failing for 12 minutes.
    let mut cart = healthy(
        "shop",
        "cart-79c8d6f5b4-r2d2x",
        ("ReplicaSet", "cart-79c8d6f5b4"),
        "worker-2",
        "registry.example.com/shop/cart:3.0.2",
        now,
    );
    cart["status"]["conditions"][1] = json!({"type": "Ready", "status": "False", "reason": "ContainersNotReady", "lastTransitionTime": t(12)});
    cart["status"]["containerStatuses"][0]["ready"] = json!(false);
    o.push(cart);
    o.push(event(
        "shop",
        "cart-79c8d6f5b4-r2d2x",
        "Unhealthy",
        "Readiness probe failed: HTTP probe failed with statuscode: 503",
        Some("spec.containers{cart}"),
        (&t(12), &t(0), 72),
    ));

    // Workloads and their revisions.
    o.push(deployment("shop", "api", 3, 3, 3, json!([
        {"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable", "lastTransitionTime": t(3990), "lastUpdateTime": t(3990)},
        {"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable", "message": "ReplicaSet \"api-6b7f9c5d48\" has successfully progressed.", "lastTransitionTime": t(14400), "lastUpdateTime": t(3990)}])));
    o.push(deployment("shop", "checkout", 2, 1, 1, json!([
        {"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable", "lastTransitionTime": t(9000), "lastUpdateTime": t(9000)},
        {"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded", "message": "ReplicaSet \"checkout-84d5f7b9c6\" has timed out progressing.", "lastTransitionTime": t(8), "lastUpdateTime": t(8)}])));
    o.push(deployment("media", "jellyfin", 1, 1, 1, json!([])));
    o.push(replicaset(
        "shop",
        "api",
        "6b7f9c5d48",
        7,
        "registry.example.com/shop/api:7.1.0",
        &t(14400),
    ));
    o.push(replicaset(
        "shop",
        "api",
        "5c8d7e6f59",
        6,
        "registry.example.com/shop/api:7.0.3",
        &t(30000),
    ));
    o.push(replicaset(
        "shop",
        "checkout",
        "84d5f7b9c6",
        4,
        image,
        &t(18),
    ));
    o.push(replicaset(
        "shop",
        "checkout",
        "6f5d4c7b98",
        3,
        "registry.example.com/shop/checkout:2.4.0",
        &t(7200),
    ));
    o.push(json!({"kind": "StatefulSet", "metadata": {"name": "loki", "namespace": "monitoring"},
        "spec": {"replicas": 1, "serviceName": "loki", "selector": {"matchLabels": {"app": "loki"}},
            "template": {"metadata": {"labels": {"app": "loki"}}, "spec": {"containers": [{"name": "loki", "image": "grafana/loki:3.1.1"}]}}},
        "status": {"replicas": 1, "readyReplicas": 0, "currentReplicas": 1, "updatedReplicas": 1, "availableReplicas": 0,
            "currentRevision": "loki-7d9f8c6b5", "updateRevision": "loki-7d9f8c6b5"}}));
    o.push(json!({"kind": "DaemonSet", "metadata": {"name": "node-exporter", "namespace": "monitoring"},
        "spec": {"selector": {"matchLabels": {"app": "node-exporter"}},
            "template": {"metadata": {"labels": {"app": "node-exporter"}}, "spec": {"containers": [{"name": "node-exporter", "image": "quay.io/prometheus/node-exporter:v1.8.2"}]}}},
        "status": {"currentNumberScheduled": 3, "desiredNumberScheduled": 3, "numberMisscheduled": 0, "numberReady": 2,
            "updatedNumberScheduled": 3, "numberAvailable": 2, "numberUnavailable": 1}}));
    o
}

/// The cluster served by the fake API server, and a client limited to `namespaces`.
pub struct Cluster {
    pub client: Arc<KubeClient>,
    _server: FakeServer,
    _dir: TempDir,
}

impl Cluster {
    /// The Kubernetes analyzers' sweep over this cluster, for an incident that began
    /// `started_mins_ago` before `now`.
    pub async fn sweep(
        &self,
        now: chrono::DateTime<chrono::Utc>,
        started_mins_ago: i64,
    ) -> sre_agent::analyze::SweepReport {
        let sweep =
            sre_agent::analyze::Sweep::of(sre_agent::analyze::kube::analyzers(self.client.clone()));
        let started = now - chrono::TimeDelta::minutes(started_mins_ago);
        sweep
            .run(sre_agent::analyze::Scope::new(now, Some(started)))
            .await
    }

    pub async fn start(objects: Vec<Value>, namespaces: &[&str]) -> Self {
        Self::with_logs(objects, namespaces, BTreeMap::new()).await
    }

    /// The cluster whose pods log `logs` (by `namespace/pod`).
    pub async fn with_logs(
        objects: Vec<Value>,
        namespaces: &[&str],
        logs: BTreeMap<String, String>,
    ) -> Self {
        sre_agent::install_crypto_provider();
        let server = FakeServer::start(kubernetes_router(objects, logs))
            .await
            .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("kubeconfig.yaml");
        std::fs::write(&path, kubeconfig(&server.url)).unwrap();
        let config = KubernetesConfig {
            enabled: true,
            kubeconfig: Some(path),
            namespaces: namespaces.iter().map(|n| n.to_string()).collect(),
            ..Default::default()
        };
        Self {
            client: Arc::new(KubeClient::new(&config).unwrap()),
            _server: server,
            _dir: dir,
        }
    }
}
