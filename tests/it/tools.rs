//! The LLM's read-only tools against a real Prometheus (scraping the daemon) and small
//! fakes of Loki and Grafana: outputs, compaction, upstream errors as text, the registry
//! holding only configured tools, argument validation and tool metrics.

mod calendar;
mod compaction;
mod figures;
mod native;
mod teach;
mod units;

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use sre_agent::config::Config;
use sre_agent::integrations::PrometheusClient;
use sre_agent::telemetry::Metrics;
use sre_agent::tools::runbooks::RunbookIndex;
use sre_agent::tools::{ToolRegistry, build_registry};

use crate::support::{eventually, external, fake_upstreams, free_port, metric_value, spawn_app};

/// A registry built from `toml` (plus a temp runbooks dir), with its metrics.
fn registry(toml: &str) -> (ToolRegistry, Arc<Metrics>, Config, tempfile::TempDir) {
    sre_agent::install_crypto_provider();
    let dir = tempfile::tempdir().unwrap();
    let config = crate::support::test_config(dir.path(), toml);
    let metrics = Arc::new(Metrics::new("test-model"));
    let reg = build_registry(
        &config,
        &sre_agent::integrations::Upstreams::from_config(&config).unwrap(),
        metrics.clone(),
    )
    .expect("registry builds");
    (reg, metrics, config, dir)
}

async fn call_ok(reg: &ToolRegistry, name: &str, args: Value) -> String {
    let out = reg.call(name, args.clone()).await;
    assert!(out.ok, "{name} {args} failed: {}", out.text);
    assert!(
        out.text.chars().count() <= reg.max_output_chars(),
        "{name} over budget"
    );
    out.text
}

async fn call_err(reg: &ToolRegistry, name: &str, args: Value) -> String {
    let out = reg.call(name, args.clone()).await;
    assert!(!out.ok, "{name} {args} should fail: {}", out.text);
    out.text
}

#[tokio::test]
async fn registry_holds_only_configured_tools_and_their_definitions_stay_small() {
    let (reg, ..) = registry("");
    assert_eq!(reg.names(), ["current_time", "runbook_search"]);

    let (reg, ..) = registry(
        r#"
        [prometheus]
        url = "http://127.0.0.1:9"
        [loki]
        url = "http://127.0.0.1:9"
        [grafana]
        url = "http://127.0.0.1:9"
        token = "glsa_secret"
        [alertmanager]
        url = "http://127.0.0.1:9"
        "#,
    );
    assert_eq!(
        reg.names(),
        [
            "current_time",
            "runbook_search",
            "prometheus_query",
            "prometheus_query_range",
            "prometheus_alerts",
            "prometheus_targets",
            "prometheus_metric_names",
            "prometheus_instance_overview",
            "loki_query",
            "loki_error_summary",
            "grafana_alerts",
            "grafana_alert_rules",
            "grafana_annotations",
            "alertmanager_alerts",
        ]
    );
    // The tools part of the first LLM request, in the OpenAI wire shape.
    let tools: Vec<Value> = reg
        .definitions()
        .iter()
        .map(|d| json!({"type": "function", "function": d}))
        .collect();
    let bytes = serde_json::to_string(&tools).unwrap().len();
    println!("figure: tool definitions JSON {bytes} bytes (target < 4000 of the 8 kB request)");
    assert!(bytes < 4000, "{bytes} bytes");
    for d in reg.definitions() {
        assert!(
            d.description.len() <= 150,
            "{} description too long",
            d.name
        );
    }
}

