//! `pbs_verify` against a fake Proxmox Backup Server answering each datastore's snapshot
//! list with verification states: a group whose newest snapshot failed verification is
//! critical, one whose bad snapshots are older (the newest verified ok) a warning, both
//! linked to the failed verification job that found them; verified or unverified groups
//! and a datastore in error say nothing.

use chrono::{DateTime, Utc};
use serde_json::{Value, json};
use sre_agent::analyze::Severity;

use super::appliances::{none, one, sweep};
use super::world::lines;
use crate::support::fake_appliance::FakeAppliance;

fn data(v: Value) -> Value {
    json!({ "data": v })
}

const JOB_UPID: &str = "UPID:vault:00002B11:0004A1C0:00000007:67A0C000:verificationjob:archive\\x3av\\x2dc41e:root@pam:";

fn snap(kind: &str, id: &str, time: i64, comment: &str, state: Option<&str>) -> Value {
    let mut v = json!({"backup-type": kind, "backup-id": id, "backup-time": time, "comment": comment,
        "size": 53687091200u64, "owner": "pve@pbs!sync", "protected": false,
        "files": [{"filename": "index.json.blob", "size": 600, "crypt-mode": "none"}]});
    if let Some(s) = state {
        let upid = if s == "failed" {
            JOB_UPID.to_string()
        } else {
            "UPID:vault:older:".to_string()
        };
        v["verification"] = json!({"state": s, "upid": upid});
    }
    v
}

fn at(secs: i64) -> String {
    DateTime::from_timestamp(secs, 0)
        .unwrap()
        .format("%Y-%m-%d %H:%M UTC")
        .to_string()
}

#[tokio::test]
async fn groups_with_snapshots_that_failed_verification_say_how_many_when_and_which_job_found_them()
{
    let t = Utc::now().timestamp();
    let d = |days: i64| t - days * 86400;
    let routes = vec![
        (
            "GET /api2/json/status/datastore-usage".into(),
            data(json!([
                {"store": "archive", "total": 1u64 << 42, "used": 1u64 << 40, "avail": 3u64 << 40},
                {"store": "scratch", "total": 1u64 << 40, "used": 1u64 << 38, "avail": 3u64 << 38},
                {"store": "usb", "error": "datastore 'usb' is not mounted"}
            ])),
        ),
        (
            "GET /api2/json/admin/datastore/archive/groups".into(),
            data(json!([])),
        ),
        (
            "GET /api2/json/admin/datastore/scratch/groups".into(),
            data(json!([])),
        ),
        (
            "GET /api2/json/admin/datastore/archive/snapshots".into(),
            data(json!([
                // Newest failed: no good restore point since.
                snap("vm", "120", d(1), "crm-db", Some("failed")),
                snap("vm", "120", d(2), "crm-db", Some("failed")),
                snap("vm", "120", d(3), "crm-db", Some("ok")),
                // Older ones failed, the newest verified ok.
                snap("ct", "140", d(1), "ldap", Some("ok")),
                snap("ct", "140", d(4), "ldap", Some("failed")),
                snap("ct", "140", d(5), "ldap", Some("ok")),
                // All ok, and one not verified yet.
                snap("vm", "150", d(1), "proxy", None),
                snap("vm", "150", d(2), "proxy", Some("ok")),
            ])),
        ),
        (
            "GET /api2/json/admin/datastore/scratch/snapshots".into(),
            data(json!([snap("host", "build-7", d(1), "", None)])),
        ),
        (
            "GET /api2/json/nodes/localhost/tasks".into(),
            data(json!([
                {"upid": JOB_UPID, "node": "vault", "pid": 11025, "pstart": 303552, "starttime": d(1) + 3600,
                 "endtime": d(1) + 7200, "worker_type": "verificationjob", "worker_id": "archive:v-c41e",
                 "user": "root@pam", "status": "verification failed - please check the log for details"},
                {"upid": "UPID:vault:1:2:3:4:backup:archive\\x3avm\\x2f120:pve@pbs!sync:", "node": "vault",
                 "starttime": d(1), "endtime": d(1) + 600, "worker_type": "backup",
                 "worker_id": "archive:vm/120", "user": "pve@pbs!sync", "status": "OK"}
            ])),
        ),
    ];
    let fake =
        FakeAppliance::start(routes, "PBSAPIToken=audit@pbs!ro:v", json!({"data": null})).await;
    let toml = format!(
        "[pbs]\nurl = \"{}\"\ntoken_id = \"audit@pbs!ro\"\ntoken_secret = \"v\"\n",
        fake.url
    );
    let (facts, notes, now) = sweep(&toml).await;
    assert!(notes.is_empty(), "{notes:?}");
    let facts: Vec<_> = facts
        .into_iter()
        .filter(|f| f.analyzer == "pbs_verify")
        .collect();
    let all = lines(&facts);
    assert_eq!(facts.len(), 2, "{all}");

    let crm = one(&facts, "vm/120");
    assert_eq!(crm.severity, Severity::Critical);
    assert_eq!(crm.what, "snapshots failed verification");
    assert_eq!(
        (crm.value.unwrap().value, crm.limit.unwrap().value),
        (2.0, 3.0)
    );
    assert_eq!(crm.entity.labels["comment"], "crm-db");
    assert_eq!(crm.entity.labels["store"], "archive");
    assert_eq!(crm.related[0].name, "archive");
    assert_eq!((now - crm.since.unwrap()).num_days(), 2);
    assert_eq!(
        crm.detail.as_deref().unwrap(),
        format!(
            "crm-db; datastore archive: 2 of 3 snapshots failed verification, from {} to {}; \
             the newest snapshot is one of them; verificationjob archive:v-c41e started {} \
             failed: verification failed - please check the log for details",
            at(d(2)),
            at(d(1)),
            at(d(1) + 3600)
        )
    );

    let ldap = one(&facts, "ct/140");
    assert_eq!(ldap.severity, Severity::Warning);
    let detail = ldap.detail.as_deref().unwrap();
    assert!(
        detail.contains(&format!(
            "the snapshot of {} failed verification; the newest snapshot verified ok",
            at(d(4))
        )),
        "{detail}"
    );
    assert!(
        detail.contains("verificationjob archive:v-c41e"),
        "{detail}"
    );
    none(&facts, "vm/150");
    none(&facts, "host/build-7");
    // The verify tasks are read once, and only because a group failed.
    let reads = fake.requests();
    assert_eq!(
        reads
            .iter()
            .filter(|r| r.contains("typefilter=verif"))
            .count(),
        1,
        "{reads:?}"
    );
    assert!(
        !reads.iter().any(|r| r.contains("datastore/usb/")),
        "{reads:?}"
    );
}
