//! `proxmox_replication` against a fake Proxmox VE answering `GET
//! /nodes/{node}/replication` as `pvesr status` states it: a job failing for hours names
//! its guest, target, failures in a row, PVE's error and since when the replica is stale;
//! a job silent for several of its periods is stalled without an error; a job two days
//! behind is critical; healthy, disabled and offline-node jobs say nothing; a PVE that
//! does not answer the list on any node skips the analyzer with a note.

use chrono::Utc;
use serde_json::{Value, json};
use sre_agent::analyze::Severity;

use super::appliances::{none, one, sweep};
use super::world::lines;
use crate::support::fake_appliance::FakeAppliance;

fn data(v: Value) -> Value {
    json!({ "data": v })
}

fn vm(id: u32, name: &str) -> Value {
    json!({"vmid": id, "name": name, "status": "running", "uptime": 86400, "cpu": 0.02, "cpus": 2,
        "mem": 1073741824u64, "maxmem": 4294967296u64})
}

/// A job as PVE lists it; `last_sync`/`last_try` are epoch seconds (0: never).
fn job(guest: u32, target: &str, schedule: &str, last_sync: i64, last_try: i64) -> Value {
    json!({"id": format!("{guest}-0"), "guest": guest, "jobnum": 0, "target": target, "type": "local",
        "schedule": schedule, "source": "x", "vmtype": "qemu", "last_sync": last_sync,
        "last_try": last_try, "next_sync": last_try + 900, "duration": 3.1, "fail_count": 0})
}

fn failing(mut j: Value, fails: u32, error: &str) -> Value {
    j["fail_count"] = json!(fails);
    j["error"] = json!(error);
    j
}

fn toml(fake: &FakeAppliance) -> String {
    format!(
        "[proxmox]\nurl = \"{}\"\ntoken_id = \"dr@pve!audit\"\ntoken_secret = \"r\"\n",
        fake.url
    )
}

#[tokio::test]
async fn failing_and_stalled_replication_jobs_name_their_guest_target_error_and_stale_replica() {
    let t = Utc::now().timestamp();
    let m = |mins: i64| t - mins * 60;
    let error = "command 'set -o pipefail && pvesm export store1:vm-730-disk-0 zfs - -with-snapshots 1 \
                 | /usr/bin/ssh -e none -o 'BatchMode=yes' root@10.20.0.12 -- pvesm import' failed: exit code 255";
    let mut disabled = failing(job(731, "dr-2", "*/15", m(600), m(20)), 4, "no route");
    disabled["disable"] = json!(1);
    let routes = vec![
        (
            "GET /api2/json/nodes".into(),
            data(json!([
                {"node": "dr-1", "status": "online", "uptime": 900000},
                {"node": "dr-2", "status": "online", "uptime": 900000},
                {"node": "dr-3", "status": "offline"}
            ])),
        ),
        (
            "GET /api2/json/nodes/dr-1/qemu".into(),
            data(json!([
                vm(730, "billing-db"),
                vm(731, "billing-web"),
                vm(732, "ci-runner")
            ])),
        ),
        (
            "GET /api2/json/nodes/dr-1/lxc".into(),
            data(json!([{"vmid": "740", "name": "metrics", "status": "running"}])),
        ),
        (
            "GET /api2/json/nodes/dr-1/replication".into(),
            data(json!([
                // Failing for five hours every 15 minutes.
                failing(job(730, "dr-2", "*/15", m(300), m(12)), 19, error),
                disabled,
                // Healthy.
                job(732, "dr-2", "*/15", m(6), m(6)),
                // No error, but silent for 90 minutes on a 10-minute schedule.
                job(740, "dr-2", "*/10", m(90), m(90)),
            ])),
        ),
        (
            "GET /api2/json/nodes/dr-2/qemu".into(),
            data(json!([vm(810, "mailstore")])),
        ),
        ("GET /api2/json/nodes/dr-2/lxc".into(), data(json!([]))),
        (
            "GET /api2/json/nodes/dr-2/replication".into(),
            data(json!([
                failing(
                    job(810, "dr-1", "*/30", m(2 * 24 * 60), m(25)),
                    96,
                    "storage 'tank' is not online"
                ),
                // A nightly job synced last night is on time.
                job(811, "dr-1", "02:00", m(14 * 60), m(14 * 60)),
            ])),
        ),
    ];
    let fake =
        FakeAppliance::start(routes, "PVEAPIToken=dr@pve!audit=r", json!({"data": null})).await;
    let (facts, notes, now) = sweep(&toml(&fake)).await;
    assert!(
        !notes.iter().any(|n| n.contains("proxmox_replication")),
        "{notes:?}"
    );
    let facts: Vec<_> = facts
        .into_iter()
        .filter(|f| f.analyzer == "proxmox_replication")
        .collect();
    let all = lines(&facts);
    assert_eq!(facts.len(), 3, "{all}");

    let db = one(&facts, "billing-db");
    assert_eq!(db.severity, Severity::Warning, "{all}");
    assert_eq!(db.what, "replication to dr-2 failing, replica age");
    assert_eq!(db.entity.host.as_deref(), Some("dr-1"));
    assert_eq!(db.entity.labels["vmid"], "730");
    assert_eq!(db.related[0].name, "dr-2");
    assert_eq!((now - db.since.unwrap()).num_minutes(), 300);
    let behind = db.value.unwrap().value;
    assert!((behind - 300.0 * 60.0).abs() < 120.0, "{behind}");
    assert_eq!(db.limit.unwrap().value, 45.0 * 60.0);
    let detail = db.detail.as_deref().unwrap();
    assert!(
        detail.starts_with(
            "job 730-0 to dr-2, schedule */15; failed 19 times in a row; last successful sync "
        ),
        "{detail}"
    );
    assert!(
        detail.contains("error: command 'set -o pipefail && pvesm export store1:vm-730-disk-0"),
        "{detail}"
    );
    assert_eq!(db.source.tool, "proxmox_replication");
    assert_eq!(db.source.arguments["node"], "dr-1");

    let metrics = one(&facts, "metrics");
    assert_eq!(metrics.what, "replication to dr-2 stalled, replica age");
    assert_eq!(metrics.severity, Severity::Warning);
    assert_eq!(metrics.entity.labels["id"], "lxc/740");

    let mail = one(&facts, "mailstore");
    assert_eq!(mail.severity, Severity::Critical, "{all}");
    assert!(
        mail.detail
            .as_deref()
            .unwrap()
            .contains("storage 'tank' is not online")
    );
    assert_eq!(mail.related[0].name, "dr-1");

    for quiet in ["billing-web", "ci-runner", "811"] {
        none(&facts, quiet);
    }
}

