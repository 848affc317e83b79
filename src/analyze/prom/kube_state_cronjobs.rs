//! `kube_state_cronjobs`: a CronJob whose Job has been running far longer than the
//! CronJob's schedule interval, so that it holds up the runs after it: with
//! `concurrencyPolicy: Forbid` each run due meanwhile is skipped, with `Allow` runs pile
//! up beside it, with `Replace` it is killed at the next run. From kube-state-metrics:
//! the active Jobs (`kube_job_status_active`), when each started
//! (`kube_job_status_start_time`), the CronJob that owns it (`kube_job_owner`,
//! `owner_kind="CronJob"`), and the CronJob's schedule and policy (`kube_cronjob_info`,
//! labels `schedule` and `concurrency_policy`) with its last success
//! (`kube_cronjob_status_last_successful_time`). That the last success is old is
//! `stale_jobs`'s fact; this one says which run holds the CronJob and since when.

use std::collections::{BTreeMap, HashMap};

use async_trait::async_trait;

use super::history::time_of;
use super::{Prom, selector};
use crate::analyze::cron::{self, DEFAULT_INTERVAL, SLACK, consequence};
use crate::analyze::{
    AnalyzeError, Analyzer, Entity, Fact, FactClass, Quantity, Scope, Source, human_seconds,
    keep_most_severe,
};
use crate::integrations::prometheus::Sample;

const NAME: &str = "kube_state_cronjobs";
/// Most facts.
const MAX_FACTS: usize = 20;

pub struct KubeStateCronJobs(pub Prom);

/// `(namespace, name)` of a series' object under `key`.
fn object(s: &Sample, key: &str) -> Option<(String, String)> {
    Some((
        s.metric.get("namespace")?.clone(),
        s.metric.get(key)?.clone(),
    ))
}

/// One Job of a CronJob still running.
#[derive(Debug, Clone, PartialEq)]
pub struct Stuck {
    pub namespace: String,
    pub cronjob: String,
    pub job: String,
    /// Unix seconds the Job started.
    pub started: f64,
    pub schedule: Option<String>,
    pub policy: Option<String>,
    /// Unix seconds of the CronJob's last success.
    pub last_success: Option<f64>,
}

#[async_trait]
impl Analyzer for KubeStateCronJobs {
    fn name(&self) -> &'static str {
        NAME
    }

    async fn run(&self, scope: &Scope) -> Result<Vec<Fact>, AnalyzeError> {
        let active = self.0.vector("kube_job_status_active > 0").await?;
        if active.is_empty() {
            return Ok(Vec::new());
        }
        let owners = self
            .0
            .vector("kube_job_owner{owner_kind=\"CronJob\"}")
            .await?;
        if owners.is_empty() {
            return Ok(Vec::new());
        }
        let starts = self.0.vector("kube_job_status_start_time").await?;
        let info = self.0.vector("kube_cronjob_info").await?;
        let success = self
            .0
            .vector("kube_cronjob_status_last_successful_time")
            .await?;
        let now = scope.now.timestamp_millis() as f64 / 1000.0;
        let mut facts: Vec<Fact> = join(&active, &owners, &starts, &info, &success)
            .into_iter()
            .filter_map(|s| fact(&s, now))
            .collect();
        keep_most_severe(&mut facts, MAX_FACTS);
        Ok(facts)
    }
}

/// The active Jobs owned by a CronJob, with what kube-state-metrics tells of the CronJob.
pub fn join(
    active: &[Sample],
    owners: &[Sample],
    starts: &[Sample],
    info: &[Sample],
    success: &[Sample],
) -> Vec<Stuck> {
    let owner: HashMap<(String, String), String> = owners
        .iter()
        .filter(|s| s.metric.get("owner_kind").map(String::as_str) == Some("CronJob"))
        .filter_map(|s| Some((object(s, "job_name")?, s.metric.get("owner_name")?.clone())))
        .collect();
    let start: HashMap<(String, String), f64> = starts
        .iter()
        .filter(|s| s.value.is_finite() && s.value > 0.0)
        .filter_map(|s| Some((object(s, "job_name")?, s.value)))
        .collect();
    let info: HashMap<(String, String), &Sample> = info
        .iter()
        .filter_map(|s| Some((object(s, "cronjob")?, s)))
        .collect();
    let success: HashMap<(String, String), f64> = success
        .iter()
        .filter(|s| s.value.is_finite() && s.value > 0.0)
        .filter_map(|s| Some((object(s, "cronjob")?, s.value)))
        .collect();
    let mut out: BTreeMap<(String, String), Stuck> = BTreeMap::new();
    for s in active {
        let Some(key) = object(s, "job_name") else {
            continue;
        };
        let (Some(cronjob), Some(&started)) = (owner.get(&key), start.get(&key)) else {
            continue;
        };
        let cj = (key.0.clone(), cronjob.clone());
        let i = info.get(&cj);
        let label = |k: &str| i.and_then(|s| s.metric.get(k)).filter(|v| !v.is_empty());
        out.insert(
            key.clone(),
            Stuck {
                namespace: key.0.clone(),
                cronjob: cronjob.clone(),
                job: key.1.clone(),
                started,
                schedule: label("schedule").cloned(),
                policy: label("concurrency_policy").cloned(),
                last_success: success.get(&cj).copied(),
            },
        );
    }
    out.into_values().collect()
}

