//! How a task's last runs are judged against its schedule.

use chrono::{TimeDelta, TimeZone};
use serde_json::{Value, json};

use super::*;

fn now() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 27, 12, 0, 0).unwrap()
}

fn ms(hours_ago: i64) -> Value {
    json!({"$date": (now() - TimeDelta::hours(hours_ago)).timestamp_millis()})
}

/// A daily cloud sync task at 03:00 whose last run is `job`.
fn task(job: Value) -> TruenasTask {
    serde_json::from_value(
        json!({"id": 4, "description": "photos to B2", "path": "/mnt/tank/photos",
        "direction": "PUSH", "enabled": true,
        "schedule": {"minute": "0", "hour": "3", "dom": "*", "month": "*", "dow": "*"},
        "job": job}),
    )
    .unwrap()
}

fn job(state: &str, started_h: i64, finished_h: i64, error: Value) -> Value {
    json!({"id": 88, "method": "cloudsync.sync", "arguments": [4], "state": state, "error": error,
        "time_started": ms(started_h), "time_finished": ms(finished_h)})
}

#[test]
fn a_run_last_night_is_fine_and_one_four_days_old_is_overdue_by_the_schedule() {
    let fresh = judge(
        TaskKind::CloudSync,
        &task(job("SUCCESS", 9, 8, Value::Null)),
        None,
        now(),
    );
    let fresh = fresh.unwrap();
    assert_eq!(fresh.severity, Severity::Info);
    assert_eq!(fresh.what, "cloud sync task, last success");
    assert_eq!(fresh.age, Some(8 * 3600));
    assert_eq!(fresh.stale_after, Some(3 * 86400));
    let old = judge(
        TaskKind::CloudSync,
        &task(job("SUCCESS", 97, 96, Value::Null)),
        None,
        now(),
    );
    let old = old.unwrap();
    assert_eq!(old.what, "cloud sync task overdue, last success");
    assert_eq!(old.severity, Severity::Warning);
    assert_eq!(
        old.detail,
        "last successful run 4.0 days ago, 2026-11-23 12:00 UTC (expected every 24.0 h, schedule 0 3 * * *)"
    );
    // Past the critical bound (three days for a daily task, after the overdue limit).
    let older = judge(
        TaskKind::CloudSync,
        &task(job("SUCCESS", 9 * 24, 9 * 24, Value::Null)),
        None,
        now(),
    );
    assert_eq!(older.unwrap().severity, Severity::Critical);
}

#[test]
fn a_failed_run_says_when_and_why_and_the_last_success_from_the_middlewares_jobs() {
    let error = "[EFAULT] Failed to upload: 403 Forbidden\n  AccessDenied: key expired";
    let t = task(job("FAILED", 9, 8, json!(error)));
    let j = judge(
        TaskKind::CloudSync,
        &t,
        Some(now() - TimeDelta::hours(32)),
        now(),
    )
    .unwrap();
    assert_eq!(j.what, "cloud sync task failing, last success");
    assert_eq!(j.severity, Severity::Warning);
    assert_eq!(j.since, Some(now() - TimeDelta::hours(32)));
    assert_eq!(
        j.detail,
        "last successful run 32.0 h ago, 2026-11-26 04:00 UTC (expected every 24.0 h, \
         schedule 0 3 * * *); last run 2026-11-27 04:00 UTC failed: [EFAULT] Failed to upload: \
         403 Forbidden AccessDenied: key expired"
    );
    let unknown = judge(TaskKind::CloudSync, &t, None, now()).unwrap();
    assert_eq!(
        unknown.what,
        "cloud sync task failing, no success on record"
    );
    assert_eq!(unknown.age, None);
    assert!(
        unknown
            .detail
            .starts_with("no successful run on record since the NAS started")
    );
    // Failing for a week: critical.
    let week = judge(
        TaskKind::CloudSync,
        &t,
        Some(now() - TimeDelta::days(7)),
        now(),
    )
    .unwrap();
    assert_eq!(week.severity, Severity::Critical);
}

