//! `proxmox_storage` with the storages' usage history (`rrddata`): a storage filling fast
//! gets its rate and time until full (critical well before it is 95 % used), a storage as
//! full but steady gets none, and a storage without history is judged on usage alone.

use chrono::{TimeDelta, Utc};
use serde_json::{Value, json};
use sre_agent::analyze::{Scope, Severity, Sweep};

use super::world::lines;
use crate::support::fake_appliance::FakeAppliance;
use crate::support::test_config;

const GIB: f64 = 1024.0 * 1024.0 * 1024.0;

fn storage(name: &str, total: f64, used: f64) -> Value {
    json!({"storage": name, "type": "zfspool", "content": "images", "active": 1, "enabled": 1, "shared": 0,
        "total": total as u64, "used": used as u64, "avail": (total - used) as u64})
}

/// A minute-by-minute hour of usage ending at `used_now`, rising `per_hour` bytes an hour.
fn hour(t: i64, total: f64, used_now: f64, per_hour: f64) -> Value {
    let points: Vec<Value> = (0..60)
        .map(|i| {
            let ago = f64::from(60 - i) * 60.0;
            json!({"time": t - (ago as i64), "used": used_now - per_hour * ago / 3600.0, "total": total})
        })
        .collect();
    json!({ "data": points })
}

#[tokio::test]
async fn a_storage_filling_fast_gets_its_rate_and_eta_and_a_steady_one_of_the_same_size_does_not() {
    let t = Utc::now().timestamp();
    let total = 4096.0 * GIB;
    let routes = vec![
        (
            "GET /api2/json/nodes".into(),
            json!({"data": [{"node": "pve-a", "status": "online", "uptime": 900000}]}),
        ),
        (
            "GET /api2/json/nodes/pve-a/storage".into(),
            json!({"data": [
            storage("local", 100.0 * GIB, 30.0 * GIB),
            storage("vmdata", total, 0.70 * total),
            storage("backups", total, 0.70 * total),
            storage("iso", 100.0 * GIB, 90.0 * GIB)]}),
        ),
        // vmdata: 400 GiB more every hour, about 3 h left; backups: steady.
        (
            "GET /api2/json/nodes/pve-a/storage/vmdata/rrddata".into(),
            hour(t, total, 0.70 * total, 400.0 * GIB),
        ),
        (
            "GET /api2/json/nodes/pve-a/storage/backups/rrddata".into(),
            hour(t, total, 0.70 * total, 0.0),
        ),
    ];
    let fake =
        FakeAppliance::start(routes, "PVEAPIToken=sre@pve!agent=s", json!({"data": null})).await;
    let dir = tempfile::tempdir().unwrap();
    let toml = format!(
        "[proxmox]\nurl = \"{}\"\ntoken_id = \"sre@pve!agent\"\ntoken_secret = \"s\"\n",
        fake.url
    );
    sre_agent::install_crypto_provider();
    let config = test_config(dir.path(), &toml);
    let sweep = Sweep::new(
        &config,
        &sre_agent::integrations::Upstreams::from_config(&config).unwrap(),
    );
    let now = Utc::now();
    let report = sweep
        .run(Scope::new(now, Some(now - TimeDelta::minutes(10))))
        .await;
    let facts: Vec<_> = report
        .facts
        .iter()
        .filter(|f| f.analyzer == "proxmox_storage")
        .cloned()
        .collect();
    let all = lines(&facts);
    let names: Vec<&str> = facts.iter().map(|f| f.entity.name.as_str()).collect();
    assert_eq!(names, ["vmdata", "iso"], "{all}");
    let f = &facts[0];
    assert_eq!(f.severity, Severity::Critical, "{all}");
    let hours = f.eta_seconds.expect("an ETA") / 3600.0;
    assert!((2.9..3.2).contains(&hours), "{all}");
    let per_hour = f.rate.unwrap().change.value / GIB;
    assert!((399.0..401.0).contains(&per_hour), "{all}");
    assert_eq!(f.entity.host.as_deref(), Some("pve-a"));
    let iso = &facts[1];
    assert_eq!(
        (iso.severity, iso.eta_seconds),
        (Severity::Warning, None),
        "{all}"
    );
    assert!(
        fake.requests()
            .iter()
            .any(|r| r.contains("vmdata/rrddata?timeframe=hour")),
        "{:?}",
        fake.requests()
    );
    assert!(
        !fake.requests().iter().any(|r| r.contains("local/rrddata")),
        "history only for storage worth it"
    );
}