/// The fact of `s` at `now`, when it has run longer than its interval.
pub fn fact(s: &Stuck, now: f64) -> Option<Fact> {
    let running = now - s.started;
    let learned = s.schedule.as_deref().and_then(cron::interval);
    let interval = learned.unwrap_or(DEFAULT_INTERVAL);
    if !running.is_finite() || running <= interval + SLACK {
        return None;
    }
    let due = (running / interval).floor().clamp(0.0, 1e6) as u64;
    let (what_then, severity) = consequence(s.policy.as_deref(), due);
    let mut detail = format!("Job {}/{} active; {what_then}", s.namespace, s.job);
    match (&s.schedule, learned) {
        (Some(sched), Some(_)) => detail.push_str(&format!(
            "; schedule \"{sched}\" (every {})",
            human_seconds(interval)
        )),
        (Some(sched), None) => {
            detail.push_str(&format!("; schedule \"{sched}\" (a daily run assumed)"))
        }
        (None, _) => detail.push_str("; no schedule known (a daily run assumed)"),
    }
    if let Some(t) = s.last_success.and_then(time_of) {
        detail.push_str(&format!(
            "; last success {} ({} ago)",
            t.format("%Y-%m-%d %H:%M UTC"),
            human_seconds((now - s.last_success.unwrap_or(now)).max(0.0))
        ));
    }
    let labels = BTreeMap::from([
        ("namespace".to_string(), s.namespace.clone()),
        ("cronjob".to_string(), s.cronjob.clone()),
        ("job_name".to_string(), s.job.clone()),
    ]);
    let query = format!(
        "time() - kube_job_status_start_time{}",
        selector([
            ("namespace", s.namespace.as_str()),
            ("job_name", s.job.as_str())
        ])
    );
    Some(
        Fact::new(
            FactClass::Kubernetes,
            NAME,
            Entity::new("cronjob", format!("{}/{}", s.namespace, s.cronjob)).with_labels(labels),
            format!("job {} still running after", s.job),
            severity,
            Source::promql(&query),
        )
        .value(Quantity::seconds(running))
        .limit(Quantity::seconds(interval))
        .since(time_of(s.started))
        .detail(detail),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::Severity;
    use crate::integrations::prometheus::Labels;

    fn sample(name: &str, labels: &[(&str, &str)], value: f64) -> Sample {
        let mut metric: Labels = labels
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        metric.insert("__name__".into(), name.into());
        Sample {
            metric,
            value,
            ts: NOW,
        }
    }

    const NOW: f64 = 1_800_000_000.0;

    fn world(started_ago: f64, policy: &str, schedule: &str) -> Vec<Stuck> {
        let job = [("namespace", "media"), ("job_name", "thumbs-28777140")];
        let cj = [
            ("namespace", "media"),
            ("cronjob", "thumbs"),
            ("schedule", schedule),
            ("concurrency_policy", policy),
        ];
        join(
            &[
                sample("kube_job_status_active", &job, 1.0),
                // A finished Job of another CronJob is not active.
                sample(
                    "kube_job_status_active",
                    &[("namespace", "media"), ("job_name", "other-1")],
                    0.0,
                ),
            ],
            &[sample(
                "kube_job_owner",
                &[
                    ("namespace", "media"),
                    ("job_name", "thumbs-28777140"),
                    ("owner_kind", "CronJob"),
                    ("owner_name", "thumbs"),
                    ("owner_is_controller", "true"),
                ],
                1.0,
            )],
            &[sample(
                "kube_job_status_start_time",
                &job,
                NOW - started_ago,
            )],
            &[sample("kube_cronjob_info", &cj, 1.0)],
            &[sample(
                "kube_cronjob_status_last_successful_time",
                &[("namespace", "media"), ("cronjob", "thumbs")],
                NOW - started_ago - 3600.0,
            )],
        )
    }

    #[test]
    fn a_run_held_past_several_intervals_under_forbid_is_critical_with_the_runs_skipped() {
        let stuck = world(6.5 * 3600.0, "Forbid", "0 */2 * * *");
        assert_eq!(stuck.len(), 1, "the owned active Job only: {stuck:?}");
        let f = fact(&stuck[0], NOW).expect("a fact");
        assert_eq!(f.entity.name, "media/thumbs");
        assert_eq!(f.entity.labels["job_name"], "thumbs-28777140");
        assert_eq!(f.severity, Severity::Critical);
        assert_eq!(f.what, "job thumbs-28777140 still running after");
        assert_eq!(f.value.unwrap().value, 6.5 * 3600.0);
        assert_eq!(f.limit.unwrap().value, 7200.0);
        let d = f.detail.unwrap();
        assert!(d.contains("Forbid: 3 runs due since were skipped"), "{d}");
        assert!(d.contains("schedule \"0 */2 * * *\""), "{d}");
        assert!(d.contains("last success"), "{d}");
        assert_eq!(f.since.unwrap().timestamp(), (NOW - 6.5 * 3600.0) as i64);
    }

    #[test]
    fn a_run_within_its_interval_or_under_allow_is_no_outage() {
        let within = world(40.0 * 60.0, "Forbid", "0 */2 * * *");
        assert!(fact(&within[0], NOW).is_none());
        let allow = world(5.0 * 3600.0, "Allow", "0 * * * *");
        let f = fact(&allow[0], NOW).expect("a fact");
        assert_eq!(f.severity, Severity::Warning);
        assert!(f.detail.unwrap().contains("started beside it"));
        // Without a readable schedule a daily run is assumed.
        let unread = world(30.0 * 3600.0, "Forbid", "whenever");
        let f = fact(&unread[0], NOW).expect("a fact");
        assert!(f.detail.unwrap().contains("a daily run assumed"));
    }
}
