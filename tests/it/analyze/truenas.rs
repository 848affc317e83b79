//! The TrueNAS analyzers, built by `Sweep::new` from a config naming the NAS, against a
//! fake answering the real API's JSON: a degraded pool with its faulted device, scrub
//! errors, active and dismissed alerts, a failed SMART test and a hot disk.

use chrono::Utc;
use serde_json::json;
use sre_agent::analyze::{Fact, FactClass, Severity};

use super::appliances::{mins_ago, none, one, sweep};
use super::world::lines;
use crate::support::fake_appliance::FakeAppliance;

#[tokio::test]
async fn truenas_degraded_pools_with_their_faulted_devices_scrub_errors_alerts_smart_and_heat() {
    let ms = Utc::now().timestamp_millis();
    let disk = |name: &str, serial: &str, kind: &str, pool: &str| {
        json!({"identifier": serial, "name": name, "serial": serial, "model": "WDC WD40EFRX", "type": kind,
            "size": 4000787030016u64, "togglesmart": true, "devname": name, "pool": pool})
    };
    let routes = vec![
        (
            "GET /api/v2.0/pool".into(),
            json!([
            {"id": 1, "name": "tank", "status": "DEGRADED", "healthy": false,
             "status_detail": "One or more devices are faulted in response to persistent errors.",
             "size": 7696581394432u64, "allocated": 5049426657280u64, "free": 2647154737152u64,
             "scan": {"function": "SCRUB", "state": "FINISHED", "errors": 0},
             "topology": {"data": [{"type": "MIRROR", "status": "DEGRADED", "children": [
                 {"type": "DISK", "disk": "sda", "status": "ONLINE", "stats": {"read_errors": 0, "write_errors": 0, "checksum_errors": 0}},
                 {"type": "DISK", "disk": "sdb", "status": "FAULTED", "stats": {"read_errors": 23, "write_errors": 0, "checksum_errors": 11}}]}],
                 "log": [], "cache": [], "spare": [], "special": [], "dedup": []}},
            {"id": 2, "name": "fast", "status": "ONLINE", "healthy": true, "size": 1000, "allocated": 200, "free": 800,
             "scan": {"function": "SCRUB", "state": "FINISHED", "errors": 2}, "topology": {"data": []}},
            {"id": 3, "name": "archive", "status": "ONLINE", "healthy": true, "size": 1000, "allocated": 960, "free": 40,
             "scan": {"function": "SCRUB", "state": "FINISHED", "errors": 0}, "topology": {"data": []}}]),
        ),
        (
            "GET /api/v2.0/alert/list".into(),
            json!([
            {"uuid": "a", "klass": "VolumeStatus", "args": {"volume": "tank", "state": "DEGRADED"}, "level": "CRITICAL",
             "formatted": "Pool tank state is DEGRADED: One or more devices are faulted.", "dismissed": false,
             "datetime": {"$date": ms - 45 * 60000}},
            {"uuid": "b", "klass": "UPSOnBattery", "args": {}, "level": "CRITICAL", "formatted": "UPS is on battery",
             "dismissed": true, "datetime": {"$date": ms - 90 * 60000}},
            {"uuid": "c", "klass": "NTPHealthCheck", "args": {}, "level": "INFO", "formatted": "NTP is fine",
             "dismissed": false, "datetime": {"$date": ms - 60000}}]),
        ),
        (
            "GET /api/v2.0/disk".into(),
            json!([
                disk("sda", "ZL2ABC01", "HDD", "tank"),
                disk("sdb", "ZL2ABC02", "HDD", "tank"),
                disk("nvme0n1", "S5GXNX0", "SSD", "fast")
            ]),
        ),
        (
            "POST /api/v2.0/disk/temperatures".into(),
            json!({"sda": 41, "sdb": 58, "nvme0n1": 65}),
        ),
        (
            "GET /api/v2.0/smart/test/results".into(),
            json!([
            {"disk": "sda", "tests": [{"num": 1, "description": "Short offline", "status": "SUCCESS", "status_verbose": "Completed without error", "lifetime": 31234}]},
            {"disk": "sdb", "tests": [
                {"num": 1, "description": "Extended offline", "status": "FAILED", "status_verbose": "Completed: read failure", "lifetime": 41000},
                {"num": 2, "description": "Short offline", "status": "SUCCESS", "status_verbose": "Completed without error", "lifetime": 40000}]}]),
        ),
    ];
    let fake = FakeAppliance::start(
        routes,
        "Bearer 1-truenaskey",
        json!({"message": "Not authorized"}),
    )
    .await;
    let toml = format!(
        "[truenas]\nurl = \"{}\"\napi_key = \"1-truenaskey\"\n",
        fake.url
    );
    let (facts, notes, now) = sweep(&toml).await;
    assert!(notes.is_empty(), "{notes:?}");
    let all = lines(&facts);

    let f = one(&facts, "tank");
    assert_eq!(
        (f.what.as_str(), f.severity),
        ("pool DEGRADED", Severity::Critical)
    );
    assert_eq!(
        f.detail.as_deref(),
        Some(
            "devices: sdb FAULTED (read 23, write 0, checksum 11 errors); members sda, sdb (WDC WD40EFRX); One or more devices are faulted in response to persistent errors."
        )
    );
    // The pool's view of the disk and the disk's own (SMART, heat) are one fact.
    let sdb: Vec<&Fact> = facts.iter().filter(|f| f.entity.name == "sdb").collect();
    assert_eq!(sdb.len(), 1, "faulted, then SMART and temperature:\n{all}");
    let faulted = sdb[0];
    assert_eq!(faulted.analyzer, "truenas_pools");
    assert_eq!(faulted.what, "FAULTED in pool tank, errors");
    assert_eq!(faulted.value.unwrap().value, 34.0);
    let detail = faulted.detail.as_deref().unwrap();
    assert!(
        detail.contains(
            "then SMART test FAILED: Extended offline: Completed: read failure at 41000 power-on hours"
        ),
        "{all}"
    );
    assert!(detail.contains("then temperature °C 58 of 50"), "{all}");
    assert!(detail.ends_with("23 read and 11 checksum errors"), "{all}");
    assert_eq!(faulted.entity.labels["serial"], "ZL2ABC02");
    none(&facts, "sda");
    none(&facts, "nvme0n1");

    let f = one(&facts, "fast");
    assert_eq!(
        (f.what.as_str(), f.value.unwrap().value),
        ("scrub found errors", 2.0)
    );
    let f = one(&facts, "archive");
    assert_eq!(
        (f.class, f.severity),
        (FactClass::Exhaustion, Severity::Critical)
    );

    let f = one(&facts, "VolumeStatus");
    assert_eq!(f.what, "CRITICAL alert");
    assert_eq!(f.entity.labels["volume"], "tank");
    assert_eq!(
        f.detail.as_deref(),
        Some("Pool tank state is DEGRADED: One or more devices are faulted.")
    );
    assert_eq!(mins_ago(now, f), 45);
    none(&facts, "UPSOnBattery");
    none(&facts, "NTPHealthCheck");
}

