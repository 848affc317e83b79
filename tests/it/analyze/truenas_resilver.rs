//! `truenas_pools` on a pool being resilvered, against the fake answering TrueNAS SCALE's
//! REST API (`GET /pool` with its topology and scan as `pool.query` returns them, `GET
//! /disk`): the scan's progress, the member disks with their models and the one whose
//! model differs from the rest, which disk replaces which; a healthy pool being scrubbed;
//! and a `GET /disk` that fails, which only drops the models.

use chrono::{TimeDelta, Utc};
use serde_json::{Value, json};
use sre_agent::analyze::Severity;

use super::appliances::{none, one, sweep};
use crate::support::fake_appliance::FakeAppliance;

const CMR: &str = "WDC WD40EFRX-68N32N0";
const SMR: &str = "WDC WD40EFAX-68JH4N0";

/// A DISK vdev as `pool.query` lists it.
fn vdev(disk: &str, guid: &str, status: &str) -> Value {
    json!({"name": guid, "type": "DISK", "path": format!("/dev/disk/by-partuuid/{guid}-part"), "guid": guid,
        "status": status, "stats": {"timestamp": 1764300000, "read_errors": 0, "write_errors": 0,
            "checksum_errors": 0, "ops": [0, 12, 9, 0, 0, 0, 0], "bytes": [0, 4096, 8192, 0, 0, 0, 0],
            "size": 0, "allocated": 0, "fragmentation": 0, "self_healed": 0, "configured_ashift": 12,
            "logical_ashift": 9, "physical_ashift": 12},
        "children": [], "device": format!("{disk}1"), "disk": disk, "unavail_disk": null})
}

fn disk(name: &str, serial: &str, model: &str) -> Value {
    json!({"identifier": format!("{{serial_lunid}}{serial}_5000cca0"), "name": name, "subsystem": "scsi",
        "number": 0, "serial": serial, "lunid": "5000cca0", "size": 4000787030016u64, "description": "",
        "transfermode": "Auto", "hddstandby": "ALWAYS ON", "advpowermgmt": "DISABLED", "togglesmart": true,
        "model": model, "rotationrate": 5400, "type": "HDD", "zfs_guid": "1", "bus": "ATA",
        "devname": name, "enclosure": null, "supports_smart": true})
}

fn routes() -> Vec<(String, Value)> {
    let now = Utc::now();
    let started = (now - TimeDelta::hours(6)).timestamp_millis();
    // sdb stopped answering; sdd, an SMR drive, replaces it among CMR drives.
    let mut missing = vdev("", "7706582331829574113", "UNAVAIL");
    missing["disk"] = Value::Null;
    missing["device"] = Value::Null;
    missing["unavail_disk"] = json!({"identifier": "{serial_lunid}WD-WCC7K2AB_5000cca1", "name": "sdb",
        "devname": "sdb", "serial": "WD-WCC7K2AB", "model": CMR, "size": 4000787030016u64});
    let tank = json!({"id": 1, "name": "tank", "guid": "14394758612353456789", "path": "/mnt/tank",
        "status": "DEGRADED", "healthy": false, "warning": false, "status_code": "RESILVERING",
        "status_detail": "One or more devices is currently being resilvered.  The pool will continue to function, possibly in a degraded state.",
        "size": 15994458210304u64, "allocated": 9663676416000u64, "free": 6330781794304u64, "freeing": 0,
        "fragmentation": "9", "is_upgraded": true,
        "scan": {"function": "RESILVER", "state": "SCANNING", "start_time": {"$date": started}, "end_time": null,
            "percentage": 31.4, "bytes_to_process": 9663676416000u64, "bytes_processed": 3100000000000u64,
            "bytes_issued": 3034394394624u64, "pause": null, "errors": 0, "total_secs_left": 47200},
        "topology": {"data": [{"name": "raidz1-0", "type": "RAIDZ1", "path": null, "guid": "1", "status": "DEGRADED",
            "stats": {"read_errors": 0, "write_errors": 0, "checksum_errors": 0}, "children": [
                vdev("sda", "1048576001", "ONLINE"),
                {"name": "replacing-1", "type": "REPLACING", "path": null, "guid": "2", "status": "DEGRADED",
                 "stats": {"read_errors": 0, "write_errors": 0, "checksum_errors": 0},
                 "children": [missing, vdev("sdd", "1048576004", "ONLINE")], "unavail_disk": null},
                vdev("sdc", "1048576003", "ONLINE")], "unavail_disk": null}],
            "log": [], "cache": [], "spare": [], "special": [], "dedup": []}});
    let media = json!({"id": 2, "name": "media", "status": "ONLINE", "healthy": true, "warning": false,
        "status_detail": null, "size": 1000, "allocated": 400, "free": 600,
        "scan": {"function": "SCRUB", "state": "SCANNING", "start_time": {"$date": now.timestamp_millis() - 1_800_000},
            "end_time": null, "percentage": 12.0, "bytes_to_process": 400, "bytes_processed": 50,
            "bytes_issued": 48, "pause": null, "errors": 0, "total_secs_left": 13200},
        "topology": {"data": [vdev("nvme0n1", "9", "ONLINE")], "log": [], "cache": [], "spare": [], "special": [], "dedup": []}});
    let backup = json!({"id": 3, "name": "backup", "status": "ONLINE", "healthy": true, "warning": false,
        "size": 1000, "allocated": 100, "free": 900,
        "scan": {"function": "SCRUB", "state": "FINISHED", "start_time": {"$date": started}, "end_time": {"$date": started + 3_600_000},
            "percentage": 100.0, "bytes_to_process": 100, "bytes_processed": 100, "bytes_issued": 100,
            "pause": null, "errors": 0, "total_secs_left": null},
        "topology": {"data": [vdev("sde", "10", "ONLINE")], "log": [], "cache": [], "spare": [], "special": [], "dedup": []}});
    vec![
        ("GET /api/v2.0/pool".into(), json!([tank, media, backup])),
        ("GET /api/v2.0/alert/list".into(), json!([])),
        (
            "GET /api/v2.0/disk".into(),
            json!([
                disk("sda", "WD-WCC7K1AA", CMR),
                disk("sdc", "WD-WCC7K3CC", CMR),
                disk("sdd", "WD-WX12D40DD", SMR),
                disk("sde", "WD-WCC7K5EE", CMR),
                disk("nvme0n1", "S5GXNX0", "Samsung SSD 970 EVO Plus 1TB")
            ]),
        ),
        ("POST /api/v2.0/disk/temperatures".into(), json!({})),
        ("GET /api/v2.0/smart/test/results".into(), json!([])),
    ]
}

