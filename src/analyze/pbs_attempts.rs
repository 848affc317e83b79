//! What the backup attempts of an overdue group did since its last snapshot, for
//! `pbs_backups`: how many backup tasks ran for the group and how they ended, the latest
//! ended one with its status text (PBS's error, untrusted: it only goes into a fact's
//! detail), and any still running with how long it has run (a backup stuck for a day holds
//! the group's lock, and the next runs fail on it). No task at all says the server never
//! saw an attempt: the job did not run, or failed before it reached the server.

use chrono::DateTime;

use super::human_seconds;
use crate::integrations::proxmox::ProxmoxTask;

/// The PBS task type of a backup.
pub const BACKUP_TASK: &str = "backup";
/// A task that ended OK and started this close to a snapshot's time made that snapshot
/// (the client picks the snapshot's time before the server starts the task).
const OWN_TASK_SECS: i64 = 300;
/// Most running attempts named.
const MAX_RUNNING: usize = 2;

/// The attempts of group `kind/id` of `store` since `last_backup`, from `tasks` (backup
/// tasks of the server since at least then, newest first; `complete` when the list was not
/// cut at its limit), as text for the fact's detail; `None` when nothing can be said (a cut
/// list without one of them).
pub fn attempts_text(
    tasks: &[ProxmoxTask],
    group: (&str, &str, &str),
    last_backup: i64,
    now: i64,
    complete: bool,
) -> Option<String> {
    let (store, kind, id) = group;
    let worker_id = format!("{store}:{kind}/{id}");
    let mut attempts: Vec<&ProxmoxTask> = tasks
        .iter()
        .filter(|t| t.kind == BACKUP_TASK && t.id.as_deref() == Some(worker_id.as_str()))
        .filter(|t| t.starttime.is_some_and(|s| s >= last_backup))
        .filter(|t| !is_own(t, last_backup))
        .collect();
    if attempts.is_empty() {
        return complete.then(|| "no backup task on the server since the last snapshot".into());
    }
    attempts.sort_by_key(|t| std::cmp::Reverse(t.starttime));
    let running: Vec<&&ProxmoxTask> = attempts.iter().filter(|t| t.status.is_none()).collect();
    let ended: Vec<&&ProxmoxTask> = attempts.iter().filter(|t| t.status.is_some()).collect();
    let failed = ended.iter().filter(|t| is_failure(t)).count();
    let total = attempts.len();
    let mut parts = Vec::new();
    let at_least = if complete { "" } else { "at least " };
    let plural = if total == 1 { "" } else { "s" };
    let mut count = format!("{at_least}{total} attempt{plural} since the last snapshot");
    if failed == total && complete {
        count.push_str(match total {
            1 => ", failed",
            _ => ", all failed",
        });
    } else {
        let ok = ended.len() - failed;
        let split: Vec<String> = [
            (failed, "failed"),
            (running.len(), "running"),
            (ok, "ended"),
        ]
        .iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, word)| format!("{n} {word}"))
        .collect();
        count.push_str(&format!(": {}", split.join(", ")));
    }
    parts.push(count);
    for t in running.iter().take(MAX_RUNNING) {
        let Some(start) = t.starttime else { continue };
        let ran = now.checked_sub(start).filter(|s| *s >= 0).unwrap_or(0);
        parts.push(format!(
            "a backup of {kind}/{id} running since {} ({})",
            when(start),
            human_seconds(ran as f64)
        ));
    }
    if let Some(t) = ended.first() {
        let status = t.status.as_deref().unwrap_or_default();
        let status = status.split_whitespace().collect::<Vec<_>>().join(" ");
        let start = t.starttime.map(when).unwrap_or_else(|| "?".into());
        parts.push(match status.as_str() {
            "OK" => format!("last attempt {start} OK"),
            s if s.starts_with("WARNINGS") => format!("last attempt {start} ended with {s}"),
            s => format!("last attempt {start} failed: {s}"),
        });
    }
    Some(parts.join("; "))
}

/// Whether `t` is the task that made the snapshot of `last_backup`.
fn is_own(t: &ProxmoxTask, last_backup: i64) -> bool {
    t.status.as_deref() == Some("OK")
        && t.starttime
            .and_then(|s| s.checked_sub(last_backup))
            .is_some_and(|d| (0..=OWN_TASK_SECS).contains(&d))
}

/// Whether an ended task failed (PBS: anything but `OK` and `WARNINGS: n`).
fn is_failure(t: &ProxmoxTask) -> bool {
    t.status
        .as_deref()
        .is_some_and(|s| s != "OK" && !s.starts_with("WARNINGS"))
}