#[tokio::test]
async fn a_truenas_without_the_smart_results_endpoint_still_reports_its_hot_disk() {
    let routes = vec![
        ("GET /api/v2.0/pool".into(), json!([])),
        ("GET /api/v2.0/alert/list".into(), json!([])),
        (
            "GET /api/v2.0/disk".into(),
            json!([
            {"identifier": "x", "name": "sdc", "serial": "WD-1", "model": "WDC WD80EFZZ", "type": "HDD", "pool": "tank"}]),
        ),
        (
            "POST /api/v2.0/disk/temperatures".into(),
            json!({"sdc": 63, "sdd": null}),
        ),
    ];
    let fake = FakeAppliance::start(routes, "Bearer k", json!({"message": "Not authorized"})).await;
    let toml = format!("[truenas]\nurl = \"{}\"\napi_key = \"k\"\n", fake.url);
    let (facts, notes, _) = sweep(&toml).await;
    assert!(
        notes.is_empty(),
        "a missing endpoint is skipped silently: {notes:?}"
    );
    let f = one(&facts, "sdc");
    assert_eq!(
        (f.what.as_str(), f.severity),
        ("temperature °C", Severity::Critical)
    );
    assert_eq!(f.entity.labels["pool"], "tank");
    assert!(
        fake.requests()
            .iter()
            .any(|r| r.contains("smart/test/results"))
    );
}
