//! Since when a state has held: the run of bad points that ends now in one series' range
//! over the window, read back up to a week (coarsely, then finely around the change) when
//! it fills the window.

use chrono::{DateTime, TimeDelta, Utc};

use super::{Lookups, Prom};
use crate::analyze::Scope;

/// When `expr` (one series) rose to `level` and has held it since, read from `start` to
/// `now` every `step`: the start of its last run at or above it, when that is after
/// `start` (a count that rose many-fold: a scrape target's series, a process group's copies).
pub async fn rose_to(
    prom: &Prom,
    expr: &str,
    (start, now): (DateTime<Utc>, DateTime<Utc>),
    step: std::time::Duration,
    level: f64,
) -> Option<DateTime<Utc>> {
    prom.client
        .query_range(expr, start, now, step)
        .await
        .ok()?
        .into_iter()
        .next()
        .and_then(|s| run_start(&s.values, |v| v >= level))
        .filter(|t| *t > start)
}

/// The first time of the last run of points where `bad` holds: when the current bad state
/// began (`None` when the last point is not bad or the series is empty). A run that fills
/// the whole window began at or before the window's start, its first point.
pub fn run_start(values: &[(f64, f64)], bad: impl Fn(f64) -> bool) -> Option<DateTime<Utc>> {
    let (_, last) = *values.last()?;
    if !bad(last) {
        return None;
    }
    let first = values
        .iter()
        .rposition(|(_, v)| !bad(*v))
        .map_or(0, |i| i + 1);
    let (t, _) = values.get(first)?;
    DateTime::from_timestamp_millis((t * 1000.0) as i64)
}

/// Points a `since` range query asks for over the window.
const SINCE_POINTS: u32 = 240;
/// How far back `since` looks for the start of a state that fills the window.
const SINCE_LOOKBACK: TimeDelta = TimeDelta::days(7);
impl Prom {
    /// When the state `bad` of the one series `expr` began (`None` when unknown or no
    /// lookup is `left`; a failed query only loses the time, not the fact). A state that
    /// fills the scope's window began before it: the week before is read coarsely for its
    /// start (a clock unsynchronised for ten hours by an alert that fired half an hour
    /// ago), and a state older than that began "a week ago at least".
    pub async fn since(
        &self,
        left: &Lookups,
        expr: &str,
        scope: &Scope,
        bad: impl Fn(f64) -> bool,
    ) -> Option<DateTime<Utc>> {
        if !left.take() {
            return None;
        }
        let series = self.range(expr, scope, SINCE_POINTS).await.ok()?;
        let s = series.first()?;
        let began = run_start(&s.values, &bad)?;
        let whole = s.values.first().is_some_and(|(_, v)| bad(*v));
        let back = scope.now.checked_sub_signed(SINCE_LOOKBACK)?;
        if !whole || back >= scope.window_start {
            return Some(began);
        }
        let span = (scope.window_start - back).num_seconds().max(60) as u64;
        let step = std::time::Duration::from_secs((span / u64::from(SINCE_POINTS)).max(15));
        let older = self
            .client
            .query_range(expr, back, scope.window_start, step)
            .await
            .ok()
            .and_then(|o| o.into_iter().find(|o| o.metric == s.metric));
        let Some(older) = older else {
            return Some(began);
        };
        let mut values = older.values;
        values.extend(s.values.iter().copied());
        let Some(coarse) = run_start(&values, &bad) else {
            return Some(began);
        };
        // Coarse points are far apart: read the span between the last good point and the
        // first bad one finely.
        let at = coarse.timestamp_millis() as f64 / 1000.0;
        let Some(i) = values.iter().position(|(t, _)| (*t - at).abs() < 0.5) else {
            return Some(coarse);
        };
        let Some(i) = i.checked_sub(1) else {
            return Some(coarse);
        };
        let (from, to) = (values[i].0, values[i + 1].0);
        let fine = std::time::Duration::from_secs((((to - from) / 120.0) as u64).max(15));
        let (Some(from), Some(to)) = (
            DateTime::from_timestamp_millis((from * 1000.0) as i64),
            DateTime::from_timestamp_millis((to * 1000.0) as i64),
        ) else {
            return Some(coarse);
        };
        let refined = self
            .client
            .query_range(expr, from, to, fine)
            .await
            .ok()
            .and_then(|r| r.into_iter().find(|r| r.metric == s.metric));
        refined
            .and_then(|r| run_start(&r.values, &bad))
            .or(Some(coarse))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bad_state_starts_at_the_first_point_of_its_last_run() {
        let v = [(60.0, 95.0), (120.0, 50.0), (180.0, 96.0), (240.0, 99.0)];
        assert_eq!(run_start(&v, |x| x > 90.0).unwrap().timestamp(), 180);
        assert_eq!(run_start(&v[..2], |x| x > 90.0), None);
        assert_eq!(run_start(&v[2..], |x| x > 90.0).unwrap().timestamp(), 180);
        assert_eq!(run_start(&[], |x| x > 90.0), None);
    }
}
