//! `host_reboots` on the captured node_exporter of several hosts: one rebooted 20 minutes
//! before the alert (its target down across the boot), one rebooted three times, one
//! scraped for the first time in the window (booted shortly before: not a reboot), and
//! calm hosts up for a day; a Windows host's boot time and switches' SNMP uptimes (one
//! rebooted, one whose counter wrapped). And `proxmox_guests` on a Proxmox VE node whose uptime is
//! shorter than the window.

use serde_json::json;
use sre_agent::analyze::{Fact, FactClass, Severity};

use super::appliances::{none, one, sweep};
use super::world::{Capture, SeriesDef, World, lines, series, set};
use crate::support::fake_appliance::FakeAppliance;

/// The captured node_exporter as `host:9100` (job `node`) served it.
fn node(host: &str) -> Vec<SeriesDef> {
    Capture::load_pair("node_exporter.prom", "node_exporter.after15s.prom", 15.0)
        .series(&format!("{host}:9100"), "node")
}

fn now() -> f64 {
    chrono::Utc::now().timestamp() as f64
}

fn reboots(facts: &[Fact]) -> Vec<&Fact> {
    facts
        .iter()
        .filter(|f| f.analyzer == "host_reboots")
        .collect()
}

#[tokio::test]
async fn a_host_rebooted_before_the_alert_is_a_change_at_its_boot_time_and_a_new_host_is_not() {
    let t0 = now();
    let mut defs = Vec::new();
    for h in ["elm-1", "elm-2"] {
        defs.extend(node(h));
    }
    // Rebooted 25 minutes ago; its target answered nothing for the five minutes before.
    let mut rebooted = node("elm-3");
    set(
        &mut rebooted,
        "node_boot_time_seconds",
        &[("instance", "elm-3:9100")],
        move |_, ago| match ago {
            a if a < 1500 => Some(t0 - 1500.0),
            a if a < 1800 => None,
            _ => Some(t0 - 9.0 * 86400.0),
        },
    );
    defs.extend(rebooted);
    // Went down three times in the last 40 minutes (its boot time wobbles by a second
    // in between, as the kernel's does).
    let mut flapping = node("elm-4");
    set(
        &mut flapping,
        "node_boot_time_seconds",
        &[("instance", "elm-4:9100")],
        move |_, ago| {
            let wobble = (ago % 2) as f64;
            Some(match ago {
                a if a < 600 => t0 - 600.0,
                a if a < 1500 => t0 - 1500.0 + wobble,
                a if a < 2400 => t0 - 2400.0,
                _ => t0 - 30.0 * 86400.0 + wobble,
            })
        },
    );
    defs.extend(flapping);
    // A host provisioned 40 minutes ago and scraped from 35 minutes ago on.
    let mut fresh = node("elm-5");
    set(
        &mut fresh,
        "node_boot_time_seconds",
        &[("instance", "elm-5:9100")],
        move |_, _| Some(t0 - 2400.0),
    );
    for d in &mut fresh {
        let f = std::mem::replace(&mut d.value, Box::new(|_| None));
        d.value = Box::new(move |ago| if ago < 2100 { f(ago) } else { None });
    }
    defs.extend(fresh);
    // A Windows host (windows_exporter 0.31 names its boot time without `_seconds`)
    // rebooted 15 minutes ago, and one that did not.
    for (host, boot_ago) in [("oak-win1", 900.0), ("oak-win2", 40.0 * 86400.0)] {
        let labels = [
            ("instance", format!("{host}:9182")),
            ("job", "windows".into()),
        ];
        let labels: Vec<(&str, &str)> = labels.iter().map(|(k, v)| (*k, v.as_str())).collect();
        defs.push(series(
            "windows_system_boot_time_timestamp",
            &labels,
            move |ago| {
                Some(if (ago as f64) < 900.0 {
                    t0 - boot_ago
                } else {
                    t0 - 40.0 * 86400.0
                })
            },
        ));
    }
    // Switches through snmp_exporter: sysUpTime in hundredths of a second. One rebooted
    // 8 minutes ago; the other's 32-bit counter wrapped 16 minutes ago, no reboot.
    let ticks = |boot: f64, t: f64| Some(((t - boot) * 100.0).rem_euclid(4_294_967_296.0).floor());
    defs.push(series(
        "sysUpTime",
        &[("instance", "sw-core"), ("job", "snmp")],
        move |ago| {
            let t = t0 - ago as f64;
            ticks(
                if ago < 480 {
                    t0 - 480.0
                } else {
                    t0 - 30.0 * 86400.0
                },
                t,
            )
        },
    ));
    defs.push(series(
        "sysUpTime",
        &[("instance", "sw-edge"), ("job", "snmp")],
        move |ago| ticks(t0 - 960.0 - 42_949_672.96, t0 - ago as f64),
    ));
    let Some(world) = World::build(&defs, 3 * 3600, 15).await else {
        return;
    };
    // The alert began 5 minutes ago: the window reaches back 65 minutes.
    let (facts, notes) = world.sweep(Some(300)).await;
    assert!(notes.is_empty(), "{notes:?}");
    let all = lines(&facts);
    let found = reboots(&facts);
    let mut names: Vec<&str> = found.iter().map(|f| f.entity.name.as_str()).collect();
    names.sort_unstable();
    assert_eq!(names, ["elm-3", "elm-4", "oak-win1", "sw-core"], "{all}");
    let host = |name: &str| found.iter().find(|f| f.entity.name == name).unwrap();

    let f = host("elm-3");
    assert_eq!(
        (f.class, f.severity, f.entity.kind.as_str()),
        (FactClass::Change, Severity::Warning, "host")
    );
    let at = f.since.expect("the boot time").timestamp() as f64;
    assert!((at - (t0 - 1500.0)).abs() < 2.0, "{all}");
    assert!(f.what.starts_with("rebooted at "), "{all}");
    assert!(f.what.ends_with("(up 25 min)"), "{all}");
    assert_eq!(f.value, None, "one reboot across the gap, not two: {all}");
    assert_eq!(
        f.source.arguments["query"],
        "node_boot_time_seconds{instance=\"elm-3:9100\",job=\"node\"}"
    );

    let f = host("oak-win1");
    assert_eq!(f.entity.host.as_deref(), Some("oak-win1"));
    let at = f.since.expect("the boot time").timestamp() as f64;
    assert!((at - (t0 - 900.0)).abs() < 2.0, "{all}");
    let f = host("sw-core");
    let at = f.since.expect("the boot time").timestamp() as f64;
    assert!((at - (t0 - 480.0)).abs() < 2.0, "{all}");
    assert!(f.what.ends_with("(up 8 min)"), "{all}");
    assert_eq!(
        f.source.arguments["query"],
        "timestamp(sysUpTime{instance=\"sw-core\",job=\"snmp\"}) - sysUpTime{instance=\"sw-core\",job=\"snmp\"} / 100"
    );

    let f = host("elm-4");
    assert_eq!(f.severity, Severity::Critical, "{all}");
    assert_eq!(f.value.map(|v| v.value), Some(3.0), "{all}");
    assert!(f.what.starts_with("rebooted 3 times, last at"), "{all}");
    let at = f.since.expect("the last boot").timestamp() as f64;
    assert!((at - (t0 - 600.0)).abs() < 2.0, "{all}");
}

