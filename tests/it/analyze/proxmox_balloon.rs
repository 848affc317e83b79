//! `proxmox_balloon` through the sweep against a fake Proxmox VE answering the JSON of
//! `vmstatus` (`GET /nodes/{node}/qemu?full=1`, `…/status/current`): a node above its
//! auto-ballooning target whose VM sits at its balloon minimum and uses all of it
//! (critical, since the node's memory crossed the target), a VM listed without its run
//! state read again from `status/current` with its minimum from its config, a VM on a calm
//! node whose target was set by hand; a ballooned VM with room and VMs at full size say
//! nothing, and no node below its target has its history read.

use chrono::Utc;
use serde_json::{Value, json};
use sre_agent::analyze::{FactClass, Severity};

use super::appliances::{mins_ago, sweep};
use super::world::{lines, of};
use crate::support::fake_appliance::FakeAppliance;

const GIB: u64 = 1 << 30;
const MIB: u64 = 1 << 20;

fn data(v: Value) -> Value {
    json!({ "data": v })
}

/// A running VM as `vmstatus` with `full=1` writes it: configured `max` bytes, balloon
/// target `actual`, `free` bytes free in the guest, and a balloon minimum when configured.
fn vm(id: u32, name: &str, max: u64, actual: u64, free: u64, min: Option<u64>) -> Value {
    let total = actual.saturating_sub(48 * MIB);
    let mut v = json!({"vmid": id, "name": name, "status": "running", "qmpstatus": "running",
        "uptime": 9 * 86400, "cpu": 0.12, "cpus": 4, "maxmem": max, "balloon": actual,
        "mem": total - free, "freemem": free, "maxdisk": 34359738368u64, "disk": 0,
        "netin": 1, "netout": 2, "diskread": 3, "diskwrite": 4, "pid": 3100 + id,
        "running-qemu": "9.0.2", "running-machine": "pc-i440fx-9.0+pve0",
        "ballooninfo": {"actual": actual, "max_mem": max, "total_mem": total, "free_mem": free,
            "mem_swapped_in": 1_048_576, "mem_swapped_out": 73_400_320,
            "major_page_faults": 48_211, "minor_page_faults": 9_120_044,
            "last_update": Utc::now().timestamp() - 5}});
    if let Some(m) = min {
        v["balloon_min"] = json!(m);
        v["shares"] = json!(1000);
    }
    v
}

