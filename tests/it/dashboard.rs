//! The shipped observability assets against real parts: `promtool check metrics` on the
//! live exposition, and every SLI dashboard query evaluated by a real Prometheus that
//! scrapes the daemon: each parses, names only exported families, and returns data.

use std::collections::BTreeSet;
use std::io::Write;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::Value;

use crate::support::external::{require_tool, start_prometheus};
use crate::support::{eventually, spawn_app};

const DASHBOARD: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/dashboards/sre-agent-sli.json");

/// Every `expr` in the dashboard, including panels nested in collapsed rows.
fn dashboard_queries() -> Vec<(String, String)> {
    let json: Value = serde_json::from_str(&std::fs::read_to_string(DASHBOARD).unwrap()).unwrap();
    let mut out = Vec::new();
    fn walk(panels: &[Value], out: &mut Vec<(String, String)>) {
        for p in panels {
            let title = p["title"].as_str().unwrap_or("?").to_string();
            for t in p["targets"].as_array().into_iter().flatten() {
                if let Some(expr) = t["expr"].as_str() {
                    out.push((title.clone(), expr.to_string()));
                }
            }
            if let Some(nested) = p["panels"].as_array() {
                walk(nested, out);
            }
        }
    }
    walk(
        json["panels"].as_array().expect("dashboard has panels"),
        &mut out,
    );
    out
}

/// Substitutes the Grafana variables the dashboard uses.
fn substitute(expr: &str) -> String {
    [
        ("$__rate_interval", "1m"),
        ("$__range", "1h"),
        ("$__interval", "15s"),
        ("${job}", ".*"),
        ("$job", ".*"),
        ("${datasource}", "prometheus"),
    ]
    .iter()
    .fold(expr.to_string(), |e, (var, val)| e.replace(var, val))
}

/// `sre_agent_*` names a query references, histogram suffixes stripped.
fn referenced_families(expr: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let bytes = expr.as_bytes();
    let mut i = 0;
    while let Some(pos) = expr[i..].find("sre_agent_") {
        let start = i + pos;
        let mut end = start;
        while end < bytes.len() && (bytes[end].is_ascii_alphanumeric() || bytes[end] == b'_') {
            end += 1;
        }
        let name = &expr[start..end];
        let family = ["_bucket", "_sum", "_count"]
            .iter()
            .find_map(|s| name.strip_suffix(s))
            .unwrap_or(name);
        names.insert(family.to_string());
        i = end;
    }
    names
}

#[tokio::test]
async fn live_metrics_pass_promtool_check_metrics() {
    if !require_tool("promtool") {
        return;
    }
    let app = spawn_app("").await;
    app.get("/healthz").await;
    let text = app.metrics().await;
    let mut child = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let findings = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && findings.trim().is_empty(),
        "promtool: {findings}"
    );
    app.stop().await;
}

#[tokio::test]
async fn every_dashboard_query_returns_data_from_a_real_prometheus_scraping_the_daemon() {
    let app = spawn_app("").await;
    let Some(prom) = start_prometheus(&[app.addr.to_string()], &[], "sre-agent") else {
        return;
    };
    let exported: BTreeSet<String> = app
        .metrics()
        .await
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|l| l.split_whitespace().next())
        .map(String::from)
        .collect();
    let queries = dashboard_queries();
    assert!(
        queries.len() >= 20,
        "dashboard has {} queries",
        queries.len()
    );
    for (title, expr) in &queries {
        for family in referenced_families(expr) {
            assert!(
                exported.contains(&family),
                "panel {title:?} uses {family}, which /metrics does not export"
            );
        }
    }

    let http = reqwest::Client::new();
    let up_query = format!("{}/api/v1/query", prom.url);
    eventually(
        Duration::from_secs(30),
        "Prometheus to scrape the daemon (up == 1)",
        || {
            let http = http.clone();
            let url = up_query.clone();
            async move {
                let v: Value = http
                    .get(&url)
                    .query(&[("query", "up{job=\"sre-agent\"} == 1")])
                    .send()
                    .await
                    .ok()?
                    .json()
                    .await
                    .ok()?;
                v["data"]["result"]
                    .as_array()
                    .filter(|r| !r.is_empty())
                    .map(|_| ())
            }
        },
    )
    .await;

    for (title, expr) in &queries {
        let query = substitute(expr);
        let result = eventually(
            Duration::from_secs(30),
            &format!("data for panel {title:?}: {query}"),
            || {
                let http = http.clone();
                let url = up_query.clone();
                let query = query.clone();
                async move {
                    let v: Value = http
                        .get(&url)
                        .query(&[("query", query.as_str())])
                        .send()
                        .await
                        .ok()?
                        .json()
                        .await
                        .ok()?;
                    assert_eq!(
                        v["status"], "success",
                        "panel {title:?} query {query} failed: {v}"
                    );
                    let result = &v["data"]["result"];
                    let has_data = match result {
                        Value::Array(a) => !a.is_empty(),
                        Value::Null => false,
                        _ => true,
                    };
                    has_data.then(|| result.clone())
                }
            },
        )
        .await;
        assert!(!result.is_null());
    }
    app.stop().await;
}
