//! `pbs_verify`: backup groups of a Proxmox Backup Server with snapshots whose last
//! verification failed (a chunk missing or corrupt: those snapshots do not restore), from
//! each datastore's snapshot list: how many failed, the oldest and newest of them, whether
//! the group's newest snapshot verified ok, failed, or is not verified yet (critical when
//! the newest restore point is the bad one), and the verify task that found it when one
//! failed in the last week (matched by the snapshot's verification task, else by store and
//! group; its status is PBS's text, untrusted, only in the detail).

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use chrono::DateTime;
use serde_json::json;

use super::pbs::{group_entity, store_entity};
use super::{
    AnalyzeError, Analyzer, Fact, FactClass, Quantity, Scope, Severity, Source, keep_most_severe,
};
use crate::integrations::pbs::{PbsClient, PbsSnapshot};
use crate::integrations::proxmox::ProxmoxTask;

/// PBS task types that verify snapshots.
const VERIFY_TASKS: [&str; 4] = [
    "verificationjob",
    "verify",
    "verify_group",
    "verify_snapshot",
];
/// How far back verify tasks are looked for.
const TASKS_BACK_SECS: i64 = 7 * 86400;
/// Most verify tasks read.
const MAX_TASKS: usize = 200;
/// Most datastores whose snapshots are listed.
const MAX_STORES: usize = 10;
const MAX_FACTS: usize = 40;

pub struct PbsVerify(pub Arc<PbsClient>);

/// A group's snapshots as verification left them.
#[derive(Debug, PartialEq)]
pub(super) struct FailedGroup {
    pub kind: String,
    pub id: String,
    pub comment: Option<String>,
    pub snapshots: usize,
    pub failed: usize,
    pub oldest_failed: i64,
    pub newest_failed: i64,
    /// The newest snapshot's state: `ok`, `failed`, or `None` (not verified).
    pub newest_state: Option<String>,
    /// The verify tasks of the failed snapshots, newest first.
    pub upids: Vec<String>,
}

/// The groups of `snapshots` with at least one snapshot whose verification failed, most
/// recent failure first.
pub(super) fn failed_groups(snapshots: &[PbsSnapshot]) -> Vec<FailedGroup> {
    let mut groups: BTreeMap<(&str, &str), Vec<&PbsSnapshot>> = BTreeMap::new();
    for s in snapshots {
        groups
            .entry((s.backup_type.as_str(), s.backup_id.as_str()))
            .or_default()
            .push(s);
    }
    let state = |s: &PbsSnapshot| s.verification.as_ref().map(|v| v.state.clone());
    let mut out: Vec<FailedGroup> = groups
        .into_iter()
        .filter_map(|((kind, id), mut snaps)| {
            snaps.sort_by_key(|s| std::cmp::Reverse(s.backup_time));
            let failed: Vec<&&PbsSnapshot> = snaps
                .iter()
                .filter(|s| state(s).as_deref() == Some("failed"))
                .collect();
            let newest = snaps.first()?;
            Some(FailedGroup {
                kind: kind.to_string(),
                id: id.to_string(),
                comment: snaps
                    .iter()
                    .find_map(|s| s.comment.clone().filter(|c| !c.trim().is_empty())),
                snapshots: snaps.len(),
                failed: failed.len(),
                oldest_failed: failed.last()?.backup_time,
                newest_failed: failed.first()?.backup_time,
                newest_state: state(newest).filter(|s| !s.is_empty()),
                upids: failed
                    .iter()
                    .filter_map(|s| s.verification.as_ref()?.upid.clone())
                    .fold(Vec::new(), |mut v, u| {
                        if !v.contains(&u) {
                            v.push(u);
                        }
                        v
                    }),
            })
        })
        .collect();
    out.sort_by_key(|g| std::cmp::Reverse(g.newest_failed));
    out
}

/// "2026-11-26 09:00 UTC".
fn when(secs: i64) -> String {
    DateTime::from_timestamp(secs, 0)
        .map(|t| t.format("%Y-%m-%d %H:%M UTC").to_string())
        .unwrap_or_else(|| "?".into())
}

/// Whether an ended task failed (anything but `OK` and `WARNINGS: n`).
fn failed_task(t: &ProxmoxTask) -> bool {
    t.status
        .as_deref()
        .is_some_and(|s| s != "OK" && !s.starts_with("WARNINGS"))
}

