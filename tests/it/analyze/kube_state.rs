//! `kube_state_pods` on the real kube-state-metrics capture
//! (tests/fixtures/exporters/kube_state_metrics.prom, a homelab cluster's scrape): every
//! series of it backfilled for three hours as kube-state-metrics serves it, with an
//! incident written over it (a Deployment's pod crash-looping on OOM kills for 12 minutes,
//! a pod unschedulable for 9), so the analyzer meets the real pod names, label sets and
//! the two pods that real cluster left Pending.

use sre_agent::analyze::{Fact, Severity};

use super::exposition::exposition;
use super::world::{SeriesDef, World, lines, series};

const CAPTURE: &str = include_str!("../../fixtures/exporters/kube_state_metrics.prom");

/// Every series of the capture, as kube-state-metrics at `instance` serves it, constant
/// over the history, except those `incident` replaces (same name and labels).
pub(super) fn capture_with(incident: Vec<SeriesDef>) -> Vec<SeriesDef> {
    let mut defs: Vec<SeriesDef> = Vec::new();
    for (name, mut labels, value) in exposition(CAPTURE) {
        labels.insert("job".into(), "kube-state-metrics".into());
        labels.insert("instance".into(), "10.42.0.9:8080".into());
        let replaced = incident
            .iter()
            .any(|d| d.name == name && d.labels == labels);
        if !replaced {
            defs.push(SeriesDef {
                name,
                labels,
                value: Box::new(move |_| Some(value)),
                every: None,
            });
        }
    }
    defs.extend(incident);
    defs
}

pub(super) fn ksm(
    name: &str,
    labels: &[(&str, &str)],
    value: impl Fn(i64) -> Option<f64> + 'static,
) -> SeriesDef {
    let mut all = labels.to_vec();
    all.extend([
        ("job", "kube-state-metrics"),
        ("instance", "10.42.0.9:8080"),
    ]);
    series(name, &all, value)
}

#[tokio::test]
async fn pods_crash_looping_unschedulable_or_left_pending_are_found_in_real_kube_state_metrics() {
    let ns = "argocd";
    let pod = "argocd-server-7b4ff9897b-zccp9";
    let c = "argocd-server";
    let uid = "ba505fa9-e715-4025-869a-31b1fd9f4806";
    let mut incident = vec![
        ksm(
            "kube_pod_info",
            &[
                ("namespace", ns),
                ("pod", pod),
                ("uid", uid),
                ("node", "k3s-worker-2"),
                ("created_by_kind", "ReplicaSet"),
                ("created_by_name", "argocd-server-7b4ff9897b"),
                ("host_ip", "10.0.0.12"),
            ],
            |_| Some(1.0),
        ),
        ksm(
            "kube_pod_container_status_waiting_reason",
            &[
                ("namespace", ns),
                ("pod", pod),
                ("uid", uid),
                ("container", c),
                ("reason", "CrashLoopBackOff"),
            ],
            |ago| (ago <= 720).then_some(1.0),
        ),
        ksm(
            "kube_pod_container_status_last_terminated_reason",
            &[
                ("namespace", ns),
                ("pod", pod),
                ("uid", uid),
                ("container", c),
                ("reason", "OOMKilled"),
            ],
            |ago| (ago <= 840).then_some(1.0),
        ),
        ksm(
            "kube_pod_container_status_restarts_total",
            &[
                ("namespace", ns),
                ("pod", pod),
                ("uid", uid),
                ("container", c),
            ],
            |ago| {
                Some(if ago > 840 {
                    0.0
                } else {
                    ((840 - ago) / 150) as f64
                })
            },
        ),
        ksm(
            "kube_pod_container_resource_limits",
            &[
                ("namespace", ns),
                ("pod", pod),
                ("uid", uid),
                ("container", c),
                ("node", "k3s-worker-2"),
                ("resource", "memory"),
                ("unit", "byte"),
            ],
            |_| Some(268435456.0),
        ),
    ];
    // A pod created 9 minutes ago that no node can take.
    let (tns, tpod, tuid) = (
        "media",
        "transcoder-5f6d7c8b9-qk4wz",
        "5d0c1e7a-1111-4222-8333-944455556666",
    );
    incident.extend([
        ksm(
            "kube_pod_status_phase",
            &[
                ("namespace", tns),
                ("pod", tpod),
                ("uid", tuid),
                ("phase", "Pending"),
            ],
            |ago| (ago <= 540).then_some(1.0),
        ),
        ksm(
            "kube_pod_status_unschedulable",
            &[("namespace", tns), ("pod", tpod), ("uid", tuid)],
            |ago| (ago <= 530).then_some(1.0),
        ),
        ksm(
            "kube_pod_container_resource_requests",
            &[
                ("namespace", tns),
                ("pod", tpod),
                ("uid", tuid),
                ("container", "ffmpeg"),
                ("resource", "cpu"),
                ("unit", "core"),
            ],
            |ago| (ago <= 540).then_some(1.5),
        ),
        ksm(
            "kube_pod_container_resource_requests",
            &[
                ("namespace", tns),
                ("pod", tpod),
                ("uid", tuid),
                ("container", "uploader"),
                ("resource", "cpu"),
                ("unit", "core"),
            ],
            |ago| (ago <= 540).then_some(0.5),
        ),
        ksm(
            "kube_pod_container_resource_requests",
            &[
                ("namespace", tns),
                ("pod", tpod),
                ("uid", tuid),
                ("container", "ffmpeg"),
                ("resource", "memory"),
                ("unit", "byte"),
            ],
            |ago| (ago <= 540).then_some(8.0 * 1024.0 * 1024.0 * 1024.0),
        ),
    ]);
    let Some(world) = World::build(&capture_with(incident), 3 * 3600, 60).await else {
        return;
    };
    let (facts, notes) = world.sweep(Some(20 * 60)).await;
    assert!(notes.is_empty(), "{notes:?}");
    let mut pods: Vec<&Fact> = facts
        .iter()
        .filter(|f| f.analyzer == "kube_state_pods")
        .collect();
    pods.sort_by(|a, b| a.entity.name.cmp(&b.entity.name));
    let all = lines(&facts);
    let names: Vec<&str> = pods.iter().map(|f| f.entity.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "argocd/argocd-server-7b4ff9897b-zccp9",
            "media/transcoder-5f6d7c8b9-qk4wz",
            "monitoring/loki-0",
            "monitoring/tempo-0"
        ],
        "{all}"
    );
    let now = chrono::Utc::now();
    let mins = |f: &Fact| (now - f.since.expect("a since")).num_minutes();

    let crash = pods[0];
    assert_eq!(crash.what, "container argocd-server CrashLoopBackOff");
    assert_eq!(crash.severity, Severity::Critical);
    assert_eq!(
        crash.detail.as_deref(),
        Some("last exit OOMKilled, memory limit 256.0 MiB")
    );
    assert_eq!(crash.entity.host.as_deref(), Some("k3s-worker-2"));
    assert_eq!(crash.entity.labels["deployment"], "argocd-server");
    assert!((11..=13).contains(&mins(crash)), "{all}");
    assert_eq!(
        crash.source.arguments["query"],
        "kube_pod_container_status_waiting_reason{namespace=\"argocd\",pod=\"argocd-server-7b4ff9897b-zccp9\",container=\"argocd-server\"}"
    );

    let unsched = pods[1];
    assert_eq!(unsched.what, "unschedulable, requests cpu 2, memory");
    assert_eq!(unsched.value.unwrap().value, 8.0 * 1024.0 * 1024.0 * 1024.0);
    assert!((8..=10).contains(&mins(unsched)), "{all}");

    for pending in &pods[2..] {
        assert_eq!(pending.what, "Pending", "{all}");
        assert_eq!(pending.severity, Severity::Warning);
        assert_eq!(
            pending.since, None,
            "Pending since before the window:\n{all}"
        );
    }
}

