//! `truenas_tasks` (and the `truenas_tasks` tool) against a fake TrueNAS answering `GET
//! /cloudsync`, `/replication`, `/rsynctask` and `/core/get_jobs` as the middleware does:
//! a cloud sync whose last run failed says when, why and when it last succeeded (from the
//! middleware's jobs); one whose last success is five days old on a daily schedule is
//! critical without a failure; a replication in ERROR names zettarepl's error; fresh,
//! disabled and never-run tasks say nothing.

use chrono::{TimeDelta, Utc};
use serde_json::{Value, json};
use sre_agent::analyze::Severity;

use super::appliances::{none, one, sweep};
use super::world::lines;
use crate::support::fake_appliance::FakeAppliance;
use crate::support::test_config;
use crate::support::tool_registry::{call, registry};

const KEY: &str = "1-nas";

fn ms_ago(hours: i64) -> Value {
    json!({"$date": (Utc::now() - TimeDelta::hours(hours)).timestamp_millis()})
}

/// A middleware job of `method` for task `id`.
fn job(id: u32, method: &str, task: u32, state: &str, hours_ago: i64, error: Value) -> Value {
    json!({"id": id, "method": method, "arguments": [task], "transient": false, "description": null,
        "abortable": true, "logs_path": format!("/var/log/jobs/{id}.log"), "logs_excerpt": null,
        "progress": {"percent": 100, "description": "", "extra": null}, "result": null,
        "error": error, "exception": null, "exc_info": null, "state": state,
        "time_started": ms_ago(hours_ago + 1), "time_finished": ms_ago(hours_ago), "credentials": null})
}

fn daily() -> Value {
    json!({"minute": "0", "hour": "3", "dom": "*", "month": "*", "dow": "*"})
}

fn cloudsync(id: u32, description: &str, path: &str, enabled: bool, job: Value) -> Value {
    json!({"id": id, "description": description, "path": path,
        "credentials": {"id": 1, "name": "b2", "provider": "B2"}, "attributes": {"bucket": "nas", "folder": ""},
        "schedule": daily(), "pre_script": "", "post_script": "", "snapshot": false, "include": [],
        "exclude": [], "args": "", "enabled": enabled, "job": job, "direction": "PUSH",
        "transfer_mode": "SYNC", "encryption": false, "locked": false, "bwlimit": [], "transfers": 4})
}

fn routes() -> Vec<(String, Value)> {
    let upload =
        "[EFAULT] Failed to upload to B2: 401 unauthorized: bad_auth_token\n(Traceback follows)";
    vec![
        (
            "GET /api/v2.0/cloudsync".into(),
            json!([
                cloudsync(
                    1,
                    "photos to B2",
                    "/mnt/tank/photos",
                    true,
                    job(412, "cloudsync.sync", 1, "FAILED", 8, json!(upload))
                ),
                cloudsync(
                    2,
                    "docs to S3",
                    "/mnt/tank/docs",
                    true,
                    job(300, "cloudsync.sync", 2, "SUCCESS", 5 * 24, Value::Null)
                ),
                cloudsync(
                    3,
                    "music",
                    "/mnt/media/music",
                    true,
                    job(410, "cloudsync.sync", 3, "SUCCESS", 9, Value::Null)
                ),
                cloudsync(
                    5,
                    "old bucket",
                    "/mnt/tank/old",
                    false,
                    job(200, "cloudsync.sync", 5, "FAILED", 400, json!("gone"))
                ),
                cloudsync(6, "new", "/mnt/tank/new", true, Value::Null)
            ]),
        ),
        (
            "GET /api/v2.0/core/get_jobs".into(),
            json!([
                job(380, "cloudsync.sync", 1, "SUCCESS", 32, Value::Null),
                job(350, "cloudsync.sync", 1, "SUCCESS", 56, Value::Null),
                job(381, "cloudsync.sync", 3, "SUCCESS", 33, Value::Null)
            ]),
        ),
        (
            "GET /api/v2.0/replication".into(),
            json!([{"id": 1, "name": "tank/vms to backup-nas", "direction": "PUSH", "transport": "SSH",
                "ssh_credentials": {"id": 2, "name": "backup-nas"}, "source_datasets": ["tank/vms"],
                "target_dataset": "backup/vms", "recursive": true, "auto": true, "enabled": true,
                "schedule": null, "periodic_snapshot_tasks": [{"id": 1, "dataset": "tank/vms",
                    "recursive": true, "lifetime_value": 2, "lifetime_unit": "WEEK", "naming_schema": "auto-%Y-%m-%d_%H-%M",
                    "schedule": {"minute": "0", "hour": "*", "dom": "*", "month": "*", "dow": "*",
                        "begin": "00:00", "end": "23:59"}, "enabled": true}],
                "retention_policy": "SOURCE", "state": {"state": "ERROR", "datetime": ms_ago(1),
                    "error": "Target dataset 'backup/vms' does not have snapshots but has data (41.2 GiB) and replication from scratch is not allowed. Refusing to overwrite existing data.",
                    "last_snapshot": null},
                "job": null}]),
        ),
        (
            "GET /api/v2.0/rsynctask".into(),
            json!([{"id": 1, "path": "/mnt/tank/home", "remotehost": "offsite.lan", "remoteport": 22,
                "mode": "SSH", "remotepath": "/srv/backup/home", "direction": "PUSH", "desc": "home offsite",
                "user": "root", "enabled": true, "schedule": daily(), "job": null, "locked": false}]),
        ),
    ]
}