/// The failed verify task that found group `g`'s bad snapshots in `store`: the one a
/// failed snapshot names, else the newest failed one of the store that covers the group
/// (a whole-store verify or job, or one of the group or its snapshots).
pub(super) fn finding_task<'a>(
    tasks: &'a [ProxmoxTask],
    store: &str,
    g: &FailedGroup,
) -> Option<&'a ProxmoxTask> {
    let failed = || {
        tasks
            .iter()
            .filter(|t| VERIFY_TASKS.contains(&t.kind.as_str()) && failed_task(t))
    };
    if let Some(t) = failed().find(|t| g.upids.contains(&t.upid)) {
        return Some(t);
    }
    let group = format!("{}/{}", g.kind, g.id);
    failed()
        .filter(|t| {
            let id = t.id.as_deref().unwrap_or_default();
            let (s, rest) = id.split_once(':').unwrap_or((id, ""));
            s == store
                && match t.kind.as_str() {
                    "verify_group" | "verify_snapshot" => {
                        rest == group || rest.starts_with(&format!("{group}/"))
                    }
                    _ => true,
                }
        })
        .max_by_key(|t| t.starttime)
}

/// The fact's detail for group `g` of `store`, with the task that found it.
pub(super) fn detail(g: &FailedGroup, store: &str, task: Option<&ProxmoxTask>) -> String {
    let mut parts = Vec::new();
    if let Some(c) = &g.comment {
        parts.push(c.trim().to_string());
    }
    let span = match g.failed {
        1 => format!(
            "the snapshot of {} failed verification",
            when(g.newest_failed)
        ),
        _ => format!(
            "{} of {} snapshots failed verification, from {} to {}",
            g.failed,
            g.snapshots,
            when(g.oldest_failed),
            when(g.newest_failed)
        ),
    };
    parts.push(format!("datastore {store}: {span}"));
    parts.push(match g.newest_state.as_deref() {
        Some("ok") => "the newest snapshot verified ok".to_string(),
        Some("failed") => "the newest snapshot is one of them".to_string(),
        Some(s) => format!("the newest snapshot's verification is {s}"),
        None => "the newest snapshot is not verified yet".to_string(),
    });
    if let Some(t) = task {
        let status = t.status.as_deref().unwrap_or_default();
        parts.push(format!(
            "{} {} started {} failed: {}",
            t.kind,
            t.id.as_deref().unwrap_or_default(),
            t.starttime.map(when).unwrap_or_else(|| "?".into()),
            status.split_whitespace().collect::<Vec<_>>().join(" ")
        ));
    }
    parts.join("; ")
}

