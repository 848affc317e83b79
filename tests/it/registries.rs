//! The label registries are derived: every route of the router, every report collector and
//! every delivery channel has its series in `/metrics` before any traffic, and every API
//! route is in the OpenAPI document. Every metric family is on `/metrics` from the start.

use std::collections::BTreeSet;

use sre_agent::notify::Channel;
use sre_agent::report::collect::Collector;

use crate::support::spawn_app;

/// The values of `label` in the series of `family` in `text`.
fn label_values(text: &str, family: &str, label: &str) -> BTreeSet<String> {
    let prefix = format!("{label}=\"");
    text.lines()
        .filter_map(|l| l.strip_prefix(family)?.strip_prefix('{'))
        .filter_map(|labels| {
            let at = labels.find(&prefix)? + prefix.len();
            let value = &labels[at..];
            Some(value[..value.find('"')?].to_string())
        })
        .collect()
}

/// Whether a route is part of the documented API (the console's HTML pages and assets are
/// not).
fn is_api(path: &str) -> bool {
    path.starts_with("/api/")
        || path.starts_with("/webhook/")
        || ["/metrics", "/healthz", "/readyz"].contains(&path)
}

#[tokio::test]
async fn every_route_has_request_series_before_traffic_and_every_api_route_is_documented() {
    let app = spawn_app("").await;
    let text = app.metrics().await;
    let endpoints = label_values(
        &text,
        "sre_agent_http_request_duration_seconds_count",
        "endpoint",
    );
    let version = env!("CARGO_PKG_VERSION");
    for route in [
        "/api/v1/openapi.json".to_string(),
        format!("/static/console-{version}.css"),
        format!("/static/console-{version}.js"),
        "/webhook/alertmanager".into(),
        "/".into(),
        "other".into(),
    ] {
        assert!(
            endpoints.contains(&route),
            "{route} missing from {endpoints:?}"
        );
    }
    let doc: serde_json::Value = app.get("/api/v1/openapi.json").await.json().await.unwrap();
    let undocumented: Vec<&String> = endpoints
        .iter()
        .filter(|e| is_api(e) && !doc["paths"][e.as_str()].is_object())
        .collect();
    assert!(
        undocumented.is_empty(),
        "routes missing from the OpenAPI document: {undocumented:?}"
    );
    for path in doc["paths"].as_object().unwrap().keys() {
        assert!(
            endpoints.contains(path),
            "{path} is documented and not routed"
        );
    }
    app.stop().await;
}

#[tokio::test]
async fn every_report_collector_and_delivery_channel_has_series_before_traffic() {
    let app = spawn_app("").await;
    let text = app.metrics().await;
    let collectors = label_values(&text, "sre_agent_report_collector_runs_total", "collector");
    let expected: BTreeSet<String> = Collector::ALL
        .iter()
        .map(|c| c.label().to_string())
        .collect();
    assert_eq!(collectors, expected);
    assert!(collectors.contains("backups"), "{collectors:?}");
    let channels = label_values(&text, "sre_agent_notifications_total", "channel");
    let expected: BTreeSet<String> = Channel::ALL.iter().map(|c| c.label().to_string()).collect();
    assert_eq!(channels, expected);
    app.stop().await;
}

/// With one MCP server configured: the restarts of the MCP client are counted per
/// server, so without one that family has no series to show.
#[tokio::test]
async fn every_metric_family_is_exported_before_any_traffic() {
    let app = spawn_app(
        "[[mcp.servers]]\nname = \"down\"\nurl = \"http://127.0.0.1:9/mcp\"\ntools = [\"t\"]\n",
    )
    .await;
    let text = app.metrics().await;
    let missing: Vec<String> = crate::docs::defined_families()
        .into_iter()
        .filter(|f| !text.contains(&format!("# TYPE {f} ")))
        .collect();
    assert!(missing.is_empty(), "not on /metrics at start: {missing:?}");
    for series in [
        "sre_agent_mcp_server_calls_total{status=\"ok\",tool=\"ask\",via=\"http\"} 0",
        "sre_agent_mcp_server_calls_total{status=\"error\",tool=\"resources/read\",via=\"http\"} 0",
        "sre_agent_mcp_server_calls_total{status=\"ok\",tool=\"current_time\",via=\"http\"} 0",
        "sre_agent_mcp_server_call_duration_seconds_count{via=\"http\"} 0",
        "sre_agent_mcp_client_restarts_total{server=\"down\"} 0",
    ] {
        assert!(text.contains(series), "{series} missing");
    }
    app.stop().await;
}
