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

const FRESH_FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/support/fixtures/fresh_daemon.prom"
);
/// The fixture's opening comment, kept when the test writes it anew.
const FRESH_HEADER: &str = "\
# fresh_daemon.prom - what sre-agent's /metrics looks like right after start with one
# MCP server configured (so every family has a series): every pre-initialised label set
# at 0, no 5xx series, no report sent yet. The worst case for \"every dashboard query
# returns data\"; served by dashboard_smoke.sh. Written from a fresh daemon by
# tests/it/dashboard.rs (the_fresh_daemon_fixture_has_…), which fails and writes the new
# one when a series is added or removed.
";

/// A text exposition's series (name and labels, values left out) and its family types.
fn series_of(exposition: &str) -> BTreeSet<String> {
    exposition
        .lines()
        .filter(|l| !l.is_empty() && (!l.starts_with('#') || l.starts_with("# TYPE ")))
        .map(|l| match l.strip_prefix("# TYPE ") {
            Some(t) => format!("# TYPE {t}"),
            None => l
                .rsplit_once(' ')
                .map_or(l, |(series, _)| series)
                .to_string(),
        })
        .collect()
}

#[tokio::test]
async fn the_fresh_daemon_fixture_has_every_series_a_freshly_started_daemon_exposes() {
    let app = spawn_app(
        "[[mcp.servers]]\nname = \"down\"\nurl = \"http://127.0.0.1:9/mcp\"\ntools = [\"t\"]\n",
    )
    .await;
    let live = app.metrics().await;
    app.stop().await;
    let fixture = std::fs::read_to_string(FRESH_FIXTURE).unwrap();
    let (want, have) = (series_of(&live), series_of(&fixture));
    if want != have {
        let fresh = std::env::temp_dir().join("fresh_daemon.prom");
        std::fs::write(&fresh, format!("{FRESH_HEADER}{live}")).unwrap();
        panic!(
            "tests/support/fixtures/fresh_daemon.prom lags the daemon: missing {:?}, extra {:?}; \
             the fresh exposition is in {}: cp {} {FRESH_FIXTURE}",
            want.difference(&have).collect::<Vec<_>>(),
            have.difference(&want).collect::<Vec<_>>(),
            fresh.display(),
            fresh.display(),
        );
    }
    let missing: Vec<String> = crate::docs::defined_families()
        .into_iter()
        .filter(|f| !fixture.contains(&format!("# TYPE {f} ")))
        .collect();
    assert!(
        missing.is_empty(),
        "families not in the fixture: {missing:?}"
    );
}
