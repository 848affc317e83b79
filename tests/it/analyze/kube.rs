//! The Kubernetes analyzers against a fake API server serving a realistic cluster
//! (`kube_cluster`): each problem reported with its entity, reason, the event behind it
//! and since when; the healthy pods and the decoys not at all; the namespace allow-list
//! respected.

use chrono::{DateTime, TimeDelta, Utc};
use sre_agent::analyze::{Fact, FactClass, Scope, Severity, Sweep, Unit};

use super::kube_cluster::{Cluster, objects};
use super::world::lines;

async fn sweep(
    namespaces: &[&str],
    started_mins_ago: i64,
) -> (Vec<Fact>, Vec<String>, DateTime<Utc>) {
    let now = Utc::now();
    let cluster = Cluster::start(objects(now), namespaces).await;
    let report = cluster.sweep(now, started_mins_ago).await;
    (report.facts, report.notes, now)
}

fn about<'a>(facts: &'a [Fact], name: &str) -> Vec<&'a Fact> {
    facts.iter().filter(|f| f.entity.name == name).collect()
}

fn minutes_ago(now: DateTime<Utc>, f: &Fact) -> i64 {
    (now - f.since.expect("a since")).num_minutes()
}

#[tokio::test]
async fn pods_not_ready_are_reported_with_their_reason_the_event_behind_it_and_since_when() {
    let (facts, notes, now) = sweep(&[], 20).await;
    assert!(notes.is_empty(), "{notes:?}");
    let all = lines(&facts);
    let pods: Vec<&Fact> = facts.iter().filter(|f| f.entity.kind == "pod").collect();
    assert_eq!(pods.len(), 4, "{all}");

    let pull = about(&facts, "shop/checkout-84d5f7b9c6-w7x2k");
    assert_eq!(pull.len(), 1, "{all}");
    let f = pull[0];
    assert_eq!(f.what, "container checkout ImagePullBackOff");
    assert_eq!(f.severity, Severity::Critical);
    assert_eq!(f.entity.host.as_deref(), Some("worker-2"));
    assert_eq!(f.entity.labels["deployment"], "checkout");
    assert_eq!(
        f.entity.labels["image"],
        "registry.example.com/shop/checkout:2.4.1"
    );
    let detail = f.detail.as_deref().unwrap();
    assert!(
        detail.starts_with("Failed to pull image \"registry.example.com/shop/checkout:2.4.1\""),
        "{detail}"
    );
    assert!(detail.contains("not found"), "{detail}");
    assert_eq!(minutes_ago(now, f), 17, "{all}");
    assert_eq!(f.source.tool, "k8s_describe_pod");
    assert_eq!(f.source.arguments["namespace"], "shop");
    assert_eq!(f.source.arguments["name"], "checkout-84d5f7b9c6-w7x2k");

    let sched = about(&facts, "media/transcoder-5f6d7c8b9-qk4wz");
    assert_eq!(sched.len(), 1, "{all}");
    let f = sched[0];
    assert_eq!(f.what, "unschedulable, requests cpu 2, memory");
    assert_eq!(f.value.unwrap().unit, Unit::Bytes);
    assert_eq!(f.value.unwrap().value, 12.5 * 1024.0 * 1024.0 * 1024.0);
    assert_eq!(f.entity.host, None, "an unscheduled pod has no node");
    assert!(
        f.detail
            .as_deref()
            .unwrap()
            .contains("2 Insufficient memory"),
        "{all}"
    );
    assert_eq!(minutes_ago(now, f), 9, "{all}");

    let crash = about(&facts, "monitoring/loki-0");
    assert_eq!(crash.len(), 1, "{all}");
    let f = crash[0];
    assert_eq!(f.what, "container loki CrashLoopBackOff, restarts");
    assert_eq!(f.value.unwrap().value, 9.0);
    assert_eq!(f.entity.labels["statefulset"], "loki");
    let detail = f.detail.as_deref().unwrap();
    assert!(
        detail.starts_with("last exit OOMKilled (code 137) at "),
        "{detail}"
    );
    assert!(detail.contains("memory limit 512.0 MiB"), "{detail}");
    assert!(
        detail.contains("Back-off restarting failed container loki"),
        "{detail}"
    );
    assert_eq!(minutes_ago(now, f), 38, "{all}");

    let probe = about(&facts, "shop/cart-79c8d6f5b4-r2d2x");
    assert_eq!(probe.len(), 1, "{all}");
    assert_eq!(probe[0].what, "container cart not ready");
    assert_eq!(probe[0].severity, Severity::Warning);
    assert_eq!(
        probe[0].detail.as_deref(),
        Some("Unhealthy: Readiness probe failed: HTTP probe failed with statuscode: 503")
    );
    assert_eq!(minutes_ago(now, probe[0]), 12, "{all}");

    for decoy in [
        "media/jellyfin-7c9d8b6f5-zq8xw",
        "media/thumbs-29012345-8kq2z",
        "shop/api-6b7f9c5d48-zz4wn",
        "shop/api-6b7f9c5d48-old9z",
    ] {
        assert!(about(&facts, decoy).is_empty(), "{decoy} reported:\n{all}");
    }
}

