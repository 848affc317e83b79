//! Query values printed in the unit the PromQL expression gives them, against a real
//! Prometheus: a percentage of bytes with `%` (not `B`), bytes with binary prefixes, a
//! share of one plain, and seconds since a timestamp divided by 3600 as hours.

use serde_json::json;

use super::{call_ok, registry};

/// A real Prometheus holding 2 hours ending at the returned end (Unix seconds, on the
/// minute) at 1-minute samples: a PVC `data` of 1000 bytes with 888 used, and docker1 booted
/// 72 hours before the end.
fn start_units_prometheus() -> Option<(crate::support::external::Service, i64)> {
    use crate::support::external::{Service, require_tool, scripts_dir};
    use std::fmt::Write;
    if !require_tool("prometheus") || !require_tool("promtool") {
        return None;
    }
    let dir = tempfile::tempdir().unwrap();
    let end = chrono::Utc::now().timestamp() / 60 * 60 - 3600;
    let mut om = String::new();
    let pvc = r#"namespace="db",persistentvolumeclaim="data""#;
    for (name, labels, value) in [
        ("kubelet_volume_stats_used_bytes", pvc, 888.0),
        ("kubelet_volume_stats_capacity_bytes", pvc, 1000.0),
        (
            "node_boot_time_seconds",
            r#"instance="docker1:9100""#,
            (end - 72 * 3600) as f64,
        ),
    ] {
        writeln!(om, "# TYPE {name} gauge").unwrap();
        for m in 0..=120 {
            let t = end - (120 - m) * 60;
            writeln!(om, "{name}{{{labels}}} {value} {t}").unwrap();
        }
    }
    om.push_str("# EOF\n");
    let file = dir.path().join("units.om");
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
async fn a_percentage_of_bytes_prints_as_percent_and_hours_as_hours() {
    let Some((prom, end)) = start_units_prometheus() else {
        return;
    };
    let (reg, ..) = registry(&format!("[prometheus]\nurl = \"{}\"", prom.url));
    let used = "100 * kubelet_volume_stats_used_bytes / kubelet_volume_stats_capacity_bytes";
    for (query, want) in [
        (used, "} 88.8%"),
        ("kubelet_volume_stats_used_bytes", "} 888B"),
        (
            "kubelet_volume_stats_used_bytes / kubelet_volume_stats_capacity_bytes",
            "} 0.888",
        ),
        ("(time() - node_boot_time_seconds) / 3600", "} 72h"),
    ] {
        let out = call_ok(
            &reg,
            "prometheus_query",
            json!({"query": query, "time": end.to_string()}),
        )
        .await;
        println!("example: prometheus_query {query}\n{out}");
        assert!(out.contains(want), "{want:?} missing: {out}");
        if want.ends_with('%') || want.ends_with("0.888") {
            assert!(!out.contains("88.8B") && !out.contains("888B"), "{out}");
        }
    }
    let out = call_ok(
        &reg,
        "prometheus_query_range",
        json!({"query": used, "start": (end - 3600).to_string(), "end": end.to_string()}),
    )
    .await;
    println!("example: prometheus_query_range {used}\n{out}");
    assert!(out.contains("last=88.8%"), "{out}");
}
