//! `link_speed` on the captured node_exporter of five hosts (its own `eth0` reports the
//! unknown speed `-1` Mbit/s, as a virtual NIC does): one host's `eno1` renegotiated from
//! 1 Gbit/s to 100 Mbit/s 40 minutes ago after two carrier changes and now transmits at
//! that ceiling; one host's `eno2` has run at 1 Gbit/s all along while the same port of its
//! three peers runs at 10 Gbit/s. Decoys: a container's veth whose speed fell, a port that
//! came up faster, calm links at their speed.

use sre_agent::analyze::{FactClass, Severity};

use super::world::{Capture, SeriesDef, World, lines, of, series, since_off};

const GIG: f64 = 125_000_000.0;
const HISTORY: i64 = 3 * 3600;

fn node(host: &str) -> Vec<SeriesDef> {
    Capture::load_pair("node_exporter.prom", "node_exporter.after15s.prom", 15.0)
        .series(&format!("{host}:9100"), "node")
}

/// A series of `host`'s node_exporter for `device`.
fn dev(
    name: &str,
    host: &str,
    device: &str,
    value: impl Fn(i64) -> Option<f64> + 'static,
) -> SeriesDef {
    let instance = format!("{host}:9100");
    series(
        name,
        &[("instance", &instance), ("job", "node"), ("device", device)],
        value,
    )
}

/// A byte counter at `before` bytes/s until `at` seconds ago and `after` since.
fn bytes(before: f64, after: f64, at: i64) -> impl Fn(i64) -> Option<f64> {
    move |ago| {
        let elapsed = (HISTORY - ago.max(at)) as f64 * before;
        let since = (at - ago).max(0) as f64 * after;
        Some(1e9 + elapsed + since)
    }
}

#[tokio::test]
async fn a_link_that_came_up_slower_is_told_in_bits_with_its_carrier_changes_and_its_ceiling() {
    let mut defs = Vec::new();
    for h in ["ash-1", "ash-2", "ash-3", "ash-4", "ash-5"] {
        defs.extend(node(h));
    }
    // ash-1: 1 Gbit/s until 40 minutes ago, then 100 Mbit/s, two carrier changes as it
    // renegotiated, and its backup now transmits 12 MB/s (96 Mbit/s).
    defs.push(dev("node_network_speed_bytes", "ash-1", "eno1", |ago| {
        Some(if ago < 2400 { GIG / 10.0 } else { GIG })
    }));
    defs.push(dev(
        "node_network_carrier_changes_total",
        "ash-1",
        "eno1",
        |ago| Some(if ago < 2400 { 5.0 } else { 3.0 }),
    ));
    defs.push(dev(
        "node_network_transmit_bytes_total",
        "ash-1",
        "eno1",
        bytes(12e6, 12e6, 2400),
    ));
    defs.push(dev(
        "node_network_receive_bytes_total",
        "ash-1",
        "eno1",
        bytes(2e5, 2e5, 2400),
    ));
    // Its container's veth "fell" too: virtual, not a link.
    defs.push(dev(
        "node_network_speed_bytes",
        "ash-1",
        "veth3f2a",
        |ago| Some(if ago < 2400 { GIG / 10.0 } else { GIG * 10.0 }),
    ));
    // The same port on the others, calm at 1 Gbit/s with light traffic.
    for h in ["ash-2", "ash-3", "ash-4", "ash-5"] {
        defs.push(dev("node_network_speed_bytes", h, "eno1", |_| Some(GIG)));
        defs.push(dev(
            "node_network_transmit_bytes_total",
            h,
            "eno1",
            bytes(3e6, 3e6, 0),
        ));
    }
    // eno2: 10 Gbit/s on three hosts, 1 Gbit/s on ash-5 all along.
    for h in ["ash-2", "ash-3", "ash-4"] {
        defs.push(dev("node_network_speed_bytes", h, "eno2", |_| {
            Some(GIG * 10.0)
        }));
    }
    defs.push(dev("node_network_speed_bytes", "ash-5", "eno2", |_| {
        Some(GIG)
    }));
    // ash-3's eno3 came up faster 30 minutes ago: not a problem.
    defs.push(dev("node_network_speed_bytes", "ash-3", "eno3", |ago| {
        Some(if ago < 1800 { GIG } else { GIG / 10.0 })
    }));
    let Some(world) = World::build(&defs, HISTORY, 15).await else {
        return;
    };
    let (facts, notes) = world.sweep(Some(300)).await;
    assert!(notes.is_empty(), "{notes:?}");
    let all = lines(&facts);
    let found = of(&facts, "link_speed");
    let mut named: Vec<String> = found
        .iter()
        .map(|f| {
            format!(
                "{}/{}",
                f.entity.host.as_deref().unwrap_or("?"),
                f.entity.name
            )
        })
        .collect();
    named.sort();
    assert_eq!(named, ["ash-1/eno1", "ash-5/eno2"], "{all}");

    let f = found.iter().find(|f| f.entity.name == "eno1").unwrap();
    assert_eq!(
        (f.class, f.severity, f.entity.kind.as_str()),
        (FactClass::Saturation, Severity::Critical, "interface")
    );
    assert_eq!(
        f.what, "link 100 Mbit/s, was 1 Gbit/s, saturated at that ceiling (transmitting)",
        "{all}"
    );
    assert!(since_off(f, 2400) <= 20, "{all}");
    let detail = f.detail.as_deref().unwrap();
    assert!(
        detail.starts_with("2 carrier changes (link down and up) around "),
        "{detail}"
    );
    assert!(
        detail.contains("transmitting 96 Mbit/s of the link's 100 Mbit/s (96 %)"),
        "{detail}"
    );
    assert_eq!(
        f.source.arguments["query"],
        "node_network_speed_bytes{instance=\"ash-1:9100\",job=\"node\",device=\"eno1\"}"
    );

    let f = found.iter().find(|f| f.entity.name == "eno2").unwrap();
    assert_eq!(f.severity, Severity::Warning, "{all}");
    assert_eq!(f.what, "link 1 Gbit/s, its peers 10 Gbit/s", "{all}");
    assert_eq!(f.since, None, "{all}");
}