#[tokio::test]
async fn vms_held_down_by_the_balloon_and_running_near_it_are_told_with_why_and_since_when() {
    let t = Utc::now().timestamp();
    // The node's memory history: 70 % until 50 minutes ago, 92 % since.
    let rrd: Vec<Value> = (0..24)
        .map(|i| {
            let time = t - (24 - i) * 5 * 60;
            let used = if t - time > 50 * 60 { 0.70 } else { 0.92 };
            json!({"time": time, "memtotal": 128.0 * GIB as f64, "memused": used * 128.0 * GIB as f64,
                "cpu": 0.3, "maxcpu": 32, "loadavg": 4.1})
        })
        .collect();
    let legacy = json!({"vmid": 204, "name": "legacy-erp", "status": "running", "uptime": 400000,
        "cpu": 0.2, "cpus": 2, "mem": 900 * MIB, "maxmem": 4 * GIB});
    let mut legacy_status = vm(204, "legacy-erp", 4 * GIB, GIB, 20 * MIB, None);
    legacy_status["ha"] = json!({"managed": 0});
    let routes = vec![
        (
            "GET /api2/json/nodes".into(),
            data(json!([
            {"node": "hv-east", "status": "online", "cpu": 0.3, "maxcpu": 32,
             "mem": 126_000_000_000u64, "maxmem": 137_438_953_472u64, "uptime": 3_000_000,
             "type": "node", "id": "node/hv-east"},
            {"node": "hv-west", "status": "online", "cpu": 0.1, "maxcpu": 16,
             "mem": 27_487_790_694u64, "maxmem": 68_719_476_736u64, "uptime": 3_000_000,
             "type": "node", "id": "node/hv-west"}])),
        ),
        (
            "GET /api2/json/nodes/hv-east/qemu".into(),
            data(json!([
                vm(201, "pg-main", 16 * GIB, 4 * GIB, 60 * MIB, Some(4 * GIB)),
                vm(202, "cache", 8 * GIB, 6 * GIB, 3 * GIB, Some(2 * GIB)),
                vm(203, "web", 8 * GIB, 8 * GIB, 100 * MIB, Some(2 * GIB)),
                legacy,
                {"vmid": 299, "name": "spare", "status": "stopped", "maxmem": 8 * GIB, "uptime": 0}
            ])),
        ),
        (
            "GET /api2/json/nodes/hv-east/qemu/204/status/current".into(),
            data(legacy_status),
        ),
        (
            "GET /api2/json/nodes/hv-east/qemu/204/config".into(),
            data(
                json!({"name": "legacy-erp", "memory": "4096", "balloon": 1024, "shares": 500,
                "digest": "3f1c"}),
            ),
        ),
        (
            "GET /api2/json/nodes/hv-east/config".into(),
            data(json!({"digest": "9a0e"})),
        ),
        (
            "GET /api2/json/nodes/hv-east/rrddata".into(),
            data(json!(rrd)),
        ),
        (
            "GET /api2/json/nodes/hv-west/qemu".into(),
            data(json!([vm(
                301,
                "build-cache",
                8 * GIB,
                2 * GIB,
                150 * MIB,
                None
            )])),
        ),
        (
            "GET /api2/json/nodes/hv-west/qemu/301/config".into(),
            data(json!({"name": "build-cache", "memory": 8192, "cores": 4})),
        ),
        (
            "GET /api2/json/nodes/hv-west/config".into(),
            data(json!({"ballooning-target": 85})),
        ),
    ];
    let mut routes = routes;
    for node in ["hv-east", "hv-west"] {
        for tail in ["lxc", "tasks", "storage", "replication"] {
            routes.push((
                format!("GET /api2/json/nodes/{node}/{tail}"),
                data(json!([])),
            ));
        }
    }
    let fake =
        FakeAppliance::start(routes, "PVEAPIToken=ops@pve!sweep=k", json!({"data": null})).await;
    let toml = format!(
        "[proxmox]\nurl = \"{}\"\ntoken_id = \"ops@pve!sweep\"\ntoken_secret = \"k\"\n",
        fake.url
    );
    let (facts, notes, now) = sweep(&toml).await;
    assert!(notes.is_empty(), "{notes:?}");
    let all = lines(&facts);
    let found = of(&facts, "proxmox_balloon");
    let names: Vec<&str> = found.iter().map(|f| f.entity.name.as_str()).collect();
    assert_eq!(found.len(), 3, "{names:?}\n{all}");
    for quiet in ["cache", "web", "spare"] {
        assert!(!names.contains(&quiet), "{quiet}: {all}");
    }
    let get = |name: &str| found.iter().find(|f| f.entity.name == name).unwrap();

    let pg = get("pg-main");
    assert_eq!(
        (pg.class, pg.severity, pg.what.as_str()),
        (
            FactClass::Exhaustion,
            Severity::Critical,
            "memory held down by the balloon"
        ),
        "{all}"
    );
    assert_eq!(pg.entity.labels["vmid"], "201");
    assert_eq!(pg.entity.host.as_deref(), Some("hv-east"));
    assert!(pg.related.iter().any(|e| e.name == "hv-east"), "{all}");
    assert!((pg.value.unwrap().value - 97.4).abs() < 0.2, "{all}");
    assert_eq!(pg.limit.unwrap().value, (4 * GIB) as f64);
    let m = mins_ago(now, pg);
    assert!((45..=55).contains(&m), "{m} min: {all}");
    let d = pg.detail.as_deref().unwrap();
    for part in [
        "balloon target 4.0 GiB of 16.0 GiB configured (25 %)",
        "at its configured balloon minimum 4.0 GiB",
        "host hv-east 91.7 % memory used, above its auto-ballooning target 80 % since",
        "GET /nodes/hv-east/qemu/201/status/current",
    ] {
        assert!(d.contains(part), "{part}: {d}");
    }
    assert_eq!(pg.source.tool, "proxmox_guests");
    assert_eq!(pg.source.arguments, json!({"node": "hv-east"}));

    let legacy = get("legacy-erp");
    assert_eq!(legacy.severity, Severity::Warning, "{all}");
    let d = legacy.detail.as_deref().unwrap();
    assert!(
        d.starts_with("balloon target 1.0 GiB of 4.0 GiB configured (25 %)")
            && d.contains("at its configured balloon minimum 1.0 GiB"),
        "{d}"
    );

    let manual = get("build-cache");
    assert_eq!(manual.severity, Severity::Warning, "{all}");
    assert_eq!(manual.since, None);
    let d = manual.detail.as_deref().unwrap();
    assert!(d.contains("a target set by hand"), "{d}");
    assert!(
        d.contains("host hv-west 40 % memory used, below its auto-ballooning target 85 %"),
        "{d}"
    );

    let requests = fake.requests();
    let asked = |path: &str| requests.iter().any(|r| r.starts_with(path));
    assert!(asked(
        "GET /api2/json/nodes/hv-east/rrddata?timeframe=day&cf=AVERAGE"
    ));
    assert!(
        !asked("GET /api2/json/nodes/hv-west/rrddata"),
        "{requests:?}"
    );
    // Only the VM listed without its run state is read again.
    for id in [201, 202, 203, 299] {
        let path = format!("GET /api2/json/nodes/hv-east/qemu/{id}/status/current");
        assert!(!asked(&path), "{path}: {requests:?}");
    }
}