#[tokio::test]
async fn a_pve_without_the_replication_list_skips_with_a_note_and_one_node_without_it_is_passed_over()
 {
    let t = Utc::now().timestamp();
    let nodes = data(json!([
        {"node": "hv-1", "status": "online", "uptime": 900000},
        {"node": "hv-2", "status": "online", "uptime": 900000}
    ]));
    let mut routes = vec![("GET /api2/json/nodes".to_string(), nodes)];
    for n in ["hv-1", "hv-2"] {
        for path in ["qemu", "lxc", "tasks", "storage"] {
            routes.push((format!("GET /api2/json/nodes/{n}/{path}"), data(json!([]))));
        }
    }
    let fake = FakeAppliance::start(
        routes.clone(),
        "PVEAPIToken=dr@pve!audit=r",
        json!({"data": null}),
    )
    .await;
    let (facts, notes, _) = sweep(&toml(&fake)).await;
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(
        notes[0].starts_with("proxmox_replication: skipped (replication status not readable"),
        "{notes:?}"
    );
    assert!(notes[0].contains("404"), "{notes:?}");
    assert!(facts.iter().all(|f| f.analyzer != "proxmox_replication"));

    // One node answers; the other's 404 is passed over without a note.
    routes.push((
        "GET /api2/json/nodes/hv-2/replication".into(),
        data(json!([failing(
            job(300, "hv-1", "*/15", t - 3600, t - 600),
            3,
            "no space left"
        )])),
    ));
    let fake =
        FakeAppliance::start(routes, "PVEAPIToken=dr@pve!audit=r", json!({"data": null})).await;
    let (facts, notes, _) = sweep(&toml(&fake)).await;
    assert!(notes.is_empty(), "{notes:?}");
    let f = one(&facts, "300");
    assert_eq!(f.what, "replication to hv-1 failing, replica age");
    assert_eq!(f.entity.host.as_deref(), Some("hv-2"));
}
