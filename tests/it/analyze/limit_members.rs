//! `near_limit` on members of clusters and pools and on gauges named `…_total`: an
//! elasticsearch_exporter node near its disk's size among its peers and another cluster's
//! nodes of the same names; kea-exporter's subnets (`…_addresses_assigned_total` of
//! `…_addresses_total`, gauges as its exposition declares them) scraped live by a real
//! Prometheus, or backfilled without any declared type so the samples decide; real
//! exporters' captured output scraped live, where no counter named `…_total` pairs; and
//! the step detector telling a declared gauge named `…_total` by its levels.

use std::time::{Duration, Instant};

use chrono::{TimeDelta, Utc};
use sre_agent::analyze::{Fact, Focus, Scope, Severity, Sweep};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use super::world::{SeriesDef, World, lines, node_host, series};

fn near(facts: &[Fact]) -> Vec<&Fact> {
    facts
        .iter()
        .filter(|f| f.analyzer == "near_limit")
        .collect()
}

/// elasticsearch_exporter's data filesystem of one node: `size` and `available` bytes.
fn es_node(cluster: &str, name: &str, host: &str, size: f64, available: f64) -> Vec<SeriesDef> {
    let labels = [
        ("cluster", cluster),
        ("es_client_node", "true"),
        ("es_data_node", "true"),
        ("es_ingest_node", "true"),
        ("es_master_node", "true"),
        ("host", host),
        ("instance", "es-exporter:9114"),
        ("job", "elasticsearch"),
        ("mount", "/usr/share/elasticsearch/data (/dev/sdb1)"),
        ("name", name),
        ("path", "/usr/share/elasticsearch/data"),
    ];
    vec![
        series(
            "elasticsearch_filesystem_data_size_bytes",
            &labels,
            move |_| Some(size),
        ),
        series(
            "elasticsearch_filesystem_data_available_bytes",
            &labels,
            move |_| Some(available),
        ),
        series(
            "elasticsearch_filesystem_data_free_bytes",
            &labels,
            move |_| Some(available + 0.02 * size),
        ),
    ]
}

#[tokio::test]
async fn a_cluster_node_near_its_disks_size_is_named_by_its_node_name_on_its_own_host() {
    let gib = 1024.0 * 1024.0 * 1024.0;
    let size = 500.0 * gib;
    let mut defs = node_host("larch-1");
    for (cluster, name, host, free_share) in [
        ("logsearch", "es-1", "10.0.5.11", 0.60),
        ("logsearch", "es-2", "10.0.5.12", 0.58),
        // 6 % left: 94 % used.
        ("logsearch", "es-3", "10.0.5.13", 0.06),
        // Another cluster's nodes of the same names, healthy.
        ("metrics", "es-1", "10.0.9.11", 0.70),
        ("metrics", "es-3", "10.0.9.13", 0.45),
    ] {
        defs.extend(es_node(cluster, name, host, size, free_share * size));
    }
    let Some(world) = World::build(&defs, 7200, 15).await else {
        return;
    };
    let (facts, notes) = world.sweep(Some(600)).await;
    assert!(notes.is_empty(), "{notes:?}");
    let all = lines(&facts);
    let es: Vec<_> = near(&facts)
        .into_iter()
        .filter(|f| f.what.contains("elasticsearch"))
        .collect();
    assert_eq!(es.len(), 1, "{all}");
    let f = es[0];
    assert_eq!(f.entity.name, "es-3", "{all}");
    assert_eq!(f.entity.host.as_deref(), Some("10.0.5.13"), "{all}");
    assert_eq!(f.entity.labels["cluster"], "logsearch");
    assert!((f.value.unwrap().value - 94.0).abs() < 0.01, "{all}");
    assert_eq!(f.severity, Severity::Warning, "{all}");
    // Its query reads the one node's share.
    let q = f.source.arguments["query"].as_str().unwrap();
    let v = world.client().query_vector(q, None).await.expect(q);
    assert_eq!(v.len(), 1, "{q}");
    assert!((v[0].value - 94.0).abs() < 0.01, "{q}");
}

