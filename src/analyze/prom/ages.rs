//! An age that keeps growing: a gauge in seconds that climbs one second per second is the
//! age of something that began at (now − value) and has not ended — a transaction left
//! open (postgres_exporter's `pg_stat_activity_max_tx_duration{datname,state}`), the
//! oldest unacknowledged message, the time since a backup last succeeded, a job's running
//! time, a replica's lag while replay stopped. It is told with the entity its labels name
//! and since when, when it is news: it climbs steadily now, it was absent or reset within
//! the look-back (an uptime of months climbs too, and says nothing), and it is higher than
//! it ever was before in the look-back (a nightly job's running time climbs every night).
//! Counters in seconds (CPU seconds climb one a second per idle CPU) are left out by their
//! declared type and their suffix; timestamps (`_time_seconds`, `_timestamp_seconds`) and
//! uptimes, whose beginnings are restarts other analyzers tell, by their names.

use std::collections::BTreeMap;

use async_trait::async_trait;
use chrono::{DateTime, TimeDelta, Utc};

use super::kinds::{Kind, declared};
use super::{Prom, escape, host, labels_map, selector};
use crate::analyze::{
    AnalyzeError, Analyzer, Entity, Fact, FactClass, Quantity, Scope, Severity, Source,
};

/// How far an age's climb may stray from one second per second.
const TOLERANCE: f64 = 0.1;
/// Youngest age told: a transaction or a job minutes old is work, not a fault.
const MIN_AGE: f64 = 1800.0;
/// Shortest climb seen, in seconds of the look-back (and at least three points).
const MIN_RUN: f64 = 1200.0;
/// How much higher than its earlier highest in the look-back an age must be.
const NEW_HIGH: f64 = 1.2;
/// A value this large is a timestamp, not an age (ten years in seconds).
const MAX_AGE: f64 = 3.2e8;
/// The shortest look-back (an age of hours began within it).
const MIN_LOOKBACK: TimeDelta = TimeDelta::days(2);
/// Points a candidate is read at over the look-back.
const POINTS: u64 = 240;
/// Candidate series read per sweep (each is a range query), the oldest first.
const MAX_READ: usize = 12;
/// Ages reported per sweep.
const MAX_FACTS: usize = 4;
/// Labels that say where a series was scraped, not what it is about.
const PLACE: [&str; 2] = ["instance", "job"];

pub struct Ages(pub Prom);

/// Whether metric `name` states a span of time by its name: base-unit `_seconds` (not a
/// counter's `_seconds_total`, a histogram's parts, a timestamp), or an exporter's unitless
/// `_duration`, `_age`, `_lag` (postgres_exporter's `max_tx_duration`).
pub fn age_name(name: &str) -> bool {
    let timestamp = ["_time_seconds", "_timestamp_seconds", "_timestamp"]
        .iter()
        .any(|x| name.ends_with(x));
    let restart = ["uptime", "boot", "start"].iter().any(|w| name.contains(w));
    let bookkeeping = ["scrape_", "go_", "process_", "promhttp_", "prometheus_"]
        .iter()
        .any(|p| name.starts_with(p));
    let spans = ["_seconds", "_duration", "_age", "_lag"]
        .iter()
        .any(|x| name.ends_with(x));
    spans && !timestamp && !restart && !bookkeeping
}

/// An age as read: its value now, when it began and the highest before its climb.
#[derive(Debug, PartialEq)]
pub struct Climb {
    pub value: f64,
    pub began: DateTime<Utc>,
    pub earlier_high: Option<f64>,
}

/// Whether `values` (time, value), read from `start` every `step` seconds, end in a climb
/// of one second per second that is news (see the module's text).
pub fn climb(values: &[(f64, f64)], start: f64, step: f64) -> Option<Climb> {
    let &(t_n, v_n) = values.last()?;
    if !(MIN_AGE..MAX_AGE).contains(&v_n) {
        return None;
    }
    // Back from now while each step grows by about its span.
    let mut r = values.len() - 1;
    while r > 0 {
        let (t0, v0) = values[r - 1];
        let (t1, v1) = values[r];
        let dt = t1 - t0;
        if dt > 1.5 * step || !(0.5 * dt..=1.5 * dt).contains(&(v1 - v0)) {
            break;
        }
        r -= 1;
    }
    let (t_r, v_r) = values[r];
    let run = t_n - t_r;
    if values.len() - r < 3 || run < MIN_RUN {
        return None;
    }
    if ((v_n - v_r) / run - 1.0).abs() > TOLERANCE {
        return None;
    }
    // A beginning within the look-back: a point before the climb, or none at all since
    // the look-back began (the series appeared).
    let appeared = r == 0 && t_r > start + 1.5 * step;
    if r == 0 && !appeared {
        return None;
    }
    let earlier_high = values[..r].iter().map(|(_, v)| *v).reduce(f64::max);
    if earlier_high.is_some_and(|h| v_n <= NEW_HIGH * h) {
        return None;
    }
    let began = DateTime::from_timestamp_millis(((t_n - v_n) * 1000.0) as i64)?;
    Some(Climb {
        value: v_n,
        began,
        earlier_high,
    })
}

