//! A latency histogram read by the step detector as its 99th percentile, on captured real
//! Prometheus `/metrics` (its HTTP handlers' request durations): the query handler's
//! requests took under 0.1 s until 20 minutes ago and between 1 s and 3 s since. The fact
//! names the quantile before and after, in the unit of the histogram's name, and none of
//! its buckets is told as a counter.

use chrono::{TimeDelta, Utc};
use sre_agent::analyze::{Focus, Scope, Severity, Sweep};

use super::world::{Capture, World, lines, set};

/// Requests a second on the query handler.
const PER_SECOND: f64 = 2.0;
/// When the handler turned slow, in seconds before now.
const SLOW_SINCE: i64 = 1200;
/// How far back the handler began counting.
const COUNTING_FOR: i64 = 8 * 86400;

/// Requests observed until `ago` seconds before now: fast ones (within 0.1 s) until the
/// change, slow ones (within 1 s to 3 s) since.
fn observed(ago: i64) -> (f64, f64) {
    let fast = PER_SECOND * (COUNTING_FOR - ago.max(SLOW_SINCE)) as f64;
    let slow = PER_SECOND * (SLOW_SINCE - ago).max(0) as f64;
    (fast, slow)
}

#[tokio::test]
async fn a_latency_histogram_that_stepped_is_told_as_its_p99_before_and_after() {
    let prometheus = Capture::load_pair(
        "prometheus_http.prom",
        "prometheus_http.after15s.prom",
        15.0,
    );
    let mut defs = prometheus.series("mon-1:9090", "prometheus");
    defs.extend(prometheus.series("mon-2:9090", "prometheus"));
    let handler = [("instance", "mon-1:9090"), ("handler", "/api/v1/query")];
    let family = "prometheus_http_request_duration_seconds";
    set(
        &mut defs,
        &format!("{family}_bucket"),
        &handler,
        |l, ago| {
            let le = l.get("le").map_or("", String::as_str);
            let le: f64 = if le == "+Inf" {
                f64::INFINITY
            } else {
                le.parse().ok()?
            };
            let (fast, slow) = observed(ago);
            Some(if le >= 3.0 { fast + slow } else { fast })
        },
    );
    set(&mut defs, &format!("{family}_sum"), &handler, |_, ago| {
        let (fast, slow) = observed(ago);
        Some(0.0003 * fast + 2.0 * slow)
    });
    set(&mut defs, &format!("{family}_count"), &handler, |_, ago| {
        let (fast, slow) = observed(ago);
        Some(fast + slow)
    });
    let Some(world) = World::build(&defs, 4 * 3600, 60).await else {
        return;
    };
    // An alert on mon-1 that fired 15 minutes ago.
    let now = Utc::now();
    let started = now - TimeDelta::minutes(15);
    let labels = [("instance".to_string(), "mon-1:9090".to_string())]
        .into_iter()
        .collect();
    let scope = Scope::new(now, Some(started)).with_focus(Focus::alert(&labels, Some(started)));
    let report = Sweep::of(sre_agent::analyze::prom::analyzers(world.client()))
        .run(scope)
        .await;
    assert!(report.notes.is_empty(), "{:?}", report.notes);
    let facts: Vec<_> = report
        .facts
        .into_iter()
        .filter(|f| f.analyzer == "steps")
        .collect();
    let all = lines(&facts);
    eprintln!("{all}");
    let p99 = facts.iter().find(|f| f.entity.name == family).expect(&all);
    assert_eq!(p99.entity.host.as_deref(), Some("mon-1"), "{all}");
    assert_eq!(p99.severity, Severity::Warning);
    assert_eq!(
        p99.what,
        format!("p99 of {family}{{handler=/api/v1/query}} rose from 99 ms to"),
        "{all}"
    );
    let value = p99.value.expect("a value");
    assert!(value.value > 2.9 && value.value <= 3.0, "{all}");
    assert_eq!(value.to_string(), "3 s");
    let detail = p99.detail.as_deref().unwrap();
    assert!(detail.contains("99 ms at"), "{all}");
    assert!(detail.contains("mean 0.3 ms → "), "{all}");
    let query = p99.source.arguments["query"].as_str().unwrap();
    assert!(
        query.starts_with(&format!(
            "histogram_quantile(0.99, sum by (le) (rate({family}_bucket{{handler=\"/api/v1/query\""
        )),
        "{query}"
    );
    // When it changed: within a few minutes of the step.
    let began = (now - p99.since.expect("since")).num_seconds();
    assert!(
        (SLOW_SINCE - 400..=SLOW_SINCE + 120).contains(&began),
        "{all}"
    );
    // No bucket or sum is told as a series of its own, on either host.
    let told = |f: &sre_agent::analyze::Fact| format!("{} {:?}", f.line(now), f.entity);
    assert!(
        facts
            .iter()
            .all(|f| !told(f).contains("_bucket") && !told(f).contains(&format!("{family}_sum"))),
        "{all}"
    );
}
