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

/// A series' labels and its value at a time (`None`: no sample).
type SeriesAt<'a> = (&'a str, &'a dyn Fn(i64) -> Option<f64>);

/// A real Prometheus serving 8 hours ending at the returned end (Unix seconds, 1 hour
/// ago, on the minute) at 1-minute samples: docker1 (node-exporter up, boot 3 days before
/// the end; process-exporter on :9256 with ffmpeg 3.5, dockerd 0.1, sshd 0.01 and cron
/// 0.001 cores), web1 up until 48 minutes before the end and down since, a certificate
/// expiring 5 days after the end, a status code going 200 → 502 30 minutes before the end,
/// and a probe whose samples stop 48 minutes before the end.
fn start_figures_prometheus() -> Option<(crate::support::external::Service, i64)> {
    use crate::support::external::{Service, require_tool, scripts_dir};
    use std::fmt::Write;
    if !require_tool("prometheus") || !require_tool("promtool") {
        return None;
    }
    let dir = tempfile::tempdir().unwrap();
    let now = chrono::Utc::now().timestamp();
    let end = now / 60 * 60 - 3600;
    let times = || (0..=480).map(move |m| end - (480 - m) * 60);
    let mut om = String::new();
    let mut family = |name: &str, series: &[SeriesAt]| {
        writeln!(om, "# TYPE {name} gauge").unwrap();
        for (labels, value) in series {
            for t in times() {
                if let Some(v) = value(t) {
                    writeln!(om, "{name}{{{labels}}} {v} {t}").unwrap();
                }
            }
        }
    };
    let down_at = end - 48 * 60;
    family(
        "up",
        &[
            (r#"job="node",instance="docker1:9100""#, &|_| Some(1.0)),
            (r#"job="process",instance="docker1:9256""#, &|_| Some(1.0)),
            (r#"job="node",instance="web1:9100""#, &|t| {
                Some(if t < down_at { 1.0 } else { 0.0 })
            }),
        ],
    );
    family(
        "node_boot_time_seconds",
        &[(r#"job="node",instance="docker1:9100""#, &|_| {
            Some((end - 3 * 86_400) as f64)
        })],
    );
    let cpu = |cores: f64| move |t: i64| Some(cores * (t - end + 480 * 60) as f64 + 1000.0);
    let (ffmpeg, dockerd, sshd, cron) = (cpu(3.5), cpu(0.1), cpu(0.01), cpu(0.001));
    family(
        "namedprocess_namegroup_cpu_seconds_total",
        &[
            (
                r#"groupname="ffmpeg",instance="docker1:9256",job="process",mode="user""#,
                &ffmpeg,
            ),
            (
                r#"groupname="dockerd",instance="docker1:9256",job="process",mode="user""#,
                &dockerd,
            ),
            (
                r#"groupname="sshd",instance="docker1:9256",job="process",mode="user""#,
                &sshd,
            ),
            (
                r#"groupname="cron",instance="docker1:9256",job="process",mode="user""#,
                &cron,
            ),
        ],
    );
    family(
        "probe_ssl_earliest_cert_expiry",
        &[(r#"job="blackbox",instance="https://example.org""#, &|_| {
            Some((end + 5 * 86_400) as f64)
        })],
    );
    family(
        "probe_http_status_code",
        &[(r#"job="blackbox",instance="https://shop.example""#, &|t| {
            Some(if t < end - 30 * 60 { 200.0 } else { 502.0 })
        })],
    );
    family(
        "probe_success",
        &[(r#"job="blackbox",instance="https://gone.example""#, &|t| {
            (t < down_at).then_some(1.0)
        })],
    );
    om.push_str("# EOF\n");
    let file = dir.path().join("figures.om");
    std::fs::write(&file, om).unwrap();
    let out = std::process::Command::new("promtool")
        .args(["tsdb", "create-blocks-from", "openmetrics"])
        .arg(&file)
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::remove_file(&file).unwrap();
    let out = std::process::Command::new(scripts_dir().join("start_prometheus.sh"))
        .args(["--no-scrape", "--retention", "100y", "--port"])
        .arg(crate::support::free_port().to_string())
        .arg("--data")
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let url = String::from_utf8_lossy(&out.stdout).trim().to_string();
    Some((Service { url, dir }, end))
}

