//! A suspended CronJob (`spec.suspend: true`) forgotten: suspending is how a CronJob is
//! paused for maintenance, and nothing reminds anyone to resume it; the controller starts
//! no run and nothing fails, so no alert says so. What tells is how long ago its last run
//! was against its schedule: the runs it would have started since. One missed run is a
//! pause; several are a job that no longer runs. Read the same way from the API
//! (`kube/cronjobs.rs`) and from kube-state-metrics (`prom/kube_state_suspended.rs`).

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};

use super::{DEFAULT_INTERVAL, interval};
use crate::analyze::{Entity, Fact, FactClass, Quantity, Severity, Source, human_seconds};

/// Runs missed from which the fact is a warning (fewer: a recent pause, told as info).
const WARN_MISSED: u64 = 3;
/// Runs missed, over at least [`CRITICAL_AGE`] seconds, from which it is critical.
const CRITICAL_MISSED: u64 = 30;
const CRITICAL_AGE: f64 = 2.0 * 86400.0;

/// What is known of one suspended CronJob (times in Unix seconds).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Suspended {
    pub namespace: String,
    pub name: String,
    pub schedule: Option<String>,
    pub last_success: Option<f64>,
    pub last_schedule: Option<f64>,
    pub created: Option<f64>,
}

/// A time in Unix seconds, when it is one.
fn at(t: f64) -> Option<DateTime<Utc>> {
    if !t.is_finite() || t <= 0.0 || t > 1e11 {
        return None;
    }
    DateTime::from_timestamp(t as i64, 0)
}

/// The fact of `s` at `now` (Unix seconds) by `analyzer`, shown by `source`; `None` while
/// no scheduled run has been missed.
pub fn fact(s: &Suspended, now: f64, analyzer: &str, source: Source) -> Option<Fact> {
    let valid = |t: Option<f64>| t.filter(|t| at(*t).is_some() && *t <= now);
    let (last, what_run) = match (
        valid(s.last_success),
        valid(s.last_schedule),
        valid(s.created),
    ) {
        (Some(t), _, _) => (t, "no successful run since"),
        (None, Some(t), _) => (t, "no run scheduled since"),
        (None, None, Some(t)) => (t, "never run; created"),
        _ => return None,
    };
    let age = now - last;
    let learned = s.schedule.as_deref().and_then(interval);
    let every = learned.unwrap_or(DEFAULT_INTERVAL);
    if !age.is_finite() || every.is_nan() || every <= 0.0 {
        return None;
    }
    let missed = (age / every).floor().clamp(0.0, 1e9) as u64;
    if missed == 0 {
        return None;
    }
    let severity = match missed {
        m if m >= CRITICAL_MISSED && age >= CRITICAL_AGE => Severity::Critical,
        m if m >= WARN_MISSED => Severity::Warning,
        _ => Severity::Info,
    };
    let since = at(last)?;
    let runs = if missed == 1 { "run" } else { "runs" };
    let mut detail = format!(
        "CronJob {}/{} is suspended (spec.suspend: true); {what_run} {} ({}, {missed} \
         scheduled {runs} missed)",
        s.namespace,
        s.name,
        since.format("%Y-%m-%d %H:%M UTC"),
        human_seconds(age)
    );
    match (&s.schedule, learned) {
        (Some(sched), Some(i)) => detail.push_str(&format!(
            "; schedule \"{sched}\" (every {})",
            human_seconds(i)
        )),
        (Some(sched), None) => {
            detail.push_str(&format!("; schedule \"{sched}\" (a daily run assumed)"))
        }
        (None, _) => detail.push_str("; no schedule known (a daily run assumed)"),
    }
    let labels = BTreeMap::from([
        ("namespace".to_string(), s.namespace.clone()),
        ("cronjob".to_string(), s.name.clone()),
    ]);
    Some(
        Fact::new(
            FactClass::Kubernetes,
            analyzer,
            Entity::new("cronjob", format!("{}/{}", s.namespace, s.name)).with_labels(labels),
            "suspended (spec.suspend: true), scheduled runs missed",
            severity,
            source,
        )
        .value(Quantity::count(missed as f64))
        .since(Some(since))
        .figure("runs_missed", Quantity::count(missed as f64))
        .figure("since_last_run", Quantity::seconds(age))
        .figure("schedule_interval", Quantity::seconds(every))
        .detail(detail),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: f64 = 1_800_000_000.0;
    const DAY: f64 = 86400.0;

    fn suspended(schedule: &str, success_ago: Option<f64>) -> Suspended {
        Suspended {
            namespace: "backup".into(),
            name: "db-dump".into(),
            schedule: Some(schedule.into()),
            last_success: success_ago.map(|a| NOW - a),
            last_schedule: Some(NOW - 2.0 * DAY),
            created: Some(NOW - 400.0 * DAY),
        }
    }

    fn told(s: &Suspended) -> Option<Fact> {
        fact(s, NOW, "t", Source::promql("x"))
    }

    #[test]
    fn a_daily_job_suspended_for_weeks_tells_the_runs_it_missed() {
        let f = told(&suspended("30 2 * * *", Some(19.5 * DAY))).expect("a fact");
        assert_eq!(f.severity, Severity::Warning);
        assert_eq!(f.entity.name, "backup/db-dump");
        assert_eq!(f.figures["runs_missed"].value, 19.0);
        let d = f.detail.unwrap_or_default();
        assert!(
            d.starts_with(
                "CronJob backup/db-dump is suspended (spec.suspend: true); no successful run \
                 since 2026-12-26 "
            ),
            "{d}"
        );
        assert!(d.contains("(19.5 days, 19 scheduled runs missed)"), "{d}");
        assert_eq!(
            f.since.map(|t| t.timestamp()),
            Some((NOW - 19.5 * DAY) as i64)
        );
        // Hourly and suspended for three days: critical.
        let f = told(&suspended("0 * * * *", Some(3.0 * DAY))).expect("a fact");
        assert_eq!(f.severity, Severity::Critical);
        assert_eq!(f.value.map(|q| q.value), Some(72.0));
    }

    #[test]
    fn a_recent_pause_is_info_or_nothing_and_the_last_schedule_or_creation_stand_in() {
        // Suspended since its last run, no run due yet.
        assert!(told(&suspended("30 2 * * *", Some(0.5 * DAY))).is_none());
        let f = told(&suspended("30 2 * * *", Some(1.5 * DAY))).expect("one missed");
        assert_eq!(f.severity, Severity::Info);
        assert!(
            f.detail
                .unwrap_or_default()
                .contains("1 scheduled run missed")
        );
        // No success recorded: the last schedule time, else the creation.
        let mut s = suspended("30 2 * * *", None);
        let f = told(&s).expect("from the last schedule");
        assert!(
            f.detail
                .unwrap_or_default()
                .contains("no run scheduled since")
        );
        s.last_schedule = None;
        let f = told(&s).expect("from the creation");
        assert!(f.detail.unwrap_or_default().contains("never run; created"));
        assert_eq!(f.severity, Severity::Critical);
        // Times that are not times, or in the future, are not a last run.
        s.created = Some(f64::NAN);
        assert!(told(&s).is_none());
        s.created = Some(NOW + DAY);
        assert!(told(&s).is_none());
        s.created = Some(1e300);
        assert!(told(&s).is_none());
    }
}
