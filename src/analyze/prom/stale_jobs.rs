//! Jobs that stopped succeeding: gauges holding the Unix time of a job's last success, run
//! or completion, by the naming conventions of the exporters and of batch jobs
//! (`*_last_success_timestamp_seconds`, `*_last_run_*`, `*_last_completion_*`,
//! kube-state-metrics' `kube_cronjob_status_last_successful_time`, node_exporter's
//! `node_systemd_timer_last_trigger_seconds` and `node_textfile_mtime_seconds`, the time a
//! textfile collector's writer last ran). A job is overdue when its last time is older than
//! its usual interval by half again plus some slack.
//!
//! The interval is learned from the series itself: each value is a run's time, so the gaps
//! between the distinct values seen over the lookback (the window, at least two days) are
//! the job's intervals; their median is its usual one. A job with no earlier run in the
//! lookback is taken to run daily when its name says it records an outcome (success,
//! completion, a run); a textfile or a timer may be written once and never again, so
//! without a learned interval it is not judged. A value that is not a plausible time (a
//! duration, a 0/1 flag, a placeholder) is not a run; a suspended CronJob is not overdue
//! (the runs it missed are `kube_state_suspended`'s fact).
//! Times under other names are found by their values (`stopped_times.rs`).

use std::collections::BTreeSet;

use async_trait::async_trait;
use chrono::{DateTime, TimeDelta, Utc};

use super::history::time_of;
use super::members::{Member, Members};
use super::{Prom, host, labels_map, selector};
use crate::analyze::{
    AnalyzeError, Analyzer, Entity, Fact, FactClass, Quantity, Scope, Severity, Source,
    human_seconds,
};
use crate::integrations::prometheus::Labels;

/// The gauges holding the time of a job's last run, success or completion.
pub(super) const LAST_RUN_METRICS: &str = ".+_last_(success|successful|completion|completed|run|trigger)(_[a-zA-Z0-9_]*)?|node_textfile_mtime_seconds";
/// Words of a name that records an outcome: without history, such a job runs daily.
const OUTCOME_WORDS: [&str; 5] = ["success", "successful", "completion", "completed", "run"];
/// The interval assumed for an outcome without history.
const DEFAULT_INTERVAL: f64 = 86400.0;
/// The shortest lookback the intervals are learned over.
pub(super) const MIN_LOOKBACK: TimeDelta = TimeDelta::days(2);
/// Points of the lookback query.
pub(super) const POINTS: u32 = 240;
/// Slack beyond the interval (a run's duration, scrape intervals).
pub(super) const SLACK: f64 = 900.0;
/// Overdue at this many intervals (plus slack); critical at the second.
pub(super) const OVERDUE_INTERVALS: f64 = 1.5;
pub(super) const CRITICAL_INTERVALS: f64 = 3.0;
/// 2000-01-01: an earlier value is not a run's time.
pub(super) const PLAUSIBLE_SINCE: f64 = 946_684_800.0;
/// A series whose last point is older than this is gone, not stale.
pub(super) const GONE_AFTER: f64 = 900.0;

pub struct StaleJobs(pub Prom);

#[async_trait]
impl Analyzer for StaleJobs {
    fn name(&self) -> &'static str {
        "stale_jobs"
    }

    async fn run(&self, scope: &Scope) -> Result<Vec<Fact>, AnalyzeError> {
        let lookback = lookback(scope);
        let expr = format!("{{__name__=~\"{LAST_RUN_METRICS}\"}}");
        let series = self.0.range(&expr, &lookback, POINTS).await?;
        if series.is_empty() {
            return Ok(Vec::new());
        }
        let suspended = suspended(&self.0, &series).await?;
        let now = scope.now.timestamp_millis() as f64 / 1000.0;
        let members = Members::of(series.iter().map(|s| &s.metric));
        let mut facts = Vec::new();
        for s in &series {
            let Some(metric) = s.metric.get("__name__") else {
                continue;
            };
            let Some(&(t_last, _)) = s.values.last() else {
                continue;
            };
            if now - t_last > GONE_AFTER {
                continue;
            }
            let runs = runs(metric, &s.values, now);
            let Some(&last) = runs.last() else {
                continue;
            };
            if suspended.contains(&cronjob_key(&s.metric)) {
                continue;
            }
            let learned = median_gap(&runs);
            let interval = match learned {
                Some(i) => i,
                None if is_outcome(metric) => DEFAULT_INTERVAL,
                None => continue,
            };
            let age = now - last;
            if age <= OVERDUE_INTERVALS * interval + SLACK {
                continue;
            }
            let severity = match age > CRITICAL_INTERVALS * interval + SLACK {
                true => Severity::Critical,
                false => Severity::Warning,
            };
            let (Some(last_at), due) = (time_of(last), time_of(last + interval)) else {
                continue;
            };
            let entity = entity(metric, &s.metric, members.member(&s.metric));
            facts.push(self.fact(
                metric, &s.metric, entity, age, interval, learned, &runs, last_at, due, severity,
            ));
        }
        facts.sort_by(|a, b| {
            b.severity
                .cmp(&a.severity)
                .then(a.entity.name.cmp(&b.entity.name))
        });
        Ok(facts)
    }
}

