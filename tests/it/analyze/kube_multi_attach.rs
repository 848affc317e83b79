//! `kube_pods` on a pod waiting for a ReadWriteOnce volume another pod holds: the rolling
//! update of a Deployment whose new pod, scheduled to another node, cannot attach the
//! volume the old pod still uses. The attach/detach controller's `FailedAttachVolume`
//! event and the kubelet's `FailedMount` timeout, in the API's wire format, served by the
//! eval fake in the realistic cluster of `kube_cluster`. The waiting pod's fact names the
//! holder, its ReplicaSet, node and phase, and ranks as about the holder's node.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde_json::{Value, json};
use sre_agent::analyze::{Fact, Focus, rank};

use super::kube_cluster::{Cluster, ago, container, objects, pod};
use super::world::lines;

const VOLUME: &str = "pvc-4c8e2a19-7d3b-4f6a-9e21-b5d07c3a8f42";
const OLD: &str = "reader-5f6d8c7b9-q7t2m";
const NEW: &str = "reader-7c9d5b6f48-x2x9q";

fn reader(name: &str, rs: &str, node: &str, running: bool, now: DateTime<Utc>, mins: i64) -> Value {
    let image = if running {
        "ghcr.io/books/reader:0.7.1"
    } else {
        "ghcr.io/books/reader:0.8.0"
    };
    let state = match running {
        true => {
            json!({"name": "reader", "ready": true, "restartCount": 0, "started": true, "image": image,
            "imageID": format!("{image}@sha256:1"), "state": {"running": {"startedAt": ago(now, mins)}}})
        }
        false => {
            json!({"name": "reader", "ready": false, "restartCount": 0, "started": false, "image": image,
            "imageID": "", "state": {"waiting": {"reason": "ContainerCreating"}}})
        }
    };
    let conditions = match running {
        true => {
            json!([{"type": "PodScheduled", "status": "True", "lastTransitionTime": ago(now, mins)},
            {"type": "Ready", "status": "True", "lastTransitionTime": ago(now, mins)}])
        }
        false => {
            json!([{"type": "PodScheduled", "status": "True", "lastTransitionTime": ago(now, mins)},
            {"type": "Initialized", "status": "True", "lastTransitionTime": ago(now, mins)},
            {"type": "Ready", "status": "False", "reason": "ContainersNotReady",
             "message": "containers with unready status: [reader]", "lastTransitionTime": ago(now, mins)}])
        }
    };
    pod(
        "books",
        name,
        ("ReplicaSet", rs),
        Some(node),
        json!({"containers": [container("reader", image, json!({"cpu": "100m", "memory": "256Mi"}), json!({"memory": "512Mi"}))],
            "volumes": [{"name": "config", "persistentVolumeClaim": {"claimName": "reader-config"}}]}),
        json!({"phase": if running { "Running" } else { "Pending" }, "startTime": ago(now, mins),
            "hostIP": "10.0.0.2", "conditions": conditions, "containerStatuses": [state]}),
    )
}

fn event(
    pod: &str,
    reason: &str,
    component: &str,
    message: &str,
    (first, last, count): (&str, &str, u32),
) -> Value {
    json!({"kind": "Event", "metadata": {"name": format!("{pod}.{reason}"), "namespace": "books"},
        "involvedObject": {"kind": "Pod", "namespace": "books", "name": pod, "apiVersion": "v1",
            "uid": format!("uid-{pod}")},
        "reason": reason, "message": message, "type": "Warning", "source": {"component": component},
        "reportingComponent": component, "firstTimestamp": first, "lastTimestamp": last, "count": count})
}

fn rollout(now: DateTime<Utc>) -> Vec<Value> {
    let attach = format!(
        "Multi-Attach error for volume \"{VOLUME}\" Volume is already used by pod(s) {OLD}"
    );
    vec![
        reader(OLD, "reader-5f6d8c7b9", "worker-1", true, now, 3000),
        reader(NEW, "reader-7c9d5b6f48", "worker-2", false, now, 9),
        event(
            NEW,
            "FailedAttachVolume",
            "attachdetach-controller",
            &attach,
            (&ago(now, 9), &ago(now, 9), 1),
        ),
        event(
            NEW,
            "FailedMount",
            "kubelet",
            "Unable to attach or mount volumes: unmounted volumes=[config], unattached volumes=[config kube-api-access-7xk2p]: timed out waiting for the condition",
            (&ago(now, 7), &ago(now, 1), 4),
        ),
        // A pod that once waited the same way and runs now: its error is history.
        reader(
            "shelf-6d9f8b7c5-k4m2p",
            "shelf-6d9f8b7c5",
            "worker-3",
            true,
            now,
            200,
        ),
        event(
            "shelf-6d9f8b7c5-k4m2p",
            "FailedAttachVolume",
            "attachdetach-controller",
            "Multi-Attach error for volume \"pvc-9\" Volume is already used by pod(s) shelf-5c8e7a6b4-z9x8w",
            (&ago(now, 210), &ago(now, 205), 1),
        ),
    ]
}

async fn sweep(now: DateTime<Utc>) -> Vec<Fact> {
    let mut o = objects(now);
    o.extend(rollout(now));
    let cluster = Cluster::start(o, &[]).await;
    let report = cluster.sweep(now, 10).await;
    assert!(report.notes.is_empty(), "{:?}", report.notes);
    report.facts
}

#[tokio::test]
async fn a_pod_waiting_for_a_volume_names_the_pod_of_the_older_replicaset_that_holds_it() {
    let now = Utc::now();
    let facts = sweep(now).await;
    let all = lines(&facts);
    let waiting: Vec<&Fact> = facts
        .iter()
        .filter(|f| f.entity.name == format!("books/{NEW}"))
        .collect();
    assert_eq!(waiting.len(), 1, "{all}");
    let f = waiting[0];
    assert_eq!(
        f.what, "container reader not ready, waiting: ContainerCreating",
        "{all}"
    );
    let detail = f.detail.as_deref().unwrap();
    assert!(
        detail.starts_with(&format!(
            "Multi-Attach error for volume \"{VOLUME}\": held by pod {OLD} of the older ReplicaSet reader-5f6d8c7b9 (Deployment reader) on node worker-1, still Running; FailedMount: Unable to attach or mount volumes"
        )),
        "{detail}"
    );
    assert_eq!(f.entity.labels["persistentvolume"], VOLUME);
    let held: Vec<&str> = f.related.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(held, [format!("books/{OLD}")]);
    assert_eq!(f.related[0].host.as_deref(), Some("worker-1"));

    // The running pods (the holder, and one whose error is history) have no such fact.
    assert!(
        facts.iter().all(|f| f.entity.name != format!("books/{OLD}")
            && !f.entity.name.starts_with("books/shelf")),
        "{all}"
    );

    // An alert about the holder's node is about the waiting pod's fact too.
    let labels = BTreeMap::from([
        ("alertname".to_string(), "NodeDiskIOSaturation".to_string()),
        ("instance".to_string(), "worker-1:9100".to_string()),
    ]);
    let ranked = rank(facts.clone(), &Focus::alert(&labels, Some(now)));
    let r = ranked
        .iter()
        .find(|r| r.fact.entity.name == format!("books/{NEW}"))
        .unwrap();
    assert!(r.about_trigger, "{all}");
}
