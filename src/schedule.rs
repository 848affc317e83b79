//! Cron jobs: the weekly report (with catch-up of a report missed while the daemon was
//! down) and, per `[[schedules]]` entry, an investigation. They run on tokio-cron-scheduler's
//! `JobScheduler` as one-shot jobs, each re-armed for its next fire time when it fires.
//!
//! Fire times are computed with croner (the parser tokio-cron-scheduler uses) in the job's
//! own time zone at each step, so a job stays at its wall-clock time across DST changes.
//! (tokio-cron-scheduler 0.15's own `new_async_tz` cron jobs fix the UTC offset when the
//! job is created and drift by an hour after a change.)

use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use chrono::{DateTime, SubsecRound, Utc};
use chrono_tz::Tz;
use futures::future::BoxFuture;
use tokio_cron_scheduler::{Job, JobScheduler, JobSchedulerError};
use tokio_util::task::TaskTracker;

use crate::report::model::{Report, ReportTrigger};
use crate::report::period::{PeriodSpec, ReportPeriod};
use crate::report::{ReportRequest, Reporter};
use crate::telemetry::supervise::contained;
use crate::telemetry::{Metrics, Task};

/// A cron job that could not be created or armed.
#[derive(Debug, thiserror::Error)]
pub enum ScheduleError {
    #[error("{what}: {source}")]
    Scheduler {
        what: String,
        #[source]
        source: tokio_cron_scheduler::JobSchedulerError,
    },
    #[error("{0}: the cron expression has no future fire time")]
    NoFireTime(String),
}

impl ScheduleError {
    fn scheduler(what: impl Into<String>) -> impl FnOnce(JobSchedulerError) -> Self {
        let what = what.into();
        move |source| Self::Scheduler { what, source }
    }
}

/// A parsed 6-field cron expression evaluated in a time zone.
#[derive(Clone, Debug)]
pub struct CronJob {
    pub name: String,
    cron: croner::Cron,
    tz: Tz,
}

impl CronJob {
    pub fn parse(name: &str, expr: &str, tz: Tz) -> Result<Self, String> {
        let cron = crate::config::parse_cron(expr)
            .map_err(|e| format!("{name}: invalid cron {expr:?}{e}"))?;
        Ok(Self {
            name: name.to_string(),
            cron,
            tz,
        })
    }

    /// The first fire time strictly after `t`.
    pub fn next_after(&self, t: DateTime<Utc>) -> Option<DateTime<Utc>> {
        // Whole seconds: croner keeps the sub-second part of its input.
        self.cron
            .find_next_occurrence(&t.trunc_subsecs(0).with_timezone(&self.tz), false)
            .ok()
            .map(|d| d.with_timezone(&Utc))
    }

    /// The last fire time at or before `t`.
    pub fn previous_before(&self, t: DateTime<Utc>) -> Option<DateTime<Utc>> {
        self.cron
            .find_previous_occurrence(&t.trunc_subsecs(0).with_timezone(&self.tz), true)
            .ok()
            .map(|d| d.with_timezone(&Utc))
    }
}

/// What a job does at a fire time (the planned time, which the scheduler may hit up to a
/// second early).
type FireFnInner = dyn Fn(DateTime<Utc>) -> BoxFuture<'static, ()> + Send + Sync;
type FireFn = Arc<FireFnInner>;

/// The daemon's cron jobs on one `JobScheduler`. The work of each fire runs on the
/// daemon's task tracker, so shutdown drains it like any other background work.
///
/// The scheduler's jobs only hold weak references to their work: tokio-cron-scheduler
/// keeps job closures after `shutdown`, and they hold the store, which must close when the
/// daemon stops (sled locks its directory until then).
pub struct Scheduler {
    jobs: JobScheduler,
    tracker: TaskTracker,
    fires: Vec<FireFn>,
    /// Counts a fire whose work panicked (contained to that fire).
    metrics: Arc<Metrics>,
}

