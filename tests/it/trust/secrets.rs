//! Secrets inside configured URLs never leave: an LLM `base_url` with `user:pass@`, a
//! Prometheus URL with a password and a `?token=`, Slack and ntfy hooks whose path is the
//! secret. None of them appears in `check-config`, the daemon's log, stored investigations
//! and their events, `/readyz`, the report's fallback reason or a notification's error.

use std::time::Duration;

use serde_json::{Value, json};

use crate::support::fake_llm::{FakeLlm, error};
use crate::support::{Daemon, eventually, free_port, run_cli};

const SECRETS: [&str; 7] = [
    "llm-user-1717",
    "llm-pass-4242",
    "prom-pass-7373",
    "query-token-8383",
    "slack-path-secret-5151",
    "ntfy-topic-secret-6262",
    "tool-key-9090",
];

/// Every configured URL of the daemon, each carrying a secret; the LLM answers 503.
fn leaky_config(port: u16, llm_url: &str) -> String {
    let llm_url = llm_url.replace("http://", "http://llm-user-1717:llm-pass-4242@");
    let closed = free_port();
    format!(
        r#"
[server]
listen = "127.0.0.1:{port}"
data_dir = "data"
health_interval = "1s"

[llm]
base_url = "{llm_url}"
model = "fake-model"
max_retries = 1
timeout = "5s"

[prometheus]
url = "http://prom:prom-pass-7373@127.0.0.1:{closed}/prom?token=query-token-8383"
timeout = "2s"

[notify]
retry_backoff = "100ms"
retry_max_backoff = "200ms"
max_attempts = 2

[[notify.webhooks]]
url = "http://127.0.0.1:{closed}/services/T000/B000/slack-path-secret-5151"
format = "slack"

[[notify.webhooks]]
url = "https://ntfy.example.org/ntfy-topic-secret-6262"
format = "ntfy"

[[tools.http]]
name = "item_status"
description = "Status of one item"
url = "http://127.0.0.1:{closed}/api/items?api_key=tool-key-9090"
"#
    )
}

fn assert_no_secret(what: &str, text: &str) {
    for secret in SECRETS {
        assert!(!text.contains(secret), "{secret} leaked in {what}:\n{text}");
    }
}

#[test]
fn check_config_with_credentials_in_every_url_prints_none_of_them() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("config.toml");
    std::fs::write(&file, leaky_config(free_port(), "http://127.0.0.1:9/v1")).unwrap();
    let (code, out, err) = run_cli(
        dir.path(),
        &["check-config", "--config", file.to_str().unwrap()],
        &[],
    );
    assert_eq!(code, 0, "{err}");
    assert_no_secret("check-config", &format!("{out}\n{err}"));
    assert!(
        out.contains("base_url = \"http://***@127.0.0.1:9/v1\""),
        "credentials are shown as present: {out}"
    );
    assert!(
        out.contains("url = \"https://ntfy.example.org/…\""),
        "{out}"
    );
    assert!(!out.contains("/services/T000/B000/"), "{out}");
    assert!(
        out.contains("/api/items?api_key=***"),
        "a declared tool's fixed query value is hidden: {out}"
    );
}

#[tokio::test]
async fn credentials_in_configured_urls_reach_no_log_stored_event_api_answer_or_report() {
    sre_agent::install_crypto_provider();
    let llm = FakeLlm::start(vec![error(503, "overloaded", &[])]).await;
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let file = dir.path().join("config.toml");
    std::fs::write(&file, leaky_config(port, &llm.url)).unwrap();
    let daemon = Daemon::start(dir.path(), &file, &[("SRE_AGENT_LOG__LEVEL", "debug")]).await;
    let http = reqwest::Client::new();
    let get = |path: &str| {
        let http = http.clone();
        let url = format!("{}{path}", daemon.base);
        async move { http.get(url).send().await.unwrap().text().await.unwrap() }
    };

    let queued: Value = http
        .post(format!("{}/api/v1/ask", daemon.base))
        .json(&json!({"question": "why is checkout slow?"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let id = queued["id"].as_str().unwrap().to_string();
    let detail = eventually(Duration::from_secs(30), "a failed investigation", || {
        let id = id.clone();
        async move {
            let text = get(&format!("/api/v1/investigations/{id}")).await;
            text.contains("\"failed\"").then_some(text)
        }
    })
    .await;
    assert!(
        detail.contains("503"),
        "the error is still useful: {detail}"
    );
    assert_no_secret("the investigation", &detail);
    assert_no_secret("the list", &get("/api/v1/investigations").await);

    let ready = eventually(
        Duration::from_secs(20),
        "/readyz with errors",
        || async move {
            let text = get("/readyz").await;
            (text.contains("\"prometheus\"") && text.contains("\"llm\"")).then_some(text)
        },
    )
    .await;
    assert_no_secret("/readyz", &ready);

    let report = http
        .post(format!("{}/api/v1/reports", daemon.base))
        .json(&json!({}))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(report.contains("fallback_reason"), "{report}");
    assert_no_secret("the report", &report);

    // Both webhooks fail (connection refused, unresolvable host) and are retried, logged.
    let log = eventually(Duration::from_secs(30), "notifications given up", || {
        let text = daemon.log_text();
        async move { (text.matches("giving up").count() >= 2).then_some(text) }
    })
    .await;
    assert!(log.contains("retrying"), "{log}");
    assert_no_secret("the daemon log", &log);
}
