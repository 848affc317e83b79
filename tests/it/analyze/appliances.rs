//! The Proxmox VE, PBS and TrueNAS analyzers, built by `Sweep::new` from a config naming
//! each appliance, against fakes answering the real API's JSON: three nodes with guests
//! stopped for different reasons (and decoys stopped for none), storage filling, failed and
//! routine tasks; a backup server with stale groups among daily and weekly ones (the NAS's
//! are in `truenas.rs`).

use chrono::{DateTime, TimeDelta, Utc};
use serde_json::{Value, json};
use sre_agent::analyze::{Fact, FactClass, Scope, Severity, Sweep};

use super::world::lines;
use crate::support::fake_appliance::FakeAppliance;
use crate::support::test_config;

pub(super) async fn sweep(toml: &str) -> (Vec<Fact>, Vec<String>, DateTime<Utc>) {
    sre_agent::install_crypto_provider();
    let dir = tempfile::tempdir().unwrap();
    let config = test_config(dir.path(), toml);
    let sweep = Sweep::new(
        &config,
        &sre_agent::integrations::Upstreams::from_config(&config).unwrap(),
    );
    let now = Utc::now();
    let report = sweep
        .run(Scope::new(now, Some(now - TimeDelta::minutes(20))))
        .await;
    (report.facts, report.notes, now)
}

pub(super) fn one<'a>(facts: &'a [Fact], name: &str) -> &'a Fact {
    let found: Vec<&Fact> = facts.iter().filter(|f| f.entity.name == name).collect();
    assert_eq!(found.len(), 1, "{name}:\n{}", lines(facts));
    found[0]
}

pub(super) fn none(facts: &[Fact], name: &str) {
    assert!(
        facts.iter().all(|f| f.entity.name != name),
        "{name} reported:\n{}",
        lines(facts)
    );
}

pub(super) fn mins_ago(now: DateTime<Utc>, f: &Fact) -> i64 {
    (now - f.since.expect("a since")).num_minutes()
}

fn data(v: Value) -> Value {
    json!({ "data": v })
}

fn vm(id: u32, name: &str, status: &str) -> Value {
    json!({"vmid": id, "name": name, "status": status, "uptime": if status == "running" { 86400 } else { 0 },
        "cpu": 0.02, "cpus": 2, "mem": 1073741824u64, "maxmem": 4294967296u64, "maxdisk": 34359738368u64})
}

/// A VM whose `status` is running and whose QEMU run state is `qmpstatus`.
fn held(id: u32, name: &str, qmpstatus: &str) -> Value {
    let mut v = vm(id, name, "running");
    v["qmpstatus"] = json!(qmpstatus);
    v
}

fn task(node: &str, kind: &str, id: &str, user: &str, status: &str, end: i64) -> Value {
    json!({"upid": format!("UPID:{node}:0000{end:X}:00000000:{end:X}:{kind}:{id}:{user}:"), "node": node,
        "pid": 1234, "pstart": 100, "starttime": end - 30, "endtime": end, "type": kind, "id": id,
        "user": user, "status": status})
}

fn storage(name: &str, kind: &str, shared: u8, total: u64, used: u64) -> Value {
    json!({"storage": name, "type": kind, "content": "images", "active": 1, "enabled": 1, "shared": shared,
        "total": total, "used": used, "avail": total - used, "used_fraction": used as f64 / total as f64})
}

const TIB: u64 = 1 << 40;