fn toml(fake: &FakeAppliance) -> String {
    format!("[truenas]\nurl = \"{}\"\napi_key = \"{KEY}\"\n", fake.url)
}

#[tokio::test]
async fn failing_and_overdue_data_protection_tasks_tell_their_last_success_schedule_and_error() {
    let fake =
        FakeAppliance::start(routes(), &format!("Bearer {KEY}"), json!({"message": "no"})).await;
    let (facts, notes, now) = sweep(&toml(&fake)).await;
    assert!(
        !notes.iter().any(|n| n.contains("truenas_tasks")),
        "{notes:?}"
    );
    let facts: Vec<_> = facts
        .into_iter()
        .filter(|f| f.analyzer == "truenas_tasks")
        .collect();
    let all = lines(&facts);
    assert_eq!(facts.len(), 3, "{all}");

    let photos = one(&facts, "photos to B2");
    assert_eq!(photos.what, "cloud sync task failing, last success");
    assert_eq!(photos.severity, Severity::Warning);
    assert_eq!((now - photos.since.unwrap()).num_hours(), 32);
    assert_eq!(photos.entity.labels["path"], "/mnt/tank/photos");
    assert_eq!(photos.related[0].name, "tank");
    assert_eq!(photos.source.tool, "truenas_tasks");
    let detail = photos.detail.as_deref().unwrap();
    assert!(
        detail.starts_with("last successful run 32.0 h ago, "),
        "{detail}"
    );
    assert!(
        detail.contains("(expected every 24.0 h, schedule 0 3 * * *); last run "),
        "{detail}"
    );
    assert!(
        detail.ends_with(
            " failed: [EFAULT] Failed to upload to B2: 401 unauthorized: bad_auth_token (Traceback follows)"
        ),
        "{detail}"
    );

    let docs = one(&facts, "docs to S3");
    assert_eq!(docs.what, "cloud sync task overdue, last success");
    assert_eq!(docs.severity, Severity::Critical, "{all}");
    assert!(
        (docs.value.unwrap().value - (5 * 86400) as f64).abs() < 5.0,
        "{all}"
    );
    assert_eq!(docs.limit.unwrap().value, (3 * 86400) as f64);

    let vms = one(&facts, "tank/vms to backup-nas");
    assert_eq!(vms.what, "replication task failing, no success on record");
    assert_eq!(vms.severity, Severity::Warning);
    assert!(
        vms.detail
            .as_deref()
            .unwrap()
            .contains("failed: Target dataset 'backup/vms' does not have snapshots but has data"),
        "{all}"
    );
    assert_eq!(vms.entity.labels["target_dataset"], "backup/vms");
    for quiet in ["music", "old bucket", "new", "home offsite"] {
        none(&facts, quiet);
    }
    // The successful runs were asked for by method, once per kind with a failing task
    // (the fake answers cloud sync runs to both: the replication's are filtered out).
    let asked: Vec<String> = fake
        .requests()
        .into_iter()
        .filter(|r| r.contains("core/get_jobs"))
        .collect();
    assert_eq!(
        asked,
        [
            "GET /api/v2.0/core/get_jobs?method=cloudsync.sync&state=SUCCESS",
            "GET /api/v2.0/core/get_jobs?method=replication.run&state=SUCCESS"
        ]
    );

    // The tool shows every task with its last run.
    let dir = tempfile::tempdir().unwrap();
    let r = registry(&test_config(dir.path(), &toml(&fake)));
    let out = call(&r, "truenas_tasks", json!({})).await;
    let rows: Vec<&str> = out.lines().collect();
    assert_eq!(rows.len(), 7, "{out}");
    assert!(
        rows[0].starts_with(
            "cloud sync 1 \"photos to B2\" schedule=0 3 * * * last run FAILED 8h0m ago: [EFAULT] Failed to upload"
        ),
        "{out}"
    );
    assert!(
        rows[3].contains("\"old bucket\" schedule=0 3 * * * disabled last run FAILED"),
        "{out}"
    );
    assert!(rows[4].ends_with("no run since the NAS started"), "{out}");
    assert!(
        rows[5].starts_with(
            "replication 1 \"tank/vms to backup-nas\" schedule=after its snapshot tasks state ERROR 1h0m ago: Target dataset"
        ),
        "{out}"
    );
    assert_eq!(
        rows[6],
        "rsync 1 \"home offsite\" schedule=0 3 * * * no run since the NAS started"
    );
}

#[tokio::test]
async fn a_truenas_without_the_task_lists_says_nothing_and_no_note() {
    let fake = FakeAppliance::start(
        vec![("GET /api/v2.0/pool".into(), json!([]))],
        &format!("Bearer {KEY}"),
        json!({"message": "no"}),
    )
    .await;
    let (facts, notes, _) = sweep(&toml(&fake)).await;
    assert!(facts.iter().all(|f| f.analyzer != "truenas_tasks"));
    assert!(
        !notes.iter().any(|n| n.contains("truenas_tasks")),
        "{notes:?}"
    );
}