#[tokio::test]
async fn nodes_in_bad_conditions_and_stuck_or_short_workloads_from_kube_state_metrics() {
    let mut incident = Vec::new();
    for node in ["worker-1", "worker-2", "worker-3"] {
        for condition in [
            "Ready",
            "MemoryPressure",
            "DiskPressure",
            "PIDPressure",
            "NetworkUnavailable",
        ] {
            for status in ["true", "false", "unknown"] {
                // worker-3 stopped reporting 14 minutes ago; worker-2 is short of memory
                // for 25 minutes; every other condition is as it should be.
                let healthy = if condition == "Ready" {
                    "true"
                } else {
                    "false"
                };
                let bad = match (node, condition) {
                    ("worker-3", _) => Some(("unknown", 840)),
                    ("worker-2", "MemoryPressure") => Some(("true", 1500)),
                    _ => None,
                };
                let value = move |ago: i64| {
                    let now_status = match bad {
                        Some((s, since)) if ago <= since => s,
                        _ => healthy,
                    };
                    Some(if now_status == status { 1.0 } else { 0.0 })
                };
                incident.push(ksm(
                    "kube_node_status_condition",
                    &[("node", node), ("condition", condition), ("status", status)],
                    value,
                ));
            }
        }
    }
    let d = |name: &str, ns: &str, obj: &str, v: Box<dyn Fn(i64) -> Option<f64>>| SeriesDef {
        name: name.to_string(),
        labels: [
            ("namespace", ns),
            ("deployment", obj),
            ("job", "kube-state-metrics"),
            ("instance", "10.42.0.9:8080"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect(),
        value: v,
        every: None,
    };
    // shop/checkout: a rollout 18 minutes ago whose new pods never came up; shop/api: fine.
    incident.extend([
        d(
            "kube_deployment_spec_replicas",
            "shop",
            "checkout",
            Box::new(|_| Some(2.0)),
        ),
        d(
            "kube_deployment_status_replicas_updated",
            "shop",
            "checkout",
            Box::new(|ago| Some(if ago <= 1080 { 1.0 } else { 2.0 })),
        ),
        d(
            "kube_deployment_status_replicas_available",
            "shop",
            "checkout",
            Box::new(|ago| Some(if ago <= 1080 { 1.0 } else { 2.0 })),
        ),
        d(
            "kube_deployment_metadata_generation",
            "shop",
            "checkout",
            Box::new(|ago| Some(if ago <= 1080 { 4.0 } else { 3.0 })),
        ),
        d(
            "kube_deployment_spec_replicas",
            "shop",
            "api",
            Box::new(|_| Some(3.0)),
        ),
        d(
            "kube_deployment_status_replicas_updated",
            "shop",
            "api",
            Box::new(|_| Some(3.0)),
        ),
        d(
            "kube_deployment_status_replicas_available",
            "shop",
            "api",
            Box::new(|_| Some(3.0)),
        ),
        d(
            "kube_deployment_metadata_generation",
            "shop",
            "api",
            Box::new(|_| Some(7.0)),
        ),
    ]);
    for (status, since) in [("true", None), ("false", Some(480)), ("unknown", None)] {
        let mut labels = vec![
            ("namespace", "shop"),
            ("deployment", "checkout"),
            ("condition", "Progressing"),
            ("status", status),
        ];
        incident.push(ksm(
            "kube_deployment_status_condition",
            &labels,
            move |ago| {
                let stuck = ago <= 480;
                Some(match (since, status) {
                    (Some(_), _) => f64::from(u8::from(stuck)),
                    (None, "true") => f64::from(u8::from(!stuck)),
                    _ => 0.0,
                })
            },
        ));
        labels[1] = ("deployment", "api");
        incident.push(ksm(
            "kube_deployment_status_condition",
            &labels,
            move |_| Some(f64::from(u8::from(status == "true"))),
        ));
    }
    let sts = [("namespace", "monitoring"), ("statefulset", "loki")];
    incident.extend([
        ksm("kube_statefulset_replicas", &sts, |_| Some(1.0)),
        ksm("kube_statefulset_status_replicas_updated", &sts, |_| {
            Some(1.0)
        }),
        ksm("kube_statefulset_status_replicas_ready", &sts, |ago| {
            Some(if ago <= 2400 { 0.0 } else { 1.0 })
        }),
        ksm("kube_statefulset_metadata_generation", &sts, |_| Some(2.0)),
    ]);
    let ds = [("namespace", "monitoring"), ("daemonset", "node-exporter")];
    incident.extend([
        ksm(
            "kube_daemonset_status_desired_number_scheduled",
            &ds,
            |_| Some(3.0),
        ),
        ksm(
            "kube_daemonset_status_updated_number_scheduled",
            &ds,
            |_| Some(3.0),
        ),
        ksm("kube_daemonset_status_number_available", &ds, |ago| {
            Some(if ago <= 840 { 2.0 } else { 3.0 })
        }),
        ksm("kube_daemonset_metadata_generation", &ds, |_| Some(1.0)),
    ]);
    let Some(world) = World::build(&capture_with(incident), 3 * 3600, 60).await else {
        return;
    };
    let (facts, notes) = world.sweep(Some(20 * 60)).await;
    assert!(notes.is_empty(), "{notes:?}");
    let all = lines(&facts);
    let now = chrono::Utc::now();
    let mins = |f: &Fact| (now - f.since.expect("a since")).num_minutes();
    let find = |analyzer: &str, name: &str| -> Vec<&Fact> {
        facts
            .iter()
            .filter(|f| f.analyzer == analyzer && f.entity.name == name)
            .collect()
    };

    assert_eq!(
        facts
            .iter()
            .filter(|f| f.analyzer == "kube_state_nodes")
            .count(),
        2,
        "{all}"
    );
    let down = find("kube_state_nodes", "worker-3");
    assert_eq!(down[0].what, "not ready (Ready=unknown)", "{all}");
    assert!((13..=15).contains(&mins(down[0])), "{all}");
    let pressure = find("kube_state_nodes", "worker-2");
    assert_eq!(pressure[0].what, "MemoryPressure", "{all}");
    assert!((24..=26).contains(&mins(pressure[0])), "{all}");

    let checkout = find("kube_state_rollouts", "shop/checkout");
    assert_eq!(checkout.len(), 1, "{all}");
    let stuck = checkout[0];
    assert_eq!(stuck.severity, Severity::Critical);
    assert_eq!(stuck.what, "rollout stuck (Progressing=False), available");
    assert_eq!(
        (stuck.value.unwrap().value, stuck.limit.unwrap().value),
        (1.0, 2.0)
    );
    assert!((7..=9).contains(&mins(stuck)), "{all}");
    let loki = find("kube_state_rollouts", "monitoring/loki");
    assert_eq!(loki.len(), 1, "{all}");
    assert_eq!(loki[0].what, "replicas available");
    assert!((39..=41).contains(&mins(loki[0])), "{all}");
    assert_eq!(
        find("kube_state_rollouts", "monitoring/node-exporter").len(),
        1,
        "{all}"
    );
    assert!(find("kube_state_rollouts", "shop/api").is_empty(), "{all}");
}
