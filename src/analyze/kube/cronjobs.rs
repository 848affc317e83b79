//! `kube_cronjobs`: a CronJob whose Job has been running longer than the schedule's
//! interval, holding up the runs after it (with `concurrencyPolicy: Forbid` each run due
//! meanwhile is skipped), from the API: the CronJob's schedule, policy and active Jobs
//! (`.status.active`, else the Jobs it owns that have not finished), each Job's
//! `.status.startTime`. The cronjob-controller's `JobAlreadyActive` events ("Not starting
//! job because prior execution is running …") are quoted on the fact; when they are all
//! there is (the CronJobs cannot be listed, or the run is not yet past its interval) they
//! are a fact of their own: runs were skipped.

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use k8s_openapi::api::batch::v1::{CronJob, Job};
use k8s_openapi::api::core::v1::Event;
use serde_json::json;

use super::{MAX_FACTS, key, time, upstream};
use crate::analyze::cron::suspended::{self, Suspended};
use crate::analyze::cron::{self, DEFAULT_INTERVAL, SLACK, consequence};
use crate::analyze::{
    AnalyzeError, Analyzer, Entity, Fact, FactClass, Quantity, Scope, Severity, Source,
    human_seconds, keep_most_severe,
};
use crate::integrations::kubernetes::KubeClient;

const NAME: &str = "kube_cronjobs";
/// The event reason of a run skipped because the last one is still active.
const SKIPPED: &str = "JobAlreadyActive";

pub struct KubeCronJobs(pub Arc<KubeClient>);

#[async_trait]
impl Analyzer for KubeCronJobs {
    fn name(&self) -> &'static str {
        NAME
    }

    async fn run(&self, scope: &Scope) -> Result<Vec<Fact>, AnalyzeError> {
        let listed = self.0.cronjobs(None).await;
        let events = self.0.events_with_reason(None, SKIPPED).await;
        let ((cronjobs, jobs), events) = match (listed, events) {
            (Err(e), Err(_)) => return Err(upstream(e)),
            (l, e) => (l.unwrap_or_default(), e.unwrap_or_default()),
        };
        let mut facts = analyze(&cronjobs, &jobs, &events, scope.now);
        keep_most_severe(&mut facts, MAX_FACTS);
        Ok(facts)
    }
}

/// The `JobAlreadyActive` events about one CronJob: how many times, first, last, message.
#[derive(Default)]
struct Skips {
    count: i64,
    first: Option<DateTime<Utc>>,
    last: Option<DateTime<Utc>>,
    message: String,
}

impl Skips {
    fn describe(&self) -> String {
        let at = |t: Option<DateTime<Utc>>| {
            t.map(|t| t.format("%Y-%m-%d %H:%M UTC").to_string())
                .unwrap_or_else(|| "?".into())
        };
        format!(
            "event {SKIPPED} ×{} (first {}, last {}): \"{}\"",
            self.count,
            at(self.first),
            at(self.last),
            self.message
        )
    }
}

fn skips(events: &[Event]) -> BTreeMap<(String, String), Skips> {
    let mut out: BTreeMap<(String, String), Skips> = BTreeMap::new();
    for e in events {
        let o = &e.involved_object;
        if e.reason.as_deref() != Some(SKIPPED) || o.kind.as_deref() != Some("CronJob") {
            continue;
        }
        let ns = o
            .namespace
            .clone()
            .or_else(|| e.metadata.namespace.clone())
            .unwrap_or_default();
        let Some(name) = o.name.clone() else { continue };
        let s = out.entry((ns, name)).or_default();
        s.count = s
            .count
            .saturating_add(i64::from(e.count.unwrap_or(1).max(1)));
        let first = e.first_timestamp.as_ref().and_then(time);
        let last = e.last_timestamp.as_ref().and_then(time).or(first);
        s.first = match (s.first, first) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        if last >= s.last {
            s.last = last;
            s.message = e.message.clone().unwrap_or_default();
        }
    }
    out
}

