//! What the model chooses cannot widen what a request may reach: declared tools stay on
//! their template, Kubernetes names are validated before they become paths, no configured
//! header follows a redirect to another origin, and a huge answer is read only up to a cap.

use std::time::{Duration, Instant};

use serde_json::json;

use crate::support::alerts::{GRAFANA_FIRING, all_final};
use crate::support::fake_appliance::FakeAppliance;
use crate::support::fake_llm::{FakeLlm, answer, finding_json};
use crate::support::hostile::{FLOOD_BYTES, Flood, redirector};
use crate::support::receiver::Receiver;
use crate::support::tool_registry::{call, call_err, kube_registry, registry};
use crate::support::{eventually, metric_value, spawn_app, test_config};

/// What a capped reader may pull through loopback socket buffers on top of its cap.
const SLACK: usize = 24 * 1024 * 1024;

fn declared_tool(url: &str, extra: &str) -> String {
    format!(
        r#"
[[tools.http]]
name = "item_status"
description = "Status of one item"
url = "{url}"
{extra}
[tools.http.parameters]
type = "object"
required = ["id"]
[tools.http.parameters.properties.id]
type = "string"
"#
    )
}

#[tokio::test]
async fn a_declared_tool_argument_fills_one_path_segment_and_cannot_climb_out_of_the_template() {
    let fake = FakeAppliance::start(Vec::new(), "Token t", json!({})).await;
    let dir = tempfile::tempdir().unwrap();
    let toml = declared_tool(
        &format!("{}/api/items/{{id}}/status", fake.url),
        "header_name = \"Authorization\"\nheader_value = \"Token t\"",
    );
    let r = registry(&test_config(dir.path(), &toml));
    for id in ["..", ".", ""] {
        let err = call_err(&r, "item_status", json!({ "id": id })).await;
        assert!(
            err.contains("not allowed") || err.contains("missing"),
            "{id:?}: {err}"
        );
    }
    assert!(fake.requests().is_empty(), "{:?}", fake.requests());
    for id in ["../../admin", "%2F..%2Fadmin", "a/b", "..%2f", "x?y=1#z"] {
        // The fake answers 404 for every path; what matters is which path was asked.
        let _ = r.call("item_status", json!({ "id": id })).await;
    }
    let asked = fake.requests();
    assert_eq!(asked.len(), 5, "{asked:?}");
    for path in &asked {
        let rest = path
            .strip_prefix("GET /api/items/")
            .and_then(|p| p.strip_suffix("/status"))
            .unwrap_or_else(|| panic!("left the template: {path}"));
        assert!(!rest.contains('/'), "more than one segment: {path}");
    }
    assert!(
        asked.contains(&"GET /api/items/..%2F..%2Fadmin/status".to_string()),
        "{asked:?}"
    );
    assert!(
        asked.contains(&"GET /api/items/%252F..%252Fadmin/status".to_string()),
        "{asked:?}"
    );
}

#[tokio::test]
async fn kubernetes_names_that_are_not_dns_1123_never_reach_the_api() {
    let (fake, r, _dir) = kube_registry("").await;
    for (tool, args) in [
        (
            "k8s_describe_pod",
            json!({"namespace": "apps", "name": "web-0/proxy/admin"}),
        ),
        (
            "k8s_pod_logs",
            json!({"namespace": "apps", "name": "web-0/proxy/x"}),
        ),
        (
            "k8s_pod_logs",
            json!({"namespace": "apps", "name": "web", "container": "c/../../x"}),
        ),
        ("k8s_pod_logs", json!({"namespace": "apps", "name": ".."})),
        (
            "k8s_describe_pod",
            json!({"namespace": "apps/pods/web", "name": "web"}),
        ),
        ("k8s_list_pods", json!({"namespace": "../secrets"})),
        ("k8s_events", json!({"namespace": "Apps"})),
        (
            "k8s_describe_pod",
            json!({"namespace": "apps", "name": "web,involvedObject.kind=Secret"}),
        ),
    ] {
        let err = call_err(&r, tool, args.clone()).await;
        assert!(
            err.contains("is not a valid Kubernetes name"),
            "{tool} {args}: {err}"
        );
    }
    assert!(fake.paths().is_empty(), "{:?}", fake.paths());
    // Valid names still work.
    call(
        &r,
        "k8s_pod_logs",
        json!({"namespace": "apps", "name": "web-7d4b9c-x2x9q", "container": "web"}),
    )
    .await;
}

#[tokio::test]
async fn a_redirect_to_another_origin_never_carries_the_configured_header() {
    let elsewhere = Receiver::start().await;
    let (origin, _h) = redirector(elsewhere.base.clone()).await;
    let dir = tempfile::tempdir().unwrap();
    let toml = declared_tool(
        &format!("{origin}/api/items/{{id}}"),
        "header_name = \"X-Api-Key\"\nheader_value = \"key-must-stay-home\"",
    );
    let r = registry(&test_config(dir.path(), &toml));
    let err = call_err(&r, "item_status", json!({"id": "1"})).await;
    assert!(err.contains("not followed"), "{err}");
    assert!(!err.contains("key-must-stay-home"), "{err}");
    assert!(
        elsewhere.received().is_empty(),
        "followed to another origin: {:?}",
        elsewhere.received()
    );
}