impl StaleJobs {
    #[allow(clippy::too_many_arguments)]
    fn fact(
        &self,
        metric: &str,
        labels: &Labels,
        entity: Entity,
        age: f64,
        interval: f64,
        learned: Option<f64>,
        runs: &[f64],
        last_at: DateTime<Utc>,
        due: Option<DateTime<Utc>>,
        severity: Severity,
    ) -> Fact {
        let id = labels_map(labels);
        let query = format!(
            "time() - {metric}{}",
            selector(id.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        );
        let what = match is_outcome(metric) && !metric.contains("_last_run") {
            true => "no success for",
            false => "not run for",
        };
        let usual = match learned {
            Some(i) => format!(
                "usually every {} ({} runs seen)",
                human_seconds(i),
                runs.len()
            ),
            None => "no earlier run seen in the lookback; a daily job assumed".to_string(),
        };
        let detail = format!(
            "last at {}, {usual}; {metric}",
            last_at.format("%Y-%m-%d %H:%M UTC"),
        );
        Fact::new(
            FactClass::Availability,
            self.name(),
            entity,
            what,
            severity,
            Source::promql(&query),
        )
        .value(Quantity::seconds(age))
        .limit(Quantity::seconds(interval))
        .since(due)
        .detail(detail)
    }
}

/// The scope of `scope` reaching back at least [`MIN_LOOKBACK`]: the span intervals are
/// learned over.
pub(super) fn lookback(scope: &Scope) -> Scope {
    let window_start = scope
        .now
        .checked_sub_signed(scope.window().max(MIN_LOOKBACK))
        .unwrap_or(scope.window_start);
    Scope {
        window_start,
        started: scope.started.max(window_start),
        // Another window: the sweep's metric names are not this one's.
        metric_names: super::MetricNames::default(),
        ..scope.clone()
    }
}

/// The CronJobs kube-state-metrics says are suspended (only asked when CronJob series are
/// among `series`).
pub(super) async fn suspended(
    prom: &Prom,
    series: &[crate::integrations::prometheus::Series],
) -> Result<BTreeSet<(String, String)>, AnalyzeError> {
    if !series.iter().any(|s| s.metric.contains_key("cronjob")) {
        return Ok(BTreeSet::new());
    }
    let v = prom.vector("kube_cronjob_spec_suspend == 1").await?;
    Ok(v.iter().map(|s| cronjob_key(&s.metric)).collect())
}

/// A CronJob's namespace and name (empty for other series).
pub(super) fn cronjob_key(labels: &Labels) -> (String, String) {
    match labels.get("cronjob") {
        Some(c) => (
            labels.get("namespace").cloned().unwrap_or_default(),
            c.clone(),
        ),
        None => Default::default(),
    }
}

/// Whether the name records a job's outcome (a success, a completion, a run).
fn is_outcome(metric: &str) -> bool {
    let Some((_, tail)) = metric.split_once("_last_") else {
        return false;
    };
    tail.split('_')
        .next()
        .is_some_and(|w| OUTCOME_WORDS.contains(&w))
}

/// The distinct run times among `values` (Unix seconds; milliseconds for a name ending in
/// `_ms`/`_milliseconds`), in order: each change of the gauge is a run.
pub fn runs(metric: &str, values: &[(f64, f64)], now: f64) -> Vec<f64> {
    let scale = match metric.ends_with("_ms") || metric.ends_with("_milliseconds") {
        true => 0.001,
        false => 1.0,
    };
    let mut out: Vec<f64> = Vec::new();
    for (_, v) in values {
        let t = v * scale;
        if !t.is_finite() || t < PLAUSIBLE_SINCE || t > now + 86400.0 {
            continue;
        }
        if out.last() != Some(&t) {
            out.push(t);
        }
    }
    out
}

/// The median of the positive gaps between consecutive runs (`None` with no gap).
pub fn median_gap(runs: &[f64]) -> Option<f64> {
    let mut gaps: Vec<f64> = runs
        .windows(2)
        .map(|w| w[1] - w[0])
        .filter(|g| *g > 0.0)
        .collect();
    if gaps.is_empty() {
        return None;
    }
    gaps.sort_by(f64::total_cmp);
    Some(gaps[gaps.len() / 2])
}

/// What the job is: a CronJob, a systemd timer, a textfile's writer, else the name's stem
/// with the member the labels that tell its series apart name (`members.rs`).
fn entity(metric: &str, labels: &Labels, member: Option<Member>) -> Entity {
    let get = |k: &str| labels.get(k).filter(|v| !v.is_empty());
    let member_host = member.as_ref().and_then(|m| m.host.clone());
    let (kind, name) = if let Some(c) = get("cronjob") {
        let name = match get("namespace") {
            Some(ns) => format!("{ns}/{c}"),
            None => c.clone(),
        };
        ("cronjob", name)
    } else if let Some(unit) = get("name").filter(|_| metric.contains("systemd")) {
        ("unit", unit.clone())
    } else if let Some(file) = get("file").filter(|_| metric.starts_with("node_textfile")) {
        ("textfile", file.clone())
    } else {
        let stem = metric.split("_last_").next().unwrap_or(metric);
        match member {
            Some(m) => ("job", format!("{stem} {}", m.name)),
            None => ("job", stem.to_string()),
        }
    };
    Entity::new(kind, name)
        .on_host(member_host.or_else(|| host(labels)))
        .with_labels(labels_map(labels))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_are_the_distinct_plausible_times_and_their_median_gap_is_the_interval() {
        let now = 1_800_000_000.0;
        let v = [
            (1.0, 1_799_990_000.0),
            (2.0, 1_799_990_000.0),
            (3.0, 1_799_993_600.0),
            (4.0, 0.0),
            (5.0, 1_799_997_200.0),
            (6.0, f64::NAN),
            (7.0, 1e300),
        ];
        let r = runs("x_last_success_timestamp_seconds", &v, now);
        assert_eq!(r, vec![1_799_990_000.0, 1_799_993_600.0, 1_799_997_200.0]);
        assert_eq!(median_gap(&r), Some(3600.0));
        assert_eq!(median_gap(&r[..1]), None);
        let ms = runs(
            "x_last_run_timestamp_ms",
            &[(1.0, 1_799_990_000_000.0)],
            now,
        );
        assert_eq!(ms, vec![1_799_990_000.0]);
        // A duration is not a run's time.
        assert!(runs("x_last_run_duration_seconds", &[(1.0, 35.0)], now).is_empty());
    }

    #[test]
    fn outcome_names_are_told_from_timers_and_textfiles() {
        assert!(is_outcome("backup_last_success_timestamp_seconds"));
        assert!(is_outcome("kube_cronjob_status_last_successful_time"));
        assert!(is_outcome("etl_last_run_timestamp_seconds"));
        assert!(!is_outcome("node_systemd_timer_last_trigger_seconds"));
        assert!(!is_outcome("node_textfile_mtime_seconds"));
    }

    #[test]
    fn a_job_is_named_by_its_cronjob_unit_file_or_stem_and_labels() {
        let l = |p: &[(&str, &str)]| -> Labels {
            p.iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        let named = |metric: &str, labels: &Labels| {
            entity(metric, labels, Members::of([labels]).member(labels))
        };
        let e = named(
            "kube_cronjob_status_last_successful_time",
            &l(&[
                ("namespace", "db"),
                ("cronjob", "dump"),
                ("instance", "ksm:8080"),
            ]),
        );
        assert_eq!((e.kind.as_str(), e.name.as_str()), ("cronjob", "db/dump"));
        let e = named(
            "backup_last_success_timestamp_seconds",
            &l(&[("target", "nas"), ("instance", "h1:9100"), ("job", "node")]),
        );
        assert_eq!((e.kind.as_str(), e.name.as_str()), ("job", "backup nas"));
        assert_eq!(e.host.as_deref(), Some("h1"));
        // Among peers, the label that tells them apart names the job, not the constant ones.
        let metric = "backup_last_success_timestamp_seconds";
        let peer = |target: &str| {
            l(&[
                ("__name__", metric),
                ("instance", "h1:9100"),
                ("kind", "full"),
                ("target", target),
            ])
        };
        let (a, b) = (peer("nas"), peer("tape"));
        let e = entity(metric, &b, Members::of([&a, &b]).member(&b));
        assert_eq!(e.name, "backup tape");
    }
}
