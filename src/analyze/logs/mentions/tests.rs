use std::collections::BTreeMap;

use chrono::{DateTime, TimeDelta, Utc};

use super::*;
use crate::analyze::Focus;
use crate::eval::fakes::{FakeServer, loki_router};

type Stream = (BTreeMap<String, String>, Vec<(i64, String)>);

fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn lines(now: DateTime<Utc>, entries: &[(i64, &str)]) -> Vec<(i64, String)> {
    entries
        .iter()
        .map(|(mins_ago, l)| {
            let t = now - TimeDelta::minutes(*mins_ago);
            (t.timestamp_nanos_opt().unwrap(), l.to_string())
        })
        .collect()
}

async fn run(
    streams: Vec<Stream>,
    focus: Focus,
    now: DateTime<Utc>,
    started: DateTime<Utc>,
) -> Vec<Fact> {
    crate::install_crypto_provider();
    let server = FakeServer::start(loki_router(streams)).await.unwrap();
    let mut config = crate::config::Config::default();
    config.loki.url = Some(server.url.parse().unwrap());
    let upstreams = crate::integrations::Upstreams::from_config(&config).unwrap();
    let scope = Scope::new(now, Some(started)).with_focus(focus);
    LogsMentioning(upstreams.loki.unwrap())
        .run(&scope)
        .await
        .unwrap()
}

#[tokio::test]
async fn another_hosts_service_that_logged_errors_naming_the_alerts_host_is_one_fact() {
    let now = Utc::now();
    let streams = vec![
        (
            labels(&[("host", "app3"), ("unit", "api.service")]),
            lines(
                now,
                &[
                    (20, "level=info msg=\"pool ready\" db=db7.lan:5432"),
                    (
                        9,
                        "level=error msg=\"query failed\" err=\"dial tcp db7.lan:5432: connect: connection refused\"",
                    ),
                    (
                        8,
                        "level=error msg=\"query failed\" err=\"dial tcp db7.lan:5432: connect: connection refused\"",
                    ),
                ],
            ),
        ),
        // Its own logs, a line naming it that looks fine, and another host's error.
        (
            labels(&[("host", "db7"), ("unit", "postgresql.service")]),
            lines(
                now,
                &[(
                    9,
                    "FATAL: could not open file db7 base/16384: No space left on device",
                )],
            ),
        ),
        (
            labels(&[("host", "backup1"), ("unit", "cron.service")]),
            lines(now, &[(9, "rsync to db7.lan done, 412 files")]),
        ),
        (
            labels(&[("host", "web1"), ("unit", "nginx.service")]),
            lines(
                now,
                &[(
                    9,
                    "[error] upstream timed out while reading response header",
                )],
            ),
        ),
    ];
    let started = now - TimeDelta::minutes(10);
    let focus = Focus::alert(
        &labels(&[("instance", "db7:9100"), ("alertname", "PostgresDown")]),
        Some(started),
    );
    let facts = run(streams, focus, now, started).await;
    assert_eq!(facts.len(), 1, "{facts:?}");
    let line = facts[0].line(now);
    assert!(
        line.starts_with("service api.service on app3: logged about db7"),
        "{line}"
    );
    assert!(
        line.contains("dial tcp db7.lan:5432: connect: connection refused"),
        "{line}"
    );
    assert_eq!(facts[0].severity, Severity::Warning);
    let q = facts[0].source.arguments["query"].as_str().unwrap();
    assert_eq!(q, r#"{host=~".+"} |~ "db7""#);
}

#[tokio::test]
async fn a_pod_name_with_regex_characters_is_escaped_and_a_question_reads_nothing() {
    let now = Utc::now();
    let pod = "shop-api-7f9c+x";
    let streams = vec![(
        labels(&[("node", "k8s-w2"), ("app", "ingress-nginx")]),
        lines(
            now,
            &[(
                5,
                "[error] 31#31: *88 connect() failed (111: Connection refused) while connecting to upstream, upstream: \"http://10.42.1.17:8080/\", pod shop-api-7f9c+x",
            )],
        ),
    )];
    let started = now - TimeDelta::minutes(10);
    let focus = Focus::alert(
        &labels(&[("pod", pod), ("namespace", "shop")]),
        Some(started),
    );
    let facts = run(streams.clone(), focus, now, started).await;
    assert_eq!(facts.len(), 1, "{facts:?}");
    assert_eq!(facts[0].what, "logged about shop-api-7f9c+x");
    let q = facts[0].source.arguments["query"].as_str().unwrap();
    assert_eq!(q, r#"{node=~".+"} |~ "shop\\-api\\-7f9c\\+x""#);
    let question = Focus::question("why is shop-api-7f9c+x failing?");
    assert!(run(streams, question, now, started).await.is_empty());
}
