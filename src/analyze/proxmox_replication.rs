//! `proxmox_replication`: Proxmox VE storage replication jobs (`pvesr`, `GET
//! /nodes/{node}/replication` on each online node) whose guest's replica on the target
//! node falls behind: a job whose last attempts failed (with the failures in a row, the
//! error in PVE's words, untrusted and only in the detail), or one that has not synced for
//! several of its schedule's periods without an error. The fact is the guest's (its name
//! from the node's guest lists), names the target node as related, starts when the last
//! successful sync began (where the replica stopped), and is as severe as the replica is
//! behind. A healthy job is told only when the trigger is about its guest, as context.
//! A PVE that answers the list with 403, 404 or 501 on every node skips with a note.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use async_trait::async_trait;
use chrono::DateTime;
use serde_json::json;

use super::proxmox::{guest_entity, node_entity};
use super::proxmox_schedule::period_secs;
use super::{
    AnalyzeError, Analyzer, Entity, Fact, FactClass, Quantity, Scope, Severity, Source,
    keep_most_severe,
};
use crate::integrations::UpstreamError;
use crate::integrations::proxmox::{ProxmoxClient, PveGuest, PveReplication};

/// A replica more than this many schedule periods old is stale.
pub const STALE_PERIODS: u64 = 3;
/// A replica this many periods behind (within the bounds below) is critical.
const CRITICAL_PERIODS: u64 = 8;
const CRITICAL_MIN_SECS: u64 = 6 * 3600;
const CRITICAL_MAX_SECS: u64 = 3 * 86400;
/// The stale limit is never shorter than this (a sync takes its time).
const STALE_MIN_SECS: u64 = 10 * 60;
/// PVE's schedule when a job names none.
const DEFAULT_SCHEDULE: &str = "*/15";
/// The period assumed for a schedule that is not understood.
const FALLBACK_PERIOD_SECS: u64 = 3600;
/// Most facts.
const MAX_FACTS: usize = 40;

pub struct ProxmoxReplication(pub Arc<ProxmoxClient>);

/// What a job's state says about its replica.
#[derive(Debug, PartialEq)]
pub(super) struct Judged {
    pub what: String,
    pub severity: Severity,
    /// Seconds since the last successful sync began (`None`: never synced).
    pub behind: Option<u64>,
    /// The age past which the replica is stale.
    pub stale_after: u64,
    /// Epoch seconds of the last successful sync.
    pub since: Option<i64>,
    pub detail: String,
}

/// The job's schedule period in seconds: its calendar event, else the gap PVE computed
/// from its last try to its next run (when not retrying), else an hour.
fn period(job: &PveReplication, failing: bool) -> u64 {
    let spec = job.schedule.as_deref().unwrap_or(DEFAULT_SCHEDULE);
    period_secs(spec)
        .or_else(|| {
            let (last, next) = (job.last_try.filter(|t| *t > 0)?, job.next_sync?);
            let gap = next.checked_sub(last).filter(|g| *g > 0 && !failing)?;
            u64::try_from(gap).ok()
        })
        .unwrap_or(FALLBACK_PERIOD_SECS)
}

/// "2026-11-26 09:00 UTC".
fn when(secs: i64) -> String {
    DateTime::from_timestamp(secs, 0)
        .map(|t| t.format("%Y-%m-%d %H:%M UTC").to_string())
        .unwrap_or_else(|| "?".into())
}

