//! Figures computed for the model from a real Prometheus: timestamps and durations as
//! dates and days, step changes ("down since"), samples that stop, and the top processes
//! of a host in the instance overview.

use serde_json::json;

use super::{call_ok, registry};

/// A series' labels and its value at a time (`None`: no sample).
type SeriesAt<'a> = (&'a str, &'a dyn Fn(i64) -> Option<f64>);

/// A real Prometheus serving 8 hours ending at the returned end (Unix seconds, 1 hour
/// ago, on the minute) at 1-minute samples: docker1 (node-exporter up, boot 3 days before
/// the end; process-exporter on :9256 with ffmpeg 3.5, dockerd 0.1, sshd 0.01 and cron
/// 0.001 cores; disk sdb busy 10 %, then 98 % for the last 30 minutes, sda 2 %), web1 up until 48 minutes before the end and down since, a certificate
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
    // Disk time spent on I/O (seconds per second): sdb saturated for the last 30 minutes.
    let busy = |t: i64| {
        let saturated = end - 30 * 60;
        let base = 0.1 * (t.min(saturated) - end + 480 * 60) as f64;
        Some(base + 0.98 * (t - saturated).max(0) as f64)
    };
    let idle = |t: i64| Some(0.02 * (t - end + 480 * 60) as f64);
    family(
        "node_disk_io_time_seconds_total",
        &[
            (r#"job="node",instance="docker1:9100",device="sda""#, &idle),
            (r#"job="node",instance="docker1:9100",device="sdb""#, &busy),
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
    // The clock time alone on the day of the last point, else the date too (a run just
    // after midnight UTC).
    let since = match at(down_at)[..10] == at(end)[..10] {
        true => hm(down_at),
        false => at(down_at),
    };
    assert!(
        out.contains(&format!(
            "  1 → 0 at {}, down since {since} (48 min)",
            at(down_at)
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
    // Its busiest disks, the saturated one first.
    let sdb = out.find("\ndisk sdb busy: last 98.0 %, avg ");
    let sda = out.find("\ndisk sda busy: last 2.0 %, avg 2.0 %, max 2.0 %");
    assert!(sdb.is_some() && sda.is_some() && sdb < sda, "{out}");
    let out = call_ok(
        &reg,
        "prometheus_instance_overview",
        json!({"instance": "web1"}),
    )
    .await;
    assert!(!out.contains("top processes"), "{out}");
}
