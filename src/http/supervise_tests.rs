//! The daemon keeps serving after a panic in its accept loop or its alert intake: each is
//! counted in `sre_agent_panics_total{task}`, and webhooks are taken afterwards.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::app::App;
use crate::config::Config;

fn webhook(name: &str) -> String {
    json!({"version": "4", "status": "firing", "alerts": [
        {"status": "firing", "labels": {"alertname": name, "instance": "host1"}}]})
    .to_string()
}

fn panics(metrics: &str, task: &str) -> Option<f64> {
    let series = format!("sre_agent_panics_total{{task=\"{task}\"}} ");
    metrics
        .lines()
        .find_map(|l| l.strip_prefix(series.as_str()))
        .and_then(|v| v.trim().parse().ok())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panic_in_the_accept_loop_or_the_intake_is_counted_and_webhooks_are_taken_after() {
    crate::install_crypto_provider();
    let dir = tempfile::tempdir().unwrap();
    let mut config = Config::default();
    config.server.listen = "127.0.0.1:0".into();
    config.server.data_dir = dir.path().join("data");
    let app = App::build(config).await.unwrap();
    let base = format!("http://{}", app.local_addr());
    let token = CancellationToken::new();
    // The first connection accepted makes the accept loop panic.
    let armed = Arc::new(AtomicBool::new(true));
    let hook = armed.clone();
    let on_accept = Arc::new(move |_| {
        if hook.swap(false, Ordering::SeqCst) {
            panic!("a bug in the accept loop");
        }
    });
    let running = tokio::spawn(app.run_with(super::router, token.clone(), on_accept));
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap();
    let post = |name: &'static str| {
        http.post(format!("{base}/webhook/alertmanager"))
            .header("content-type", "application/json")
            .body(webhook(name))
            .send()
    };

    assert!(
        post("NodeDown").await.is_err(),
        "the connection the loop panicked on is closed"
    );
    // Taken again once the loop has restarted (`supervise::RESTART_DELAY`).
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    let answer = loop {
        match post("NodeDown").await {
            Ok(r) => break r,
            Err(e) => {
                assert!(tokio::time::Instant::now() < deadline, "not serving: {e}");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    };
    assert_eq!(answer.status(), 200);

    // A batch the intake cannot decide (`intake::pipeline::tests_hook`): stored and
    // answered, given up; the next webhook is decided as before.
    let answer = post("PanicInTheIntake").await.unwrap();
    assert!(answer.status().is_success(), "{}", answer.status());
    let answer = post("DiskFull").await.unwrap();
    assert_eq!(answer.status(), 200);
    let body: serde_json::Value = answer.json().await.unwrap();
    assert_eq!(body["queued"], 1, "{body}");

    let metrics = http
        .get(format!("{base}/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert_eq!(panics(&metrics, "http_accept"), Some(1.0), "{metrics}");
    assert_eq!(panics(&metrics, "alert_intake"), Some(1.0), "{metrics}");
    token.cancel();
    running.await.unwrap().unwrap();
}