/// Judges job `job` at `now` (epoch seconds): `None` for a disabled job, one being
/// removed, or one that has never run.
pub(super) fn judge(job: &PveReplication, now: i64) -> Option<Judged> {
    let disabled = job
        .disable
        .as_ref()
        .is_some_and(|d| d == 1 || d == "1" || d == true);
    if disabled || job.remove_job.is_some() {
        return None;
    }
    let target = job.target.as_deref().unwrap_or("?");
    let fails = job.fail_count.unwrap_or(0);
    let error = job
        .error
        .as_deref()
        .map(str::trim)
        .filter(|e| !e.is_empty());
    let failing = fails > 0 || error.is_some();
    let last_sync = job.last_sync.filter(|s| *s > 0);
    let last_try = job.last_try.filter(|t| *t > 0);
    if last_sync.is_none() && last_try.is_none() && !failing {
        return None;
    }
    let period = period(job, failing);
    let stale_after = period.saturating_mul(STALE_PERIODS).max(STALE_MIN_SECS);
    let critical_after = period
        .saturating_mul(CRITICAL_PERIODS)
        .clamp(CRITICAL_MIN_SECS, CRITICAL_MAX_SECS)
        .max(stale_after);
    let behind = last_sync.map(|s| u64::try_from(now.saturating_sub(s)).unwrap_or(0));
    let stale = behind.is_none_or(|b| b > stale_after);
    let schedule = job.schedule.as_deref().unwrap_or(DEFAULT_SCHEDULE);
    let mut parts = vec![format!("job {} to {target}, schedule {schedule}", job.id)];
    let (what, severity) = match (failing, stale) {
        (true, _) => {
            let times = match fails {
                0 => "failed".to_string(),
                1 => "failed once".to_string(),
                n => format!("failed {n} times in a row"),
            };
            parts.push(times);
            (
                format!("replication to {target} failing"),
                Severity::Warning,
            )
        }
        (false, true) => (
            format!("replication to {target} stalled"),
            Severity::Warning,
        ),
        (false, false) => (format!("replication to {target}"), Severity::Info),
    };
    let what = match behind {
        Some(_) => format!("{what}, replica age"),
        None => format!("{what}, no replica yet"),
    };
    let severity = match behind {
        Some(b) if severity > Severity::Info && b > critical_after => Severity::Critical,
        _ => severity,
    };
    match last_sync {
        Some(s) => parts.push(format!("last successful sync {}", when(s))),
        None => parts.push("never synced: the guest has no replica".into()),
    }
    if let Some(t) = last_try.filter(|t| Some(*t) != last_sync) {
        parts.push(format!("last try {}", when(t)));
    }
    if job.pid.is_some() {
        let from = last_try.map(when).unwrap_or_else(|| "?".into());
        parts.push(format!("a sync is running since {from}"));
    }
    if let Some(e) = error {
        parts.push(format!(
            "error: {}",
            e.split_whitespace().collect::<Vec<_>>().join(" ")
        ));
    }
    Some(Judged {
        what,
        severity,
        behind,
        stale_after,
        since: last_sync,
        detail: parts.join("; "),
    })
}

/// Whether `e` says the endpoint is not there or not readable (an older PVE, a token
/// without VM.Audit): the analyzer has nothing to read on that node.
fn unavailable(e: &UpstreamError) -> bool {
    matches!(
        e,
        UpstreamError::Status {
            status: 403 | 404 | 501,
            ..
        }
    )
}

/// The guest `vmid` of `node` as an entity: by its name when it is listed.
fn entity_of(node: &str, vmid: &str, guests: &HashMap<String, (&str, &PveGuest)>) -> Entity {
    match guests.get(vmid) {
        Some((kind, g)) => guest_entity(node, kind, g),
        None => Entity::new("guest", vmid)
            .on_host(Some(node.to_string()))
            .with_labels(BTreeMap::from([
                ("node".to_string(), node.to_string()),
                ("vmid".to_string(), vmid.to_string()),
            ])),
    }
}

