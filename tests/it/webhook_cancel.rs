//! Webhooks whose client leaves before the answer: a batch written to the inbox is decided
//! anyway, the inbox checkpoint moves past it, and a signed one is stored exactly once.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::json;
use tokio::io::AsyncWriteExt as _;

use crate::support::alerts::{GRAFANA_FIRING, grafana_signature, unix_now};
use crate::support::{TestApp, eventually, spawn_app};

/// Writes a whole request on a new connection and closes it without reading the answer.
async fn send_and_leave(app: &TestApp, path: &str, headers: &[(&str, String)], body: &[u8]) {
    let mut s = tokio::net::TcpStream::connect(app.addr).await.unwrap();
    let mut head = format!(
        "POST {path} HTTP/1.1\r\nhost: {}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n",
        app.addr,
        body.len()
    );
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    s.write_all(head.as_bytes()).await.unwrap();
    s.write_all(body).await.unwrap();
    // Gone at once: the handler is cancelled wherever it is.
    drop(s);
}

fn checkpoint(app: &TestApp) -> u64 {
    std::fs::read_to_string(app.dir.path().join("data/inbox/alerts/done"))
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(0)
}

#[tokio::test]
async fn webhooks_whose_client_disconnects_right_after_sending_are_decided_and_checkpointed() {
    let app = spawn_app("").await;
    let n = 20;
    for i in 0..n {
        let alerts: Vec<_> = (0..3)
            .map(|j| json!({"status": "firing", "labels": {"alertname": "Gone", "instance": format!("h{i}-{j}")}}))
            .collect();
        let body =
            serde_json::to_vec(&json!({"version": "4", "status": "firing", "alerts": alerts}))
                .unwrap();
        send_and_leave(&app, "/webhook/alertmanager", &[], &body).await;
    }
    // Every batch the daemon read is decided (a request cut before its body was read is
    // refused, and its sender retries).
    let decided = eventually(Duration::from_secs(20), "the batches decided", || async {
        let stored = app.state.intake.store().alert_count();
        (app.state.intake.backlog() == 0 && stored > 0).then_some(stored)
    })
    .await;
    assert_eq!(decided % 3, 0, "whole batches: {decided}");
    let batches = (decided / 3) as u64;
    eventually(
        Duration::from_secs(20),
        "the checkpoint covering every batch",
        || async { (checkpoint(&app) >= batches).then_some(()) },
    )
    .await;
    app.stop().await;
}

#[tokio::test]
async fn a_signed_webhook_whose_client_left_is_stored_once_and_its_retry_is_never_refused_while_lost()
 {
    let app = spawn_app("[webhook]\nhmac_secret = \"s3cr3t\"\nhmac_max_skew = \"5m\"\n").await;
    let ts = unix_now().to_string();
    let headers = vec![
        ("x-grafana-alerting-timestamp", ts.clone()),
        (
            "x-grafana-alerting-signature",
            grafana_signature("s3cr3t", &ts, GRAFANA_FIRING.as_bytes()),
        ),
    ];
    send_and_leave(
        &app,
        "/webhook/grafana",
        &headers,
        GRAFANA_FIRING.as_bytes(),
    )
    .await;
    // The sender retries the identical request until it is not told to try again.
    let (status, body) = eventually(Duration::from_secs(20), "a final answer", || async {
        let mut req = app
            .http
            .post(app.url("/webhook/grafana"))
            .header("content-type", "application/json")
            .body(GRAFANA_FIRING);
        for (k, v) in &headers {
            req = req.header(*k, v);
        }
        let resp = req.send().await.unwrap();
        let status = resp.status();
        let body: serde_json::Value = resp.json().await.unwrap_or_default();
        (status != StatusCode::SERVICE_UNAVAILABLE).then_some((status, body))
    })
    .await;
    // Either the first request was not stored and the retry was, or the first was and
    // the retry is a replay: the alert is stored either way, once.
    assert!(
        status.is_success()
            || (status == StatusCode::UNAUTHORIZED
                && body["error"].as_str().unwrap_or("").contains("replayed")),
        "{status} {body}"
    );
    eventually(Duration::from_secs(20), "the alert stored", || async {
        (app.state.intake.backlog() == 0 && app.state.intake.store().alert_count() == 1)
            .then_some(())
    })
    .await;
    app.stop().await;
}