/// "2026-11-26 09:00 UTC".
fn when(secs: i64) -> String {
    DateTime::from_timestamp(secs, 0)
        .map(|t| t.format("%Y-%m-%d %H:%M UTC").to_string())
        .unwrap_or_else(|| "?".into())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// 2026-11-27 12:00 UTC.
    const NOW: i64 = 1_795_780_800;
    const H: i64 = 3600;

    /// A PBS backup task as `GET /nodes/localhost/tasks` lists it (running: no end, no status).
    fn task(worker_id: &str, start: i64, end: Option<i64>, status: Option<&str>) -> ProxmoxTask {
        serde_json::from_value(json!({
            "upid": format!("UPID:pbs:000010AB:0001:00000000:{start:08X}:backup:{}:root@pam!pve:",
                worker_id.replace(':', "\\x3a").replace('/', "\\x2f")),
            "node": "pbs", "pid": 4267, "pstart": 1, "starttime": start, "endtime": end,
            "worker_type": "backup", "worker_id": worker_id, "user": "root@pam!pve", "status": status}))
        .unwrap()
    }

    #[test]
    fn a_group_whose_nightly_attempts_all_failed_says_how_many_and_the_last_error() {
        let last = NOW - 74 * H;
        let tasks = vec![
            task(
                "tank:vm/214",
                NOW - 10 * H,
                Some(NOW - 10 * H + 95),
                Some("backup failed: connection error: Connection reset by peer\n  (os error 104)"),
            ),
            // Another group of the same store, and the same group in another store.
            task("tank:vm/215", NOW - 10 * H, Some(NOW - 9 * H), Some("OK")),
            task(
                "offsite:vm/214",
                NOW - 20 * H,
                Some(NOW - 19 * H),
                Some("OK"),
            ),
            task(
                "tank:vm/214",
                NOW - 34 * H,
                Some(NOW - 34 * H + 80),
                Some("backup failed: no space left on device"),
            ),
            task(
                "tank:vm/214",
                NOW - 58 * H,
                Some(NOW - 58 * H + 70),
                Some("backup failed: no space left on device"),
            ),
            // The run that made the last snapshot.
            task("tank:vm/214", last + 2, Some(last + 900), Some("OK")),
        ];
        let text = attempts_text(&tasks, ("tank", "vm", "214"), last, NOW, true).unwrap();
        assert_eq!(
            text,
            "3 attempts since the last snapshot, all failed; last attempt 2026-11-27 02:00 UTC \
             failed: backup failed: connection error: Connection reset by peer (os error 104)"
        );
    }

    #[test]
    fn a_backup_still_running_for_a_day_is_named_with_its_start_and_how_long_it_has_run() {
        let last = NOW - 50 * H;
        let tasks = vec![
            task("tank:ct/3001", NOW - 31 * H, None, None),
            task(
                "tank:ct/3001",
                NOW - 40 * H,
                Some(NOW - 39 * H),
                Some("WARNINGS: 2"),
            ),
        ];
        let text = attempts_text(&tasks, ("tank", "ct", "3001"), last, NOW, true).unwrap();
        assert_eq!(
            text,
            "2 attempts since the last snapshot: 1 running, 1 ended; a backup of ct/3001 running \
             since 2026-11-26 05:00 UTC (31.0 h); last attempt 2026-11-25 20:00 UTC ended with \
             WARNINGS: 2"
        );
    }

    #[test]
    fn no_attempt_since_the_snapshot_is_said_only_when_the_task_list_is_complete() {
        let last = NOW - 30 * H;
        let own = vec![task("tank:vm/9", last + 5, Some(last + 600), Some("OK"))];
        assert_eq!(
            attempts_text(&own, ("tank", "vm", "9"), last, NOW, true).as_deref(),
            Some("no backup task on the server since the last snapshot")
        );
        assert_eq!(
            attempts_text(&own, ("tank", "vm", "9"), last, NOW, false),
            None
        );
        let one = vec![task(
            "tank:vm/9",
            NOW - H,
            Some(NOW - H + 9),
            Some("job failed"),
        )];
        assert_eq!(
            attempts_text(&one, ("tank", "vm", "9"), last, NOW, false).as_deref(),
            Some(
                "at least 1 attempt since the last snapshot: 1 failed; last attempt 2026-11-27 \
                 11:00 UTC failed: job failed"
            )
        );
    }

    #[test]
    fn tasks_of_other_types_and_a_start_time_out_of_range_are_not_attempts() {
        let last = NOW - 30 * H;
        let mut verify = task(
            "tank:vm/9",
            NOW - H,
            Some(NOW - H + 9),
            Some("verify failed"),
        );
        verify.kind = "verificationjob".into();
        let mut broken = task("tank:vm/9", NOW, None, None);
        broken.starttime = None;
        let text = attempts_text(&[verify, broken], ("tank", "vm", "9"), last, NOW, true);
        assert_eq!(
            text.as_deref(),
            Some("no backup task on the server since the last snapshot")
        );
        let future = task("tank:vm/9", i64::MAX, None, None);
        let text = attempts_text(&[future], ("tank", "vm", "9"), last, NOW, true).unwrap();
        assert!(text.contains("running since ? (0 ms)"), "{text}");
    }
}