/// The Jobs of `cj` still running: those its status lists as active, else those it owns
/// that have not finished.
fn active<'a>(cj: &CronJob, jobs: &'a [Job]) -> Vec<&'a Job> {
    let (ns, name) = key(&cj.metadata);
    let listed: Vec<&str> = cj
        .status
        .iter()
        .flat_map(|s| s.active.iter().flatten())
        .filter_map(|r| r.name.as_deref())
        .collect();
    jobs.iter()
        .filter(|j| j.metadata.namespace.as_deref() == Some(ns.as_str()))
        .filter(|j| {
            let jname = j.metadata.name.as_deref().unwrap_or_default();
            let owned = j
                .metadata
                .owner_references
                .iter()
                .flatten()
                .any(|r| r.kind == "CronJob" && r.name == name);
            let running = j
                .status
                .as_ref()
                .is_some_and(|s| s.completion_time.is_none() && s.active.unwrap_or(0) > 0);
            listed.contains(&jname) || (owned && running)
        })
        .collect()
}

/// The facts of `cronjobs` (with their `jobs` and the `JobAlreadyActive` `events`) at `now`.
pub fn analyze(
    cronjobs: &[CronJob],
    jobs: &[Job],
    events: &[Event],
    now: DateTime<Utc>,
) -> Vec<Fact> {
    let mut skipped = skips(events);
    let mut facts = Vec::new();
    for cj in cronjobs {
        let (ns, name) = key(&cj.metadata);
        let spec = &cj.spec;
        let learned = cron::interval(&spec.schedule);
        let interval = learned.unwrap_or(DEFAULT_INTERVAL);
        let policy = spec.concurrency_policy.as_deref().unwrap_or("Allow");
        // The longest-running active Job holds the CronJob.
        let oldest = active(cj, jobs)
            .into_iter()
            .filter_map(|j| {
                let s = j.status.as_ref()?;
                let started = s
                    .start_time
                    .as_ref()
                    .or(j.metadata.creation_timestamp.as_ref())
                    .and_then(time)?;
                Some((started, j.metadata.name.clone().unwrap_or_default()))
            })
            .min();
        let Some((started, job)) = oldest else {
            continue;
        };
        let running = (now - started).num_seconds() as f64;
        if running <= interval + SLACK {
            continue;
        }
        let due = (running / interval).floor().clamp(0.0, 1e6) as u64;
        let (then, severity) = consequence(Some(policy), due);
        let mut detail = format!(
            "Job {ns}/{job} active since {}; {then}",
            started.format("%Y-%m-%d %H:%M UTC")
        );
        if let Some(s) = skipped.remove(&(ns.clone(), name.clone())) {
            detail.push_str(&format!("; {}", s.describe()));
        }
        detail.push_str(&format!("; schedule \"{}\"", spec.schedule));
        match learned {
            Some(i) => detail.push_str(&format!(" (every {})", human_seconds(i))),
            None => detail.push_str(" (a daily run assumed)"),
        }
        if spec.suspend == Some(true) {
            detail.push_str("; the CronJob is suspended");
        }
        if let Some(t) = cj
            .status
            .as_ref()
            .and_then(|s| s.last_successful_time.as_ref())
            .and_then(time)
        {
            detail.push_str(&format!(
                "; last success {}",
                t.format("%Y-%m-%d %H:%M UTC")
            ));
        }
        facts.push(
            fact(
                &ns,
                &name,
                Some(&job),
                "job {job} still running after",
                severity,
            )
            .value(Quantity::seconds(running))
            .limit(Quantity::seconds(interval))
            .since(Some(started))
            .detail(detail),
        );
    }
    facts.extend(cronjobs.iter().filter_map(|cj| forgotten(cj, now)));
    for ((ns, name), s) in skipped {
        let detail = format!(
            "{}: a run was due and not started because the previous one is still running",
            s.describe()
        );
        facts.push(
            fact(
                &ns,
                &name,
                None,
                "runs skipped, prior run still active: skips",
                Severity::Warning,
            )
            .value(Quantity::count(s.count as f64))
            .since(s.first)
            .detail(detail),
        );
    }
    facts
}

