//! `scheduled_reboots`: a host that boots at about the same time every day (or on the same
//! weekday every week) is rebooted by a schedule (a cron job, a systemd timer, unattended
//! upgrades, a BIOS or UPS power-on schedule), not by a crash. A reboot told alone
//! (`host_reboots`) reads as an incident; its schedule says what it is.
//!
//! The boot times `host_reboots` reads (node_exporter, windows_exporter, SNMP uptimes) are
//! read over [`LOOKBACK`] (Prometheus' default retention) at a coarse step: the boot time
//! holds between boots, so a coarse read misses none. A host's boots are the values its
//! boot time moved forward to. Boots [`TOLERANCE_SECS`] or less from a whole number of
//! days (or weeks) apart are one schedule when they happened on most of the days (weeks)
//! since the first of them, the last due one included, and are most of the host's boots
//! since (a host crashing every hour boots at every time of day, and that is no schedule).
//! Only a host that booted within the incident's window, or that the trigger is about, is
//! told.

use std::collections::{BTreeSet, HashSet};

use async_trait::async_trait;
use chrono::TimeDelta;

use super::history::time_of;
use super::reboots::{FAMILIES, JITTER_SECS, TIMETICKS_WRAP_SECS};
use super::{Prom, host, labels_map, pick, selector};
use crate::analyze::{AnalyzeError, Analyzer, Entity, Fact, FactClass, Scope, Severity, Source};

/// How far back boots are read.
const LOOKBACK: TimeDelta = TimeDelta::days(15);
/// The read's step: a boot time holds between boots, so a coarse step misses none.
const STEP_SECS: u64 = 600;
/// How far from its schedule's time a boot may be (a timer's random delay, a slow BIOS).
const TOLERANCE_SECS: f64 = 1800.0;
const DAY: f64 = 86_400.0;
const WEEK: f64 = 7.0 * DAY;
/// Fewest days (weeks) with a boot at the schedule's time that make a schedule.
const MIN_DAILY: usize = 3;
const MIN_WEEKLY: usize = 2;
/// Hosts told per sweep.
const MAX_FACTS: usize = 5;

pub struct ScheduledReboots(pub Prom);

/// Boots on a schedule: every `period` seconds at about `center` (Unix seconds of one
/// occurrence), `hits` of the `due` occurrences since the first, the last at `last`.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Schedule {
    pub period: f64,
    pub center: f64,
    pub hits: usize,
    pub due: usize,
    pub last: f64,
}

#[async_trait]
impl Analyzer for ScheduledReboots {
    fn name(&self) -> &'static str {
        "scheduled_reboots"
    }

    async fn run(&self, scope: &Scope) -> Result<Vec<Fact>, AnalyzeError> {
        let names = self.0.metric_names(scope).await?;
        let Some(from) = scope.now.checked_sub_signed(LOOKBACK) else {
            return Ok(Vec::new());
        };
        let (from_secs, now_secs) = (from.timestamp() as f64, scope.now.timestamp() as f64);
        let window_start = scope.window_start.timestamp() as f64;
        let step = std::time::Duration::from_secs(STEP_SECS);
        let mut seen: HashSet<String> = HashSet::new();
        let mut facts = Vec::new();
        for family in FAMILIES
            .iter()
            .filter(|f| names.iter().any(|n| n == f.metric))
        {
            let expr = family.expr("");
            let series = self
                .0
                .client
                .query_range(&expr, from, scope.now, step)
                .await?;
            if series.len() > super::MAX_SERIES {
                return Err(AnalyzeError::Other(format!(
                    "{} series for {expr}, more than {}",
                    series.len(),
                    super::MAX_SERIES
                )));
            }
            for s in series {
                let Some(name) = host(&s.metric) else {
                    continue;
                };
                let wraps = family.uptime_divisor.is_some();
                let boots = boot_times(&s.values, wraps, from_secs, now_secs);
                let Some(sched) = schedule(&boots, now_secs) else {
                    continue;
                };
                let entity = Entity::new("host", name.clone())
                    .on_host(Some(name.clone()))
                    .with_labels(labels_map(&s.metric));
                let booted_in_window = boots.last().is_some_and(|b| *b >= window_start);
                if !(booted_in_window || scope.is_about(&entity)) || !seen.insert(name) {
                    continue;
                }
                let sel = selector(pick(&s.metric, &["instance", "job"]));
                let source = Source::new(
                    "prometheus_query_range",
                    serde_json::json!({
                        "query": family.expr(&sel),
                        "start": format!("{}d", LOOKBACK.num_days()),
                        "step": "1h",
                    }),
                );
                facts.extend(schedule_fact(self.name(), entity, &sched, source));
            }
        }
        facts.sort_by_key(|f| std::cmp::Reverse(f.since));
        facts.truncate(MAX_FACTS);
        Ok(facts)
    }
}