#[tokio::test]
async fn proxmox_guests_stopped_by_a_task_or_against_ha_or_onboot_failed_tasks_and_full_storage() {
    let t = Utc::now().timestamp();
    let m = |mins: i64| t - mins * 60;
    let routes = vec![
        (
            "GET /api2/json/nodes".into(),
            data(json!([
            {"node": "pve1", "status": "online", "cpu": 0.1, "maxcpu": 16, "mem": 1, "maxmem": 2, "uptime": 900000},
            {"node": "pve2", "status": "online", "cpu": 0.1, "maxcpu": 16, "mem": 1, "maxmem": 2, "uptime": 900000},
            {"node": "pve3", "status": "offline"}])),
        ),
        (
            "GET /api2/json/cluster/ha/resources".into(),
            data(json!([
            {"sid": "ct:201", "state": "started", "type": "ct"}, {"sid": "vm:100", "state": "started", "type": "vm"}])),
        ),
        (
            "GET /api2/json/nodes/pve1/qemu".into(),
            data(json!([
            vm(100, "k3s-master", "running"), vm(101, "homeassistant", "stopped"), vm(102, "win11", "stopped"),
            {"vmid": 9000, "name": "debian-template", "status": "stopped", "template": 1},
            // Up but held by QEMU: one on a write error (its storage is full), one paused by
            // hand; one whose run state is running (with `full=1`) is no news.
            held(103, "paperless", "io-error"), held(104, "jellyfin", "paused"),
            held(105, "gitea", "running")])),
        ),
        (
            "GET /api2/json/nodes/pve1/lxc".into(),
            data(json!([
            {"vmid": "200", "name": "pihole", "status": "running", "type": "lxc", "uptime": 3600},
            {"vmid": "201", "name": "nextcloud", "status": "stopped", "type": "lxc", "uptime": 0}])),
        ),
        (
            "GET /api2/json/nodes/pve2/qemu".into(),
            data(json!([
                vm(110, "gitlab", "stopped"),
                vm(111, "postgres", "running")
            ])),
        ),
        ("GET /api2/json/nodes/pve2/lxc".into(), data(json!([]))),
        (
            "GET /api2/json/nodes/pve2/qemu/110/config".into(),
            data(json!({"onboot": 1, "memory": "8192", "name": "gitlab"})),
        ),
        (
            "GET /api2/json/nodes/pve1/qemu/102/config".into(),
            data(json!({"memory": "8192", "name": "win11"})),
        ),
        (
            "GET /api2/json/nodes/pve1/tasks".into(),
            data(json!([
                task("pve1", "qmshutdown", "101", "alice@pve", "OK", m(25)),
                task("pve1", "vzdump", "100", "root@pam", "job errors", m(40)),
                task("pve1", "vzdump", "200", "root@pam", "OK", m(41)),
                task("pve1", "qmstop", "102", "root@pam", "OK", m(3 * 1440))
            ])),
        ),
        (
            // The failed backup's log: why, in more words than its status.
            format!(
                "GET /api2/json/nodes/pve1/tasks/UPID:pve1:0000{e:X}:00000000:{e:X}:vzdump:100:root@pam:/log",
                e = m(40)
            ),
            data(json!([
                {"n": 1, "t": "INFO: starting new backup job: vzdump 100 --storage pbs --mode snapshot"},
                {"n": 2, "t": "ERROR: Backup of VM 100 failed - backup write data failed: no space left on device"},
                {"n": 3, "t": "INFO: Failed at 2026-11-27 02:00:09"},
                {"n": 4, "t": "TASK ERROR: job errors"}
            ])),
        ),
        (
            "GET /api2/json/nodes/pve2/tasks".into(),
            data(json!([task(
                "pve2",
                "qmstart",
                "111",
                "bob@pve",
                "OK",
                m(10)
            )])),
        ),
        (
            "GET /api2/json/nodes/pve1/replication".into(),
            data(json!([])),
        ),
        (
            "GET /api2/json/nodes/pve2/replication".into(),
            data(json!([])),
        ),
        (
            "GET /api2/json/nodes/pve1/storage".into(),
            data(json!([
                storage("local", "dir", 0, TIB / 10, TIB / 30),
                storage("local-zfs", "zfspool", 0, 2 * TIB, 2 * TIB * 96 / 100),
                storage("nfs-backup", "nfs", 1, 8 * TIB, 8 * TIB * 88 / 100)
            ])),
        ),
        (
            "GET /api2/json/nodes/pve2/storage".into(),
            data(json!([
                storage("local", "dir", 0, TIB / 10, TIB / 25),
                storage("nfs-backup", "nfs", 1, 8 * TIB, 8 * TIB * 88 / 100)
            ])),
        ),
    ];
    let fake = FakeAppliance::start(
        routes,
        "PVEAPIToken=sre@pve!agent=s3cr3t",
        json!({"data": null}),
    )
    .await;
    let toml = format!(
        "[proxmox]\nurl = \"{}\"\ntoken_id = \"sre@pve!agent\"\ntoken_secret = \"s3cr3t\"\n",
        fake.url
    );
    let (facts, notes, now) = sweep(&toml).await;
    assert!(notes.is_empty(), "{notes:?}");
    let all = lines(&facts);

    let f = one(&facts, "pve3");
    assert_eq!(
        (f.what.as_str(), f.severity),
        ("node offline", Severity::Critical)
    );
    let f = one(&facts, "homeassistant");
    assert_eq!(f.what, "stopped by a task");
    assert_eq!(f.detail.as_deref(), Some("qmshutdown 101 by alice@pve: OK"));
    assert_eq!(mins_ago(now, f), 25);
    assert_eq!(f.entity.host.as_deref(), Some("pve1"));
    assert_eq!(f.entity.labels["id"], "qemu/101");
    let f = one(&facts, "nextcloud");
    assert_eq!(
        (f.what.as_str(), f.severity),
        ("stopped, HA state started", Severity::Critical)
    );
    let f = one(&facts, "gitlab");
    assert_eq!(f.what, "stopped, starts on boot");
    let f = one(&facts, "k3s-master");
    assert_eq!(f.what, "task vzdump failed");
    assert_eq!(
        f.detail.as_deref(),
        Some(
            "vzdump 100 by root@pam: job errors; its log: ERROR: Backup of VM 100 failed - \
             backup write data failed: no space left on device"
        )
    );
    assert_eq!(mins_ago(now, f), 40);
    let f = one(&facts, "postgres");
    assert_eq!(
        (f.class, f.what.as_str()),
        (FactClass::Change, "task qmstart")
    );
    assert_eq!(f.detail.as_deref(), Some("qmstart 111 by bob@pve: OK"));
    let f = one(&facts, "paperless");
    assert_eq!(
        (f.class, f.what.as_str(), f.severity),
        (
            FactClass::Availability,
            "running but io-error",
            Severity::Critical
        )
    );
    assert_eq!(
        f.detail.as_deref(),
        Some("QEMU stopped it on an error (io-error); full storage on pve1: local-zfs 96 % used"),
        "{all}"
    );
    let f = one(&facts, "jellyfin");
    assert_eq!(
        (f.what.as_str(), f.severity),
        ("running but paused", Severity::Warning)
    );
    for decoy in ["win11", "debian-template", "pihole", "local", "gitea"] {
        none(&facts, decoy);
    }

    let f = one(&facts, "local-zfs");
    assert_eq!(
        (f.class, f.severity),
        (FactClass::Exhaustion, Severity::Critical)
    );
    assert!((f.value.unwrap().value - 96.0).abs() < 0.1, "{all}");
    let f = one(&facts, "nfs-backup");
    assert_eq!(f.severity, Severity::Warning);
    assert_eq!(f.entity.host, None, "shared storage belongs to no one node");
}