/// kea-exporter's subnet gauges as it exposes them (prometheus_client's text format, every
/// metric a `gauge`), beside a web server's counter of requests freshly restarted (50
/// served) with 45 in flight.
const KEA: &str = r#"# HELP kea_dhcp4_addresses_assigned_total Assigned addresses
# TYPE kea_dhcp4_addresses_assigned_total gauge
kea_dhcp4_addresses_assigned_total{subnet="10.20.0.0/24",subnet_id="1"} 100.0
kea_dhcp4_addresses_assigned_total{subnet="10.30.0.0/23",subnet_id="2"} 250.0
# HELP kea_dhcp4_addresses_declined_total Declined counts
# TYPE kea_dhcp4_addresses_declined_total gauge
kea_dhcp4_addresses_declined_total{subnet="10.20.0.0/24",subnet_id="1"} 0.0
kea_dhcp4_addresses_declined_total{subnet="10.30.0.0/23",subnet_id="2"} 2.0
# HELP kea_dhcp4_addresses_total Size of subnet address pool
# TYPE kea_dhcp4_addresses_total gauge
kea_dhcp4_addresses_total{subnet="10.20.0.0/24",subnet_id="1"} 100.0
kea_dhcp4_addresses_total{subnet="10.30.0.0/23",subnet_id="2"} 500.0
# HELP kea_dhcp4_packets_received_total Packets received
# TYPE kea_dhcp4_packets_received_total gauge
kea_dhcp4_packets_received_total{operation="discover"} 91234.0
kea_dhcp4_packets_received_total{operation="request"} 88100.0
# HELP http_requests_total Requests served.
# TYPE http_requests_total counter
http_requests_total 50.0
# HELP http_requests_active Requests in flight.
# TYPE http_requests_active gauge
http_requests_active 45.0
"#;