#[tokio::test]
async fn a_proxmox_node_up_for_less_than_the_window_booted_within_it() {
    let data = |v| json!({ "data": v });
    let node = |name: &str, uptime: u64| {
        json!({"node": name, "status": "online", "cpu": 0.05, "maxcpu": 8, "mem": 1, "maxmem": 2,
            "disk": 1, "maxdisk": 2, "uptime": uptime, "level": "", "type": "node",
            "id": format!("node/{name}")})
    };
    let mut routes = vec![(
        "GET /api2/json/nodes".to_string(),
        data(json!([node("hv-a", 1200), node("hv-b", 2_600_000)])),
    )];
    for n in ["hv-a", "hv-b"] {
        for path in ["qemu", "lxc", "tasks", "storage", "replication"] {
            routes.push((format!("GET /api2/json/nodes/{n}/{path}"), data(json!([]))));
        }
    }
    let fake = FakeAppliance::start(routes, "PVEAPIToken=ops@pve!r=k", json!({"data": null})).await;
    let toml = format!(
        "[proxmox]\nurl = \"{}\"\ntoken_id = \"ops@pve!r\"\ntoken_secret = \"k\"\n",
        fake.url
    );
    let (facts, notes, now) = sweep(&toml).await;
    assert!(notes.is_empty(), "{notes:?}");
    let all = lines(&facts);
    let f = one(&facts, "hv-a");
    assert_eq!(
        (f.class, f.severity, f.entity.kind.as_str()),
        (FactClass::Change, Severity::Warning, "host"),
        "{all}"
    );
    assert_eq!(f.entity.host.as_deref(), Some("hv-a"));
    let up = (now - f.since.expect("the boot time")).num_seconds();
    assert!((up - 1200).abs() <= 1, "{all}");
    assert!(f.what.ends_with("(up 20 min)"), "{all}");
    none(&facts, "hv-b");
}
