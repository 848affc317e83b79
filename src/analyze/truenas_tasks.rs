//! `truenas_tasks`: TrueNAS scheduled data-protection tasks (cloud sync, ZFS replication,
//! rsync) whose copy is getting old: the last run failed (with the error in the
//! middleware's words, untrusted and only in the detail), or the last successful run is
//! several of the schedule's periods old without a failure (the task stopped running).
//! The age of the last success is judged against the task's cron schedule (a replication
//! task without one runs after its periodic snapshot tasks, by theirs): overdue past
//! [`STALE_PERIODS`] periods, critical past [`CRITICAL_PERIODS`] (within bounds). When
//! the last run failed, the last success is looked for among the runs the middleware
//! still holds (`core/get_jobs`). A task with no run on record (the NAS restarted since)
//! says nothing; a healthy one is told only when the trigger is about it. A TrueNAS
//! without one of the task lists (404) passes it over.

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use serde_json::json;

use super::cron::interval;
use super::truenas::optional;
use super::{
    AnalyzeError, Analyzer, Entity, Fact, FactClass, Quantity, Scope, Severity, Source,
    human_seconds, keep_most_severe,
};
use crate::integrations::truenas::{TruenasClient, api_time};
use crate::integrations::truenas_tasks::{TaskKind, TruenasJob, TruenasSchedule, TruenasTask};

/// A last success older than this many periods is overdue.
pub const STALE_PERIODS: u64 = 3;
/// This many periods (within the bounds below) is critical.
pub const CRITICAL_PERIODS: u64 = 8;
const CRITICAL_MIN_SECS: u64 = 6 * 3600;
const CRITICAL_MAX_SECS: u64 = 3 * 86400;
/// The overdue limit is never shorter than this (a sync takes its time).
const STALE_MIN_SECS: u64 = 3600;
/// Added to the limit of a schedule restricted to some weekdays (a weekend's gap).
const WEEKDAYS_SLACK_SECS: u64 = 2 * 86400;
const DAY: u64 = 86400;
/// Most facts.
const MAX_FACTS: usize = 40;

pub struct TruenasTasks(pub Arc<TruenasClient>);

/// What a task's last runs say.
#[derive(Debug, PartialEq)]
pub(super) struct Judged {
    pub what: String,
    pub severity: Severity,
    /// Seconds since the last successful run ended.
    pub age: Option<u64>,
    pub stale_after: Option<u64>,
    pub since: Option<DateTime<Utc>>,
    pub detail: String,
}

/// The usual gap between runs of `s`, in seconds: a day at least when its hours are a
/// list or range or a time window narrows the day (the night's gap is the longest).
fn schedule_period(s: &TruenasSchedule) -> Option<u64> {
    let base = interval(&s.cron()).filter(|p| p.is_finite() && *p >= 1.0)? as u64;
    let hour = s.hour_field();
    let uneven = (hour.contains(',') || hour.contains('-')) && !hour.contains('/');
    let base = match uneven || s.windowed() {
        true => base.max(DAY),
        false => base,
    };
    // Some weekdays (`1-5`) run daily on those days; the weekend's gap is slack.
    Some(match s.dow_field() != "*" && base > DAY && base < 7 * DAY {
        true => DAY,
        false => base,
    })
}

/// The task's schedule and its period: its own, else the shortest of its periodic
/// snapshot tasks' (a replication task run after them).
fn schedule(task: &TruenasTask) -> Option<(String, u64, bool)> {
    let own = task.schedule.iter();
    let periodic = task
        .periodic_snapshot_tasks
        .iter()
        .flatten()
        .filter_map(|p| p.schedule.as_ref());
    own.chain(periodic)
        .filter_map(|s| Some((s.cron(), schedule_period(s)?, s.dow_field() != "*")))
        .min_by_key(|(_, p, _)| *p)
}

/// "2026-11-27 03:00 UTC".
fn when(t: DateTime<Utc>) -> String {
    t.format("%Y-%m-%d %H:%M UTC").to_string()
}