#[async_trait]
impl Analyzer for Ages {
    fn name(&self) -> &'static str {
        "ages"
    }

    async fn run(&self, scope: &Scope) -> Result<Vec<Fact>, AnalyzeError> {
        let names = self.0.metric_names(scope).await?;
        let types = self.0.metric_types(scope).await.unwrap_or_default();
        let ages: Vec<&str> = names
            .iter()
            .map(String::as_str)
            .filter(|n| age_name(n))
            .filter(|n| declared(&types, n) != Kind::Counter)
            .filter(|n| types.get(*n).is_none_or(|t| t != "summary"))
            .collect();
        if ages.is_empty() {
            return Ok(Vec::new());
        }
        let alt: Vec<String> = ages.iter().map(|n| regex_quote(n)).collect();
        let expr = format!(
            "{{__name__=~\"{}\"}} >= {MIN_AGE} < {MAX_AGE}",
            escape(&alt.join("|"))
        );
        let mut candidates = self.0.vector(&expr).await?;
        candidates.sort_by(|a, b| b.value.total_cmp(&a.value));
        candidates.truncate(MAX_READ);
        let back = scope.window().max(MIN_LOOKBACK);
        let start = scope.now.checked_sub_signed(back).unwrap_or(scope.now);
        let step = (back.num_seconds().max(60) as u64 / POINTS).max(15);
        let mut facts = Vec::new();
        for c in candidates {
            let sel = selector(c.metric.iter().map(|(k, v)| (k.as_str(), v.as_str())));
            let Ok(series) = self
                .0
                .client
                .query_range(&sel, start, scope.now, std::time::Duration::from_secs(step))
                .await
            else {
                continue;
            };
            let Some(s) = series.first() else { continue };
            let from = start.timestamp_millis() as f64 / 1000.0;
            let Some(a) = climb(&s.values, from, step as f64) else {
                continue;
            };
            facts.push(fact(self.name(), &c.metric, &a, &sel));
            if facts.len() >= MAX_FACTS {
                break;
            }
        }
        Ok(facts)
    }
}

/// The fact of age `a` of the series `labels`.
fn fact(analyzer: &str, labels: &BTreeMap<String, String>, a: &Climb, query: &str) -> Fact {
    let name = labels.get("__name__").cloned().unwrap_or_default();
    let about: Vec<String> = labels
        .iter()
        .filter(|(k, v)| k.as_str() != "__name__" && !PLACE.contains(&k.as_str()) && !v.is_empty())
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    let mut detail = format!(
        "{name}{{{}}} climbs one second per second: what it measures began {} and has not \
         ended",
        about.join(","),
        a.began.format("%Y-%m-%d %H:%M UTC")
    );
    match a.earlier_high {
        Some(h) => detail.push_str(&format!(
            "; its highest before in the look-back was {}",
            Quantity::seconds(h)
        )),
        None => detail.push_str("; absent before in the look-back"),
    }
    Fact::new(
        FactClass::Exhaustion,
        analyzer,
        Entity::new("series", name)
            .on_host(host(labels))
            .with_labels(labels_map(labels)),
        "open/running for",
        Severity::Warning,
        Source::promql(query),
    )
    .value(Quantity::seconds(a.value))
    .since(Some(a.began))
    .detail(detail)
}

/// `name` as a literal of a PromQL regular expression (metric names hold `:` and `_`,
/// nothing a regular expression reads otherwise).
fn regex_quote(name: &str) -> String {
    name.chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | ':'))
        .collect()
}

#[cfg(test)]
mod tests;