#[tokio::test]
async fn a_notification_webhook_that_redirects_is_not_followed() {
    let elsewhere = Receiver::start().await;
    let (origin, _h) = redirector(elsewhere.base.clone()).await;
    let llm = FakeLlm::start(vec![answer(
        &finding_json("a finding", "none"),
        (10, 10, 0),
    )])
    .await;
    let app = spawn_app(&format!(
        "[[notify.webhooks]]\nurl = \"{origin}/hooks/secret\"\n{}",
        llm.config("")
    ))
    .await;
    let resp = app
        .http
        .post(app.url("/webhook/grafana"))
        .header("content-type", "application/json")
        .body(GRAFANA_FIRING)
        .send()
        .await
        .unwrap();
    assert!(resp.status().is_success());
    all_final(&app.base, None, 1).await;
    eventually(Duration::from_secs(20), "the webhook given up", || async {
        let m = app.metrics().await;
        metric_value(
            &m,
            r#"sre_agent_notifications_total{channel="webhook",status="failed"}"#,
        )
        .filter(|n| *n >= 1.0)
        .map(|_| ())
    })
    .await;
    assert!(
        elsewhere.received().is_empty(),
        "{:?}",
        elsewhere.received()
    );
}

#[tokio::test]
async fn a_200_mib_answer_to_a_declared_tool_costs_its_max_bytes_not_its_size() {
    let flood = Flood::start(200, "application/json").await;
    let dir = tempfile::tempdir().unwrap();
    let toml = declared_tool(
        &format!("{}/api/items/{{id}}", flood.url),
        "max_bytes = 1024",
    );
    let r = registry(&test_config(dir.path(), &toml));
    let out = call(&r, "item_status", json!({"id": "1"})).await;
    assert!(out.contains("answer cut at max_bytes = 1024"), "{out}");
    assert!(flood.sent() < SLACK, "read {} bytes", flood.sent());
}

#[tokio::test]
async fn a_200_mib_answer_from_an_integration_is_refused_at_the_cap_naming_the_service() {
    let flood = Flood::start(200, "application/json").await;
    let dir = tempfile::tempdir().unwrap();
    let config = test_config(
        dir.path(),
        &format!("[prometheus]\nurl = \"{}\"\ntimeout = \"60s\"\n", flood.url),
    );
    let r = registry(&config);
    let err = call_err(&r, "prometheus_query", json!({"query": "up"})).await;
    assert!(err.contains("Prometheus at"), "{err}");
    assert!(err.contains("larger than 8 MiB"), "{err}");
    assert!(
        flood.sent() < 8 * 1024 * 1024 + SLACK,
        "read {}",
        flood.sent()
    );
    assert!(flood.sent() < FLOOD_BYTES);
}

#[tokio::test]
async fn a_200_mib_llm_answer_fails_the_call_without_being_read() {
    let flood = Flood::start(200, "application/json").await;
    let app = spawn_app(&format!(
        "[llm]\nbase_url = \"{}/v1\"\nmax_retries = 0\ntimeout = \"60s\"\n",
        flood.url
    ))
    .await;
    let resp = app
        .http
        .post(app.url("/api/v1/ask"))
        .json(&json!({"question": "why?"}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 202);
    let invs = all_final(&app.base, None, 1).await;
    let error = invs[0]["error"].as_str().unwrap_or_default().to_string();
    assert!(error.contains("larger than"), "{}", invs[0]);
    assert!(
        flood.sent() < 8 * 1024 * 1024 + SLACK,
        "read {}",
        flood.sent()
    );
}

#[tokio::test]
async fn a_200_mib_error_answer_from_a_notification_webhook_is_not_read() {
    let flood = Flood::start(500, "text/plain").await;
    let llm = FakeLlm::start(vec![answer(
        &finding_json("a finding", "none"),
        (10, 10, 0),
    )])
    .await;
    let app = spawn_app(&format!(
        "[notify]\nmax_attempts = 1\n[[notify.webhooks]]\nurl = \"{}/hook\"\n{}",
        flood.url,
        llm.config("")
    ))
    .await;
    let start = Instant::now();
    app.http
        .post(app.url("/webhook/grafana"))
        .header("content-type", "application/json")
        .body(GRAFANA_FIRING)
        .send()
        .await
        .unwrap();
    eventually(Duration::from_secs(30), "the webhook failed", || async {
        let m = app.metrics().await;
        metric_value(
            &m,
            r#"sre_agent_notifications_total{channel="webhook",status="failed"}"#,
        )
        .filter(|n| *n >= 1.0)
        .map(|_| ())
    })
    .await;
    assert!(
        flood.sent() < SLACK,
        "read {} in {:?}",
        flood.sent(),
        start.elapsed()
    );
}
