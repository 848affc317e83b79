//! The Kubernetes analyzers of what serves and what runs on a schedule, against the fake
//! API server (`kube_cluster`): a Service whose selector a chart upgrade left behind (its
//! pods now carry the value under `app.kubernetes.io/component`), one whose backend is
//! unready, and healthy ones; a CronJob under `Forbid` whose Job hangs for two days (the
//! controller's `JobAlreadyActive` events beside it), one whose short run is fine, and an
//! hourly `Allow` one whose runs pile up.

use chrono::{DateTime, Utc};
use serde_json::{Value, json};
use sre_agent::analyze::{Fact, Severity};

use super::kube_cluster::{Cluster, ago};
use super::world::lines;

fn pod(now: DateTime<Utc>, ns: &str, name: &str, labels: Value, ready: bool, mins: i64) -> Value {
    let t = ago(now, mins);
    json!({"kind": "Pod", "metadata": {"name": name, "namespace": ns, "labels": labels,
            "creationTimestamp": t, "uid": format!("uid-{name}")},
        "spec": {"nodeName": "edge-1", "containers": [{"name": "main", "image": "r/x:1"}]},
        "status": {"phase": "Running", "startTime": t,
            "conditions": [{"type": "Ready", "status": if ready { "True" } else { "False" },
                "lastTransitionTime": t}],
            "containerStatuses": [{"name": "main", "ready": ready, "restartCount": 0, "image": "r/x:1",
                "imageID": "r/x@sha256:1", "started": true, "state": {"running": {"startedAt": t}}}]}})
}

fn service(ns: &str, name: &str, selector: Value) -> Value {
    json!({"kind": "Service", "metadata": {"name": name, "namespace": ns,
            "creationTimestamp": "2026-01-10T09:00:00Z"},
        "spec": {"type": "ClusterIP", "clusterIP": "10.43.7.7", "selector": selector,
            "ports": [{"name": "http", "port": 80, "targetPort": 8080, "protocol": "TCP"}]}})
}

fn cronjob(ns: &str, name: &str, schedule: &str, policy: &str, active: &[&str]) -> Value {
    let refs: Vec<Value> = active
        .iter()
        .map(|j| json!({"apiVersion": "batch/v1", "kind": "Job", "name": j, "namespace": ns}))
        .collect();
    json!({"kind": "CronJob", "metadata": {"name": name, "namespace": ns},
        "spec": {"schedule": schedule, "concurrencyPolicy": policy, "suspend": false,
            "jobTemplate": {"spec": {"template": {"spec": {"restartPolicy": "OnFailure",
                "containers": [{"name": name, "image": "r/job:1"}]}}}}},
        "status": {"active": refs}})
}

fn job(now: DateTime<Utc>, ns: &str, name: &str, owner: &str, mins: i64) -> Value {
    json!({"kind": "Job", "metadata": {"name": name, "namespace": ns,
            "ownerReferences": [{"apiVersion": "batch/v1", "kind": "CronJob", "name": owner,
                "uid": format!("uid-{owner}"), "controller": true}]},
        "spec": {"template": {"spec": {"containers": [{"name": owner, "image": "r/job:1"}]}}},
        "status": {"startTime": ago(now, mins), "active": 1}})
}

fn objects(now: DateTime<Utc>) -> Vec<Value> {
    let chart =
        json!({"app.kubernetes.io/component": "paperless", "app.kubernetes.io/part-of": "docs"});
    vec![
        // docs/paperless: upgraded 25 minutes ago; its Service still selects tier=paperless.
        service("docs", "paperless", json!({"tier": "paperless"})),
        pod(
            now,
            "docs",
            "paperless-6f9d8c7b5d-2xk4p",
            chart.clone(),
            true,
            25,
        ),
        pod(now, "docs", "paperless-6f9d8c7b5d-9wq7z", chart, true, 24),
        // A sibling named like it: only a weak match, not quoted beside the relabelling.
        pod(
            now,
            "docs",
            "paperless-redis-0",
            json!({"tier": "paperless-redis"}),
            true,
            9000,
        ),
        service(
            "docs",
            "paperless-redis",
            json!({"tier": "paperless-redis"}),
        ),
        // iot/zigbee2mqtt: its one pod matches but is not ready.
        service("iot", "zigbee2mqtt", json!({"app": "zigbee2mqtt"})),
        pod(
            now,
            "iot",
            "zigbee2mqtt-0",
            json!({"app": "zigbee2mqtt"}),
            false,
            12,
        ),
        // Healthy.
        service("iot", "mosquitto", json!({"app": "mosquitto"})),
        pod(
            now,
            "iot",
            "mosquitto-0",
            json!({"app": "mosquitto"}),
            true,
            3000,
        ),
        // infra/borg-offsite: Forbid, daily, its Job hung 2 days ago.
        cronjob(
            "infra",
            "borg-offsite",
            "15 2 * * *",
            "Forbid",
            &["borg-offsite-29640135"],
        ),
        job(
            now,
            "infra",
            "borg-offsite-29640135",
            "borg-offsite",
            2 * 1440 + 60,
        ),
        json!({"kind": "Event", "metadata": {"name": "borg-offsite.17f3", "namespace": "infra"},
            "involvedObject": {"kind": "CronJob", "namespace": "infra", "name": "borg-offsite",
                "apiVersion": "batch/v1"},
            "reason": "JobAlreadyActive",
            "message": "Not starting job because prior execution is running and concurrency policy is Forbid",
            "source": {"component": "cronjob-controller"}, "type": "Normal", "count": 2,
            "firstTimestamp": ago(now, 1440), "lastTimestamp": ago(now, 60)}),
        // infra/logrotate: every 15 minutes, the current run started 4 minutes ago.
        cronjob(
            "infra",
            "logrotate",
            "*/15 * * * *",
            "Forbid",
            &["logrotate-29643010"],
        ),
        job(now, "infra", "logrotate-29643010", "logrotate", 4),
        // infra/metrics-rollup: hourly, Allow, a run started 3 h 10 min ago still runs.
        cronjob(
            "infra",
            "metrics-rollup",
            "0 * * * *",
            "Allow",
            &["metrics-rollup-29642820"],
        ),
        job(
            now,
            "infra",
            "metrics-rollup-29642820",
            "metrics-rollup",
            190,
        ),
    ]
}

