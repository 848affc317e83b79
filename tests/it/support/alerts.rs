//! Helpers for alert webhook tests: payload builders from the reference fixtures, HMAC
//! signing as Grafana does it, and a way to read back investigations over the API.

use std::time::Duration;

use hmac::{Hmac, Mac};
use serde_json::{Value, json};
use sha2::Sha256;

use super::eventually;

pub const GRAFANA_FIRING: &str = include_str!("../fixtures/grafana-webhook-firing.json");
pub const GRAFANA8_MIXED: &str = include_str!("../fixtures/grafana8-webhook-mixed.json");
pub const AM_FIRING: &str = include_str!("../fixtures/alertmanager-webhook-firing.json");

/// An Alertmanager payload with `n` alerts spread over `instances` instances.
pub fn am_storm(n: usize, instances: usize, status: &str) -> Value {
    let alerts: Vec<Value> = (0..n)
        .map(|i| {
            json!({"status": status,
                "labels": {"alertname": "NodeDown", "instance": format!("host{}", i % instances),
                           "replica": i.to_string(), "team": "Ünïcødé"},
                "annotations": {"summary": "node down"},
                "startsAt": "2026-11-22T20:45:24.847Z", "endsAt": "0001-01-01T00:00:00Z",
                "generatorURL": "http://prom/graph", "fingerprint": format!("{i:016x}")})
        })
        .collect();
    json!({"version": "4", "status": status, "receiver": "sre", "groupKey": "{}:{}",
        "groupLabels": {}, "commonLabels": {}, "commonAnnotations": {},
        "externalURL": "http://am", "truncatedAlerts": 0, "alerts": alerts})
}

/// A Grafana unified-alerting payload: `DiskFillingUp` firing (or resolved) on the
/// instances `host{first}:9100` … `host{first+n-1}:9100`, one alert each.
pub fn grafana_storm(first: usize, n: usize, status: &str) -> Value {
    let alerts: Vec<Value> = (first..first + n)
        .map(|i| {
            json!({"status": status,
                "labels": {"alertname": "DiskFillingUp", "instance": format!("host{i}:9100"),
                           "job": "node", "mountpoint": "/", "severity": "warning",
                           "grafana_folder": "Infra"},
                "annotations": {"summary": "Disk on / is filling up"},
                "startsAt": "2026-11-22T20:45:24Z",
                "endsAt": if status == "firing" { "0001-01-01T00:00:00Z" } else { "2026-11-22T21:45:24Z" },
                "generatorURL": "https://grafana.example.com/alerting/grafana/disk1/view?orgId=1",
                "fingerprint": format!("{i:016x}"),
                "values": {"A": 0.93}, "valueString": "[ var='A' value=0.93 ]"})
        })
        .collect();
    json!({"receiver": "sre-agent", "status": status, "orgId": 1, "alerts": alerts,
        "groupLabels": {"alertname": "DiskFillingUp"}, "commonLabels": {"alertname": "DiskFillingUp"},
        "commonAnnotations": {}, "externalURL": "https://grafana.example.com/", "version": "1",
        "groupKey": "{}:{alertname=\"DiskFillingUp\"}", "truncatedAlerts": 0,
        "title": "[FIRING] DiskFillingUp", "state": "alerting", "message": ""})
}

/// Grafana's signature: hex HMAC-SHA256(secret, ts ":" body).
pub fn grafana_signature(secret: &str, ts: &str, body: &[u8]) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).unwrap();
    mac.update(ts.as_bytes());
    mac.update(b":");
    mac.update(body);
    hex::encode(mac.finalize().into_bytes())
}

pub fn unix_now() -> i64 {
    chrono::Utc::now().timestamp()
}

/// All investigations over the API (bearer `token` if any), newest first.
pub async fn investigations(base: &str, token: Option<&str>) -> Vec<Value> {
    let mut req = reqwest::Client::new().get(format!("{base}/api/v1/investigations?limit=200"));
    if let Some(t) = token {
        req = req.bearer_auth(t);
    }
    let body: Value = req.send().await.unwrap().json().await.unwrap();
    body["items"]
        .as_array()
        .or(body["investigations"].as_array())
        .cloned()
        .unwrap_or_default()
}

/// Waits until every investigation has a final status; returns them.
pub async fn all_final(base: &str, token: Option<&str>, at_least: usize) -> Vec<Value> {
    eventually(Duration::from_secs(30), "final investigations", || async {
        let invs = investigations(base, token).await;
        let done = invs.len() >= at_least
            && invs
                .iter()
                .all(|i| !matches!(i["status"].as_str(), Some("queued" | "running")));
        done.then_some(invs)
    })
    .await
}

/// Waits until every webhook batch the daemon at `base` answered is decided (the alert
/// inbox's backlog is back at 0): a batch answered 202 `deferred` is decided moments later.
pub async fn all_decided(base: &str) {
    eventually(Duration::from_secs(30), "every batch decided", || async {
        let metrics = reqwest::get(format!("{base}/metrics"))
            .await
            .ok()?
            .text()
            .await
            .ok()?;
        metrics
            .lines()
            .any(|l| l == "sre_agent_alert_backlog 0")
            .then_some(())
    })
    .await
}