#[tokio::test]
async fn only_the_namespaces_the_config_allows_are_looked_at() {
    let (facts, notes, _) = sweep(&["shop"], 20).await;
    assert!(notes.is_empty(), "{notes:?}");
    let all = lines(&facts);
    for f in facts.iter().filter(|f| f.entity.kind != "node") {
        assert_eq!(f.entity.labels["namespace"], "shop", "{all}");
    }
    assert_eq!(
        about(&facts, "shop/checkout-84d5f7b9c6-w7x2k").len(),
        1,
        "{all}"
    );
}

#[tokio::test]
async fn nodes_not_ready_or_under_pressure_are_reported_since_their_transition() {
    let (facts, _, now) = sweep(&[], 20).await;
    let all = lines(&facts);
    let nodes: Vec<&Fact> = facts.iter().filter(|f| f.entity.kind == "node").collect();
    assert_eq!(nodes.len(), 2, "{all}");
    let down = about(&facts, "worker-3");
    assert_eq!(down.len(), 1, "Unknown pressure is not pressure:\n{all}");
    assert_eq!(down[0].what, "not ready (Ready=Unknown)");
    assert_eq!(down[0].severity, Severity::Critical);
    assert_eq!(
        down[0].detail.as_deref(),
        Some("NodeStatusUnknown: Kubelet stopped posting node status.")
    );
    assert_eq!(minutes_ago(now, down[0]), 14);
    assert_eq!(down[0].entity.host.as_deref(), Some("worker-3"));
    let pressure = about(&facts, "worker-2");
    assert_eq!(pressure.len(), 1, "{all}");
    assert_eq!(pressure[0].what, "MemoryPressure");
    assert_eq!(minutes_ago(now, pressure[0]), 25);
    assert_eq!(pressure[0].source.tool, "k8s_nodes");
}

#[tokio::test]
async fn stuck_and_short_rollouts_are_reported_and_a_rollout_in_the_window_is_a_change_with_its_image()
 {
    let (facts, _, now) = sweep(&[], 20).await;
    let all = lines(&facts);
    let checkout = about(&facts, "shop/checkout");
    assert_eq!(checkout.len(), 2, "{all}");
    let stuck = checkout
        .iter()
        .find(|f| f.class == FactClass::Kubernetes)
        .unwrap();
    assert_eq!(
        stuck.what,
        "rollout stuck (ProgressDeadlineExceeded), available"
    );
    assert_eq!(
        (stuck.value.unwrap().value, stuck.limit.unwrap().value),
        (1.0, 2.0)
    );
    assert_eq!(minutes_ago(now, stuck), 8);
    assert!(
        stuck
            .detail
            .as_deref()
            .unwrap()
            .contains("has timed out progressing"),
        "{all}"
    );
    assert_eq!(stuck.source.tool, "k8s_workloads");
    assert_eq!(stuck.source.arguments["namespace"], "shop");

    let change = checkout
        .iter()
        .find(|f| f.class == FactClass::Change)
        .unwrap();
    assert_eq!(change.what, "rolled out revision");
    assert_eq!(change.value.unwrap().value, 4.0);
    assert_eq!(minutes_ago(now, change), 18);
    assert_eq!(
        change.detail.as_deref(),
        Some(
            "image checkout: registry.example.com/shop/checkout:2.4.0 → registry.example.com/shop/checkout:2.4.1"
        )
    );
    assert!(
        about(&facts, "shop/api").is_empty(),
        "a rollout 10 days ago is no change:\n{all}"
    );

    let loki = about(&facts, "monitoring/loki");
    assert_eq!(loki.len(), 1, "{all}");
    assert_eq!(loki[0].what, "replicas available");
    assert_eq!(
        (loki[0].value.unwrap().value, loki[0].limit.unwrap().value),
        (0.0, 1.0)
    );
    let ds = about(&facts, "monitoring/node-exporter");
    assert_eq!(ds.len(), 1, "{all}");
    assert_eq!(ds[0].entity.labels["daemonset"], "node-exporter");
    assert!(about(&facts, "media/jellyfin").is_empty(), "{all}");
}