fn about<'a>(facts: &'a [Fact], analyzer: &str, name: &str) -> Vec<&'a Fact> {
    facts
        .iter()
        .filter(|f| f.analyzer == analyzer && f.entity.name == name)
        .collect()
}

#[tokio::test]
async fn services_without_a_ready_backend_and_cronjobs_held_up_by_a_hung_job_are_reported() {
    let now = Utc::now();
    let cluster = Cluster::start(objects(now), &[]).await;
    let report = cluster.sweep(now, 20).await;
    assert!(report.notes.is_empty(), "{:?}", report.notes);
    let facts = report.facts;
    let all = lines(&facts);

    let paperless = about(&facts, "kube_services", "docs/paperless");
    assert_eq!(paperless.len(), 1, "{all}");
    let f = paperless[0];
    assert_eq!(f.severity, Severity::Critical);
    assert_eq!(f.entity.labels["service"], "paperless");
    let d = f.detail.as_deref().unwrap();
    assert!(d.contains("selector tier=paperless matches no pod"), "{d}");
    assert!(
        d.contains("2 pod(s) (paperless-6f9d8c7b5d-2xk4p, paperless-6f9d8c7b5d-9wq7z, 2 ready) labelled app.kubernetes.io/component=paperless"),
        "{d}"
    );
    assert!(!d.contains("redis"), "{d}");
    assert_eq!((now - f.since.unwrap()).num_minutes(), 25, "{all}");
    assert_eq!(f.source.tool, "k8s_list_pods");

    let zigbee = about(&facts, "kube_services", "iot/zigbee2mqtt");
    assert_eq!(zigbee.len(), 1, "{all}");
    assert!(
        zigbee[0]
            .detail
            .as_deref()
            .unwrap()
            .contains("matches 1 pod(s), none ready (zigbee2mqtt-0)"),
        "{all}"
    );
    assert!(
        about(&facts, "kube_services", "iot/mosquitto").is_empty(),
        "{all}"
    );
    assert!(
        about(&facts, "kube_services", "docs/paperless-redis").is_empty(),
        "{all}"
    );

    let borg = about(&facts, "kube_cronjobs", "infra/borg-offsite");
    assert_eq!(borg.len(), 1, "one fact, the events on it: {all}");
    let f = borg[0];
    assert_eq!(f.severity, Severity::Critical);
    assert_eq!(f.what, "job borg-offsite-29640135 still running after");
    assert_eq!(f.entity.labels["job_name"], "borg-offsite-29640135");
    assert_eq!((now - f.since.unwrap()).num_minutes(), 2 * 1440 + 60);
    let d = f.detail.as_deref().unwrap();
    assert!(d.contains("Forbid: 2 runs due since were skipped"), "{d}");
    assert!(d.contains("JobAlreadyActive ×2"), "{d}");
    assert!(d.contains("prior execution is running"), "{d}");

    assert!(
        about(&facts, "kube_cronjobs", "infra/logrotate").is_empty(),
        "{all}"
    );
    let rollup = about(&facts, "kube_cronjobs", "infra/metrics-rollup");
    assert_eq!(rollup.len(), 1, "{all}");
    assert_eq!(rollup[0].severity, Severity::Warning);
    assert!(
        rollup[0]
            .detail
            .as_deref()
            .unwrap()
            .contains("3 later runs started beside it"),
        "{all}"
    );
}
