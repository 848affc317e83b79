//! What one sender can make the intake hold in memory: a label of a megabyte is cut at
//! intake (the alert stored, the cut counted), and bodies being read at once are bounded
//! in bytes (`webhook.max_inflight_bytes`), the one past the bound answered 503 with
//! `Retry-After` instead of being read.

use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

use crate::support::{TestApp, eventually, metric_value, spawn_app};

async fn post(app: &TestApp, body: Vec<u8>) -> reqwest::Response {
    app.http
        .post(app.url("/webhook/alertmanager"))
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .unwrap()
}

fn big_alert(instance: &str, bytes: usize) -> Vec<u8> {
    serde_json::to_vec(&json!({"version": "4", "status": "firing", "alerts": [{
        "status": "firing",
        "labels": {"alertname": "Huge", "instance": instance, "blob": "b".repeat(bytes)},
    }]}))
    .unwrap()
}

#[tokio::test]
async fn a_megabyte_label_is_cut_at_intake_counted_and_its_alert_stored() {
    let app = spawn_app("[webhook]\nmax_body_bytes = 2000000\n").await;
    let resp = post(&app, big_alert("h1", 1 << 20)).await;
    assert!(resp.status().is_success(), "{}", resp.status());

    let metrics = app.get("/metrics").await.text().await.unwrap();
    assert_eq!(
        metric_value(
            &metrics,
            "sre_agent_alerts_capped_total{source=\"alertmanager\"}"
        ),
        Some(1.0)
    );
    let groups = eventually(Duration::from_secs(10), "the group stored", || async {
        let body: Value = app.get("/api/v1/alerts").await.json().await.ok()?;
        let groups = body["groups"].as_array()?.clone();
        (!groups.is_empty()).then_some(groups)
    })
    .await;
    assert_eq!(groups.len(), 1);
    let blob = groups[0]["last_alert"]["labels"]["blob"].as_str().unwrap();
    assert_eq!(
        blob.chars().count(),
        sre_agent::alerts::cap::LABEL_VALUE_CHARS
    );
    assert!(blob.ends_with('…'), "the cut is marked");
    assert_eq!(app.state.intake.store().alert_count(), 1);
}

/// Starts a webhook whose body is `len` bytes and writes only its head and `sent` bytes of
/// the body: the daemon holds room for it while it waits for the rest.
async fn start_slow_body(app: &TestApp, len: usize, sent: &[u8]) -> tokio::net::TcpStream {
    let mut s = tokio::net::TcpStream::connect(app.addr).await.unwrap();
    let head = format!(
        "POST /webhook/alertmanager HTTP/1.1\r\nhost: {}\r\ncontent-type: application/json\r\n\
         content-length: {len}\r\n\r\n",
        app.addr
    );
    s.write_all(head.as_bytes()).await.unwrap();
    s.write_all(sent).await.unwrap();
    s
}

#[tokio::test]
async fn concurrent_big_bodies_past_the_inflight_bound_get_503_with_retry_after_not_memory() {
    let app = spawn_app("[webhook]\nmax_body_bytes = 700000\nmax_inflight_bytes = 1000000\n").await;
    let first = big_alert("slow", 600_000);
    let mut slow = start_slow_body(&app, first.len(), &first[..1000]).await;
    // The slow request has reserved its room once its head is read.
    tokio::time::sleep(Duration::from_millis(300)).await;

    let started = Instant::now();
    let refused = post(&app, big_alert("second", 600_000)).await;
    assert_eq!(refused.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(
        refused
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok()),
        Some("1")
    );
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "it waited for room first"
    );
    let error: Value = refused.json().await.unwrap();
    assert!(
        error["error"]
            .as_str()
            .unwrap()
            .contains("webhook.max_inflight_bytes"),
        "{error}"
    );
    // A small body still fits beside the slow one.
    let small = post(&app, big_alert("small", 100)).await;
    assert!(small.status().is_success(), "{}", small.status());

    // The slow body finishes and is stored; then the sender's retry gets in.
    slow.write_all(&first[1000..]).await.unwrap();
    let mut answer = vec![0u8; 64];
    let n = slow.read(&mut answer).await.unwrap();
    let line = String::from_utf8_lossy(&answer[..n]);
    assert!(
        line.starts_with("HTTP/1.1 200") || line.starts_with("HTTP/1.1 202"),
        "{line}"
    );
    let retried = post(&app, big_alert("second", 600_000)).await;
    assert!(retried.status().is_success(), "{}", retried.status());
    eventually(Duration::from_secs(10), "three alerts stored", || async {
        (app.state.intake.store().alert_count() == 3).then_some(())
    })
    .await;
}