/// Seconds from `t` to `now` (0 for a time ahead).
fn secs_since(now: DateTime<Utc>, t: DateTime<Utc>) -> u64 {
    u64::try_from(now.signed_duration_since(t).num_seconds()).unwrap_or(0)
}

/// Judges `task` of `kind` at `now`; `last_success` is the end of its last successful run
/// found among the middleware's jobs. `None` for a disabled task or one with no run on
/// record.
pub(super) fn judge(
    kind: TaskKind,
    task: &TruenasTask,
    last_success: Option<DateTime<Utc>>,
    now: DateTime<Utc>,
) -> Option<Judged> {
    if !task.enabled {
        return None;
    }
    let job = task.job.as_ref();
    let job_state = job.and_then(|j| j.state.as_deref()).unwrap_or("");
    let repl = task.state.as_ref();
    let repl_state = repl.and_then(|r| r.state.as_deref()).unwrap_or("");
    let repl_at = repl.and_then(|r| api_time(r.datetime.as_ref()?));
    let clean = |e: Option<&str>| {
        e.map(|e| e.split_whitespace().collect::<Vec<_>>().join(" "))
            .filter(|e| !e.is_empty())
    };
    let failed = matches!(job_state, "FAILED" | "ABORTED") || repl_state == "ERROR";
    let error = clean(job.and_then(|j| j.error.as_deref()))
        .or_else(|| clean(repl.and_then(|r| r.error.as_deref())));
    let success = match (job_state, repl_state) {
        ("SUCCESS", _) => job.and_then(TruenasJob::finished),
        (_, "FINISHED") => repl_at,
        _ => None,
    }
    .or(last_success);
    let failed_at = match failed {
        true => job
            .and_then(|j| j.finished().or(j.started()))
            .or(repl_at.filter(|_| repl_state == "ERROR")),
        false => None,
    };
    let running = matches!(job_state, "RUNNING" | "WAITING") || repl_state == "RUNNING";
    if success.is_none() && !failed {
        return None;
    }
    let sched = schedule(task);
    let stale_after = sched.as_ref().map(|(_, p, weekdays)| {
        let limit = p.saturating_mul(STALE_PERIODS).max(STALE_MIN_SECS);
        match weekdays {
            true => limit.saturating_add(WEEKDAYS_SLACK_SECS),
            false => limit,
        }
    });
    let critical_after = sched.as_ref().zip(stale_after).map(|((_, p, _), stale)| {
        p.saturating_mul(CRITICAL_PERIODS)
            .clamp(CRITICAL_MIN_SECS, CRITICAL_MAX_SECS)
            .max(stale.saturating_add(*p))
    });
    let age = success.map(|s| secs_since(now, s));
    let overdue = age.zip(stale_after).is_some_and(|(a, s)| a > s);
    let critical = age.zip(critical_after).is_some_and(|(a, c)| a > c);
    let words = kind.words();
    let (what, severity) = match (failed, overdue) {
        (true, _) => (format!("{words} task failing"), Severity::Warning),
        (false, true) => (format!("{words} task overdue"), Severity::Warning),
        (false, false) => (format!("{words} task"), Severity::Info),
    };
    let severity = match critical && severity > Severity::Info {
        true => Severity::Critical,
        false => severity,
    };
    let what = match age {
        Some(_) => format!("{what}, last success"),
        None => format!("{what}, no success on record"),
    };
    let mut parts = Vec::new();
    let expected = match &sched {
        Some((cron, p, _)) => format!(
            " (expected every {}, schedule {cron})",
            human_seconds(*p as f64)
        ),
        None => String::new(),
    };
    match (success, age) {
        (Some(s), Some(a)) => parts.push(format!(
            "last successful run {} ago, {}{expected}",
            human_seconds(a as f64),
            when(s)
        )),
        _ => parts.push(format!(
            "no successful run on record since the NAS started{expected}"
        )),
    }
    if failed {
        let verb = match job_state {
            "ABORTED" => "was aborted",
            _ => "failed",
        };
        let at = failed_at
            .map(|t| format!(" {}", when(t)))
            .unwrap_or_default();
        let why = error.map(|e| format!(": {e}")).unwrap_or_default();
        parts.push(format!("last run{at} {verb}{why}"));
    }
    if running && let Some(t) = job.and_then(TruenasJob::started) {
        parts.push(format!("a run is going since {}", when(t)));
    }
    if let Some(snap) = repl
        .and_then(|r| r.last_snapshot.as_deref())
        .filter(|s| !s.is_empty())
    {
        parts.push(format!("last snapshot sent {snap}"));
    }
    Some(Judged {
        what,
        severity,
        age,
        stale_after,
        since: success,
        detail: parts.join("; "),
    })
}

