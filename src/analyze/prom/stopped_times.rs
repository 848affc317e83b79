//! Times that stopped advancing, found by their values rather than their names: a gauge
//! whose value is a Unix time that records when something last happened (a handshake, a
//! sync, a push, a lease renewal, a heartbeat), whatever the exporter calls it.
//!
//! A series is such a time when every change moves it forward to about the time the change
//! was read: the new value lies between the read before (less [`OBSERVED_LAG`]) and this
//! read (plus [`AHEAD`]). A clock that is read every scrape (`node_time_seconds`) passes
//! and never stalls; a byte count that happens to look like a recent time, a deadline in the
//! future or a skewed clock fails. One that advanced at least [`MIN_ADVANCES`] times over
//! the lookback has a learned interval (the median gap between its values, read again at
//! fine resolution when it advanced at nearly every coarse read); it is overdue when it has
//! not advanced for longer than its interval by half again plus slack and for longer than
//! its longest earlier pause (a source that pauses irregularly is not late). It is critical
//! at three intervals when its peers (the series of the same metric with the same label
//! names) still advance: then the stop is this one thing's, not its source's.
//!
//! The names `stale_jobs` reads by convention are left to it. Counters, histograms' parts and
//! names with a unit that is not a time are not read, nor a time that records a beginning (a
//! start, a boot, a creation: a process that stopped restarting is not late).

use std::collections::BTreeMap;

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use super::history::{MAX_LOOKUPS, time_of};
use super::stale_jobs::{
    CRITICAL_INTERVALS, GONE_AFTER, LAST_RUN_METRICS, OVERDUE_INTERVALS, PLAUSIBLE_SINCE, POINTS,
    SLACK, cronjob_key, lookback, suspended,
};
use super::{Prom, host, labels_map, selector};
use crate::analyze::{
    AnalyzeError, Analyzer, Entity, Fact, FactClass, Quantity, Scope, Severity, Source,
    human_seconds,
};
use crate::integrations::prometheus::{Labels, Series};

/// Names that are not a recorded time: counters, histograms' and summaries' parts, units
/// that are not seconds, an info series.
const NOT_TIMES: &str = ".+_(total|count|sum|bucket|bytes|ratio|percent|info)";
/// Names of a time that records a beginning (a start, a boot, a creation).
const BEGINNINGS: &str = "(.+_)?(start|started|created|creation|boot)(_.+)?";
/// Fewest advances over the lookback for a learned interval.
pub const MIN_ADVANCES: usize = 3;
/// How long before the previous read a new value may lie: the time a writer takes between
/// the event and its report (a textfile written after the run, an exporter's cache).
pub const OBSERVED_LAG: f64 = 3600.0;
/// How far after its read a value may lie (clocks of two hosts differ).
pub const AHEAD: f64 = 300.0;
/// Most metric names whose series are read over the lookback.
const MAX_NAMES: usize = 40;
/// Span and step of the fine read of a time that advanced at nearly every coarse read.
const FINE_SPAN: i64 = 3600;
const FINE_STEP: u64 = 15;
/// Peers named in a fact.
const MAX_PEERS_NAMED: usize = 3;

pub struct StoppedTimes(pub Prom);

#[async_trait]
impl Analyzer for StoppedTimes {
    fn name(&self) -> &'static str {
        "stopped_times"
    }

    async fn run(&self, scope: &Scope) -> Result<Vec<Fact>, AnalyzeError> {
        let lookback = lookback(scope);
        let now = scope.now.timestamp_millis() as f64 / 1000.0;
        let start = lookback.window_start.timestamp() as f64;
        // The latest values that could be a time recorded over the lookback; whether they
        // are is for their history to say.
        let expr = format!(
            "{{__name__=~\".+\",__name__!~\"{LAST_RUN_METRICS}|{NOT_TIMES}|{BEGINNINGS}\"}} > {:.0} <= {:.0}",
            start - 86400.0,
            now + AHEAD
        );
        let mut names: Vec<String> = self
            .0
            .vector(&expr)
            .await?
            .iter()
            .filter_map(|s| s.metric.get("__name__").cloned())
            .filter(|n| {
                n.chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
            })
            .collect();
        names.sort();
        names.dedup();
        names.truncate(MAX_NAMES);
        if names.is_empty() {
            return Ok(Vec::new());
        }
        let expr = format!("{{__name__=~\"{}\"}}", names.join("|"));
        let series = self.0.range(&expr, &lookback, POINTS).await?;
        let step = (lookback.window().num_seconds().max(60) as f64 / f64::from(POINTS)).max(15.0);
        let suspended = suspended(&self.0, &series).await?;
        let mut stalls = Vec::new();
        for s in &series {
            let Some(&(t_last, _)) = s.values.last() else {
                continue;
            };
            if now - t_last > GONE_AFTER || suspended.contains(&cronjob_key(&s.metric)) {
                continue;
            }
            let Some(runs) = advances(&s.values) else {
                continue;
            };
            if let Some(c) = candidate(&runs, now, step) {
                stalls.push((s, runs, c));
            }
        }
        // The few that advanced at nearly every read: their interval from a fine read.
        stalls.sort_by(|a, b| b.2.age.total_cmp(&a.2.age));
        stalls.truncate(MAX_LOOKUPS);
        let mut facts = Vec::new();
        for (s, runs, mut c) in stalls {
            if c.dense
                && let Some(i) = self.fine_interval(s, c.last, step).await?
            {
                c.interval = i;
            }
            if !c.overdue() {
                continue;
            }
            let advancing = advancing_peers(s, &series, c.last + c.interval);
            facts.push(fact(self.name(), s, &runs, &c, &advancing, &series));
        }
        facts.sort_by(|a, b| {
            b.severity
                .cmp(&a.severity)
                .then(a.entity.name.cmp(&b.entity.name))
        });
        Ok(facts)
    }
}

