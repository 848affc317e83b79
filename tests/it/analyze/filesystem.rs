//! `filesystem_space`: how full, how fast and when full, for a fill minutes old and one
//! days old, among healthy filesystems of several hosts.

use super::world::{World, lines, series};

const GIB: f64 = 1024.0 * 1024.0 * 1024.0;

fn fs(
    host: &str,
    mount: &str,
    size: f64,
    free: impl Fn(i64) -> Option<f64> + 'static,
) -> [super::world::SeriesDef; 2] {
    let instance = format!("{host}:9100");
    let labels = [
        ("instance", instance.as_str()),
        ("job", "node"),
        ("mountpoint", mount),
        ("device", "/dev/sda1"),
        ("fstype", "ext4"),
    ];
    [
        series("node_filesystem_size_bytes", &labels, move |_| Some(size)),
        series("node_filesystem_avail_bytes", &labels, free),
    ]
}

#[tokio::test]
async fn a_filesystem_filling_for_minutes_gets_its_rate_and_time_to_full_at_native_resolution() {
    let mut defs = Vec::new();
    // Flat for a day at 40 GiB free, then falling 2 GiB per minute for the last 12 minutes.
    defs.extend(fs("cedar-07", "/srv/data", 100.0 * GIB, |ago| {
        Some(if ago > 720 {
            40.0 * GIB
        } else {
            40.0 * GIB - (720 - ago) as f64 / 60.0 * 2.0 * GIB
        })
    }));
    defs.extend(fs("cedar-07", "/", 20.0 * GIB, |_| Some(15.0 * GIB)));
    defs.extend(fs("birch-2", "/", 20.0 * GIB, |_| Some(12.0 * GIB)));
    defs.push(series(
        "node_filesystem_avail_bytes",
        &[
            ("instance", "birch-2:9100"),
            ("mountpoint", "/run"),
            ("fstype", "tmpfs"),
        ],
        |_| Some(0.0),
    ));
    let Some(world) = World::build(&defs, 86400, 15).await else {
        return;
    };
    let (facts, notes) = world.sweep(Some(600)).await;
    assert!(notes.is_empty(), "{notes:?}");
    assert_eq!(facts.len(), 1, "{}", lines(&facts));
    let f = &facts[0];
    assert_eq!(f.entity.name, "/srv/data");
    assert_eq!(f.entity.host.as_deref(), Some("cedar-07"));
    let eta = f.eta_seconds.expect("an ETA");
    // 16 GiB left at 2 GiB/min: about 8 minutes.
    assert!((300.0..900.0).contains(&eta), "{}", lines(&facts));
    let rate = f.rate.expect("a rate");
    assert!(rate.change.value < 0.0, "{}", lines(&facts));
}

#[tokio::test]
async fn a_slow_fill_over_days_is_a_warning_with_an_eta_in_days() {
    let mut defs = Vec::new();
    // 1 TiB disk, free space from 400 GiB to 60 GiB over 7 days: ~94 % used, full in ~30 h.
    let week = 7.0 * 86400.0;
    defs.extend(fs("pve-a", "/var/lib/vz", 1024.0 * GIB, move |ago| {
        Some(60.0 * GIB + 340.0 * GIB * (ago as f64 / week).min(1.0))
    }));
    defs.extend(fs("pve-b", "/var/lib/vz", 1024.0 * GIB, |_| {
        Some(700.0 * GIB)
    }));
    let Some(world) = World::build(&defs, 7 * 86400, 300).await else {
        return;
    };
    let (facts, _) = world.sweep(Some(600)).await;
    assert_eq!(facts.len(), 1, "{}", lines(&facts));
    let f = &facts[0];
    let used = f.value.unwrap().value;
    assert!((93.0..95.5).contains(&used), "{}", lines(&facts));
    let hours = f.eta_seconds.unwrap() / 3600.0;
    assert!((24.0..40.0).contains(&hours), "{}", lines(&facts));
}

#[tokio::test]
async fn the_range_tool_returns_the_fill_as_a_typed_fact_with_its_time_to_full() {
    use sre_agent::tools::Tool;
    use sre_agent::tools::no_data::PromNoData;
    use sre_agent::tools::prometheus::PrometheusQueryRange;
    let week = 7.0 * 86400.0;
    let defs = fs("elm-4", "/data", 1024.0 * GIB, move |ago| {
        Some(60.0 * GIB + 340.0 * GIB * (ago as f64 / week).min(1.0))
    });
    let Some(world) = World::build(&defs, 7 * 86400, 300).await else {
        return;
    };
    let client = world.client();
    let tool = PrometheusQueryRange {
        client: client.clone(),
        max_chars: 4000,
        hints: std::sync::Arc::new(PromNoData::new(client)),
    };
    let args = serde_json::json!({
        "query": "node_filesystem_avail_bytes{mountpoint=\"/data\"}",
        "start": "24h"
    });
    let out = tool.call_with_facts(args.clone()).await.unwrap();
    assert_eq!(out.facts.len(), 1, "{}", out.text);
    let f = &out.facts[0];
    assert_eq!(f.entity.name, "/data");
    assert_eq!(f.entity.host.as_deref(), Some("elm-4"));
    let used = f.value.unwrap().value;
    assert!((93.0..95.5).contains(&used), "{}", lines(&out.facts));
    let hours = f.eta_seconds.unwrap() / 3600.0;
    assert!((24.0..40.0).contains(&hours), "{}", lines(&out.facts));
    assert_eq!(
        f.source.arguments, args,
        "citable by the call that computed it"
    );
}