/// The fact of `cj` when it is suspended and has missed scheduled runs since its last.
fn forgotten(cj: &CronJob, now: DateTime<Utc>) -> Option<Fact> {
    if cj.spec.suspend != Some(true) {
        return None;
    }
    let (ns, name) = key(&cj.metadata);
    let secs = |t: Option<&k8s_openapi::apimachinery::pkg::apis::meta::v1::Time>| {
        t.and_then(time).map(|t| t.timestamp() as f64)
    };
    let status = cj.status.as_ref();
    let s = Suspended {
        namespace: ns.clone(),
        name,
        schedule: Some(cj.spec.schedule.clone()),
        last_success: secs(status.and_then(|s| s.last_successful_time.as_ref())),
        last_schedule: secs(status.and_then(|s| s.last_schedule_time.as_ref())),
        created: secs(cj.metadata.creation_timestamp.as_ref()),
    };
    let source = Source::new("k8s_events", json!({ "namespace": ns }));
    suspended::fact(&s, now.timestamp() as f64, NAME, source)
}

fn fact(ns: &str, name: &str, job: Option<&str>, what: &str, severity: Severity) -> Fact {
    let mut labels = BTreeMap::from([
        ("namespace".to_string(), ns.to_string()),
        ("cronjob".to_string(), name.to_string()),
    ]);
    if let Some(j) = job {
        labels.insert("job_name".into(), j.to_string());
    }
    Fact::new(
        FactClass::Kubernetes,
        NAME,
        Entity::new("cronjob", format!("{ns}/{name}")).with_labels(labels),
        what.replace("{job}", job.unwrap_or_default()),
        severity,
        Source::new("k8s_events", json!({"namespace": ns})),
    )
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn now() -> DateTime<Utc> {
        "2026-05-10T12:00:00Z".parse().unwrap()
    }

    fn cronjob(name: &str, schedule: &str, policy: &str, active: &[&str]) -> CronJob {
        let refs: Vec<_> = active
            .iter()
            .map(|j| json!({"kind": "Job", "name": j, "namespace": "infra"}))
            .collect();
        serde_json::from_value(json!({
            "metadata": {"name": name, "namespace": "infra"},
            "spec": {"schedule": schedule, "concurrencyPolicy": policy,
                "jobTemplate": {"spec": {"template": {"spec": {"containers": []}}}}},
            "status": {"active": refs, "lastSuccessfulTime": "2026-05-07T01:33:00Z"}
        }))
        .unwrap()
    }

    fn job(name: &str, owner: &str, start: &str, done: bool) -> Job {
        let status = if done {
            json!({"startTime": start, "completionTime": start, "succeeded": 1})
        } else {
            json!({"startTime": start, "active": 1})
        };
        serde_json::from_value(json!({
            "metadata": {"name": name, "namespace": "infra", "ownerReferences": [
                {"apiVersion": "batch/v1", "kind": "CronJob", "name": owner, "uid": "u", "controller": true}]},
            "status": status
        }))
        .unwrap()
    }

    fn skipped(cronjob: &str, count: i32) -> Event {
        serde_json::from_value(json!({
            "metadata": {"name": format!("{cronjob}.1"), "namespace": "infra"},
            "involvedObject": {"kind": "CronJob", "namespace": "infra", "name": cronjob},
            "reason": "JobAlreadyActive",
            "message": "Not starting job because prior execution is running and concurrency policy is Forbid",
            "firstTimestamp": "2026-05-09T01:30:00Z", "lastTimestamp": "2026-05-10T01:30:00Z",
            "count": count, "type": "Normal"
        }))
        .unwrap()
    }

    #[test]
    fn a_job_running_past_several_runs_under_forbid_is_critical_and_quotes_the_skips() {
        let cronjobs = [
            cronjob(
                "etcd-defrag",
                "30 1 * * *",
                "Forbid",
                &["etcd-defrag-29640090"],
            ),
            cronjob("cert-sync", "*/30 * * * *", "Forbid", &[]),
        ];
        let jobs = [
            job(
                "etcd-defrag-29640090",
                "etcd-defrag",
                "2026-05-08T01:30:04Z",
                false,
            ),
            job(
                "cert-sync-29641410",
                "cert-sync",
                "2026-05-10T11:30:00Z",
                true,
            ),
        ];
        let facts = analyze(&cronjobs, &jobs, &[skipped("etcd-defrag", 2)], now());
        assert_eq!(facts.len(), 1, "{facts:?}");
        let f = &facts[0];
        assert_eq!(f.entity.name, "infra/etcd-defrag");
        assert_eq!(f.entity.labels["job_name"], "etcd-defrag-29640090");
        assert_eq!(f.severity, Severity::Critical);
        assert_eq!(f.what, "job etcd-defrag-29640090 still running after");
        assert_eq!(f.limit.unwrap().value, 86400.0);
        let d = f.detail.as_deref().unwrap();
        assert!(d.contains("Forbid: 2 runs due since were skipped"), "{d}");
        assert!(d.contains("JobAlreadyActive ×2"), "{d}");
        assert!(d.contains("prior execution is running"), "{d}");
        assert!(d.contains("schedule \"30 1 * * *\""), "{d}");
    }

    #[test]
    fn a_suspended_cronjob_tells_the_runs_it_missed_and_a_recent_pause_nothing() {
        let mut forgotten = cronjob("db-dump", "30 1 * * *", "Forbid", &[]);
        forgotten.spec.suspend = Some(true);
        let facts = analyze(&[forgotten.clone()], &[], &[], now());
        assert_eq!(facts.len(), 1, "{facts:?}");
        let f = &facts[0];
        assert_eq!(f.entity.name, "infra/db-dump");
        assert_eq!(f.severity, Severity::Warning);
        let d = f.detail.as_deref().unwrap_or_default();
        assert!(
            d.starts_with(
                "CronJob infra/db-dump is suspended (spec.suspend: true); no successful run \
                 since 2026-05-07 01:33 UTC (3.4 days, 3 scheduled runs missed)"
            ),
            "{d}"
        );
        // Not suspended: nothing; suspended an hour after its run: nothing.
        let running = cronjob("db-dump", "30 1 * * *", "Forbid", &[]);
        assert!(analyze(&[running], &[], &[], now()).is_empty());
        let mut weekly = cronjob("db-dump", "0 3 * * 0", "Forbid", &[]);
        weekly.spec.suspend = Some(true);
        assert!(analyze(&[weekly], &[], &[], now()).is_empty());
    }

    #[test]
    fn a_run_within_its_interval_is_quiet_but_skips_alone_still_tell() {
        let cronjobs = [cronjob("reindex", "0 * * * *", "Forbid", &["reindex-1"])];
        let jobs = [job("reindex-1", "reindex", "2026-05-10T11:20:00Z", false)];
        assert!(analyze(&cronjobs, &jobs, &[], now()).is_empty());
        // The CronJob is not listed (no access), its events are.
        let facts = analyze(&[], &[], &[skipped("nightly-vacuum", 3)], now());
        assert_eq!(facts.len(), 1);
        assert_eq!(facts[0].entity.name, "infra/nightly-vacuum");
        assert_eq!(facts[0].severity, Severity::Warning);
        assert_eq!(facts[0].value.unwrap().value, 3.0);
        // An owned Job still active though the status lost track of it counts too.
        let lost = [cronjob("reindex", "0 * * * *", "Allow", &[])];
        let old = [job("reindex-0", "reindex", "2026-05-10T08:00:00Z", false)];
        let facts = analyze(&lost, &old, &[], now());
        assert_eq!(facts.len(), 1);
        assert_eq!(facts[0].severity, Severity::Warning);
        assert!(
            facts[0]
                .detail
                .as_deref()
                .unwrap()
                .contains("4 later runs started beside it")
        );
    }
}