impl Scheduler {
    pub async fn start(tracker: TaskTracker, metrics: Arc<Metrics>) -> Result<Self, ScheduleError> {
        let jobs = JobScheduler::new()
            .await
            .map_err(ScheduleError::scheduler("cannot create the job scheduler"))?;
        jobs.start()
            .await
            .map_err(ScheduleError::scheduler("cannot start the job scheduler"))?;
        Ok(Self {
            jobs,
            tracker,
            fires: Vec::new(),
            metrics,
        })
    }

    /// Runs `fire` at every fire time of `job` from now on.
    pub async fn add<F, Fut>(&mut self, job: CronJob, fire: F) -> Result<(), ScheduleError>
    where
        F: Fn(DateTime<Utc>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let metrics = self.metrics.clone();
        let fire: FireFn = Arc::new(move |t| {
            let (work, metrics) = (fire(t), metrics.clone());
            Box::pin(async move {
                contained(Task::Schedule, &metrics, work).await;
            })
        });
        let Some(first) = job.next_after(Utc::now()) else {
            return Err(ScheduleError::NoFireTime(job.name));
        };
        tracing::info!(job = %job.name, next = %first, "cron job scheduled");
        let weak = Arc::downgrade(&fire);
        self.fires.push(fire);
        arm(&self.jobs, Arc::new(job), weak, self.tracker.clone(), first).await
    }

    /// Stops firing; work already started keeps running on the tracker.
    pub async fn shutdown(mut self) {
        self.fires.clear();
        if let Err(e) = self.jobs.shutdown().await {
            tracing::warn!(error = %e, "job scheduler did not shut down cleanly");
        }
    }
}

/// Adds the one-shot job for `at`; when it fires it arms the following fire time first,
/// then runs the work.
fn arm(
    jobs: &JobScheduler,
    job: Arc<CronJob>,
    fire: Weak<FireFnInner>,
    tracker: TaskTracker,
    at: DateTime<Utc>,
) -> BoxFuture<'static, Result<(), ScheduleError>> {
    let jobs = jobs.clone();
    Box::pin(async move {
        // The scheduler stores whole seconds (rounded down) and ticks twice a second, so
        // asking one second late makes the job fire at or just after `at`, never before.
        let wait = (at - Utc::now()).to_std().unwrap_or_default() + Duration::from_secs(1);
        let name = job.name.clone();
        let one_shot = Job::new_one_shot_at_instant_async(Instant::now() + wait, move |_, jobs| {
            let (job, fire, tracker) = (job.clone(), fire.clone(), tracker.clone());
            Box::pin(async move {
                let Some(work) = fire.upgrade() else {
                    return; // the scheduler has shut down
                };
                tracing::info!(job = %job.name, %at, "cron job fires");
                match job.next_after(at) {
                    Some(next) => {
                        if let Err(e) =
                            arm(&jobs, job.clone(), fire.clone(), tracker.clone(), next).await
                        {
                            tracing::error!(job = %job.name, error = %e, "cannot re-arm cron job");
                        }
                    }
                    None => {
                        tracing::warn!(job = %job.name, "cron expression has no further fire time")
                    }
                }
                tracker.spawn(work(at));
            })
        })
        .map_err(ScheduleError::scheduler(format!(
            "{name}: cannot create the job"
        )))?;
        jobs.add(one_shot)
            .await
            .map_err(ScheduleError::scheduler(format!(
                "{name}: cannot add the job"
            )))?;
        Ok(())
    })
}

/// The weekly report job from `[report]`.
pub fn report_job(reporter: &Reporter, expr: &str) -> Result<CronJob, String> {
    CronJob::parse("weekly report", expr, reporter.timezone())
}