/// The boots in a boot-time series: its first value when it is within `from..=now`, and
/// each value it moved forward to by more than [`JITTER_SECS`] (for an SNMP uptime,
/// `wraps`: a move by one 32-bit wrap is the counter, not a boot).
pub(super) fn boot_times(values: &[(f64, f64)], wraps: bool, from: f64, now: f64) -> Vec<f64> {
    let mut out = Vec::new();
    let mut prev: Option<f64> = None;
    for &(_, b) in values.iter().filter(|(_, b)| b.is_finite()) {
        let boot = match prev {
            None => b >= from,
            Some(p) => {
                let d = b - p;
                d > JITTER_SECS && !(wraps && (d - TIMETICKS_WRAP_SECS).abs() <= JITTER_SECS)
            }
        };
        if boot && b <= now + JITTER_SECS {
            out.push(b);
        }
        prev = Some(b);
    }
    out
}

/// The schedule `boots` (ascending Unix seconds) keep, daily before weekly, read at `now`.
pub(super) fn schedule(boots: &[f64], now: f64) -> Option<Schedule> {
    [(DAY, MIN_DAILY), (WEEK, MIN_WEEKLY)]
        .into_iter()
        .find_map(|(period, min)| every(boots, now, period, min))
}

/// The best schedule of `period` among `boots`, each boot tried as its anchor.
fn every(boots: &[f64], now: f64, period: f64, min_hits: usize) -> Option<Schedule> {
    let mut best: Option<Schedule> = None;
    for &anchor in boots {
        // Each boot near an occurrence of the anchor's time: (occurrence, its offset, time).
        let matched: Vec<(i64, f64, f64)> = boots
            .iter()
            .filter_map(|&t| {
                let k = ((t - anchor) / period).round();
                let off = t - anchor - k * period;
                (off.abs() <= TOLERANCE_SECS).then_some((k as i64, off, t))
            })
            .collect();
        let occurrences: BTreeSet<i64> = matched.iter().map(|(k, _, _)| *k).collect();
        let (Some(&first), Some(&last_hit)) = (occurrences.first(), occurrences.last()) else {
            continue;
        };
        // Occurrences whose whole tolerance has passed are due; a hit counts anyway.
        let last_due = (((now - TOLERANCE_SECS - anchor) / period).floor() as i64).max(last_hit);
        let Ok(due) = usize::try_from(last_due.saturating_sub(first).saturating_add(1)) else {
            continue;
        };
        let hits = occurrences.len();
        let first_time = matched
            .iter()
            .map(|(_, _, t)| *t)
            .fold(f64::INFINITY, f64::min);
        let since_first = boots
            .iter()
            .filter(|t| **t >= first_time - TOLERANCE_SECS)
            .count();
        let kept = hits >= min_hits && hits * 4 >= due * 3 && matched.len() * 3 >= since_first * 2;
        if !kept || best.as_ref().is_some_and(|b| b.hits >= hits) {
            continue;
        }
        let mut offsets: Vec<f64> = matched.iter().map(|(_, o, _)| *o).collect();
        offsets.sort_by(f64::total_cmp);
        let median = offsets.get(offsets.len() / 2).copied().unwrap_or(0.0);
        let last = matched.iter().map(|(_, _, t)| *t).fold(f64::MIN, f64::max);
        best = Some(Schedule {
            period,
            center: anchor + median,
            hits,
            due,
            last,
        });
    }
    best
}

/// "boots at ≈04:00 UTC every day (5 of the last 5 days, last 2026-11-28 04:01 UTC)";
/// `None` when a time is out of range.
pub(super) fn schedule_fact(
    analyzer: &str,
    entity: Entity,
    s: &Schedule,
    source: Source,
) -> Option<Fact> {
    // To the nearest five minutes: the schedule's time, not one boot's.
    let rounded = (s.center / 300.0).round() * 300.0;
    let center = time_of(rounded)?;
    let last = time_of(s.last)?;
    let at = center.format("%H:%M UTC");
    let what = match s.period >= WEEK {
        false => format!(
            "boots at ≈{at} every day ({} of the last {} days, last {})",
            s.hits,
            s.due,
            last.format("%Y-%m-%d %H:%M UTC")
        ),
        true => format!(
            "boots at ≈{at} every {} ({} of the last {} weeks, last {})",
            center.format("%A"),
            s.hits,
            s.due,
            last.format("%Y-%m-%d %H:%M UTC")
        ),
    };
    Some(
        Fact::new(
            FactClass::Change,
            analyzer,
            entity,
            what,
            Severity::Info,
            source,
        )
        .since(Some(last))
        .detail(
            "a schedule (a cron job, a systemd timer, unattended upgrades, a BIOS or UPS \
             power-on schedule), not a crash",
        ),
    )
}

#[cfg(test)]
mod tests;