#[tokio::test]
async fn a_cluster_that_refuses_the_service_account_is_a_note_per_analyzer_not_a_failure() {
    sre_agent::install_crypto_provider();
    let fake = crate::support::fake_kube::FakeKube::start().await;
    fake.set_forbidden(true);
    let dir = tempfile::tempdir().unwrap();
    let config = sre_agent::config::KubernetesConfig {
        enabled: true,
        kubeconfig: Some(fake.write_kubeconfig(dir.path())),
        ..Default::default()
    };
    let client =
        std::sync::Arc::new(sre_agent::integrations::kubernetes::KubeClient::new(&config).unwrap());
    let analyzers = sre_agent::analyze::kube::analyzers(client);
    let every = analyzers.len();
    let report = Sweep::of(analyzers).run(Scope::new(Utc::now(), None)).await;
    assert!(report.facts.is_empty());
    // A note for each analyzer.
    assert_eq!(report.notes.len(), every, "{:?}", report.notes);
    assert!(every >= 6);
    assert!(
        report.notes[0].starts_with("kube_pods: skipped (Kubernetes API denied list pods"),
        "{:?}",
        report.notes
    );
    assert!(
        report.notes.iter().all(|n| n.contains("403 Forbidden")),
        "{:?}",
        report.notes
    );
}

