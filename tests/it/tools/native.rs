//! `prometheus_query_range` over a day on a series minutes old: the coarse answer (one or
//! two points at a 10-minute step) is re-read from the series' first sample at native
//! resolution, so the filling disk gets its rate and time to full, while a day-old series
//! of the same query keeps its whole day.

use serde_json::json;

use super::{call_ok, registry};
use crate::analyze::world::{World, series};

const GIB: f64 = 1024.0 * 1024.0 * 1024.0;

#[tokio::test]
async fn a_series_minutes_old_read_over_a_day_gets_its_rate_and_time_to_full() {
    let young = [
        ("instance", "cedar-07:9100"),
        ("job", "node"),
        ("mountpoint", "/srv/scratch"),
        ("fstype", "ext4"),
    ];
    let old = [
        ("instance", "cedar-07:9100"),
        ("job", "node"),
        ("mountpoint", "/"),
        ("fstype", "ext4"),
    ];
    let defs = vec![
        // Mounted 12 minutes ago with 50 GiB free of 100, losing 1 GiB a minute since.
        series("node_filesystem_avail_bytes", &young, |ago| {
            (ago <= 720).then(|| 50.0 * GIB - (720 - ago) as f64 / 60.0 * GIB)
        }),
        series("node_filesystem_size_bytes", &young, |ago| {
            (ago <= 720).then_some(100.0 * GIB)
        }),
        // The root filesystem, there all day, steady.
        series("node_filesystem_avail_bytes", &old, |_| Some(12.0 * GIB)),
        series("node_filesystem_size_bytes", &old, |_| Some(20.0 * GIB)),
    ];
    let Some(world) = World::build(&defs, 86400, 15).await else {
        return;
    };
    let (reg, ..) = registry(&format!(
        "[prometheus]\nurl = \"{}\"\n[llm]\nmax_tool_output_chars = 3000",
        world.prometheus.url
    ));
    let out = call_ok(
        &reg,
        "prometheus_query_range",
        json!({"query": "node_filesystem_avail_bytes{instance=\"cedar-07:9100\"}", "start": "24h"}),
    )
    .await;
    println!("{out}");
    assert!(out.contains("step 10m"), "{out}");
    assert!(out.contains("re-read from"), "{out}");
    let scratch = out
        .split("mountpoint=\"/srv/scratch\"")
        .nth(1)
        .expect("the young series")
        .split("mountpoint=")
        .next()
        .unwrap();
    assert!(scratch.contains("falling"), "{out}");
    assert!(scratch.contains("full in"), "{out}");
    assert!(
        scratch.contains("1 GiB/h") || scratch.contains("60"),
        "{out}"
    );
}