impl StoppedTimes {
    /// The median gap between the values of `s` over the [`FINE_SPAN`] up to its last
    /// advance, read every [`FINE_STEP`] seconds (`None` when that read shows no gap).
    async fn fine_interval(
        &self,
        s: &Series,
        last: f64,
        step: f64,
    ) -> Result<Option<f64>, AnalyzeError> {
        let (Some(end), Some(name)) = (time_of(last + step), s.metric.get("__name__")) else {
            return Ok(None);
        };
        let Some(start) = end.checked_sub_signed(chrono::TimeDelta::seconds(FINE_SPAN)) else {
            return Ok(None);
        };
        let id = labels_map(&s.metric);
        let expr = format!(
            "{name}{}",
            selector(id.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        );
        let fine = self
            .0
            .client
            .query_range(&expr, start, end, std::time::Duration::from_secs(FINE_STEP))
            .await?;
        Ok(fine
            .first()
            .and_then(|f| advances(&f.values))
            .and_then(|r| super::stale_jobs::median_gap(&r)))
    }
}

/// A recorded time's values in order of change (the first value, then each advance), when
/// every change moved it forward to about the time it was read; `None` when a value is not a
/// plausible time or a change is not such an advance (the series is not a recorded time).
pub fn advances(values: &[(f64, f64)]) -> Option<Vec<f64>> {
    let mut runs: Vec<f64> = Vec::new();
    let mut prev: Option<(f64, f64)> = None;
    for &(t, v) in values {
        if !v.is_finite() || v < PLAUSIBLE_SINCE || v > t + AHEAD {
            return None;
        }
        match prev {
            Some((_, pv)) if v == pv => {}
            Some((pt, pv)) if v < pv || v < pt - OBSERVED_LAG => return None,
            _ => runs.push(v),
        }
        prev = Some((t, v));
    }
    Some(runs)
}

/// A recorded time that may be overdue.
#[derive(Clone, Debug, PartialEq)]
pub struct Stall {
    /// Its last value (when it last advanced).
    pub last: f64,
    /// Seconds since then.
    pub age: f64,
    /// Its usual interval: the median gap between its values.
    pub interval: f64,
    /// Its longest earlier gap.
    pub longest: f64,
    /// Whether it advanced at nearly every read (its interval is at most the step's).
    pub dense: bool,
}

impl Stall {
    /// Overdue: past its interval by half again plus slack, and past its longest pause.
    pub fn overdue(&self) -> bool {
        self.age > (OVERDUE_INTERVALS * self.interval + SLACK).max(self.longest)
    }
}

/// The stall of a recorded time whose values in order of change are `runs` (from
/// [`advances`]), read every `step` seconds: `None` with fewer than [`MIN_ADVANCES`]
/// advances, or when it is on time (one that advanced at nearly every read: when it advanced
/// within the slack or its longest gap; it is judged after its fine read).
pub fn candidate(runs: &[f64], now: f64, step: f64) -> Option<Stall> {
    if runs.len() < MIN_ADVANCES + 1 {
        return None;
    }
    let mut gaps: Vec<f64> = runs.windows(2).map(|w| w[1] - w[0]).collect();
    gaps.sort_by(f64::total_cmp);
    let interval = gaps[gaps.len() / 2];
    let longest = gaps[gaps.len() - 1];
    let last = *runs.last()?;
    let stall = Stall {
        last,
        age: now - last,
        interval,
        longest,
        dense: interval <= 1.5 * step,
    };
    match stall.dense {
        true => (stall.age > SLACK.max(stall.longest)).then_some(stall),
        false => stall.overdue().then_some(stall),
    }
}

/// The labels of `s` without its name, instance and job.
fn own_labels(labels: &Labels) -> BTreeMap<&str, &str> {
    labels
        .iter()
        .filter(|(k, _)| !matches!(k.as_str(), "__name__" | "instance" | "job"))
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect()
}

/// The peers of `s`: the other series of its metric with the same label names.
fn peers<'a>(s: &'a Series, all: &'a [Series]) -> impl Iterator<Item = &'a Series> {
    let name = s.metric.get("__name__");
    all.iter().filter(move |p| {
        p.metric != s.metric
            && p.metric.get("__name__") == name
            && p.metric.keys().eq(s.metric.keys())
    })
}

/// The labels in which `p` differs from `s`, as `k=v` (`p`'s values).
fn difference(s: &Series, p: &Series) -> String {
    p.metric
        .iter()
        .filter(|(k, v)| k.as_str() != "__name__" && s.metric.get(*k) != Some(*v))
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// The peers of `s` whose time moved past `after`: they went on while `s` stopped.
fn advancing_peers<'a>(s: &'a Series, all: &'a [Series], after: f64) -> Vec<&'a Series> {
    peers(s, all)
        .filter(|p| {
            p.values
                .iter()
                .rev()
                .find(|(_, v)| v.is_finite())
                .is_some_and(|(_, v)| *v > after)
        })
        .collect()
}

/// `metric{k=v,…}` with the labels that tell `s` from its peers (all but instance and job
/// when it has none), as the data spells them.
fn series_name(s: &Series, all: &[Series]) -> String {
    let metric = s.metric.get("__name__").map_or("", String::as_str);
    let mut keys: Vec<&str> = Vec::new();
    for p in peers(s, all) {
        for (k, v) in &p.metric {
            if k != "__name__" && s.metric.get(k) != Some(v) && !keys.contains(&k.as_str()) {
                keys.push(k);
            }
        }
    }
    let labels: Vec<String> = match keys.is_empty() {
        true => own_labels(&s.metric)
            .into_iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect(),
        false => s
            .metric
            .iter()
            .filter(|(k, _)| keys.contains(&k.as_str()))
            .map(|(k, v)| format!("{k}={v}"))
            .collect(),
    };
    match labels.is_empty() {
        true => metric.to_string(),
        false => format!("{metric}{{{}}}", labels.join(",")),
    }
}

fn fact(
    analyzer: &str,
    s: &Series,
    runs: &[f64],
    c: &Stall,
    advancing: &[&Series],
    all: &[Series],
) -> Fact {
    let metric = s.metric.get("__name__").map_or("", String::as_str);
    let id = labels_map(&s.metric);
    let query = format!(
        "time() - {metric}{}",
        selector(id.iter().map(|(k, v)| (k.as_str(), v.as_str())))
    );
    let severity = match c.age > CRITICAL_INTERVALS * c.interval + SLACK && !advancing.is_empty() {
        true => Severity::Critical,
        false => Severity::Warning,
    };
    // A dense time's advances are the coarse reads', not its own: not counted.
    let mut detail = format!("usually advances every {}", human_seconds(c.interval));
    if !c.dense {
        detail.push_str(&format!(" ({} advances seen)", runs.len() - 1));
    }
    let total = peers(s, all).count();
    if !advancing.is_empty() {
        let named: Vec<String> = advancing
            .iter()
            .take(MAX_PEERS_NAMED)
            .map(|p| difference(s, p))
            .collect();
        let more = match advancing.len() > MAX_PEERS_NAMED {
            true => format!(" and {} more", advancing.len() - MAX_PEERS_NAMED),
            false => String::new(),
        };
        detail.push_str(&format!(
            "; {} of {total} peers still advance: {}{more}",
            advancing.len(),
            named.join("; ")
        ));
    } else if total > 0 {
        detail.push_str(&format!("; none of its {total} peers advances either"));
    }
    let last_at: Option<DateTime<Utc>> = time_of(c.last);
    Fact::new(
        FactClass::Availability,
        analyzer,
        Entity::new("timestamp", series_name(s, all))
            .on_host(host(&s.metric))
            .with_labels(id),
        "not advanced for",
        severity,
        Source::promql(&query),
    )
    .value(Quantity::seconds(c.age))
    .since(last_at)
    .detail(detail)
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: f64 = 1_800_000_000.0;

    /// A read every `step` from `from` seconds ago until now of a time written every
    /// `every` seconds until `stopped` seconds ago.
    fn reads(from: f64, step: f64, every: f64, stopped: f64) -> Vec<(f64, f64)> {
        let mut out = Vec::new();
        let mut t = NOW - from;
        while t <= NOW {
            let at = t.min(NOW - stopped);
            out.push((t, at - at.rem_euclid(every)));
            t += step;
        }
        out
    }

    #[test]
    fn a_time_written_every_ten_minutes_that_stopped_two_hours_ago_is_overdue() {
        let runs = advances(&reads(8.0 * 3600.0, 60.0, 600.0, 7200.0)).unwrap();
        let c = candidate(&runs, NOW, 60.0).expect("overdue");
        assert_eq!(c.interval, 600.0);
        assert!((7200.0..7800.0).contains(&c.age), "{c:?}");
        assert!(!c.dense);
        // Still written: on time.
        let runs = advances(&reads(8.0 * 3600.0, 60.0, 600.0, 0.0)).unwrap();
        assert_eq!(candidate(&runs, NOW, 60.0), None);
    }

    #[test]
    fn a_clock_read_every_scrape_is_a_time_and_never_stalls_but_a_skewed_one_is_no_time() {
        let clock: Vec<(f64, f64)> = (0..200)
            .rev()
            .map(|i| {
                let t = NOW - 60.0 * f64::from(i);
                (t, t + 0.3)
            })
            .collect();
        let runs = advances(&clock).unwrap();
        assert_eq!(runs.len(), 200);
        assert_eq!(candidate(&runs, NOW, 60.0), None);
        let behind: Vec<(f64, f64)> = clock.iter().map(|(t, v)| (*t, v - 2.0 * 3600.0)).collect();
        assert_eq!(advances(&behind), None);
        let ahead: Vec<(f64, f64)> = clock.iter().map(|(t, v)| (*t, v + 3600.0)).collect();
        assert_eq!(advances(&ahead), None);
    }

    #[test]
    fn values_that_fall_jump_ahead_or_are_no_times_are_not_a_recorded_time() {
        // A byte count that wanders around a plausible time.
        let bytes = [
            (NOW - 120.0, NOW - 100.0),
            (NOW - 60.0, NOW - 5000.0),
            (NOW, NOW - 10.0),
        ];
        assert_eq!(advances(&bytes), None);
        assert_eq!(advances(&[(NOW, 0.0)]), None);
        assert_eq!(advances(&[(NOW, f64::NAN)]), None);
        // A deadline in the future.
        assert_eq!(advances(&[(NOW, NOW + 86400.0)]), None);
        // Held at one old value: a time with no advance.
        assert_eq!(
            advances(&[(NOW - 60.0, NOW - 1e6), (NOW, NOW - 1e6)]),
            Some(vec![NOW - 1e6])
        );
    }

    #[test]
    fn a_time_with_few_advances_or_a_pause_as_long_before_is_not_overdue() {
        // Two advances: no learned interval.
        assert_eq!(
            candidate(&[NOW - 9000.0, NOW - 8400.0, NOW - 7800.0], NOW, 60.0),
            None
        );
        // Every ten minutes, but once it paused for three hours: two hours is not unusual.
        let every = |from: f64, to: f64| {
            (0..)
                .map(move |i| NOW - from + 600.0 * f64::from(i))
                .take_while(move |t| *t <= NOW - to)
        };
        let runs: Vec<f64> = every(8.0 * 3600.0, 6.0 * 3600.0)
            .chain(every(3.0 * 3600.0, 2.0 * 3600.0))
            .collect();
        assert_eq!(candidate(&runs, NOW, 60.0), None);
        // Without that pause, overdue.
        let runs: Vec<f64> = every(8.0 * 3600.0, 2.0 * 3600.0).collect();
        assert!(candidate(&runs, NOW, 60.0).is_some());
    }

    #[test]
    fn a_time_that_advanced_at_every_read_waits_for_its_fine_read() {
        // Every 30 s, read every 720 s, stopped 20 minutes ago: the coarse gaps are the
        // step's; a candidate whose interval the fine read tells.
        let runs = advances(&reads(2.0 * 86400.0, 720.0, 30.0, 1200.0)).unwrap();
        let mut c = candidate(&runs, NOW, 720.0).expect("a candidate");
        assert!(c.dense && !c.overdue(), "{c:?}");
        c.interval = 30.0;
        assert!(c.overdue());
        // Stopped 5 minutes ago: within a read and the slack.
        let runs = advances(&reads(2.0 * 86400.0, 720.0, 30.0, 300.0)).unwrap();
        assert_eq!(candidate(&runs, NOW, 720.0), None);
    }
}
