use super::*;
use crate::agent::{AlertSample, AlertScope, GroupKey, GroupSummary, StormSummary};

fn strings(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// A group's context whose one firing alert has `labels` and `generator_url`.
fn group(labels: &[(&str, &str)], generator_url: &str) -> AlertContext {
    AlertContext {
        scope: AlertScope::Group(GroupSummary {
            key: GroupKey::Fingerprint("fp".into()),
            received: 1,
            firing: 1,
        }),
        alerts: vec![AlertSample {
            firing: true,
            labels: strings(labels),
            generator_url: Some(generator_url.into()),
            ..AlertSample::default()
        }],
    }
}

fn names(calls: &[PlannedCall]) -> Vec<String> {
    calls
        .iter()
        .map(|c| format!("{} {}", c.name, c.arguments["query"].as_str().unwrap()))
        .collect()
}

#[tokio::test]
async fn a_disk_alert_gets_its_rule_value_the_used_ratio_and_the_series_it_reads() {
    let context = group(
        &[
            ("alertname", "DiskFillingUp"),
            ("instance", "pve1:9100"),
            ("mountpoint", "/var/lib/vz"),
            ("severity", "warning"),
        ],
        "http://prom:9090/graph?g0.expr=node_filesystem_avail_bytes+%2F+node_filesystem_size_bytes+%3C+0.1&g0.tab=1",
    );
    let facts = alert_facts(&context).unwrap();
    let calls = EvidencePlanner::default().for_alert(&facts, false).await;
    let sel = "{instance=\"pve1:9100\",mountpoint=\"/var/lib/vz\"}";
    assert_eq!(
        names(&calls),
        vec![
            "prometheus_query node_filesystem_avail_bytes / node_filesystem_size_bytes".to_string(),
            format!(
                "prometheus_query_range 1 - node_filesystem_avail_bytes{sel} / node_filesystem_size_bytes{sel}"
            ),
            format!("prometheus_query_range node_filesystem_avail_bytes{sel}"),
            format!("prometheus_query_range node_filesystem_size_bytes{sel}"),
        ]
    );
    assert_eq!(calls[1].arguments["start"], "24h");
}

#[tokio::test]
async fn an_alert_without_a_known_rule_falls_back_to_its_instance() {
    let facts = AlertFacts {
        labels: [("alertname", "X"), ("instance", "nas:9100")]
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        rule_expr: None,
        storm: None,
    };
    let calls = EvidencePlanner::default().for_alert(&facts, false).await;
    assert_eq!(
        names(&calls)[0],
        "prometheus_query up{instance=\"nas:9100\"}"
    );
}

#[tokio::test]
async fn an_application_alert_gets_the_overview_of_its_host() {
    let context = group(
        &[
            ("alertname", "HighRequestLatency"),
            ("instance", "docker1:8080"),
            ("job", "nextcloud"),
        ],
        "http://prom:9090/graph?g0.expr=http_request_duration_seconds_p95+%3E+2&g0.tab=1",
    );
    let facts = alert_facts(&context).unwrap();
    let calls = EvidencePlanner::default().for_alert(&facts, true).await;
    let sel = r#"{instance="docker1:8080",job="nextcloud"}"#;
    assert_eq!(
        names(&calls[..2]),
        vec![
            "prometheus_query http_request_duration_seconds_p95".to_string(),
            format!("prometheus_query_range http_request_duration_seconds_p95{sel}"),
        ]
    );
    assert_eq!(calls[2].name, OVERVIEW);
    assert_eq!(calls[2].arguments["instance"], "docker1");
    // A host's own alert has its series already; without the tool, no overview.
    let disk = group(
        &[("alertname", "DiskFillingUp"), ("instance", "pve1:9100")],
        "http://prom:9090/graph?g0.expr=node_filesystem_avail_bytes+%3C+1&g0.tab=1",
    );
    let planner = EvidencePlanner::default();
    let has_overview = |calls: Vec<PlannedCall>| calls.iter().any(|c| c.name == OVERVIEW);
    let facts = alert_facts(&disk).unwrap();
    assert!(!has_overview(planner.for_alert(&facts, true).await));
    let facts = alert_facts(&context).unwrap();
    assert!(!has_overview(planner.for_alert(&facts, false).await));
}

#[tokio::test]
async fn an_application_alert_from_an_exporter_on_no_measured_host_gets_no_overview() {
    crate::install_crypto_provider();
    // Prometheus knows host metrics of app1 only (its node exporter on :9100).
    let router = axum::Router::new().route(
        "/api/v1/label/instance/values",
        axum::routing::get(|| async {
            axum::Json(serde_json::json!({"status": "success", "data": ["app1:9100"]}))
        }),
    );
    let server = crate::eval::fakes::FakeServer::start(router).await.unwrap();
    let mut config = crate::config::Config::default();
    config.prometheus.url = Some(server.url.parse().unwrap());
    let planner = EvidencePlanner::new(&Upstreams::from_config(&config).unwrap());
    let alert = |instance: &str| {
        let context = group(
            &[("alertname", "QueueBacklog"), ("instance", instance)],
            "http://prom:9090/graph?g0.expr=queue_depth+%3E+100&g0.tab=1",
        );
        alert_facts(&context).unwrap()
    };
    let has_overview = |calls: &[PlannedCall]| calls.iter().any(|c| c.name == OVERVIEW);
    let on_app1 = planner.for_alert(&alert("app1:8080"), true).await;
    assert!(has_overview(&on_app1), "{:?}", names(&on_app1));
    let on_ksm = planner.for_alert(&alert("ksm:8080"), true).await;
    assert!(!has_overview(&on_ksm), "{:?}", names(&on_ksm));
}

#[tokio::test]
async fn a_probe_alert_gets_its_probe_now_and_its_status_over_the_lookback() {
    let facts = AlertFacts {
        labels: [
            ("alertname", "ProbeFailing"),
            ("instance", "https://photos.lan"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect(),
        ..AlertFacts::default()
    };
    let calls = EvidencePlanner::default().for_alert(&facts, false).await;
    assert_eq!(
        names(&calls),
        vec![
            r#"prometheus_query {instance="https://photos.lan"}"#,
            r#"prometheus_query_range {__name__=~"probe_success|probe_http_status_code",instance="https://photos.lan"}"#,
        ]
    );
    assert_eq!(calls[1].arguments["start"], LOOKBACK);
}

#[test]
fn alert_facts_read_the_first_alert_and_need_one() {
    let mut context = group(&[("a", "b")], "http://grafana/alerting/grafana/x/view");
    let f = alert_facts(&context).unwrap();
    assert_eq!(f.labels.len(), 1);
    assert_eq!(f.rule_expr, None, "a URL without g0.expr names no rule");
    context.alerts.clear();
    assert!(alert_facts(&context).is_none());
}

#[tokio::test]
async fn a_storm_queries_its_rule_across_every_instance() {
    let mut context = group(
        &[
            ("alertname", "DiskFillingUp"),
            ("instance", "pve1:9100"),
            ("mountpoint", "/"),
            ("pod", "p"),
        ],
        "http://prom:9090/graph?g0.expr=node_filesystem_avail_bytes+%2F+node_filesystem_size_bytes+%3C+0.1&g0.tab=1",
    );
    context.scope = AlertScope::Storm(StormSummary {
        alert: "DiskFillingUp".into(),
        groups: 3,
        firing_groups: 3,
        alerts_received: 3,
        started_at: None,
        affected: strings(&[("instance", "pve[1-3]:9100"), ("mountpoint", "/")]),
        members: vec![
            strings(&[("instance", "10.0.0.1:9100")]),
            strings(&[("instance", "nas:9100")]),
        ],
        reinvestigation: None,
    });
    let facts = alert_facts(&context).unwrap();
    assert!(!facts.labels.contains_key("instance"));
    assert_eq!(facts.labels["mountpoint"], "/", "shared by every group");
    let calls = EvidencePlanner::default().for_alert(&facts, false).await;
    let rule = "node_filesystem_avail_bytes / node_filesystem_size_bytes < 0.1";
    assert_eq!(
        names(&calls),
        vec![
            format!("prometheus_query count({rule})"),
            "prometheus_query bottomk(10, node_filesystem_avail_bytes / node_filesystem_size_bytes)"
                .to_string(),
            format!("prometheus_query_range count({rule})"),
        ]
    );
    assert_eq!(calls[2].arguments["start"], "24h");
    // Without a known rule: `up` of the instances listed, matched literally.
    let no_rule = AlertFacts {
        rule_expr: None,
        ..alert_facts(&context).unwrap()
    };
    let calls = EvidencePlanner::default().for_alert(&no_rule, false).await;
    assert_eq!(
        names(&calls),
        vec![r#"prometheus_query up{instance=~"10\\.0\\.0\\.1:9100|nas:9100"}"#]
    );
}

#[test]
fn a_rule_of_unknown_datasource_is_logql_only_with_a_line_filter_or_a_parser_stage() {
    for logql in [
        r#"sum(count_over_time({app="web"} |= "error" [5m])) > 10"#,
        r#"{job="nginx"} |~ `5\d\d`"#,
        r#"rate({unit="x.service"} | json | level="error" [1m])"#,
        r#"{app="ü"} != "debug""#,
    ] {
        assert!(super::looks_like_logql(logql), "{logql}");
    }
    for promql in [
        r#"up{job="node"} != 1"#,
        r#"sum(rate(http_requests_total{code=~"5.."}[5m])) > 1"#,
        r#"count_over_time({__name__="up"}[5m])"#,
        "node_load1 > 4",
        "",
    ] {
        assert!(!super::looks_like_logql(promql), "{promql}");
    }
}

#[tokio::test]
async fn a_counter_of_the_rule_is_read_as_its_rate_summed_to_what_the_alert_is_about() {
    let context = group(
        &[
            ("alertname", "NodeSystemSaturation"),
            ("instance", "jelly1:9100"),
            ("job", "node"),
        ],
        "http://prom:9090/graph?g0.expr=node_load1%7Bjob%3D%22node%22%7D+%2F+count+without+%28cpu%2C+mode%29+%28node_cpu_seconds_total%7Bjob%3D%22node%22%2C+mode%3D%22idle%22%7D%29+%3E+2&g0.tab=1",
    );
    let facts = alert_facts(&context).unwrap();
    let calls = EvidencePlanner::default().for_alert(&facts, false).await;
    let sel = "{instance=\"jelly1:9100\",job=\"node\"}";
    let names = names(&calls);
    assert!(
        names.contains(&format!("prometheus_query_range node_load1{sel}")),
        "{names:?}"
    );
    assert!(
        names.contains(&format!(
            "prometheus_query_range sum by (instance,job) (rate(node_cpu_seconds_total{sel}[5m]))"
        )),
        "{names:?}"
    );
}