/// The objects of a shipped eval scenario's cluster, its time placeholders filled.
fn scenario_objects(name: &str, now: DateTime<Utc>) -> Vec<serde_json::Value> {
    let path = format!(
        "{}/eval/scenarios/{name}/kubernetes.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(path).unwrap();
    let text = sre_agent::eval::scenario::fill_placeholders(&text, now).unwrap();
    serde_json::from_str(&text).unwrap()
}

#[tokio::test]
async fn the_shipped_scenarios_clusters_give_the_crash_loop_and_the_oom_kill_they_are_about() {
    let now = Utc::now();
    for (scenario, pod, what) in [
        (
            "crashloop-pod",
            "media/worker-5d8c7b9f6-qz4lm",
            "container worker CrashLoopBackOff, restarts",
        ),
        (
            "oom-killed-pod",
            "shop/api-6c9f7b8d4-k2x7p",
            "container api OOMKilled at its memory limit",
        ),
    ] {
        let cluster = Cluster::start(scenario_objects(scenario, now), &[]).await;
        let report = Sweep::of(sre_agent::analyze::kube::analyzers(cluster.client.clone()))
            .run(Scope::new(now, Some(now - TimeDelta::minutes(10))))
            .await;
        assert!(report.notes.is_empty(), "{scenario}: {:?}", report.notes);
        let all = lines(&report.facts);
        let found = about(&report.facts, pod);
        assert_eq!(found.len(), 1, "{scenario}:\n{all}");
        assert_eq!(found[0].what, what, "{scenario}:\n{all}");
        assert_eq!(
            report
                .facts
                .iter()
                .filter(|f| f.entity.kind == "pod")
                .count(),
            1,
            "{scenario}: only the pod it is about:\n{all}"
        );
    }
}

/// A Warning event about a non-pod object, first and last seen `first`/`last` minutes ago.
fn object_event(
    now: DateTime<Utc>,
    (kind, ns, name): (&str, &str, &str),
    reason: &str,
    message: &str,
    (first, last, count): (i64, i64, u32),
) -> serde_json::Value {
    let at =
        |m: i64| (now - TimeDelta::minutes(m)).to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    serde_json::json!({"kind": "Event",
        "metadata": {"name": format!("{name}.{reason}.{count}"), "namespace": ns},
        "involvedObject": {"kind": kind, "namespace": ns, "name": name},
        "reason": reason, "message": message, "type": "Warning",
        "source": {"component": "controller"},
        "firstTimestamp": at(first), "lastTimestamp": at(last), "count": count})
}

#[tokio::test]
async fn what_controllers_complained_about_other_objects_is_reported_once_per_object_and_reason() {
    let now = Utc::now();
    let mut o = objects(now);
    let quota = "pods \"builder-5f6c8d9b7-x2k9q\" is forbidden: exceeded quota: ci-quota, requested: limits.memory=2Gi, used: limits.memory=8Gi, limited: limits.memory=8Gi";
    o.push(object_event(
        now,
        ("ReplicaSet", "ci", "builder-5f6c8d9b7"),
        "FailedCreate",
        quota,
        (40, 2, 17),
    ));
    o.push(object_event(
        now,
        ("ReplicaSet", "ci", "builder-5f6c8d9b7"),
        "FailedCreate",
        quota,
        (3, 1, 4),
    ));
    o.push(object_event(
        now,
        ("PersistentVolumeClaim", "media", "library"),
        "ProvisioningFailed",
        "storageclass.storage.k8s.io \"fast\" not found",
        (12, 5, 3),
    ));
    // Long over before the window began.
    o.push(object_event(
        now,
        ("Job", "ops", "nightly-dump"),
        "BackoffLimitExceeded",
        "Job has reached the specified backoff limit",
        (3000, 2900, 1),
    ));
    let cluster = Cluster::start(o, &[]).await;
    let report = cluster.sweep(now, 30).await;
    let facts: Vec<&Fact> = report
        .facts
        .iter()
        .filter(|f| f.analyzer == "kube_events")
        .collect();
    let all = lines(&report.facts);
    assert_eq!(facts.len(), 2, "{all}");
    let rs = facts
        .iter()
        .find(|f| f.entity.name == "ci/builder-5f6c8d9b7")
        .expect(&all);
    assert_eq!(rs.entity.kind, "replicaset");
    assert_eq!(rs.entity.labels["deployment"], "builder");
    assert!(
        rs.what.starts_with("FailedCreate (21×): pods "),
        "{}",
        rs.what
    );
    assert!(rs.what.contains("exceeded quota: ci-quota"), "{}", rs.what);
    assert_eq!(minutes_ago(now, rs), 40);
    assert_eq!(rs.source.tool, "k8s_events");
    let pvc = facts
        .iter()
        .find(|f| f.entity.kind == "persistentvolumeclaim")
        .expect(&all);
    assert_eq!(pvc.entity.name, "media/library");
    assert!(
        pvc.what.starts_with("ProvisioningFailed (3×): "),
        "{}",
        pvc.what
    );
    // Pods' own events stay with their pod's fact.
    assert!(
        report
            .facts
            .iter()
            .all(|f| f.analyzer != "kube_events" || f.entity.kind != "pod")
    );
}

#[tokio::test]
async fn a_rollout_whose_new_pod_logs_errors_says_so_and_is_a_warning() {
    let now = Utc::now();
    let logs = [(
        "shop/checkout-84d5f7b9c6-w7x2k".to_string(),
        "listening on :8080\nERROR checkout: payment provider rejected the request: column orders.voucher does not exist\nGET /healthz 200\n".to_string(),
    )]
    .into();
    let cluster = Cluster::with_logs(objects(now), &[], logs).await;
    let report = cluster.sweep(now, 20).await;
    let all = lines(&report.facts);
    let change = report
        .facts
        .iter()
        .find(|f| f.what == "rolled out revision")
        .expect(&all);
    assert_eq!(change.severity, Severity::Warning, "{all}");
    let detail = change.detail.as_deref().unwrap();
    assert!(
        detail.ends_with("; its new pod checkout-84d5f7b9c6-w7x2k logs: listening on :8080 | ERROR checkout: payment provider rejected the request: column orders.voucher does not exist"),
        "{detail}"
    );
}
