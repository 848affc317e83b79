//! `network_storm` on the captured node_exporter of four hosts (every real series, its
//! `eth0` receiving no multicast): three hosts' `eth0` began receiving thousands of
//! multicast frames a second within a minute of each other 20 minutes ago, their
//! interrupts rising with it, while the fourth, on another segment, stayed calm. One fact
//! names the three, from the level before to now, since the flood began.

use sre_agent::analyze::{FactClass, Severity};

use super::world::{Capture, SeriesDef, World, lines, of, set, since_off};

const HISTORY: i64 = 3 * 3600;

fn node(host: &str) -> Vec<SeriesDef> {
    Capture::load_pair("node_exporter.prom", "node_exporter.after15s.prom", 15.0)
        .series(&format!("{host}:9100"), "node")
}

/// A counter at `before`/s until `at` seconds ago and `after`/s since.
fn counting(before: f64, after: f64, at: i64) -> impl Fn(i64) -> Option<f64> + Clone {
    move |ago| {
        let elapsed = (HISTORY - ago.max(at)) as f64 * before;
        let since = (at - ago).max(0) as f64 * after;
        Some(1e6 + elapsed + since)
    }
}

#[tokio::test]
async fn the_same_multicast_flood_on_three_hosts_at_once_is_one_storm_and_a_calm_host_is_not_in_it()
{
    let mut defs = Vec::new();
    for (i, h) in ["yew-1", "yew-2", "yew-3", "yew-4"].into_iter().enumerate() {
        let mut host = node(h);
        let instance = format!("{h}:9100");
        let at = 1200 - 20 * i as i64;
        if i < 3 {
            let rate = 6000.0 + 1000.0 * i as f64;
            set(
                &mut host,
                "node_network_receive_multicast_total",
                &[("instance", &instance), ("device", "eth0")],
                move |_, ago| counting(4.0, rate, at)(ago),
            );
            set(
                &mut host,
                "node_intr_total",
                &[("instance", &instance)],
                move |_, ago| counting(2000.0, 30_000.0, at)(ago),
            );
        } else {
            set(
                &mut host,
                "node_network_receive_multicast_total",
                &[("instance", &instance), ("device", "eth0")],
                move |_, ago| counting(4.0, 4.0, at)(ago),
            );
        }
        defs.extend(host);
    }
    let Some(world) = World::build(&defs, HISTORY, 15).await else {
        return;
    };
    let (facts, notes) = world.sweep(Some(600)).await;
    assert!(notes.is_empty(), "{notes:?}");
    let all = lines(&facts);
    let storms = of(&facts, "network_storm");
    assert_eq!(storms.len(), 1, "{all}");
    let f = &storms[0];
    assert_eq!(f.entity.name, "yew-1, yew-2, yew-3", "{all}");
    assert_eq!(
        (f.class, f.severity),
        (FactClass::Saturation, Severity::Critical),
        "{all}"
    );
    assert!(since_off(f, 1200) <= 120, "{all}");
    let line = f.line(chrono::Utc::now());
    assert!(
        line.contains("multicast/broadcast frames received rose on 3 hosts at once"),
        "{line}"
    );
    assert!(line.contains("layer-2 loop"), "{line}");
    assert!(
        line.contains("interrupts rose with it on 3 of the 3 hosts"),
        "{line}"
    );
    let hosts: Vec<&str> = f.related.iter().filter_map(|e| e.host.as_deref()).collect();
    assert_eq!(hosts, ["yew-1", "yew-2", "yew-3"], "{all}");
}