#[tokio::test]
async fn pbs_failed_tasks_in_the_window_full_datastores_and_groups_stale_against_their_stores_rhythm()
 {
    let t = Utc::now().timestamp();
    let h = |hours: i64| t - hours * 3600;
    let group = |kind: &str, id: &str, last: i64, comment: &str| {
        json!({"backup-type": kind, "backup-id": id, "last-backup": last, "backup-count": 14,
            "files": ["index.json.blob"], "owner": "root@pam!pve", "comment": comment})
    };
    let pbs_task = |kind: &str, id: &str, status: &str, end: i64| {
        json!({"upid": format!("UPID:pbs:0000:0000:00000000:{end:X}:{kind}:x:root@pam:"), "node": "pbs",
            "pid": 1, "pstart": 1, "starttime": end - 60, "endtime": end, "worker_type": kind,
            "worker_id": id, "user": "root@pam", "status": status})
    };
    // 91 % used, growing about 1 % of 4 TiB a day for the last week.
    let history: Vec<Value> = (0..7)
        .map(|i| json!(0.84 + 0.01 * f64::from(i)))
        .chain([Value::Null])
        .collect();
    let routes = vec![
        (
            "GET /api2/json/status/datastore-usage".into(),
            data(json!([
            {"store": "backup", "total": 4 * TIB, "used": 4 * TIB * 55 / 100, "avail": 4 * TIB * 45 / 100,
             "estimated-full-date": t + 90 * 86400, "gc-status": {"still-bad": 0}},
            {"store": "offsite", "total": 4 * TIB, "used": 4 * TIB * 91 / 100, "avail": 4 * TIB * 9 / 100,
             "history": history, "history-start": t - 7 * 86400, "history-delta": 86400},
            {"store": "usb", "error": "datastore 'usb' is not mounted"}])),
        ),
        (
            "GET /api2/json/admin/datastore/backup/snapshots".into(),
            data(json!([])),
        ),
        (
            "GET /api2/json/admin/datastore/offsite/snapshots".into(),
            data(json!([])),
        ),
        (
            "GET /api2/json/admin/datastore/backup/groups".into(),
            data(json!([
                group("vm", "100", h(1), "k3s-master"),
                group("vm", "101", h(3), "homeassistant"),
                group("vm", "102", h(5), "gitlab"),
                group("vm", "103", h(6), "postgres"),
                group("ct", "200", h(216), "pihole"),
                group("ct", "201", h(30), "nextcloud")
            ])),
        ),
        (
            "GET /api2/json/admin/datastore/offsite/groups".into(),
            data(json!([
                group("vm", "100", h(48), "k3s-master"),
                group("vm", "101", h(96), "homeassistant"),
                group("vm", "102", h(144), "gitlab")
            ])),
        ),
        (
            "GET /api2/json/nodes/localhost/tasks".into(),
            data(json!([
                pbs_task(
                    "verificationjob",
                    "backup:v-3b7f",
                    "verification failed - please check the log for details",
                    t - 30 * 60
                ),
                pbs_task(
                    "backup",
                    "backup:vm/102",
                    "backup failed: connection error: Connection reset by peer",
                    t - 15 * 60
                ),
                pbs_task("prune", "backup", "prune failed: lock held", t - 3 * 86400)
            ])),
        ),
    ];
    let fake = FakeAppliance::start(
        routes,
        "PBSAPIToken=sre@pbs!agent:pbs-secret",
        json!({"data": null}),
    )
    .await;
    let toml = format!(
        "[pbs]\nurl = \"{}\"\ntoken_id = \"sre@pbs!agent\"\ntoken_secret = \"pbs-secret\"\n",
        fake.url
    );
    let (facts, notes, now) = sweep(&toml).await;
    assert!(notes.is_empty(), "{notes:?}");
    let all = lines(&facts);

    let failed: Vec<&Fact> = facts.iter().filter(|f| f.analyzer == "pbs_tasks").collect();
    assert_eq!(
        failed.len(),
        2,
        "the prune 3 days ago is outside the window:\n{all}"
    );
    let f = failed.iter().find(|f| f.entity.name == "vm/102").unwrap();
    assert_eq!(f.what, "backup failed");
    assert_eq!(
        f.detail.as_deref(),
        Some("backup failed: connection error: Connection reset by peer (by root@pam)")
    );
    assert_eq!(mins_ago(now, f), 15);
    let f = failed.iter().find(|f| f.entity.name == "backup").unwrap();
    assert_eq!(f.what, "verificationjob failed");

    let f = facts
        .iter()
        .find(|f| f.entity.name == "offsite" && f.class == FactClass::Exhaustion)
        .expect(&all);
    assert_eq!(f.severity, Severity::Warning);
    let days = f.eta_seconds.expect("an ETA from the history") / 86400.0;
    assert!((8.0..10.0).contains(&days), "{all}");
    assert!(f.rate.is_some(), "{all}");
    let f = facts.iter().find(|f| f.entity.name == "usb").expect(&all);
    assert_eq!(f.detail.as_deref(), Some("datastore 'usb' is not mounted"));
    assert!(
        facts
            .iter()
            .all(|f| f.entity.name != "backup" || f.analyzer == "pbs_tasks"),
        "{all}"
    );

    let stale: Vec<&Fact> = facts
        .iter()
        .filter(|f| f.analyzer == "pbs_backups")
        .collect();
    let names: Vec<&str> = stale.iter().map(|f| f.entity.name.as_str()).collect();
    assert_eq!(
        names,
        ["ct/200", "ct/201"],
        "weekly offsite groups are on their rhythm:\n{all}"
    );
    assert_eq!(stale[1].entity.labels["comment"], "nextcloud");
    assert_eq!(stale[1].limit.unwrap().value, 26.0 * 3600.0);
    assert_eq!((now - stale[1].since.unwrap()).num_hours(), 30);
}
