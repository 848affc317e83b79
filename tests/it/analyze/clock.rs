//! Clock analyzers among calm hosts made of captured node_exporter output: a clock that
//! jumped ahead of Prometheus' time and one the kernel reports offset, with since when;
//! a clock unsynchronised for hours before the alert, with when that began.

use sre_agent::analyze::{FactClass, Severity};

use super::world::{World, calm_hosts, lines, set};

#[tokio::test]
async fn a_clock_ahead_of_prometheus_and_one_offset_from_ntp_are_found_with_their_offsets() {
    let mut defs = calm_hosts(&["fir-1", "fir-2", "fir-3"]);
    let now = chrono::Utc::now().timestamp();
    // fir-2's clock jumped 5 minutes ahead 15 minutes ago.
    set(
        &mut defs,
        "node_time_seconds",
        &[("instance", "fir-2:9100")],
        move |_, ago| Some((now - ago + if ago <= 900 { 300 } else { 0 }) as f64),
    );
    // fir-3's kernel reports 200 ms behind its source for the last 10 minutes; fir-1 a
    // harmless 10 ms.
    set(
        &mut defs,
        "node_timex_offset_seconds",
        &[("instance", "fir-3:9100")],
        |_, ago| Some(if ago <= 600 { -0.2 } else { 0.001 }),
    );
    set(
        &mut defs,
        "node_timex_offset_seconds",
        &[("instance", "fir-1:9100")],
        |_, _| Some(0.01),
    );
    let Some(world) = World::build(&defs, 7200, 15).await else {
        return;
    };
    let (facts, notes) = world.sweep(Some(900)).await;
    assert!(notes.is_empty(), "{notes:?}");
    let all = lines(&facts);
    eprintln!("{all}");
    let time: Vec<_> = facts
        .iter()
        .filter(|f| f.class == FactClass::Time)
        .collect();
    assert_eq!(time.len(), 2, "{all}");
    let ahead = time.iter().find(|f| f.entity.name == "fir-2").expect(&all);
    assert_eq!(ahead.what, "clock ahead of Prometheus' time", "{all}");
    assert_eq!(ahead.severity, Severity::Critical);
    let v = ahead.value.unwrap().value;
    assert!((295.0..305.0).contains(&v), "{all}");
    let began = (chrono::Utc::now() - ahead.since.expect("since")).num_seconds();
    assert!((800..1000).contains(&began), "{all}");
    let offset = time.iter().find(|f| f.entity.name == "fir-3").expect(&all);
    assert_eq!(offset.severity, Severity::Warning);
    assert!((offset.value.unwrap().value + 0.2).abs() < 1e-9, "{all}");
    let began = (chrono::Utc::now() - offset.since.expect("since")).num_seconds();
    assert!((500..700).contains(&began), "{all}");
}

#[tokio::test]
async fn a_clock_unsynchronised_long_before_the_alert_says_when_synchronisation_was_lost() {
    let mut defs = calm_hosts(&["pine-1", "pine-2"]);
    // pine-2 lost synchronisation 9 h 40 min ago (its NTP queries blocked); the alert that
    // asks fired 30 minutes ago, when the kernel's maximum error reached its limit.
    set(
        &mut defs,
        "node_timex_sync_status",
        &[("instance", "pine-2:9100")],
        |_, ago| Some(if ago <= 34_800 { 0.0 } else { 1.0 }),
    );
    set(
        &mut defs,
        "node_timex_maxerror_seconds",
        &[("instance", "pine-2:9100")],
        |_, ago| Some(if ago <= 34_800 { 16.0 } else { 0.01 }),
    );
    let Some(world) = World::build(&defs, 14 * 3600, 60).await else {
        return;
    };
    let (facts, notes) = world.sweep(Some(1800)).await;
    assert!(notes.is_empty(), "{notes:?}");
    let all = lines(&facts);
    eprintln!("{all}");
    let unsynced = facts
        .iter()
        .find(|f| f.entity.name == "pine-2" && f.what == "clock not synchronised")
        .expect(&all);
    // Read back past the window (1.5 h) and finely around the change.
    let began = (chrono::Utc::now() - unsynced.since.expect("since")).num_seconds();
    assert!((34_700..35_000).contains(&began), "{began} s: {all}");
}