#[tokio::test]
async fn prometheus_tools_answer_from_a_real_prometheus_scraping_the_daemon() {
    let app = spawn_app("").await;
    let Some(prom) = external::start_prometheus(&[app.addr.to_string()], &[], "sre-agent") else {
        return;
    };
    let client = PrometheusClient::new(
        &crate::support::test_config(
            app.dir.path(),
            &format!("[prometheus]\nurl = \"{}\"", prom.url),
        )
        .prometheus,
    )
    .unwrap();
    eventually(Duration::from_secs(30), "two scrapes of the daemon", || {
        let client = client.clone();
        async move {
            let r = client
                .query("count_over_time(up{job=\"sre-agent\"}[1m])", None)
                .await;
            match r {
                Ok(sre_agent::integrations::prometheus::QueryResult::Vector(v))
                    if v.first().is_some_and(|s| s.value >= 2.0) =>
                {
                    Some(())
                }
                _ => None,
            }
        }
    })
    .await;
    let (reg, metrics, ..) = registry(&format!("[prometheus]\nurl = \"{}\"", prom.url));

    let out = call_ok(&reg, "prometheus_query", json!({"query": "up"})).await;
    assert!(
        out.contains("job=\"sre-agent\"") && out.ends_with(" 1"),
        "{out}"
    );

    let out = call_ok(
        &reg,
        "prometheus_query_range",
        json!({"query": "up", "start": "5m", "step": "1s"}),
    )
    .await;
    assert!(
        out.contains("step 5s"),
        "step raised to keep ≤ 250 points: {out}"
    );
    assert!(
        out.contains("min=1 avg=1 max=1 last=1 trend=flat ("),
        "{out}"
    );

    let out = call_ok(&reg, "prometheus_targets", json!({})).await;
    assert!(
        out.starts_with("1 active targets (0 not up), 0 dropped:"),
        "{out}"
    );
    assert!(
        out.contains(&format!("up {{instance=\"{}\"", app.addr)),
        "{out}"
    );

    let out = call_ok(
        &reg,
        "prometheus_metric_names",
        json!({"match": "tool_calls"}),
    )
    .await;
    assert!(out.contains("sre_agent_tool_calls_total"), "{out}");
    assert!(!out.contains("sre_agent_http_requests_total"), "{out}");

    let err = call_err(
        &reg,
        "prometheus_query",
        json!({"query": "sum(rate(up[5m])"}),
    )
    .await;
    let want = format!(
        "{}/api/v1/query returned 400: bad_data: invalid parameter",
        prom.url
    );
    assert!(
        err.contains("Prometheus at ") && err.contains(&want),
        "{err}"
    );
    assert!(err.contains("parse error"), "{err}");

    let text = metrics.encode();
    let series = r#"sre_agent_tool_calls_total{status="error",tool="prometheus_query"}"#;
    assert_eq!(metric_value(&text, series), Some(1.0), "{text}");
    app.stop().await;
}

#[tokio::test]
async fn prometheus_alerts_and_rules_parse_the_captured_bodies_and_503_text_comes_back() {
    let fake = fake_upstreams::prometheus_captured().await;
    let (reg, _, config, _dir) = registry(&format!("[prometheus]\nurl = \"{}\"", fake.url));
    let out = call_ok(&reg, "prometheus_alerts", json!({})).await;
    assert!(out.starts_with("2 alerts (1 firing):"), "{out}");
    assert!(
        out.contains("firing for ") && out.contains("alertname=\"AlwaysFiring\""),
        "{out}"
    );
    assert!(out.contains("Always-firing test alert"), "{out}");

    let groups = PrometheusClient::new(&config.prometheus)
        .unwrap()
        .rules()
        .await
        .unwrap();
    assert_eq!(groups[0].rules.len(), 2);
    assert_eq!(groups[0].rules[0].alerts.len(), 1);
    assert!(groups[0].rules[1].labels.is_empty());

    let err = call_err(&reg, "prometheus_query", json!({"query": "up"})).await;
    let want = format!(
        "Prometheus at {}/api/v1/query returned 503: Service Unavailable",
        fake.url
    );
    assert!(err.contains(&want), "{err}");
}