/// The fire time whose report is missing: the most recent one at or before `now`, when its
/// period has no report delivered, queued or being sent. None when there is nowhere to
/// deliver reports.
pub fn missed_fire(
    job: &CronJob,
    reporter: &Reporter,
    now: DateTime<Utc>,
) -> Result<Option<DateTime<Utc>>, crate::store::StoreError> {
    if !reporter.can_send() {
        return Ok(None);
    }
    let Some(fire) = job.previous_before(now) else {
        return Ok(None);
    };
    let period = reporter.window(PeriodSpec::Last, fire).period;
    Ok(reporter
        .store()
        .delivered(period)?
        .is_none()
        .then_some(fire))
}

/// Produces and sends (through the outbox) the report of the fire time `now`, unless its
/// period already has one delivered, queued or being sent (then None).
pub async fn report_for_fire(
    reporter: &Reporter,
    trigger: ReportTrigger,
    now: DateTime<Utc>,
) -> Option<Report> {
    let period: ReportPeriod = reporter.window(PeriodSpec::Last, now).period;
    match reporter.store().delivered(period) {
        Ok(Some(d)) => {
            tracing::info!(%period, report = %d.report_id, state = ?d.state, "this period already has its report");
            return None;
        }
        Ok(None) => {}
        Err(e) => tracing::error!(error = %e, "cannot read delivered reports; generating anyway"),
    }
    let req = ReportRequest {
        trigger,
        period: PeriodSpec::Last,
        now,
        send: true,
    };
    match reporter.run(req).await {
        Ok(r) => Some(r),
        Err(e) => {
            tracing::error!(error = %e, %period, "weekly report failed");
            None
        }
    }
}

/// Adds the weekly report to `scheduler`, after producing a report missed while the
/// daemon was down (catch-up, on the tracker).
pub async fn add_reports(scheduler: &mut Scheduler, reporter: Reporter, expr: &str) {
    let job = match report_job(&reporter, expr) {
        Ok(j) => j,
        Err(e) => {
            tracing::error!(error = %e, "report schedule disabled");
            return;
        }
    };
    match missed_fire(&job, &reporter, Utc::now()) {
        Ok(Some(fire)) => {
            tracing::info!(%fire, "catching up the report missed while sre-agent was down");
            let (reporter, metrics) = (reporter.clone(), scheduler.metrics.clone());
            scheduler.tracker.spawn(async move {
                let work = report_for_fire(&reporter, ReportTrigger::Catchup, fire);
                contained(Task::Schedule, &metrics, work).await;
            });
        }
        Ok(None) => {}
        Err(e) => tracing::error!(error = %e, "cannot check for a missed report"),
    }
    let added = scheduler
        .add(job, move |at| {
            let reporter = reporter.clone();
            async move {
                report_for_fire(&reporter, ReportTrigger::Schedule, at).await;
            }
        })
        .await;
    if let Err(e) = added {
        tracing::error!(error = %e, "report schedule disabled");
    }
}

/// One investigation per fire of a `[[schedules]]` entry, unless a daily budget is used up
/// (then it is skipped: `SubmitError::OverBudget`, counted in
/// `sre_agent_budget_rejections_total{trigger="schedule"}`).
pub async fn submit_scheduled(
    dispatcher: &crate::agent::Dispatcher,
    entry: &crate::config::ScheduleConfig,
) -> Result<crate::agent::Investigation, crate::agent::SubmitError> {
    dispatcher
        .submit(crate::agent::InvestigationRequest {
            trigger: crate::agent::Trigger::Schedule,
            title: entry.name.clone(),
            prompt: entry.prompt.clone(),
            context: None,
            group_key: None,
        })
        .await
}