/// The task as an entity, with the pool its path or datasets live on as related.
fn entity(kind: TaskKind, task: &TruenasTask) -> (Entity, Option<Entity>) {
    let mut labels = BTreeMap::from([
        ("task_type".to_string(), kind.path().to_string()),
        ("task_id".to_string(), task.id_text()),
    ]);
    if let Some(p) = task.path.as_deref().filter(|p| !p.is_empty()) {
        labels.insert("path".into(), p.to_string());
    }
    if let Some(h) = task.remotehost.as_deref().filter(|h| !h.is_empty()) {
        labels.insert("remotehost".into(), h.to_string());
    }
    let datasets = task.source_datasets.clone().unwrap_or_default();
    if let Some(d) = datasets.first() {
        labels.insert("dataset".into(), d.clone());
    }
    if let Some(t) = task.target_dataset.as_deref().filter(|t| !t.is_empty()) {
        labels.insert("target_dataset".into(), t.to_string());
    }
    // `/mnt/tank/photos` and `tank/photos` live on pool `tank` (a push's source).
    let pool = match task.path.as_deref() {
        Some(p) => p.strip_prefix("/mnt/").and_then(|r| r.split('/').next()),
        None => datasets.first().and_then(|d| d.split('/').next()),
    }
    .filter(|p| !p.is_empty())
    .map(|p| {
        Entity::new("pool", p).with_labels(BTreeMap::from([("pool".to_string(), p.to_string())]))
    });
    let e = Entity::new("task", task.label(kind)).with_labels(labels);
    (e, pool)
}

#[async_trait]
impl Analyzer for TruenasTasks {
    fn name(&self) -> &'static str {
        "truenas_tasks"
    }

    async fn run(&self, scope: &Scope) -> Result<Vec<Fact>, AnalyzeError> {
        let c = &self.0;
        let mut facts = Vec::new();
        for kind in TaskKind::ALL {
            let Some(tasks) = optional(c.tasks(kind).await)? else {
                continue;
            };
            let failing = |t: &TruenasTask| {
                let job = t.job.as_ref().and_then(|j| j.state.as_deref());
                let repl = t.state.as_ref().and_then(|s| s.state.as_deref());
                t.enabled && (matches!(job, Some("FAILED" | "ABORTED")) || repl == Some("ERROR"))
            };
            // The middleware's successful runs, read only when a last run failed.
            let runs = match tasks.iter().any(failing) {
                true => c.successful_runs(kind).await.unwrap_or_default(),
                false => Vec::new(),
            };
            for task in &tasks {
                let last_success = runs
                    .iter()
                    .filter(|j| j.runs_task(&task.id))
                    .filter_map(TruenasJob::finished)
                    .max();
                let Some(j) = judge(kind, task, last_success, scope.now) else {
                    continue;
                };
                let (entity, pool) = entity(kind, task);
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
                    Source::new("truenas_tasks", json!({})),
                )
                .since(j.since)
                .detail(j.detail);
                if let Some(a) = j.age {
                    fact = fact.value(Quantity::seconds(a as f64));
                    if let Some(s) = j.stale_after {
                        fact = fact.limit(Quantity::seconds(s as f64));
                    }
                }
                if let Some(p) = pool {
                    fact = fact.related(p);
                }
                facts.push(fact);
            }
        }
        keep_most_severe(&mut facts, MAX_FACTS);
        Ok(facts)
    }
}

#[cfg(test)]
mod tests;