#[async_trait]
impl Analyzer for PbsVerify {
    fn name(&self) -> &'static str {
        "pbs_verify"
    }

    async fn run(&self, scope: &Scope) -> Result<Vec<Fact>, AnalyzeError> {
        let stores = self.0.datastores().await?;
        // A datastore in error lists nothing (`pbs_datastores` reports it).
        let readable = stores
            .iter()
            .filter(|d| d.error.as_deref().is_none_or(str::is_empty));
        let mut found: Vec<(&str, FailedGroup)> = Vec::new();
        for d in readable.take(MAX_STORES) {
            let snapshots = self.0.snapshots(&d.store).await?;
            found.extend(
                failed_groups(&snapshots)
                    .into_iter()
                    .map(|g| (d.store.as_str(), g)),
            );
        }
        if found.is_empty() {
            return Ok(Vec::new());
        }
        // One task list for every group; without it the facts stand on the snapshots.
        let since = scope.now.timestamp().saturating_sub(TASKS_BACK_SECS);
        let tasks = self
            .0
            .tasks_of_type("verif", since, MAX_TASKS)
            .await
            .unwrap_or_default();
        let mut facts = Vec::new();
        for (store, g) in found {
            let severity = match g.newest_state.as_deref() {
                Some("failed") => Severity::Critical,
                _ => Severity::Warning,
            };
            let task = finding_task(&tasks, store, &g);
            facts.push(
                Fact::new(
                    FactClass::Appliance,
                    self.name(),
                    group_entity(store, &g.kind, &g.id, g.comment.as_deref()),
                    "snapshots failed verification",
                    severity,
                    Source::new("pbs_backups", json!({})),
                )
                .value(Quantity::count(g.failed as f64))
                .limit(Quantity::count(g.snapshots as f64))
                .since(DateTime::from_timestamp(g.oldest_failed, 0))
                .detail(detail(&g, store, task))
                .related(store_entity(store)),
            );
        }
        keep_most_severe(&mut facts, MAX_FACTS);
        Ok(facts)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    /// 2026-11-27 12:00 UTC.
    const NOW: i64 = 1_795_780_800;
    const D: i64 = 86400;

    fn snap(kind: &str, id: &str, time: i64, state: Option<&str>) -> Value {
        let mut v = json!({"backup-type": kind, "backup-id": id, "backup-time": time,
            "comment": "ledger-db", "size": 21474836480u64, "owner": "root@pam",
            "files": [{"filename": "index.json.blob", "size": 500}]});
        if let Some(s) = state {
            v["verification"] = json!({"state": s, "upid": format!("UPID:pbs:00000A00:00000B00:00000001:{time:08X}:verificationjob:tank\\x3av\\x2d77:root@pam:")});
        }
        v
    }

    fn parse(v: Vec<Value>) -> Vec<PbsSnapshot> {
        serde_json::from_value(Value::Array(v)).unwrap()
    }

    fn task(kind: &str, id: &str, upid: &str, start: i64, status: &str) -> ProxmoxTask {
        serde_json::from_value(json!({"upid": upid, "node": "pbs", "starttime": start,
            "endtime": start + 600, "worker_type": kind, "worker_id": id, "status": status}))
        .unwrap()
    }

    #[test]
    fn groups_with_failed_snapshots_count_them_and_tell_the_newest_snapshots_state() {
        let snaps = parse(vec![
            snap("vm", "212", NOW - 3 * D, Some("failed")),
            snap("vm", "212", NOW - D, Some("ok")),
            snap("vm", "212", NOW - 5 * D, Some("failed")),
            snap("vm", "212", NOW - 6 * D, Some("ok")),
            snap("ct", "330", NOW - D, None),
            snap("ct", "330", NOW - 2 * D, Some("ok")),
            snap("ct", "331", NOW - D, Some("failed")),
            snap("ct", "331", NOW - 2 * D, None),
        ]);
        let groups = failed_groups(&snaps);
        assert_eq!(groups.len(), 2, "{groups:?}");
        let (newest, vm) = (&groups[0], &groups[1]);
        assert_eq!((newest.kind.as_str(), newest.id.as_str()), ("ct", "331"));
        assert_eq!(newest.newest_state.as_deref(), Some("failed"));
        assert_eq!((vm.failed, vm.snapshots), (2, 4));
        assert_eq!(
            (vm.oldest_failed, vm.newest_failed),
            (NOW - 5 * D, NOW - 3 * D)
        );
        assert_eq!(vm.newest_state.as_deref(), Some("ok"));
        assert_eq!(vm.upids.len(), 2);
        assert_eq!(
            detail(vm, "tank", None),
            "ledger-db; datastore tank: 2 of 4 snapshots failed verification, from 2026-11-22 \
             12:00 UTC to 2026-11-24 12:00 UTC; the newest snapshot verified ok"
        );
        let mut unverified = parse(vec![snap("vm", "9", NOW - 2 * D, Some("failed"))]);
        unverified.extend(parse(vec![snap("vm", "9", NOW - D, None)]));
        let g = &failed_groups(&unverified)[0];
        assert!(detail(g, "tank", None).ends_with("the newest snapshot is not verified yet"));
        assert!(failed_groups(&parse(vec![snap("vm", "1", NOW, Some("ok"))])).is_empty());
    }

    #[test]
    fn the_verify_task_that_failed_is_found_by_its_upid_else_by_store_and_group() {
        let snaps = parse(vec![snap("vm", "212", NOW - 3 * D, Some("failed"))]);
        let g = &failed_groups(&snaps)[0];
        let own = g.upids[0].clone();
        let tasks = vec![
            task(
                "verificationjob",
                "tank:v-77",
                &own,
                NOW - 2 * D,
                "verification failed - please check the log for details",
            ),
            task(
                "verify_group",
                "tank:vm/213",
                "UPID:b",
                NOW - D,
                "verification failed",
            ),
            task("backup", "tank:vm/212", "UPID:c", NOW - D, "backup failed"),
        ];
        let t = finding_task(&tasks, "tank", g).unwrap();
        assert_eq!(t.upid, own);
        assert!(detail(g, "tank", Some(t)).ends_with(
            "verificationjob tank:v-77 started 2026-11-25 12:00 UTC failed: verification \
             failed - please check the log for details"
        ));
        // Without its own task: a failed verify of the whole store covers it; one of
        // another group, another store, or an ok one does not.
        let others = vec![
            task(
                "verify_group",
                "tank:vm/213",
                "UPID:b",
                NOW - D,
                "verification failed",
            ),
            task("verify", "other", "UPID:d", NOW - D, "verification failed"),
            task("verify", "tank", "UPID:e", NOW - D, "OK"),
        ];
        assert!(finding_task(&others, "tank", g).is_none());
        let store = task("verify", "tank", "UPID:f", NOW - D, "verification failed");
        let snapshot = task(
            "verify_snapshot",
            "tank:vm/212/2026-11-24T12:00:00Z",
            "UPID:g",
            NOW - 2 * D,
            "failed",
        );
        let both = [store, snapshot];
        assert_eq!(finding_task(&both, "tank", g).unwrap().upid, "UPID:f");
        assert_eq!(finding_task(&both[1..], "tank", g).unwrap().upid, "UPID:g");
    }
}
