//! Cron jobs: the weekly report (with catch-up of a report missed while the daemon was
//! down) and, per `[[schedules]]` entry, an investigation.
//!
//! Next fire times are computed with croner (the parser tokio-cron-scheduler uses) in the
//! job's own time zone at each step, so a job stays at its wall-clock time across DST
//! changes (tokio-cron-scheduler 0.15's `new_async_tz` fixes the UTC offset when the job is
//! created, which drifts by an hour after a change).

use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use tokio_util::sync::CancellationToken;

use crate::report::model::{Report, ReportTrigger};
use crate::report::period::{PeriodSpec, ReportPeriod};
use crate::report::{ReportRequest, Reporter};

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
        self.cron
            .find_next_occurrence(&t.with_timezone(&self.tz), false)
            .ok()
            .map(|d| d.with_timezone(&Utc))
    }

    /// The last fire time at or before `t`.
    pub fn previous_before(&self, t: DateTime<Utc>) -> Option<DateTime<Utc>> {
        self.cron
            .find_previous_occurrence(&t.with_timezone(&self.tz), true)
            .ok()
            .map(|d| d.with_timezone(&Utc))
    }

    /// Calls `fire` at each fire time until `token` is cancelled.
    pub async fn run<F, Fut>(self, token: CancellationToken, mut fire: F)
    where
        F: FnMut(DateTime<Utc>) -> Fut,
        Fut: Future<Output = ()>,
    {
        let mut after = Utc::now();
        while let Some(next) = self.next_after(after) {
            let wait = (next - Utc::now()).to_std().unwrap_or_default();
            tokio::select! {
                _ = token.cancelled() => return,
                _ = tokio::time::sleep(wait) => {}
            }
            tracing::info!(job = %self.name, at = %next, "cron job fires");
            fire(next).await;
            after = next;
        }
        tracing::warn!(job = %self.name, "cron expression has no further fire time");
    }
}

/// The weekly report job from `[report]`.
pub fn report_job(reporter: &Reporter, expr: &str) -> Result<CronJob, String> {
    CronJob::parse("weekly report", expr, reporter.timezone())
}

/// The fire time whose report is missing: the most recent one at or before `now`, when its
/// period has not been delivered. None when there is nowhere to deliver reports.
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

/// Produces and sends the report of the fire time `now`, unless its period was already
/// delivered (then None).
pub async fn report_for_fire(
    reporter: &Reporter,
    trigger: ReportTrigger,
    now: DateTime<Utc>,
) -> Option<Report> {
    let period: ReportPeriod = reporter.window(PeriodSpec::Last, now).period;
    match reporter.store().delivered(period) {
        Ok(Some(d)) => {
            tracing::info!(%period, report = %d.report_id, "report for this period already sent");
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

/// Runs the weekly report schedule: catch-up first, then each fire time.
pub async fn run_reports(reporter: Reporter, expr: String, token: CancellationToken) {
    let job = match report_job(&reporter, &expr) {
        Ok(j) => j,
        Err(e) => {
            tracing::error!(error = %e, "report schedule disabled");
            return;
        }
    };
    match missed_fire(&job, &reporter, Utc::now()) {
        Ok(Some(fire)) => {
            tracing::info!(%fire, "catching up the report missed while sre-agent was down");
            report_for_fire(&reporter, ReportTrigger::Catchup, fire).await;
        }
        Ok(None) => {}
        Err(e) => tracing::error!(error = %e, "cannot check for a missed report"),
    }
    job.run(token, |_| async {
        report_for_fire(&reporter, ReportTrigger::Schedule, Utc::now()).await;
    })
    .await;
}

/// One investigation per fire of a `[[schedules]]` entry.
pub async fn submit_scheduled(
    dispatcher: &crate::agent::Dispatcher,
    entry: &crate::config::ScheduleConfig,
) -> Result<crate::agent::Investigation, crate::store::StoreError> {
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

/// Spawns a cron job per `[[schedules]]` entry on `tracker`.
pub fn spawn_investigations(
    state: &crate::app::AppState,
    tracker: &tokio_util::task::TaskTracker,
    token: &CancellationToken,
) {
    for entry in state.config.schedules.clone() {
        let job = match CronJob::parse(&entry.name, &entry.cron.0, entry.timezone.0) {
            Ok(j) => j,
            Err(e) => {
                tracing::error!(error = %e, "scheduled investigation disabled");
                continue;
            }
        };
        let dispatcher = state.dispatcher.clone();
        tracker.spawn(job.run(token.clone(), move |_| {
            let dispatcher = dispatcher.clone();
            let entry = entry.clone();
            async move {
                match submit_scheduled(&dispatcher, &entry).await {
                    Ok(i) => tracing::info!(schedule = %entry.name, id = %i.id, "scheduled investigation queued"),
                    Err(e) => tracing::error!(schedule = %entry.name, error = %e, "cannot queue scheduled investigation"),
                }
            }
        }));
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

    #[test]
    fn a_five_field_cron_is_rejected_with_the_job_name() {
        let err = CronJob::parse("nightly", "0 8 * * Mon", chrono_tz::UTC).unwrap_err();
        assert!(err.contains("nightly") && err.contains("6 fields"), "{err}");
    }
}
