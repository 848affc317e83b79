//! Tool answers a small model can use as they are, against a real Prometheus holding the
//! backfilled week (pve1:9100 /var/lib/vz fills from 400 to 60 GiB free of 1 TiB): range
//! results carry how full, how fast and when full; empty results name what exists instead.
//! Loki's empty answer lists the stream labels, from a small fake speaking its wire format.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::Query;
use axum::routing::get;
use serde_json::{Value, json};

use super::{call_ok, registry};
use crate::support::report_external::start_backfilled_prometheus;

#[tokio::test]
async fn a_filling_disk_reads_as_how_full_how_fast_and_when_full_and_empty_queries_teach() {
    let Some((prom, expected)) = start_backfilled_prometheus() else {
        return;
    };
    let end = expected["end"].as_i64().unwrap();
    let (reg, ..) = registry(&format!(
        "[prometheus]\nurl = \"{}\"\n[llm]\nmax_tool_output_chars = 1500",
        prom.url
    ));
    let vz = r#"instance="pve1:9100",mountpoint="/var/lib/vz""#;

    // The reference case: the raw free bytes over the week.
    let query = format!("node_filesystem_avail_bytes{{{vz}}}");
    let out = call_ok(
        &reg,
        "prometheus_query_range",
        json!({"query": query, "start": "7d"}),
    )
    .await;
    println!("example: prometheus_query_range {query} start=7d\n{out}");
    // The range's last point is on its 1h step grid, up to an hour before the last sample.
    for want in [
        "used 94.",
        "free of 1 TiB;",
        "falling 48.6 GiB/day (2.02 GiB/h, linear fit)",
        "full in ~1.",
    ] {
        assert!(out.contains(want), "{want:?} missing: {out}");
    }
    assert_full_at(&out, end);

    // The same as a used share, over the last day.
    let query =
        format!("1 - node_filesystem_avail_bytes{{{vz}}} / node_filesystem_size_bytes{{{vz}}}");
    let out = call_ok(
        &reg,
        "prometheus_query_range",
        json!({"query": query, "start": "1d"}),
    )
    .await;
    println!("example: prometheus_query_range {query} start=1d\n{out}");
    assert!(out.contains("  used 94."), "{out}");
    assert!(out.contains("rising 4.7"), "{out}");
    assert!(
        out.contains("min=0.8") && !out.contains("0.941B"),
        "a share has no unit: {out}"
    );
    assert_full_at(&out, end);

    // An instant query at the last sample says how full each filesystem is.
    let out = call_ok(
        &reg,
        "prometheus_query",
        json!({"query": "node_filesystem_avail_bytes{instance=\"pve1:9100\"}", "time": end.to_string()}),
    )
    .await;
    println!("example: prometheus_query at end\n{out}");
    assert!(
        out.contains("mountpoint=\"/var/lib/vz\"} 60GiB (used 94.1 % of 1 TiB; 60 GiB free)"),
        "{out}"
    );

    // What the 1.5B model asked: a metric that does not exist, an instance without port.
    let query = r#"node_filesystem_free{instance="pve1",mountpoint="/var/lib/vz"}"#;
    let out = call_ok(&reg, "prometheus_query", json!({"query": query})).await;
    println!("example: prometheus_query {query}\n{out}");
    assert!(
        out.starts_with("no data: the query returned no series at "),
        "{out}"
    );
    assert!(
        out.contains(
            "metric node_filesystem_free does not exist; closest: node_filesystem_avail_bytes, node_filesystem_size_bytes"
        ),
        "{out}"
    );
    assert!(
        out.contains(
            r#"instance="pve1" matches no series; instance values: pve1:9100, pve2:9100,"#
        ) && out.contains(r#"(did you mean instance="pve1:9100"?)"#),
        "{out}"
    );

    // A mountpoint typo, over a range.
    let query = r#"node_filesystem_avail_bytes{instance="pve1:9100",mountpoint="/var/lib/zv"}"#;
    let out = call_ok(
        &reg,
        "prometheus_query_range",
        json!({"query": query, "start": "6h"}),
    )
    .await;
    assert!(
        out.contains(r#"mountpoint="/var/lib/zv" matches no node_filesystem_avail_bytes series; mountpoint values: /var/lib/vz,"#)
            && out.contains(r#"(did you mean mountpoint="/var/lib/vz"?)"#),
        "{out}"
    );

    // A label the metric does not have.
    let query = r#"node_filesystem_avail_bytes{host="pve1"}"#;
    let out = call_ok(&reg, "prometheus_query", json!({"query": query})).await;
    assert!(
        out.contains(r#"no node_filesystem_avail_bytes series has a label "host"; labels: device, fstype, instance, job, mountpoint"#),
        "{out}"
    );

    // Matchers that exist, but never in one series.
    let query = r#"node_filesystem_avail_bytes{instance="pve2:9100",mountpoint="/var/lib/vz"}"#;
    let out = call_ok(
        &reg,
        "prometheus_query_range",
        json!({"query": query, "start": "6h"}),
    )
    .await;
    assert!(
        out.contains("matches some series, but no series matches all; for example: node_filesystem_avail_bytes{"),
        "{out}"
    );

    // Series that exist but whose newest sample is older than the queried time (the
    // backfill ends 1–2 hours ago).
    let query = format!("node_filesystem_avail_bytes{{{vz}}}");
    let out = call_ok(&reg, "prometheus_query", json!({"query": query})).await;
    println!("example: prometheus_query {query} (now)\n{out}");
    let newest = chrono::DateTime::from_timestamp(end, 0)
        .unwrap()
        .format("%Y-%m-%d %H:%M UTC")
        .to_string();
    assert!(
        out.contains(&format!("exists but its newest sample is at {newest} (")),
        "{out}"
    );

    // Selectors that have data, combined so that nothing is left.
    let query = format!("node_filesystem_avail_bytes{{{vz}}} > 2e12");
    let out = call_ok(
        &reg,
        "prometheus_query_range",
        json!({"query": query, "start": "6h"}),
    )
    .await;
    assert!(
        out.contains("has data here; the query's operators or functions removed every series"),
        "{out}"
    );
}

#[tokio::test]
async fn the_instance_overview_answers_the_disk_question_without_promql() {
    let Some((prom, expected)) = start_backfilled_prometheus() else {
        return;
    };
    let end = expected["end"].as_i64().unwrap();
    let (reg, ..) = registry(&format!("[prometheus]\nurl = \"{}\"", prom.url));
    let out = call_ok(
        &reg,
        "prometheus_instance_overview",
        json!({"instance": "pve1", "since": "12h"}),
    )
    .await;
    println!("example: prometheus_instance_overview pve1 since=12h\n{out}");
    let lines: Vec<&str> = out.lines().collect();
    assert!(
        lines[0].starts_with("pve1:9100 over the last 12h ("),
        "{out}"
    );
    assert!(
        lines.contains(&"up (job=node): up at the newest point; down ~0 min in range"),
        "{out}"
    );
    // pve1 is ~20 % busy; the end of the data must not read as a spike.
    let cpu = lines
        .iter()
        .find(|l| l.starts_with("cpu used: last "))
        .unwrap();
    let last: f64 = cpu["cpu used: last ".len()..]
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!((5.0..40.0).contains(&last), "{out}");
    assert!(
        out.contains(
            "\nmemory used: no data (node_memory_MemAvailable_bytes not exported for this instance)"
        ),
        "{out}"
    );
    let vz = lines
        .iter()
        .find(|l| l.starts_with("filesystem /var/lib/vz: used 9"))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(
        vz.contains("free of 1 TiB") && vz.contains("falling 4") && vz.contains(" GiB/day ("),
        "{out}"
    );
    // 12 hours of a line with a 6-hour wave on it: the rate is 48.6 ± 0.5 GiB/day.
    assert_full_at(vz, end);
    assert!(out.contains("filesystem /: used 42."), "{out}");

    let out = call_ok(
        &reg,
        "prometheus_instance_overview",
        json!({"instance": "pve3"}),
    )
    .await;
    assert!(
        out.starts_with("instance \"pve3\" has no data in this range; instances: "),
        "{out}"
    );
}

/// The "full in … (date)" of `out` is within 30 minutes of the truth: 60 GiB left at the
/// backfill's `end`, falling 340 GiB a week.
fn assert_full_at(out: &str, end: i64) {
    let re =
        regex_lite::Regex::new(r"full in ~[0-9.]+ (?:days|h) \((\d{4}-\d\d-\d\d \d\d:\d\d) UTC")
            .unwrap();
    let caps = re
        .captures(out)
        .unwrap_or_else(|| panic!("no time to full: {out}"));
    let at = chrono::NaiveDateTime::parse_from_str(&caps[1], "%Y-%m-%d %H:%M")
        .unwrap()
        .and_utc()
        .timestamp();
    let truth = end as f64 + 60.0 / 340.0 * 7.0 * 86_400.0;
    assert!(
        (at as f64 - truth).abs() < 1800.0,
        "full at {} vs {truth}: {out}",
        &caps[1]
    );
}

/// Loki answering every query with no lines, and its labels and label values.
async fn empty_loki() -> (String, Arc<Mutex<Vec<String>>>) {
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let record = |seen: Arc<Mutex<Vec<String>>>, what: &'static str| {
        move |Query(p): Query<HashMap<String, String>>| {
            let seen = seen.clone();
            async move {
                seen.lock().unwrap().push(format!(
                    "{what} start={}",
                    p.get("start").cloned().unwrap_or_default()
                ));
                let data: Value = match what {
                    "labels" => json!(["__stream_shard__", "job", "level"]),
                    "job" => json!(["api", "nginx", "web"]),
                    "level" => json!(["error", "info"]),
                    _ => json!({"resultType": "streams", "result": [], "stats": {}}),
                };
                axum::Json(json!({"status": "success", "data": data}))
            }
        }
    };
    let router = Router::new()
        .route(
            "/loki/api/v1/query_range",
            get(record(seen.clone(), "range")),
        )
        .route("/loki/api/v1/labels", get(record(seen.clone(), "labels")))
        .route(
            "/loki/api/v1/label/job/values",
            get(record(seen.clone(), "job")),
        )
        .route(
            "/loki/api/v1/label/level/values",
            get(record(seen.clone(), "level")),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, router).await });
    (url, seen)
}

#[tokio::test]
async fn a_logql_query_with_no_lines_lists_the_stream_labels_and_values_that_exist() {
    let (url, seen) = empty_loki().await;
    let (reg, ..) = registry(&format!("[loki]\nurl = \"{url}\""));
    let out = call_ok(
        &reg,
        "loki_query",
        json!({"query": "{app=\"nginx\"} |= \"502\"", "since": "2h"}),
    )
    .await;
    println!("example: loki_query with no lines\n{out}");
    assert_eq!(
        out,
        "no log lines matched in this range\n\
         stream labels in this range (use them in the selector):\n\
         job: \"api\", \"nginx\", \"web\"\n\
         level: \"error\", \"info\""
    );
    let seen = seen.lock().unwrap().clone();
    let range_start = seen[0].strip_prefix("range start=").unwrap().to_string();
    assert!(
        seen.contains(&format!("labels start={range_start}")),
        "labels are asked for the queried range: {seen:?}"
    );
}
