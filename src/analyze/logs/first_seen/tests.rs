use std::collections::BTreeMap;

use chrono::{TimeDelta, Utc};

use super::*;
use crate::analyze::{Entity, Severity, Source};
use crate::eval::fakes::{FakeServer, loki_router};

fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

const FAILING: &str =
    "upload of chunk 7f3a91c2 failed: 403 Forbidden: bucket quota exceeded for archive-cold";

/// A backup agent on `quill4` failing every 10 minutes since `began` minutes ago, after a
/// retention change 20 minutes before that; a fact about it that starts `since` minutes
/// ago; the fact as the sweep would join it.
async fn joined(began: i64, since: i64) -> Fact {
    crate::install_crypto_provider();
    let now = Utc::now();
    let at = |mins: i64| {
        (now - TimeDelta::minutes(mins))
            .timestamp_nanos_opt()
            .unwrap()
    };
    let mut lines = vec![
        (
            at(began + 600),
            "level=info msg=\"daily run finished\" files=20311".to_string(),
        ),
        (
            at(began + 20),
            "level=info msg=\"config reloaded\" retention=\"365d\" prune=off".to_string(),
        ),
        (
            at(began + 5),
            "level=info msg=\"daily run started\"".to_string(),
        ),
    ];
    let mut t = began;
    while t > 0 {
        lines.push((at(t), FAILING.to_string()));
        t -= 10;
    }
    let streams = vec![(
        labels(&[("host", "quill4"), ("unit", "coldsync.service")]),
        lines,
    )];
    let server = FakeServer::start(loki_router(streams)).await.unwrap();
    let mut config = crate::config::Config::default();
    config.loki.url = Some(server.url.parse().unwrap());
    let loki = crate::integrations::Upstreams::from_config(&config)
        .unwrap()
        .loki
        .unwrap();
    let scope = Scope::new(now, Some(now - TimeDelta::hours(6)));
    let catalog = Catalog::read(&loki, scope.window_start, now).await.unwrap();
    let fact = Fact::new(
        FactClass::Logs,
        "log_error_bursts",
        Entity::new("service", "coldsync.service")
            .on_host(Some("quill4".into()))
            .with_labels(labels(&[("unit", "coldsync.service"), ("host", "quill4")])),
        "error log lines",
        Severity::Warning,
        Source::new("loki_query", serde_json::json!({})),
    )
    .since(Some(now - TimeDelta::minutes(since)))
    .detail("most frequent: upload of chunk")
    .patterns(vec![line_pattern(FAILING)]);
    let mut facts = vec![fact];
    first_seen(&loki, &catalog, &mut facts, &scope).await;
    facts.remove(0)
}

#[tokio::test]
async fn a_line_recurring_since_days_before_the_window_says_when_it_began_and_what_came_before() {
    let f = joined(2 * 1440 + 130, 350).await;
    let d = f.detail.unwrap();
    assert!(d.starts_with("first seen "), "{d}");
    assert!(d.contains("(2 d 2 h ago"), "{d}");
    assert!(
        d.contains("retention=\"365d\"") || d.contains("retention=365d"),
        "{d}"
    );
    assert!(
        !d.contains("daily run finished"),
        "{d}: older than two hours before"
    );
    assert!(d.ends_with("; most frequent: upload of chunk"), "{d}");
}

#[tokio::test]
async fn a_line_that_began_in_the_window_is_told_nothing_more() {
    let f = joined(300, 300).await;
    assert_eq!(f.detail.as_deref(), Some("most frequent: upload of chunk"));
}

#[test]
fn the_literal_is_the_longest_part_between_placeholders() {
    assert_eq!(
        literal(&line_pattern(FAILING)).as_deref(),
        Some("Forbidden: bucket quota exceeded for archive-cold")
    );
    assert_eq!(literal("x <n> y"), None);
    assert_eq!(
        literal("<ts> caddy: tls: obtaining certificate <n> failed").as_deref(),
        Some("caddy: tls: obtaining certificate")
    );
}