#[async_trait]
impl Analyzer for ProxmoxReplication {
    fn name(&self) -> &'static str {
        "proxmox_replication"
    }

    async fn run(&self, scope: &Scope) -> Result<Vec<Fact>, AnalyzeError> {
        let c = &self.0;
        let now = scope.now.timestamp();
        let mut facts = Vec::new();
        let mut read = 0;
        let mut skipped: Option<UpstreamError> = None;
        for n in c.nodes().await?.iter().filter(|n| n.status == "online") {
            let jobs = match c.replication(&n.node).await {
                Ok(jobs) => jobs,
                Err(e) if unavailable(&e) => {
                    skipped.get_or_insert(e);
                    continue;
                }
                Err(e) => return Err(e.into()),
            };
            read += 1;
            let judged: Vec<(&PveReplication, Judged)> = jobs
                .iter()
                .filter_map(|j| Some((j, judge(j, now)?)))
                .collect();
            if judged.is_empty() {
                continue;
            }
            // The names of the guests; without them the facts name the ids.
            let guests = c.guests(&n.node).await.unwrap_or_default();
            let by_id: HashMap<String, (&str, &PveGuest)> =
                guests.iter().map(|(k, g)| (g.id(), (*k, g))).collect();
            for (job, j) in judged {
                let entity = entity_of(&n.node, &job.guest_id(), &by_id);
                if j.severity == Severity::Info && !scope.is_about(&entity) {
                    continue;
                }
                let class = match j.severity {
                    Severity::Info => FactClass::Context,
                    _ => FactClass::Appliance,
                };
                let mut fact = Fact::new(
                    class,
                    self.name(),
                    entity,
                    j.what,
                    j.severity,
                    Source::new("proxmox_replication", json!({ "node": n.node })),
                )
                .since(j.since.and_then(|s| DateTime::from_timestamp(s, 0)))
                .detail(j.detail);
                if let Some(b) = j.behind {
                    fact = fact
                        .value(Quantity::seconds(b as f64))
                        .limit(Quantity::seconds(j.stale_after as f64));
                }
                if let Some(t) = job.target.as_deref().filter(|t| !t.is_empty()) {
                    fact = fact.related(node_entity(t));
                }
                facts.push(fact);
            }
        }
        if read == 0
            && let Some(e) = skipped
        {
            return Err(AnalyzeError::Other(format!(
                "replication status not readable: {e}"
            )));
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
    const MIN: i64 = 60;
    const H: i64 = 3600;

    /// A job as `GET /nodes/{node}/replication` lists it, with `extra` fields on top.
    fn job(extra: Value) -> PveReplication {
        let mut v = json!({"id": "412-0", "guest": 412, "jobnum": 0, "target": "hv-b",
            "type": "local", "schedule": "*/15", "vmtype": "qemu", "source": "hv-a",
            "last_sync": NOW - 7 * MIN, "last_try": NOW - 7 * MIN, "next_sync": NOW + 8 * MIN,
            "duration": 4.2, "fail_count": 0});
        for (k, x) in extra.as_object().unwrap() {
            v[k] = x.clone();
        }
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn a_job_in_sync_is_info_and_one_failing_says_how_often_since_when_and_why() {
        let ok = judge(&job(json!({})), NOW).unwrap();
        assert_eq!(ok.severity, Severity::Info);
        assert_eq!(ok.behind, Some(7 * 60));
        assert_eq!(ok.stale_after, 45 * 60);
        let failing = job(json!({"last_sync": NOW - 5 * H, "last_try": NOW - 20 * MIN,
            "next_sync": NOW + 10 * MIN, "fail_count": 11,
            "error": "command 'zfs snapshot rpool/data/vm-412-disk-0@__replicate_412-0_1795762800__' failed: out of space\n"}));
        let j = judge(&failing, NOW).unwrap();
        assert_eq!(j.what, "replication to hv-b failing, replica age");
        assert_eq!(j.severity, Severity::Warning);
        assert_eq!(j.behind, Some(5 * 3600));
        assert_eq!(j.since, Some(NOW - 5 * H));
        assert_eq!(
            j.detail,
            "job 412-0 to hv-b, schedule */15; failed 11 times in a row; last successful sync \
             2026-11-27 07:00 UTC; last try 2026-11-27 11:40 UTC; error: command 'zfs snapshot \
             rpool/data/vm-412-disk-0@__replicate_412-0_1795762800__' failed: out of space"
        );
        // Six hours behind a 15-minute schedule: critical.
        let older = job(json!({"last_sync": NOW - 7 * H, "fail_count": 30, "error": "x"}));
        assert_eq!(judge(&older, NOW).unwrap().severity, Severity::Critical);
    }

    #[test]
    fn a_job_silent_for_several_periods_is_stale_without_an_error_by_its_own_schedule() {
        let stalled = job(json!({"last_sync": NOW - 2 * H, "last_try": NOW - 2 * H}));
        let j = judge(&stalled, NOW).unwrap();
        assert_eq!(j.what, "replication to hv-b stalled, replica age");
        assert_eq!(j.severity, Severity::Warning);
        // The same age is fine for a job that runs every night.
        let nightly = job(json!({"schedule": "01:30", "last_sync": NOW - 10 * H,
            "last_try": NOW - 10 * H}));
        assert_eq!(judge(&nightly, NOW).unwrap().severity, Severity::Info);
        // A running sync is named; an unknown schedule falls back to PVE's next run.
        let running = job(
            json!({"schedule": "2026-*-* 1:00", "last_sync": NOW - 2 * H,
            "last_try": NOW - 2 * H, "next_sync": NOW - 2 * H + 30 * MIN, "pid": 4242}),
        );
        let j = judge(&running, NOW).unwrap();
        assert_eq!(j.stale_after, 90 * 60);
        assert!(
            j.detail
                .contains("a sync is running since 2026-11-27 10:00 UTC"),
            "{}",
            j.detail
        );
    }

    #[test]
    fn a_job_that_never_synced_has_no_replica_and_disabled_or_unrun_jobs_say_nothing() {
        let never = job(json!({"last_sync": 0, "last_try": NOW - H, "fail_count": 2,
            "error": "no such storage"}));
        let j = judge(&never, NOW).unwrap();
        assert_eq!(j.behind, None);
        assert_eq!(j.since, None);
        assert_eq!(j.what, "replication to hv-b failing, no replica yet");
        assert!(j.detail.contains("never synced"), "{}", j.detail);
        assert_eq!(
            judge(&job(json!({"last_sync": 0, "last_try": 0})), NOW),
            None
        );
        assert_eq!(
            judge(&job(json!({"disable": 1, "fail_count": 3})), NOW),
            None
        );
        assert_eq!(judge(&job(json!({"remove_job": "full"})), NOW), None);
        // Times from the future or absurd do not overflow.
        let odd = job(json!({"last_sync": i64::MAX, "last_try": i64::MIN, "fail_count": 1}));
        assert_eq!(judge(&odd, NOW).unwrap().behind, Some(0));
    }
}