#[tokio::test]
async fn loki_tools_group_lines_by_pattern_and_count_errors_per_job() {
    let fake = fake_upstreams::loki().await;
    let (reg, ..) = registry(&format!("[loki]\nurl = \"{}\"", fake.url));

    let out = call_ok(
        &reg,
        "loki_query",
        json!({"query": "{job=\"api\"}", "since": "15m"}),
    )
    .await;
    assert!(
        out.starts_with("32 lines in 2 streams, 3 patterns"),
        "{out}"
    );
    let second = out.lines().nth(1).unwrap();
    assert!(second.starts_with("30× [job=api]"), "{out}");
    assert!(
        second.contains("upstream timeout after 100ms\" peer=10.0.3.0:8080"),
        "{out}"
    );
    let q = &fake.requests()[0].uri;
    assert!(
        q.starts_with("/loki/api/v1/query_range?") && q.contains("limit=200"),
        "{q}"
    );

    let out = call_ok(
        &reg,
        "loki_error_summary",
        json!({"selector": "job=\"api\"", "since": "2h"}),
    )
    .await;
    assert!(
        out.contains("{job=\"api\"} 31") && out.contains("{job=\"web\"} 2"),
        "{out}"
    );
    assert!(out.contains("30× [job=api]"), "{out}");
    let seen: Vec<String> = fake.requests().iter().map(|s| s.uri.clone()).collect();
    let instant = seen
        .iter()
        .find(|u| u.starts_with("/loki/api/v1/query?"))
        .unwrap();
    let decoded = url::form_urlencoded::parse(instant.split_once('?').unwrap().1.as_bytes())
        .find(|(k, _)| k == "query")
        .unwrap()
        .1
        .into_owned();
    assert_eq!(
        decoded,
        r#"sum by (job) (count_over_time({job="api"} |~ "(?i)(error|fail|panic|fatal)" [7200s]))"#
    );

    let err = call_err(&reg, "loki_query", json!({"query": "{job=\"BAD\"}"})).await;
    assert!(
        err.contains("Loki at ") && err.contains("returned 400: parse error at line 1"),
        "{err}"
    );
    let err = call_err(
        &reg,
        "loki_query",
        json!({"query": "{a=\"b\"}", "limit": 5000}),
    )
    .await;
    assert!(
        err.contains("\"limit\" must be between 1 and 1000"),
        "{err}"
    );
}

#[tokio::test]
async fn grafana_tools_use_the_token_and_a_bad_token_is_a_clear_401() {
    let fake = fake_upstreams::grafana("glsa_good").await;
    let toml = |t: &str| format!("[grafana]\nurl = \"{}\"\ntoken = \"{t}\"", fake.url);
    let (reg, ..) = registry(&toml("glsa_good"));

    let out = call_ok(&reg, "grafana_alerts", json!({})).await;
    assert!(out.starts_with("1 Grafana alerts:"), "{out}");
    assert!(
        out.contains("active since") && out.contains("job=\"checkout\""),
        "{out}"
    );
    assert!(!out.contains("__alert_rule_uid__"), "{out}");
    let out = call_ok(&reg, "grafana_alert_rules", json!({})).await;
    assert!(
        out.contains("HighErrorRate [sre/sre-agent] for=5m"),
        "{out}"
    );
    assert!(
        out.contains("A: sum by (job) (rate(http_requests_total"),
        "{out}"
    );
    let out = call_ok(&reg, "grafana_annotations", json!({"since": "6h"})).await;
    assert!(
        out.contains("HighErrorRate Pending→Alerting job=checkout"),
        "{out}"
    );
    let ann = fake
        .requests()
        .into_iter()
        .find(|s| s.uri.starts_with("/api/annotations"))
        .unwrap();
    assert!(
        ann.uri.contains("type=alert") && ann.uri.contains("from="),
        "{}",
        ann.uri
    );
    assert_eq!(ann.auth.as_deref(), Some("Bearer glsa_good"));

    let (reg, ..) = registry(&toml("glsa_wrong"));
    let err = call_err(&reg, "grafana_alerts", json!({})).await;
    let want = format!(
        "Grafana at {}/api/alertmanager/grafana/api/v2/alerts returned 401: Invalid API key",
        fake.url
    );
    assert!(err.contains(&want), "{err}");
    assert!(
        !err.contains("glsa_wrong"),
        "the token never appears in output: {err}"
    );
}

