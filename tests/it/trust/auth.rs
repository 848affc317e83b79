//! Auth that cannot lock out or fail open: a webhook token and basic auth together accept
//! either; a signed webhook can require its timestamp, is refused when the timestamp is far
//! in the future (or absurd), and is never accepted twice; beyond loopback the API always
//! needs a token, generated and kept in the data directory when none is configured.

use std::time::{Duration, Instant};

use base64::Engine;
use reqwest::StatusCode;
use serde_json::Value;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

use crate::support::alerts::{GRAFANA_FIRING, grafana_signature, unix_now};
use crate::support::{Daemon, TestApp, free_port, run_cli, spawn_app};

async fn post(app: &TestApp, headers: &[(&str, String)]) -> (StatusCode, Value) {
    let mut req = app
        .http
        .post(app.url("/webhook/grafana"))
        .header("content-type", "application/json")
        .body(GRAFANA_FIRING);
    for (k, v) in headers {
        req = req.header(*k, v);
    }
    let resp = req.send().await.unwrap();
    let status = resp.status();
    (status, resp.json().await.unwrap_or(Value::Null))
}

fn basic(user: &str, password: &str) -> (&'static str, String) {
    let creds = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
    ("authorization", format!("Basic {creds}"))
}

fn signed(secret: &str, ts: &str) -> Vec<(&'static str, String)> {
    vec![
        ("x-grafana-alerting-timestamp", ts.to_string()),
        (
            "x-grafana-alerting-signature",
            grafana_signature(secret, ts, GRAFANA_FIRING.as_bytes()),
        ),
    ]
}

fn stored_alerts(app: &TestApp) -> usize {
    app.state.intake.store().alert_count()
}

#[tokio::test]
async fn with_a_token_and_basic_auth_configured_a_sender_using_either_is_accepted() {
    let app = spawn_app(
        "[webhook]\ntoken = \"hook-token\"\nbasic_user = \"grafana\"\nbasic_password = \"pw\"\n",
    )
    .await;
    let (status, body) = post(&app, &[("authorization", "Bearer hook-token".into())]).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (status, body) = post(&app, &[basic("grafana", "pw")]).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    for bad in [
        vec![],
        vec![("authorization", "Bearer nope".to_string())],
        vec![basic("grafana", "nope")],
    ] {
        let (status, body) = post(&app, &bad).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{bad:?} {body}");
        assert!(body["error"].is_string(), "{body}");
    }
}

#[tokio::test]
async fn an_unauthenticated_webhook_is_answered_401_without_its_body_being_read() {
    let app = spawn_app("[webhook]\ntoken = \"hook-token\"\nmax_body_bytes = 20000000\n").await;
    // Headers announcing 10 MB, and not one byte of body: only an answer that does not wait
    // for the body comes back.
    let mut stream = tokio::net::TcpStream::connect(app.addr).await.unwrap();
    stream
        .write_all(
            b"POST /webhook/grafana HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 10000000\r\n\r\n",
        )
        .await
        .unwrap();
    let start = Instant::now();
    let mut answer = [0u8; 512];
    let n = tokio::time::timeout(Duration::from_secs(5), stream.read(&mut answer))
        .await
        .expect("answered without the body")
        .unwrap();
    let answer = String::from_utf8_lossy(&answer[..n]);
    assert!(answer.starts_with("HTTP/1.1 401"), "{answer}");
    assert!(start.elapsed() < Duration::from_secs(2));
}

#[tokio::test]
async fn hmac_require_timestamp_refuses_a_signature_without_its_timestamp() {
    let app = spawn_app(
        "[webhook]\nhmac_secret = \"s3cr3t\"\nhmac_max_skew = \"5m\"\nhmac_require_timestamp = true\n",
    )
    .await;
    let untimed = vec![(
        "x-grafana-alerting-signature",
        grafana_signature("s3cr3t", "", GRAFANA_FIRING.as_bytes()),
    )];
    let (status, body) = post(&app, &untimed).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{body}");
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .contains("hmac_require_timestamp"),
        "{body}"
    );
    assert_eq!(stored_alerts(&app), 0);
    let (status, body) = post(&app, &signed("s3cr3t", &unix_now().to_string())).await;
    assert_eq!(status, StatusCode::OK, "{body}");
}

#[tokio::test]
async fn a_future_or_absurd_timestamp_and_a_replayed_signature_are_refused() {
    let app = spawn_app("[webhook]\nhmac_secret = \"s3cr3t\"\nhmac_max_skew = \"5m\"\n").await;
    let now = unix_now();
    for ts in [now + 3600, i64::MIN, i64::MAX] {
        let headers = signed("s3cr3t", &ts.to_string());
        let (status, body) = post(&app, &headers).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{ts} {body}");
        let error = body["error"].as_str().unwrap_or_default();
        assert!(error.contains("stale"), "{ts}: {error}");
    }
    assert_eq!(stored_alerts(&app), 0);

    let fresh = signed("s3cr3t", &now.to_string());
    let (status, body) = post(&app, &fresh).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (status, body) = post(&app, &fresh).await;
    assert_eq!(
        status,
        StatusCode::UNAUTHORIZED,
        "a replay was accepted: {body}"
    );
    assert!(
        body["error"].as_str().unwrap().contains("replayed"),
        "{body}"
    );
    assert_eq!(stored_alerts(&app), 1);
    // The sender's next notification (a new timestamp) is a new signature.
    let (status, body) = post(&app, &signed("s3cr3t", &(now + 1).to_string())).await;
    assert_eq!(status, StatusCode::OK, "{body}");
}

#[tokio::test]
async fn beyond_loopback_without_an_api_token_one_is_generated_kept_0600_and_required() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let config = dir.path().join("config.toml");
    std::fs::write(
        &config,
        format!("[server]\nlisten = \"0.0.0.0:{port}\"\ndata_dir = \"data\"\n"),
    )
    .unwrap();
    let daemon = Daemon::start(dir.path(), &config, &[]).await;
    let api = format!("{}/api/v1/investigations", daemon.base);
    let http = reqwest::Client::new();
    let resp = http.get(&api).send().await.unwrap();
    assert_eq!(resp.status(), StatusCode::UNAUTHORIZED, "the API is open");

    let file = dir.path().join("data/api-token");
    let token = std::fs::read_to_string(&file).unwrap().trim().to_string();
    assert!(token.len() >= 32, "{token}");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{mode:o}");
    }
    let resp = http.get(&api).bearer_auth(&token).send().await.unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    let log = daemon.log_text();
    assert!(log.contains("api-token"), "the log names the file: {log}");
    assert!(!log.contains(&token), "the log holds the token: {log}");

    // The CLI on this host finds the token itself.
    let (code, out, err) = run_cli(
        dir.path(),
        &[
            "investigations",
            "list",
            "--config",
            config.to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(code, 0, "{out}\n{err}");

    // A restart keeps the same token.
    drop(daemon);
    let daemon = Daemon::start(dir.path(), &config, &[]).await;
    let resp = http
        .get(format!("{}/api/v1/investigations", daemon.base))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
}