async fn start() -> (FakeAppliance, String) {
    let fake =
        FakeAppliance::start(routes(), "Bearer k", json!({"message": "Not authorized"})).await;
    let toml = format!("[truenas]\nurl = \"{}\"\napi_key = \"k\"\n", fake.url);
    (fake, toml)
}

#[tokio::test]
async fn a_resilvering_pool_tells_its_progress_and_the_member_whose_model_differs() {
    let (_fake, toml) = start().await;
    let (facts, notes, _) = sweep(&toml).await;
    assert!(notes.is_empty(), "{notes:?}");

    let f = one(&facts, "tank");
    assert_eq!(
        (f.what.as_str(), f.severity),
        ("pool DEGRADED, resilver at", Severity::Critical)
    );
    assert_eq!(f.value.unwrap().value, 31.4);
    assert_eq!(
        (f.eta_seconds, f.eta_what.as_deref()),
        (Some(47200.0), Some("resilver done"))
    );
    let detail = f.detail.as_deref().unwrap();
    assert!(
        detail.starts_with(
            "resilver 31.4 % done, 2.8 TiB of 8.8 TiB issued, 134.0 MiB/s on average since it began, about 13.1 h left; "
        ),
        "{detail}"
    );
    assert!(
        detail.contains(&format!(
            "members sda, sdb, sdc ({CMR}), sdd ({SMR}); sdd is another model than the other 3; sdd replaces sdb"
        )),
        "{detail}"
    );
    assert!(detail.contains("devices: sdb UNAVAIL (read 0"), "{detail}");

    // The missing disk's own fact carries the pool; the scrub of a healthy pool is told
    // as context, a finished one not at all.
    let sdb = one(&facts, "sdb");
    assert_eq!(sdb.what, "UNAVAIL in pool tank, errors");
    let m = one(&facts, "media");
    assert_eq!((m.what.as_str(), m.severity), ("scrub at", Severity::Info));
    assert_eq!((Utc::now() - m.since.unwrap()).num_minutes(), 30);
    assert!(
        m.detail
            .as_deref()
            .unwrap()
            .contains("members nvme0n1 (Samsung SSD 970 EVO Plus 1TB)"),
        "{:?}",
        m.detail
    );
    none(&facts, "backup");
}

#[tokio::test]
async fn a_failing_disk_list_drops_only_the_models_never_the_pool() {
    let (fake, toml) = start().await;
    fake.fail("GET /api/v2.0/disk");
    let (facts, notes, _) = sweep(&toml).await;
    assert!(
        notes.iter().all(|n| !n.contains("truenas_pools")),
        "{notes:?}"
    );
    let f = one(&facts, "tank");
    assert_eq!(f.what, "pool DEGRADED, resilver at");
    let detail = f.detail.as_deref().unwrap();
    // Only the missing disk's model is known (from the topology): nothing to compare.
    assert!(
        detail.contains(&format!(
            "members sdb ({CMR}), sda, sdd, sdc; sdd replaces sdb"
        )),
        "{detail}"
    );
    assert!(!detail.contains("another model"), "{detail}");
    assert!(
        fake.requests().iter().any(|r| r == "GET /api/v2.0/disk"),
        "{:?}",
        fake.requests()
    );
}
