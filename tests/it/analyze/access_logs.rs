//! `access_status_bursts` against the fake Loki: of three access logs in three formats
//! (nginx's combined, Traefik's JSON, Caddy's JSON), the uploads nginx began refusing with
//! 413 and the rate limit Traefik began answering with 429 are facts; nginx's 404s, as
//! common before as since, and a scanner's burst of 404s on Caddy are not.

use std::collections::BTreeMap;
use std::sync::Arc;

use chrono::{TimeDelta, Utc};
use sre_agent::analyze::{Fact, Scope, Severity, Sweep, logs};
use sre_agent::config::UpstreamConfig;
use sre_agent::eval::fakes::{FakeServer, LogLine, loki_router};
use sre_agent::integrations::LokiClient;

use super::world::lines;

type Stream = (BTreeMap<String, String>, Vec<LogLine>);

fn stream(service: &str, host: &str) -> BTreeMap<String, String> {
    [("service_name", service), ("host", host), ("job", "docker")]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// Lines every `every` seconds from `from` seconds ago until `until` seconds ago, written
/// by `line(i, seconds ago)`.
fn every(from: i64, until: i64, every: i64, line: impl Fn(i64, i64) -> String) -> Vec<LogLine> {
    let now = Utc::now().timestamp_nanos_opt().unwrap();
    let mut out = Vec::new();
    let (mut ago, mut i) = (from, 0);
    while ago > until {
        out.push((now - ago * 1_000_000_000, line(i, ago)));
        ago -= every;
        i += 1;
    }
    out
}

fn clf(client: &str, ago: i64, request: &str, status: u16, size: u32) -> String {
    let t = (Utc::now() - TimeDelta::seconds(ago)).format("%d/%b/%Y:%H:%M:%S +0000");
    format!(
        r#"{client} - - [{t}] "{request} HTTP/1.1" {status} {size} "https://files.example.org/" "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0""#
    )
}

fn streams() -> Vec<Stream> {
    let hours = 80 * 60;
    // nginx: pages all along, uploads accepted until 20 minutes ago and refused since
    // (client_max_body_size lowered), and 404s from crawlers as always.
    let mut nginx = every(hours, 0, 6, |i, ago| {
        clf(
            &format!("10.0.3.{}", i % 40),
            ago,
            &format!("GET /files/{}", i % 17),
            200,
            5120,
        )
    });
    nginx.extend(every(hours, 1200, 120, |i, ago| {
        clf(
            &format!("10.0.4.{}", i % 9),
            ago,
            "POST /api/upload",
            201,
            88,
        )
    }));
    nginx.extend(every(1200, 0, 20, |i, ago| {
        clf(
            &format!("10.0.4.{}", i % 9),
            ago,
            "POST /api/upload",
            413,
            585,
        )
    }));
    nginx.extend(every(hours, 0, 60, |i, ago| {
        clf(
            "66.249.66.1",
            ago,
            &format!("GET /old/page-{i}.html"),
            404,
            153,
        )
    }));
    // Traefik (JSON): its API answered 200 all along, and 429 since 15 minutes ago.
    let traefik_line = |status: u16, i: i64| {
        format!(
            r#"{{"ClientAddr":"10.42.0.{c}:4{i:04}","ClientHost":"10.42.0.{c}","DownstreamContentSize":17,"DownstreamStatus":{status},"Duration":120000,"RequestMethod":"GET","RequestPath":"/api/search","RequestProtocol":"HTTP/1.1","RouterName":"search@kubernetes","level":"info","msg":""}}"#,
            c = i % 25,
            i = i % 10_000
        )
    };
    let mut traefik = every(hours, 0, 4, |i, _| traefik_line(200, i));
    traefik.extend(every(900, 0, 2, |i, _| traefik_line(429, i)));
    // Caddy (JSON): pages all along, and a scanner probing paths for 12 minutes.
    let caddy_line = |status: u16, client: &str, path: &str| {
        format!(
            r#"{{"level":"info","ts":1795810447.12,"logger":"http.log.access.log0","msg":"handled request","request":{{"remote_ip":"{client}","client_ip":"{client}","proto":"HTTP/1.1","method":"GET","host":"wiki.example.org","uri":"{path}"}},"bytes_read":0,"duration":0.0003,"size":12,"status":{status}}}"#
        )
    };
    let mut caddy = every(hours, 0, 10, |i, _| {
        caddy_line(200, &format!("10.9.0.{}", i % 30), "/wiki/Main")
    });
    caddy.extend(every(720, 0, 4, |i, _| {
        caddy_line(404, "198.51.100.66", &format!("/.git/config.{i}"))
    }));
    vec![
        (stream("nginx", "web-1"), nginx),
        (stream("traefik", "edge-1"), traefik),
        (stream("caddy", "wiki-1"), caddy),
    ]
}

async fn sweep(streams: Vec<Stream>, started_secs_ago: i64) -> (Vec<Fact>, Vec<String>) {
    sre_agent::install_crypto_provider();
    let server = FakeServer::start(loki_router(streams)).await.unwrap();
    let config = UpstreamConfig {
        url: Some(server.url.parse().unwrap()),
        ..Default::default()
    };
    let client = Arc::new(LokiClient::new(&config).unwrap());
    let now = Utc::now();
    let scope = Scope::new(now, Some(now - TimeDelta::seconds(started_secs_ago)));
    // The analyzer as the catalog registers it, alone (the others read every line too).
    let analyzers = logs::analyzers(client)
        .into_iter()
        .filter(|a| a.name() == "access_status_bursts")
        .collect::<Vec<_>>();
    assert_eq!(analyzers.len(), 1);
    let report = Sweep::of(analyzers).run(scope).await;
    let facts = report
        .facts
        .into_iter()
        .filter(|f| f.analyzer == "access_status_bursts")
        .collect();
    (facts, report.notes)
}

#[tokio::test]
async fn a_client_error_status_that_was_rare_before_the_alert_is_a_fact_and_routine_404s_are_not() {
    let (facts, notes) = sweep(streams(), 15 * 60).await;
    let all = lines(&facts);
    eprintln!("{all}");
    assert!(notes.is_empty(), "{notes:?}");
    let on = |service: &str| facts.iter().find(|f| f.entity.name == service);
    let nginx = on("nginx").expect(&all);
    assert_eq!(nginx.entity.host.as_deref(), Some("web-1"));
    assert!(
        nginx.what.starts_with("HTTP 413 (Content Too Large)"),
        "{all}"
    );
    assert_eq!(nginx.severity, Severity::Warning, "a fifth of the requests");
    assert_eq!(nginx.value.map(|q| q.value), Some(60.0), "{all}");
    let detail = nginx.detail.as_deref().unwrap();
    assert!(detail.starts_with("0 in the 50 min before"), "{all}");
    assert!(detail.contains("were POST /api/upload"), "{all}");
    assert!(
        detail.contains("\"POST /api/upload HTTP/1.1\" 413 585"),
        "{all}"
    );
    let began = (Utc::now() - nginx.since.expect("since")).num_seconds();
    assert!((1150..=1260).contains(&began), "{all}");
    let query = nginx.source.arguments["query"].as_str().unwrap();
    assert!(
        query.starts_with(r#"{service_name="nginx", host="web-1"} |~ `" 413( |$)"#),
        "{query}"
    );
    // The rate limit answered most of Traefik's requests since.
    let traefik = on("traefik").expect(&all);
    assert!(
        traefik.what.starts_with("HTTP 429 (Too Many Requests)"),
        "{all}"
    );
    assert_eq!(traefik.severity, Severity::Critical, "{all}");
    assert!(
        traefik
            .detail
            .as_deref()
            .unwrap()
            .contains("were GET /api/search"),
        "{all}"
    );
    // nginx's 404s (as common before) and the scanner's on Caddy are no burst.
    assert!(on("caddy").is_none(), "{all}");
    assert_eq!(facts.len(), 2, "{all}");
}

#[tokio::test]
async fn without_access_logs_or_a_burst_nothing_is_reported() {
    // The same services two hours ago: no burst yet in any of them.
    let calm: Vec<Stream> = streams()
        .into_iter()
        .map(|(l, lines)| {
            let cut = Utc::now().timestamp_nanos_opt().unwrap() - 1800 * 1_000_000_000;
            (l, lines.into_iter().filter(|(t, _)| *t < cut).collect())
        })
        .collect();
    let (facts, notes) = sweep(calm, 45 * 60).await;
    assert!(notes.is_empty(), "{notes:?}");
    assert!(facts.is_empty(), "{}", lines(&facts));
}