/// A Prometheus that scrapes each `(body, instance, job)` live every second as its own
/// target (besides `defs`' history), once the metadata of the names `expect` is in.
async fn scraping(
    targets: &[(String, &str, &str)],
    expect: &[&str],
    defs: &[SeriesDef],
) -> Option<(World, MockServer)> {
    let exporter = MockServer::start().await;
    let mut scrape = String::new();
    for (body, instance, job) in targets {
        Mock::given(method("GET"))
            .and(path(format!("/metrics/{job}")))
            .respond_with(
                ResponseTemplate::new(200)
                    .insert_header("content-type", "text/plain; version=0.0.4")
                    .set_body_string(body.clone()),
            )
            .mount(&exporter)
            .await;
        scrape.push_str(&format!(
            r#"
  - job_name: {job}
    scrape_interval: 1s
    metrics_path: /metrics/{job}
    static_configs:
      - targets: ['{}']
    relabel_configs:
      - target_label: instance
        replacement: {instance}
"#,
            exporter.address()
        ));
    }
    let world = World::build_scraping(defs, 4 * 3600, 15, &scrape).await?;
    let client = world.client();
    let deadline = Instant::now() + Duration::from_secs(40);
    loop {
        let types = client.metric_types(100_000).await.unwrap();
        if expect.iter().all(|n| types.contains_key(*n)) {
            break;
        }
        assert!(Instant::now() < deadline, "no metadata within 40 s");
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    Some((world, exporter))
}

/// A history of one series, ending before the live scrapes begin.
fn background(instance: &str) -> Vec<SeriesDef> {
    vec![series(
        "up",
        &[("instance", instance), ("job", "node")],
        |ago| (ago >= 45).then_some(1.0),
    )]
}

#[tokio::test]
async fn a_full_subnet_is_reported_by_its_declared_gauges_and_a_counter_named_total_is_not() {
    let Some((world, _exporter)) = scraping(
        &[(KEA.to_string(), "dhcp-1:9547", "kea")],
        &["kea_dhcp4_addresses_total", "http_requests_total"],
        &background("larch-2:9100"),
    )
    .await
    else {
        return;
    };
    let types = world.client().metric_types(100_000).await.unwrap();
    assert_eq!(types["kea_dhcp4_addresses_total"], "gauge");
    assert_eq!(types["http_requests_total"], "counter");
    let (facts, notes) = world.sweep(Some(600)).await;
    assert!(notes.is_empty(), "{notes:?}");
    let all = lines(&facts);
    let near = near(&facts);
    // Only the full subnet: the half-used one is fine, and 45 requests in flight are no
    // share of the 50 counted since the restart.
    assert_eq!(near.len(), 1, "{all}");
    let f = near[0];
    assert_eq!(f.what, "kea_dhcp4_addresses_assigned_total at", "{all}");
    assert_eq!(f.entity.name, "10.20.0.0/24", "{all}");
    assert_eq!(f.entity.labels["subnet_id"], "1");
    assert_eq!(f.value.unwrap().value, 100.0);
    assert_eq!(f.limit.unwrap().value, 100.0);
    assert_eq!(f.severity, Severity::Critical);
    assert_eq!(
        f.detail.as_deref(),
        Some("100 of kea_dhcp4_addresses_total 100"),
        "{all}"
    );
    let q = f.source.arguments["query"].as_str().unwrap();
    let v = world.client().query_vector(q, None).await.expect(q);
    assert_eq!(v.len(), 1, "{q}");
}

#[tokio::test]
async fn without_declared_types_a_total_that_fell_or_held_while_its_part_moved_is_a_gauge() {
    let mut defs = node_host("larch-3");
    let kea = |name: &str, subnet: &str, id: &str, f: fn(i64) -> f64| {
        series(
            name,
            &[
                ("instance", "dhcp-2:9547"),
                ("job", "kea"),
                ("subnet", subnet),
                ("subnet_id", id),
            ],
            move |ago| Some(f(ago)),
        )
    };
    // The /24's pool of 100: 90 leased, 75 after an expiry 40 minutes ago, then filling to
    // all 100 ten minutes ago.
    defs.push(kea(
        "kea_dhcp4_addresses_assigned_total",
        "10.20.0.0/24",
        "1",
        |ago| match ago {
            a if a > 2400 => 90.0,
            a if a > 1800 => 75.0,
            a => (75.0 + (1800 - a).min(1200) as f64 / 1200.0 * 25.0).round(),
        },
    ));
    defs.push(kea(
        "kea_dhcp4_addresses_total",
        "10.20.0.0/24",
        "1",
        |_| 100.0,
    ));
    // The /23: about half of 500, moving.
    defs.push(kea(
        "kea_dhcp4_addresses_assigned_total",
        "10.30.0.0/23",
        "2",
        |ago| if (ago / 600) % 2 == 0 { 240.0 } else { 260.0 },
    ));
    defs.push(kea(
        "kea_dhcp4_addresses_total",
        "10.30.0.0/23",
        "2",
        |_| 500.0,
    ));
    // A web server restarted five minutes ago: its counter fell to near zero and counts 50
    // by now, with 45 requests in flight.
    let web = [("instance", "larch-3:8080"), ("job", "web")];
    defs.push(series("http_requests_total", &web, |ago| {
        Some(match ago {
            a if a > 300 => 90_000.0 + (7200 - a.min(7200)) as f64 * 5.0,
            a => (300 - a) as f64 / 6.0,
        })
    }));
    defs.push(series("http_requests_active", &web, |ago| {
        Some(if (ago / 60) % 2 == 0 { 45.0 } else { 40.0 })
    }));
    let Some(world) = World::build(&defs, 7200, 15).await else {
        return;
    };
    let (facts, notes) = world.sweep(Some(600)).await;
    assert!(notes.is_empty(), "{notes:?}");
    let all = lines(&facts);
    let near = near(&facts);
    assert_eq!(near.len(), 1, "{all}");
    let f = near[0];
    assert_eq!(f.what, "kea_dhcp4_addresses_assigned_total at", "{all}");
    assert_eq!(f.entity.name, "10.20.0.0/24", "{all}");
    assert_eq!(f.value.unwrap().value, 100.0, "{all}");
    assert_eq!(f.severity, Severity::Critical);
}

#[tokio::test]
async fn captured_exporters_scraped_live_pair_no_counter_named_total() {
    // Real exporters' output, each its own target: the types Prometheus keeps are the ones
    // their `# TYPE` lines declare (node_exporter's systemd collector declares a gauge
    // named `…_refused_connections_total`).
    let read = |file: &str| {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/exporters")
            .join(file);
        std::fs::read_to_string(path).unwrap()
    };
    let targets = [
        (read("node_exporter_systemd.prom"), "larch-4:9100", "node"),
        (read("process_exporter.prom"), "larch-4:9256", "process"),
        (read("prometheus_self.prom"), "larch-5:9090", "prometheus"),
        (
            read("alertmanager_self.prom"),
            "larch-5:9093",
            "alertmanager",
        ),
    ];
    let Some((world, _exporter)) = scraping(
        &targets,
        &[
            "node_systemd_socket_refused_connections_total",
            "namedprocess_namegroup_num_procs",
            "prometheus_build_info",
            "alertmanager_build_info",
        ],
        &background("larch-4:9100"),
    )
    .await
    else {
        return;
    };
    let types = world.client().metric_types(100_000).await.unwrap();
    assert_eq!(types["go_memstats_alloc_bytes_total"], "counter");
    assert_eq!(
        types["node_systemd_socket_refused_connections_total"],
        "gauge"
    );
    let (facts, _) = world.sweep(Some(600)).await;
    let all = lines(&facts);
    for f in near(&facts) {
        let q = f.source.arguments["query"].as_str().unwrap();
        assert!(!q.contains("_total"), "{q}: {all}");
    }
}

#[tokio::test]
async fn a_declared_gauge_named_total_that_stepped_is_told_by_its_levels_not_as_a_pace() {
    // The subnet's assigned addresses, 40 for hours, 100 since 20 minutes ago; the live
    // scrape (which declares the type) continues the history.
    let labels = [
        ("instance", "dhcp-1:9547"),
        ("job", "kea"),
        ("subnet", "10.20.0.0/24"),
        ("subnet_id", "1"),
    ];
    let defs = vec![series(
        "kea_dhcp4_addresses_assigned_total",
        &labels,
        |ago| (ago >= 45).then_some(if ago > 1200 { 40.0 } else { 100.0 }),
    )];
    let body = "# HELP kea_dhcp4_addresses_assigned_total Assigned addresses\n\
        # TYPE kea_dhcp4_addresses_assigned_total gauge\n\
        kea_dhcp4_addresses_assigned_total{subnet=\"10.20.0.0/24\",subnet_id=\"1\"} 100.0\n";
    let Some((world, _exporter)) = scraping(
        &[(body.to_string(), "dhcp-1:9547", "kea")],
        &["kea_dhcp4_addresses_assigned_total"],
        &defs,
    )
    .await
    else {
        return;
    };
    let now = Utc::now();
    let started = now - TimeDelta::minutes(15);
    let alert = [("instance".to_string(), "dhcp-1:9547".to_string())]
        .into_iter()
        .collect();
    let scope = Scope::new(now, Some(started)).with_focus(Focus::alert(&alert, Some(started)));
    let report = Sweep::of(sre_agent::analyze::prom::analyzers(world.client()))
        .run(scope)
        .await;
    assert!(report.notes.is_empty(), "{:?}", report.notes);
    let all = lines(&report.facts);
    let step = report
        .facts
        .iter()
        .find(|f| f.analyzer == "steps" && f.entity.name == "kea_dhcp4_addresses_assigned_total")
        .expect(&all);
    let line = step.line(now);
    assert!(line.contains("rose from 40 to"), "{all}");
    assert!(!line.contains("counting"), "{all}");
}