#[test]
fn disabled_tasks_and_tasks_without_a_run_on_record_say_nothing() {
    let mut t = task(job("FAILED", 9, 8, json!("x")));
    t.enabled = false;
    assert_eq!(judge(TaskKind::CloudSync, &t, None, now()), None);
    assert_eq!(
        judge(TaskKind::CloudSync, &task(Value::Null), None, now()),
        None
    );
    let running = task(job("RUNNING", 1, 0, Value::Null));
    assert_eq!(judge(TaskKind::CloudSync, &running, None, now()), None);
    // Odd times neither overflow nor count as old.
    let mut future = task(job("SUCCESS", -48, -47, Value::Null));
    future.job.as_mut().unwrap().time_finished = Some(json!({"$date": i64::MAX}));
    assert_eq!(judge(TaskKind::CloudSync, &future, None, now()), None);
    let ahead = judge(
        TaskKind::CloudSync,
        &task(job("SUCCESS", -2, -1, Value::Null)),
        None,
        now(),
    );
    assert_eq!(ahead.unwrap().age, Some(0));
}

#[test]
fn a_replication_task_reads_zettarepl_state_and_its_snapshot_tasks_schedule() {
    let t: TruenasTask = serde_json::from_value(json!({"id": 2, "name": "tank/vms to backup-nas",
        "direction": "PUSH", "transport": "SSH", "source_datasets": ["tank/vms"],
        "target_dataset": "backup/vms", "enabled": true, "auto": true, "schedule": null,
        "periodic_snapshot_tasks": [{"id": 1, "dataset": "tank/vms",
            "schedule": {"minute": "0", "hour": "*", "dom": "*", "month": "*", "dow": "*",
                "begin": "00:00", "end": "23:59"}}],
        "state": {"state": "ERROR", "datetime": ms(1),
            "error": "Target dataset 'backup/vms' was modified", "last_snapshot": "tank/vms@auto-2026-11-27_05-00"},
        "job": null}))
    .unwrap();
    let j = judge(
        TaskKind::Replication,
        &t,
        Some(now() - TimeDelta::hours(7)),
        now(),
    )
    .unwrap();
    assert_eq!(j.what, "replication task failing, last success");
    // Seven hours behind an hourly schedule: a warning; nine, past eight periods: critical.
    assert_eq!(j.stale_after, Some(3 * 3600));
    assert_eq!(j.severity, Severity::Warning);
    let later = judge(
        TaskKind::Replication,
        &t,
        Some(now() - TimeDelta::hours(9)),
        now(),
    );
    assert_eq!(later.unwrap().severity, Severity::Critical);
    assert!(
        j.detail.contains("last run 2026-11-27 11:00 UTC failed: Target dataset 'backup/vms' was modified; last snapshot sent tank/vms@auto-2026-11-27_05-00"),
        "{}",
        j.detail
    );
    let (e, pool) = entity(TaskKind::Replication, &t);
    assert_eq!(e.name, "tank/vms to backup-nas");
    assert_eq!(e.labels["dataset"], "tank/vms");
    assert_eq!(pool.unwrap().name, "tank");
}

#[test]
fn hours_picked_by_a_list_weekdays_and_a_window_widen_the_period() {
    let s = |v: Value| -> TruenasSchedule { serde_json::from_value(v).unwrap() };
    assert_eq!(
        schedule_period(&s(json!({"minute": "0", "hour": "8-17"}))),
        Some(DAY)
    );
    assert_eq!(
        schedule_period(&s(json!({"minute": "0", "hour": "*/2"}))),
        Some(7200)
    );
    assert_eq!(
        schedule_period(&s(
            json!({"minute": "*/15", "begin": "08:00", "end": "18:00"})
        )),
        Some(DAY)
    );
    assert_eq!(schedule_period(&s(json!({"minute": "x y"}))), None);
    let weekdays: TruenasTask = serde_json::from_value(json!({"id": 1,
        "schedule": {"minute": "0", "hour": "2", "dom": "*", "month": "*", "dow": "1-5"},
        "job": job("SUCCESS", 80, 80, Value::Null)}))
    .unwrap();
    // Friday's run on a Monday morning is not overdue.
    let j = judge(TaskKind::Rsync, &weekdays, None, now()).unwrap();
    assert_eq!(j.severity, Severity::Info);
    assert_eq!(j.stale_after, Some(5 * 86400));
    assert!(
        j.detail
            .contains("expected every 24.0 h, schedule 0 2 * * 1-5"),
        "{}",
        j.detail
    );
}
