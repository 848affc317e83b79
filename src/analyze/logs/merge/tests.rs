use chrono::{TimeZone, Utc};

use super::*;
use crate::analyze::{Entity, Quantity, Severity, Source};

const P: &str = "<ts> ERROR [<n>] db: connection to <ip> refused";
const Q: &str = "kernel: eth<n>: link down";

fn fact(entity: Entity, what: &str, severity: Severity, patterns: &[&str]) -> Fact {
    Fact::new(
        FactClass::Logs,
        "test",
        entity,
        what,
        severity,
        Source::new("loki_query", serde_json::json!({"query": "{x=\"y\"}"})),
    )
    .detail(format!("e.g.: {}", patterns.join(" | ")))
    .patterns(patterns.iter().map(|p| p.to_string()).collect())
}

fn service(name: &str, host: Option<&str>) -> Entity {
    Entity::new("service", name).on_host(host.map(str::to_string))
}

#[test]
fn facts_quoting_one_pattern_about_one_service_are_one_with_the_others_figures() {
    let t = |m| Utc.with_ymd_and_hms(2026, 11, 27, 10, m, 0).unwrap();
    let burst = fact(
        service("orders", None),
        "error log lines rose to",
        Severity::Warning,
        &[P],
    )
    .value(Quantity::new(2.5, Unit::PerSecond))
    .since(Some(t(2)));
    let new = fact(
        service("orders", Some("node-b")),
        "new log pattern",
        Severity::Critical,
        &[P],
    )
    .value(Quantity::count(240.0))
    .since(Some(t(3)));
    let at_start = fact(
        Entity::new("logs", "node-b").on_host(Some("node-b".into())),
        "240 log lines that look bad, not seen in the hours before, in 1 patterns",
        Severity::Warning,
        &[P],
    );
    // Another pattern besides: it says more, it stays.
    let wider = fact(
        Entity::new("logs", "node-b").on_host(Some("node-b".into())),
        "9 log lines that look bad",
        Severity::Warning,
        &[P, Q],
    );
    // The same line from another host's service, and a metric fact.
    let elsewhere = fact(
        service("orders", Some("node-c")),
        "new log pattern",
        Severity::Warning,
        &[P],
    );
    let mut metric = fact(service("orders", None), "used", Severity::Critical, &[]);
    metric.class = FactClass::Exhaustion;
    let merged = merge_same(vec![
        burst,
        metric.clone(),
        new,
        wider.clone(),
        at_start,
        elsewhere.clone(),
    ]);
    assert_eq!(merged.len(), 4, "{merged:#?}");
    let one = &merged[0];
    // The rate is the most informative figure; the worst severity of the three.
    assert_eq!(one.what, "error log lines rose to");
    assert_eq!(one.since, Some(t(2)));
    assert_eq!(one.severity, Severity::Critical);
    let detail = one.detail.as_deref().unwrap();
    assert!(
        detail.ends_with("; also new log pattern 240 since 10:03 UTC; 240 log lines that look bad, not seen in the hours before, …"),
        "{detail}"
    );
    assert!(detail.starts_with("e.g.: <ts> ERROR"), "{detail}");
    assert_eq!(merged[1], metric);
    assert_eq!(merged[2], wider);
    assert_eq!(merged[3].entity.host.as_deref(), Some("node-c"));
}

#[test]
fn a_long_detail_gives_way_at_its_end_to_the_figures_added() {
    let long = "x".repeat(400);
    let a = fact(
        service("s", None),
        "log lines rose to",
        Severity::Warning,
        &[P],
    )
    .value(Quantity::new(1.0, Unit::PerSecond))
    .detail(long);
    let b = fact(service("s", None), "new log pattern", Severity::Info, &[P]);
    let merged = merge_same(vec![b, a]);
    assert_eq!(merged.len(), 1);
    let d = merged[0].detail.as_deref().unwrap();
    assert!(d.chars().count() <= DETAIL_CHARS, "{}", d.len());
    assert!(d.ends_with("; also new log pattern"), "{d}");
    assert!(d.starts_with("xxx"), "{d}");
}
