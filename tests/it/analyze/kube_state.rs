//! `kube_state_pods` on the real kube-state-metrics capture
//! (tests/fixtures/exporters/kube_state_metrics.prom, a homelab cluster's scrape): every
//! series of it backfilled for three hours as kube-state-metrics serves it, with an
//! incident written over it (a Deployment's pod crash-looping on OOM kills for 12 minutes,
//! a pod unschedulable for 9), so the analyzer meets the real pod names, label sets and
//! the two pods that real cluster left Pending.

use std::collections::BTreeMap;

use sre_agent::analyze::{Fact, Severity};

use super::world::{SeriesDef, World, lines, series};

const CAPTURE: &str = include_str!("../../fixtures/exporters/kube_state_metrics.prom");

/// The series of an exposition text as `(name, labels, value)`: comments and blank lines
/// skipped, label values unescaped.
pub fn exposition(text: &str) -> Vec<(String, BTreeMap<String, String>, f64)> {
    let mut out = Vec::new();
    for line in text.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (name, rest) = match line.find(['{', ' ']) {
            Some(i) => line.split_at(i),
            None => continue,
        };
        let mut labels = BTreeMap::new();
        let mut rest = rest;
        if let Some(body) = rest.strip_prefix('{') {
            let mut chars = body.char_indices();
            let mut key = String::new();
            let mut end = body.len();
            while let Some((i, c)) = chars.next() {
                match c {
                    '}' => {
                        end = i + 1;
                        break;
                    }
                    ',' | ' ' => {}
                    '=' => {
                        chars.next(); // the opening quote
                        let mut value = String::new();
                        while let Some((_, c)) = chars.next() {
                            match c {
                                '\\' => match chars.next().map(|(_, c)| c) {
                                    Some('n') => value.push('\n'),
                                    Some(other) => value.push(other),
                                    None => {}
                                },
                                '"' => break,
                                c => value.push(c),
                            }
                        }
                        labels.insert(std::mem::take(&mut key), value);
                    }
                    c => key.push(c),
                }
            }
            rest = &body[end..];
        }
        let Some(value) = rest
            .split_whitespace()
            .next()
            .and_then(|v| v.parse::<f64>().ok())
        else {
            continue;
        };
        out.push((name.to_string(), labels, value));
    }
    out
}

/// Every series of the capture, as kube-state-metrics at `instance` serves it, constant
/// over the history, except those `incident` replaces (same name and labels).
fn capture_with(incident: Vec<SeriesDef>) -> Vec<SeriesDef> {
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
            });
        }
    }
    defs.extend(incident);
    defs
}

fn ksm(
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

#[test]
fn the_exposition_reader_keeps_every_series_of_the_capture_with_its_labels() {
    let s = exposition(CAPTURE);
    assert_eq!(s.len(), 265);
    let (name, labels, value) = &s[30];
    assert_eq!(name, "kube_pod_status_phase");
    assert_eq!(labels["namespace"], "monitoring");
    assert_eq!(*value, 0.0);
    let tricky = exposition("m{a=\"x\\\"y,z}\",b=\"\"} 2.5 1700000000\n");
    assert_eq!(tricky[0].1["a"], "x\"y,z}");
    assert_eq!(tricky[0].1["b"], "");
    assert_eq!(tricky[0].2, 2.5);
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