#[tokio::test]
async fn an_upstream_that_is_down_comes_back_as_text_naming_service_and_url() {
    let port = free_port();
    let (reg, metrics, ..) = registry(&format!(
        "[loki]\nurl = \"http://127.0.0.1:{port}\"\n[alertmanager]\nurl = \"http://127.0.0.1:{port}/am\"",
    ));
    let err = call_err(&reg, "loki_error_summary", json!({})).await;
    assert!(
        err.contains(&format!(
            "Loki at http://127.0.0.1:{port}/loki/api/v1/query"
        )),
        "{err}"
    );
    assert!(err.contains("is unreachable"), "{err}");
    let err = call_err(&reg, "alertmanager_alerts", json!({})).await;
    assert!(
        err.contains(&format!(
            "Alertmanager at http://127.0.0.1:{port}/am/api/v2/"
        )),
        "{err}"
    );
    let text = metrics.encode();
    for tool in ["loki_error_summary", "alertmanager_alerts"] {
        let series = format!(r#"sre_agent_tool_calls_total{{status="error",tool="{tool}"}}"#);
        assert_eq!(metric_value(&text, &series), Some(1.0), "{series}");
    }
}

#[tokio::test]
async fn bad_arguments_are_explained_and_counted_as_errors() {
    let (reg, metrics, ..) = registry("[prometheus]\nurl = \"http://127.0.0.1:9\"");
    let cases = [
        (
            "prometheus_query",
            json!({}),
            "missing required argument \"query\"",
        ),
        (
            "prometheus_query",
            json!({"query": 5}),
            "\"query\" must be a string",
        ),
        (
            "prometheus_query",
            json!({"query": "up", "time": "yesterday"}),
            "invalid time",
        ),
        (
            "prometheus_query_range",
            json!({"query": "up", "start": "1h", "end": "2h"}),
            "must be after start",
        ),
        (
            "prometheus_query_range",
            json!({"query": "up", "step": "fast"}),
            "invalid duration",
        ),
        (
            "prometheus_targets",
            json!({"state": "up"}),
            "must be one of",
        ),
        (
            "prometheus_metric_names",
            json!({"match": "(["}),
            "invalid regex",
        ),
        (
            "runbook_search",
            json!({"query": "   "}),
            "must not be empty",
        ),
    ];
    for (tool, args, want) in &cases {
        let err = call_err(&reg, tool, args.clone()).await;
        assert!(err.contains(want), "{tool} {args}: {err}");
    }
    let text = metrics.encode();
    let series = r#"sre_agent_tool_calls_total{status="error",tool="prometheus_query"}"#;
    assert_eq!(metric_value(&text, series), Some(3.0));
}

#[tokio::test]
async fn runbook_search_ranks_sections_and_a_missing_dir_is_said_plainly() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("disk.md"),
        "# Disk\nGeneral notes.\n## Disk full on a host\nCheck df -h, then du -sh /var/log/*; rotate logs.\n## Slow disk IO\nLook at iostat await and the SMART status.\n",
    )
    .unwrap();
    std::fs::create_dir(dir.path().join("net")).unwrap();
    std::fs::write(
        dir.path().join("net/dns.md"),
        "## DNS resolution fails\nCheck the resolver; the disk is rarely involved.\n",
    )
    .unwrap();
    let index = RunbookIndex::load(dir.path());
    let hits = index.search("host disk is full");
    assert_eq!(hits[0].1.heading, "Disk full on a host");
    assert_eq!(hits[0].1.file, "disk.md");
    assert!(hits.len() <= 3 && hits.windows(2).all(|w| w[0].0 >= w[1].0));

    let (reg, ..) = registry(&format!("[runbooks]\ndir = \"{}\"", dir.path().display()));
    let out = call_ok(&reg, "runbook_search", json!({"query": "dns resolver"})).await;
    assert!(
        out.starts_with("### net/dns.md — DNS resolution fails\nCheck the resolver"),
        "{out}"
    );
    let out = call_ok(&reg, "runbook_search", json!({"query": "kubernetes"})).await;
    assert_eq!(out, "no runbook section matches \"kubernetes\"");

    let (reg, ..) = registry("[runbooks]\ndir = \"/nonexistent/runbooks\"");
    let out = call_ok(&reg, "runbook_search", json!({"query": "disk"})).await;
    assert_eq!(out, "no runbooks found in /nonexistent/runbooks");
}
