//! `filesystem_space`: how full, how fast and when full, for a fill minutes old and one
//! days old, among healthy filesystems of several hosts.

use sre_agent::analyze::{Fact, FactClass, Severity};

use super::world::{World, lines, series};

/// The comparison by time to full, and the other facts.
fn problems(facts: Vec<Fact>) -> (Fact, Vec<Fact>) {
    let all = lines(&facts);
    let (compared, others): (Vec<Fact>, Vec<Fact>) = facts
        .into_iter()
        .partition(|f| f.what.starts_with("fills first of"));
    assert_eq!(compared.len(), 1, "{all}");
    (compared.into_iter().next().unwrap(), others)
}

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
    let (compared, facts) = problems(facts);
    assert_eq!(facts.len(), 1, "{}", lines(&facts));
    let f = &facts[0];
    assert_eq!(f.entity.name, "/srv/data");
    // It fills first of the four filesystems read (not the tmpfs).
    assert_eq!(compared.entity.name, "/srv/data");
    assert_eq!(compared.what, "fills first of 3 filesystems: space used");
    assert_eq!(f.entity.host.as_deref(), Some("cedar-07"));
    let eta = f.eta_seconds.expect("an ETA");
    // 16 GiB left at 2 GiB/min: about 8 minutes.
    assert!((300.0..900.0).contains(&eta), "{}", lines(&facts));
    let rate = f.rate.expect("a rate");
    assert!(rate.change.value > 0.0, "{}", lines(&facts));
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
    let (_, facts) = problems(facts);
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

#[tokio::test]
async fn of_a_fleet_the_filesystem_that_fills_first_is_named_and_the_fuller_flat_one_is_said_flat()
{
    let mut defs = Vec::new();
    // The fullest: 97 % used and flat for a day.
    defs.extend(fs("hazel-1", "/srv/archive", 500.0 * GIB, |_| {
        Some(15.0 * GIB)
    }));
    // 93 % used, falling 2 GiB per hour for six hours: full in about 3.5 h.
    defs.extend(fs("hazel-2", "/var/lib/data", 100.0 * GIB, |ago| {
        let filling = (6 * 3600 - ago).clamp(0, 6 * 3600) as f64 / 3600.0;
        Some(19.0 * GIB - 2.0 * GIB * filling)
    }));
    defs.extend(fs("hazel-3", "/", 50.0 * GIB, |_| Some(30.0 * GIB)));
    // A Windows volume filling slower: 60 % used, 1 GiB per hour for six hours.
    let win = [
        ("instance", "hazel-4:9182"),
        ("job", "windows"),
        ("volume", "D:"),
    ];
    defs.push(series("windows_logical_disk_size_bytes", &win, |_| {
        Some(400.0 * GIB)
    }));
    defs.push(series("windows_logical_disk_free_bytes", &win, |ago| {
        let filling = (6 * 3600 - ago).clamp(0, 6 * 3600) as f64 / 3600.0;
        Some(166.0 * GIB - GIB * filling)
    }));
    let Some(world) = World::build(&defs, 2 * 86400, 60).await else {
        return;
    };
    let (facts, notes) = world.sweep(None).await;
    assert!(notes.is_empty(), "{notes:?}");
    let all = lines(&facts);
    eprintln!("{all}");
    let (f, others) = problems(facts);
    assert_eq!(f.class, FactClass::Context);
    assert_eq!(f.severity, Severity::Info);
    assert_eq!(
        (f.entity.name.as_str(), f.entity.host.as_deref()),
        ("/var/lib/data", Some("hazel-2"))
    );
    assert_eq!(f.what, "fills first of 4 filesystems: space used");
    assert!((92.0..94.0).contains(&f.value.unwrap().value), "{all}");
    let hours = f.eta_seconds.unwrap() / 3600.0;
    assert!((3.0..4.0).contains(&hours), "{all}");
    let per_hour = f.rate.unwrap().change.value / GIB;
    assert!((1.8..2.2).contains(&per_hour), "{all}");
    let detail = f.detail.as_deref().unwrap();
    assert!(
        detail.starts_with("next: filesystem D: on hazel-4 in "),
        "{detail}"
    );
    assert!(
        detail.contains(
            "the fullest, filesystem /srv/archive on hazel-1 (97 % used), is flat over the last"
        ),
        "{detail}"
    );
    // The fullest's own fact says it is flat, so its use is not read as a fill.
    let fullest = others
        .iter()
        .find(|o| o.entity.name == "/srv/archive")
        .expect(&all);
    assert!(
        fullest.rate.is_none() && fullest.eta_seconds.is_none(),
        "{all}"
    );
    assert!(
        fullest
            .detail
            .as_deref()
            .unwrap()
            .contains("; flat over the last"),
        "{all}"
    );
}