/// Adds a cron job per `[[schedules]]` entry to `scheduler`.
pub async fn add_investigations(
    scheduler: &mut Scheduler,
    dispatcher: &crate::agent::Dispatcher,
    schedules: &[crate::config::ScheduleConfig],
) {
    for entry in schedules.iter().cloned() {
        let job = match CronJob::parse(&entry.name, &entry.cron.0, entry.timezone.0) {
            Ok(j) => j,
            Err(e) => {
                tracing::error!(error = %e, "scheduled investigation disabled");
                continue;
            }
        };
        let dispatcher = dispatcher.clone();
        let name = entry.name.clone();
        let added = scheduler
            .add(job, move |_| {
                let dispatcher = dispatcher.clone();
                let entry = entry.clone();
                async move {
                    match submit_scheduled(&dispatcher, &entry).await {
                        Ok(i) => tracing::info!(schedule = %entry.name, id = %i.id, "scheduled investigation queued"),
                        Err(crate::agent::SubmitError::OverBudget(e)) => tracing::warn!(schedule = %entry.name, reason = %e, "scheduled investigation skipped: over the daily budget"),
                        Err(e) => tracing::error!(schedule = %entry.name, error = %e, "cannot queue scheduled investigation"),
                    }
                }
            })
            .await;
        if let Err(e) = added {
            tracing::error!(schedule = %name, error = %e, "scheduled investigation disabled");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn utc(s: &str) -> DateTime<Utc> {
        s.parse().unwrap()
    }

    #[test]
    fn a_weekly_job_keeps_its_wall_clock_time_across_a_dst_change() {
        let job = CronJob::parse("r", "0 0 8 * * Mon", chrono_tz::Europe::Berlin).unwrap();
        // Before the switch Berlin is UTC+1, after it UTC+2.
        assert_eq!(
            job.next_after(utc("2026-03-20T00:00:00Z")),
            Some(utc("2026-03-23T07:00:00Z"))
        );
        assert_eq!(
            job.next_after(utc("2026-03-27T00:00:00Z")),
            Some(utc("2026-03-30T06:00:00Z"))
        );
    }

    #[test]
    fn the_previous_fire_time_includes_the_current_instant() {
        let job = CronJob::parse("r", "0 0 8 * * Mon", chrono_tz::UTC).unwrap();
        assert_eq!(
            job.previous_before(utc("2026-11-25T12:00:00Z")),
            Some(utc("2026-11-23T08:00:00Z"))
        );
        assert_eq!(
            job.previous_before(utc("2026-11-23T08:00:00Z")),
            Some(utc("2026-11-23T08:00:00Z"))
        );
    }

    #[tokio::test]
    async fn the_scheduler_fires_at_each_second_re_arms_and_stops_at_shutdown() {
        let tracker = TaskTracker::new();
        let metrics = Arc::new(Metrics::new("m"));
        let mut scheduler = Scheduler::start(tracker.clone(), metrics).await.unwrap();
        let fired = Arc::new(std::sync::Mutex::new(Vec::new()));
        let job = CronJob::parse("tick", "* * * * * *", chrono_tz::UTC).unwrap();
        let log = fired.clone();
        scheduler
            .add(job, move |at| {
                let log = log.clone();
                async move { log.lock().unwrap().push((at, Utc::now())) }
            })
            .await
            .unwrap();
        tokio::time::sleep(std::time::Duration::from_millis(3500)).await;
        scheduler.shutdown().await;
        let after_shutdown = fired.lock().unwrap().len();
        let fires = fired.lock().unwrap().clone();
        assert!(fires.len() >= 2, "fired {fires:?}");
        assert!(
            fires.iter().all(|(at, ran)| ran >= at),
            "fired early: {fires:?}"
        );
        let times: Vec<_> = fires.iter().map(|(at, _)| *at).collect();
        assert!(
            times
                .windows(2)
                .all(|w| w[1] - w[0] == chrono::TimeDelta::seconds(1))
        );
        assert!(times.iter().all(|t| t.timestamp_subsec_nanos() == 0));
        tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
        assert_eq!(fired.lock().unwrap().len(), after_shutdown);
    }

    #[test]
    fn a_five_field_cron_is_rejected_with_the_job_name() {
        let err = CronJob::parse("nightly", "0 8 * * Mon", chrono_tz::UTC).unwrap_err();
        assert!(err.contains("nightly") && err.contains("6 fields"), "{err}");
    }
}
