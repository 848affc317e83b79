//! `pbs_backups` with the server's backup tasks: an overdue group says what its attempts
//! since the last snapshot did (how many, the last one's error, one still running and for
//! how long, or none at all), read with one task list for every overdue group; groups on
//! their rhythm and tasks of other groups, stores and types are left out.

use chrono::{DateTime, Utc};
use serde_json::{Value, json};

use super::appliances::{one, sweep};
use super::world::lines;
use crate::support::fake_appliance::FakeAppliance;

fn data(v: Value) -> Value {
    json!({ "data": v })
}

fn group(kind: &str, id: &str, last: i64, comment: &str) -> Value {
    json!({"backup-type": kind, "backup-id": id, "last-backup": last, "backup-count": 21,
        "files": ["index.json.blob"], "owner": "sync@pbs", "comment": comment})
}

/// A task as PBS lists it; PBS escapes `:` and `/` in the UPID, not in `worker_id`.
fn task(kind: &str, worker_id: &str, start: i64, end: Option<i64>, status: Option<&str>) -> Value {
    let escaped = worker_id.replace(':', "\\x3a").replace('/', "\\x2f");
    json!({"upid": format!("UPID:backup-2:00003A1F:0009C4B2:00000002:{start:08X}:{kind}:{escaped}:sync@pbs:"),
        "node": "backup-2", "pid": 14879, "pstart": 639154, "starttime": start, "endtime": end,
        "worker_type": kind, "worker_id": worker_id, "user": "sync@pbs", "status": status})
}

fn at(secs: i64) -> String {
    DateTime::from_timestamp(secs, 0)
        .unwrap()
        .format("%Y-%m-%d %H:%M UTC")
        .to_string()
}

#[tokio::test]
async fn an_overdue_backup_group_says_how_its_attempts_since_the_last_snapshot_ended_or_that_one_still_runs()
 {
    let t = Utc::now().timestamp();
    let h = |hours: i64| t - hours * 3600;
    let routes = vec![
        (
            "GET /api2/json/status/datastore-usage".into(),
            data(json!([
                {"store": "pool-a", "total": 1u64 << 42, "used": 1u64 << 40, "avail": 3u64 << 40},
                {"store": "pool-b", "total": 1u64 << 42, "used": 1u64 << 40, "avail": 3u64 << 40}
            ])),
        ),
        (
            "GET /api2/json/admin/datastore/pool-a/groups".into(),
            data(json!([
                group("vm", "301", h(2), "ledger-db"),
                group("vm", "302", h(3), "ledger-api"),
                group("vm", "303", h(4), "queue"),
                group("vm", "304", h(5), "mail"),
                group("vm", "305", h(6), "proxy"),
                group("ct", "306", h(7), "dns"),
                group("vm", "318", h(75), "media-transcoder"),
                group("ct", "340", h(52), "search-index"),
                group("ct", "341", h(49), "old-wiki")
            ])),
        ),
        (
            "GET /api2/json/admin/datastore/pool-a/snapshots".into(),
            data(json!([])),
        ),
        (
            "GET /api2/json/admin/datastore/pool-b/snapshots".into(),
            data(json!([])),
        ),
        (
            "GET /api2/json/admin/datastore/pool-b/groups".into(),
            data(json!([group("vm", "318", h(1), "media-transcoder")])),
        ),
        (
            "GET /api2/json/nodes/localhost/tasks".into(),
            data(json!([
                task(
                    "backup",
                    "pool-a:vm/301",
                    h(2) + 1,
                    Some(h(2) + 400),
                    Some("OK")
                ),
                task("backup", "pool-a:ct/340", h(31), None, None),
                task(
                    "backup",
                    "pool-a:vm/318",
                    h(3),
                    Some(h(3) + 60),
                    Some(
                        "backup failed: unable to acquire lock on snapshot directory - locked by another operation"
                    )
                ),
                task("garbage_collection", "pool-a", h(4), Some(h(3)), Some("OK")),
                task(
                    "backup",
                    "pool-b:vm/318",
                    h(1),
                    Some(h(1) + 500),
                    Some("OK")
                ),
                task(
                    "backup",
                    "pool-a:vm/318",
                    h(27),
                    Some(h(27) + 45),
                    Some("backup failed: connection error: timed out")
                ),
                task(
                    "verificationjob",
                    "pool-a:v-a19e",
                    h(30),
                    Some(h(29)),
                    Some("verification failed")
                ),
                task(
                    "backup",
                    "pool-a:vm/318",
                    h(51),
                    Some(h(51) + 45),
                    Some("backup failed: connection error: timed out")
                ),
                task(
                    "backup",
                    "pool-a:ct/340",
                    h(52),
                    Some(h(52) + 300),
                    Some("OK")
                ),
                task(
                    "backup",
                    "pool-a:vm/318",
                    h(75),
                    Some(h(75) + 700),
                    Some("OK")
                )
            ])),
        ),
    ];
    let fake = FakeAppliance::start(
        routes,
        "PBSAPIToken=sweep@pbs!ro:tok",
        json!({"data": null}),
    )
    .await;
    let toml = format!(
        "[pbs]\nurl = \"{}\"\ntoken_id = \"sweep@pbs!ro\"\ntoken_secret = \"tok\"\n",
        fake.url
    );
    let (facts, notes, _) = sweep(&toml).await;
    assert!(notes.is_empty(), "{notes:?}");
    let all = lines(&facts);
    let stale: Vec<_> = facts
        .iter()
        .filter(|f| f.analyzer == "pbs_backups")
        .cloned()
        .collect();
    let names: Vec<&str> = stale.iter().map(|f| f.entity.name.as_str()).collect();
    assert_eq!(names, ["vm/318", "ct/340", "ct/341"], "{all}");

    let f = one(&stale, "vm/318");
    assert_eq!(f.entity.labels["store"], "pool-a");
    assert_eq!(
        f.detail.as_deref(),
        Some(
            format!(
                "media-transcoder: 21 snapshots; 3 attempts since the last snapshot, all failed; \
                 last attempt {} failed: backup failed: unable to acquire lock on snapshot \
                 directory - locked by another operation",
                at(h(3))
            )
            .as_str()
        ),
        "{all}"
    );
    let f = one(&stale, "ct/340");
    assert_eq!(
        f.detail.as_deref(),
        Some(
            format!(
                "search-index: 21 snapshots; 1 attempt since the last snapshot: 1 running; a \
                 backup of ct/340 running since {} (31.0 h)",
                at(h(31))
            )
            .as_str()
        ),
        "{all}"
    );
    let f = one(&stale, "ct/341");
    assert!(
        f.detail
            .as_deref()
            .unwrap()
            .ends_with("; no backup task on the server since the last snapshot"),
        "{all}"
    );

    let asked: Vec<String> = fake
        .requests()
        .into_iter()
        .filter(|r| r.contains("/nodes/localhost/tasks"))
        .collect();
    // One list for pbs_backups (typed, since the oldest overdue snapshot), one for pbs_tasks.
    let typed: Vec<&String> = asked
        .iter()
        .filter(|r| r.contains("typefilter=backup"))
        .collect();
    assert_eq!(typed.len(), 1, "{asked:?}");
    assert!(typed[0].contains(&format!("since={}", h(75))), "{asked:?}");
    assert!(!typed[0].contains("errors="), "{asked:?}");
}
