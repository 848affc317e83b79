//! `kube_state_suspended`: CronJobs suspended and forgotten, from kube-state-metrics:
//! `kube_cronjob_spec_suspend` 1, the last run from `kube_cronjob_status_last_successful_time`
//! (else `kube_cronjob_status_last_schedule_time`, else `kube_cronjob_created`), the schedule
//! from `kube_cronjob_info`. How it is judged is `cron/suspended.rs`'s; `stale_jobs` leaves
//! suspended CronJobs out of its overdue jobs.

use std::collections::{BTreeMap, HashMap};

use async_trait::async_trait;

use super::{Prom, selector};
use crate::analyze::cron::suspended::{self, Suspended};
use crate::analyze::{AnalyzeError, Analyzer, Fact, Scope, Source, keep_most_severe};
use crate::integrations::prometheus::Sample;

const NAME: &str = "kube_state_suspended";
/// Most facts.
const MAX_FACTS: usize = 20;
const SUCCESS: &str = "kube_cronjob_status_last_successful_time";
const SCHEDULED: &str = "kube_cronjob_status_last_schedule_time";
const CREATED: &str = "kube_cronjob_created";

pub struct KubeStateSuspended(pub Prom);

#[async_trait]
impl Analyzer for KubeStateSuspended {
    fn name(&self) -> &'static str {
        NAME
    }

    async fn run(&self, scope: &Scope) -> Result<Vec<Fact>, AnalyzeError> {
        let suspend = self.0.vector("kube_cronjob_spec_suspend == 1").await?;
        if suspend.is_empty() {
            return Ok(Vec::new());
        }
        let (success, scheduled, created, info) = tokio::join!(
            self.0.vector(SUCCESS),
            self.0.vector(SCHEDULED),
            self.0.vector(CREATED),
            self.0.vector("kube_cronjob_info"),
        );
        let found = join(
            &suspend,
            &success.unwrap_or_default(),
            &scheduled.unwrap_or_default(),
            &created.unwrap_or_default(),
            &info.unwrap_or_default(),
        );
        let now = scope.now.timestamp_millis() as f64 / 1000.0;
        let mut facts: Vec<Fact> = found.iter().filter_map(|s| fact(s, now)).collect();
        keep_most_severe(&mut facts, MAX_FACTS);
        Ok(facts)
    }
}

/// `(namespace, cronjob)` of a series.
fn key(s: &Sample) -> Option<(String, String)> {
    Some((
        s.metric.get("namespace")?.clone(),
        s.metric.get("cronjob")?.clone(),
    ))
}

/// The suspended CronJobs among `suspend` (samples of `kube_cronjob_spec_suspend`), with
/// what kube-state-metrics tells of their runs and schedule.
pub fn join(
    suspend: &[Sample],
    success: &[Sample],
    scheduled: &[Sample],
    created: &[Sample],
    info: &[Sample],
) -> Vec<Suspended> {
    let times = |v: &[Sample]| -> HashMap<(String, String), f64> {
        v.iter()
            .filter(|s| s.value.is_finite() && s.value > 0.0)
            .filter_map(|s| Some((key(s)?, s.value)))
            .collect()
    };
    let (success, scheduled, created) = (times(success), times(scheduled), times(created));
    let schedule: HashMap<(String, String), String> = info
        .iter()
        .filter_map(|s| Some((key(s)?, s.metric.get("schedule")?.clone())))
        .filter(|(_, v)| !v.is_empty())
        .collect();
    let mut out: BTreeMap<(String, String), Suspended> = BTreeMap::new();
    for s in suspend.iter().filter(|s| s.value == 1.0) {
        let Some(k) = key(s) else { continue };
        out.insert(
            k.clone(),
            Suspended {
                namespace: k.0.clone(),
                name: k.1.clone(),
                schedule: schedule.get(&k).cloned(),
                last_success: success.get(&k).copied(),
                last_schedule: scheduled.get(&k).copied(),
                created: created.get(&k).copied(),
            },
        );
    }
    out.into_values().collect()
}

/// The fact of `s` at `now`, shown by the age of the series its last run came from.
pub fn fact(s: &Suspended, now: f64) -> Option<Fact> {
    let metric = match (s.last_success, s.last_schedule) {
        (Some(_), _) => SUCCESS,
        (None, Some(_)) => SCHEDULED,
        (None, None) => CREATED,
    };
    let sel = selector([
        ("namespace", s.namespace.as_str()),
        ("cronjob", s.name.as_str()),
    ]);
    let query = format!(
        "time() - {metric}{sel} and on(namespace, cronjob) kube_cronjob_spec_suspend{sel} == 1"
    );
    suspended::fact(s, now, NAME, Source::promql(&query))
}

#[cfg(test)]
mod tests;