#[tokio::test]
async fn timestamps_steps_and_top_processes_are_computed_for_the_model() {
    let Some((prom, end)) = start_figures_prometheus() else {
        return;
    };
    let (reg, ..) = registry(&format!("[prometheus]\nurl = \"{}\"", prom.url));
    let at = |t: i64| {
        chrono::DateTime::from_timestamp(t, 0)
            .unwrap()
            .format("%Y-%m-%d %H:%M UTC")
            .to_string()
    };
    let hm = |t: i64| at(t)[11..].to_string();

    // A timestamp: its date and how far from the query time.
    let expiry = end + 5 * 86_400;
    let out = call_ok(
        &reg,
        "prometheus_query",
        json!({"query": "probe_ssl_earliest_cert_expiry", "time": end.to_string()}),
    )
    .await;
    println!("example: prometheus_query probe_ssl_earliest_cert_expiry\n{out}");
    assert!(
        out.contains(&format!("}} {expiry} ({}, in 5.0 days)", at(expiry))),
        "{out}"
    );
    // Durations against time().
    for (query, want) in [
        (
            "probe_ssl_earliest_cert_expiry - time()",
            "} 432000 (5.0 days)",
        ),
        ("time() - node_boot_time_seconds", "} 259200 (3.0 days)"),
    ] {
        let out = call_ok(
            &reg,
            "prometheus_query",
            json!({"query": query, "time": end.to_string()}),
        )
        .await;
        println!("example: prometheus_query {query}\n{out}");
        assert!(out.contains(want), "{want:?} missing: {out}");
    }
    // The last value of a range of timestamps, from its last point.
    let out = call_ok(
        &reg,
        "prometheus_query_range",
        json!({"query": "probe_ssl_earliest_cert_expiry", "start": (end - 6 * 3600).to_string(), "end": end.to_string()}),
    )
    .await;
    println!("example: prometheus_query_range probe_ssl_earliest_cert_expiry\n{out}");
    assert!(
        out.contains(&format!("last={expiry} ({}, in 5.0 days)", at(expiry))),
        "{out}"
    );

    // Steps: the last change and how long it held, not a rate; samples that stop.
    let range = |query: &str| json!({"query": query, "start": (end - 6 * 3600).to_string(), "end": end.to_string()});
    let out = call_ok(&reg, "prometheus_query_range", range("up")).await;
    println!("example: prometheus_query_range up\n{out}");
    let down_at = end - 48 * 60;
    assert!(
        out.contains(&format!(
            "  1 → 0 at {}, down since {} (48 min)",
            at(down_at),
            hm(down_at)
        )),
        "{out}"
    );
    assert!(!out.contains("/day"), "{out}");
    let out = call_ok(
        &reg,
        "prometheus_query_range",
        range("probe_http_status_code"),
    )
    .await;
    println!("example: prometheus_query_range probe_http_status_code\n{out}");
    assert!(
        out.contains(&format!(
            "  200 → 502 at {}, 502 for the last 30 min",
            at(end - 30 * 60)
        )),
        "{out}"
    );
    let out = call_ok(&reg, "prometheus_query_range", range("probe_success")).await;
    println!("example: prometheus_query_range probe_success\n{out}");
    assert!(
        out.contains("  no samples since ") && out.contains(" before the end of the range"),
        "{out}"
    );

    // The overview of a host running process-exporter names its busiest processes.
    let out = call_ok(
        &reg,
        "prometheus_instance_overview",
        json!({"instance": "docker1"}),
    )
    .await;
    println!("example: prometheus_instance_overview docker1\n{out}");
    assert!(
        out.contains(
            "\ntop processes by CPU: ffmpeg 3.5 cores, dockerd 0.1 cores, sshd 0.01 cores"
        ),
        "{out}"
    );
    let out = call_ok(
        &reg,
        "prometheus_instance_overview",
        json!({"instance": "web1"}),
    )
    .await;
    assert!(!out.contains("top processes"), "{out}");
}
