//! Windows that fit the incident: a range query's series that started inside the range
//! (or have only a few points) are re-read from their first sample at a step near the
//! scrape interval, so a series minutes old read over a day is seen at native resolution
//! and gets a rate and a time to full instead of one flat point.

use std::time::Duration;

use chrono::{DateTime, Utc};

use crate::integrations::PrometheusClient;
use crate::integrations::prometheus::Series;

/// Points under which a series of a range result is re-read at a finer step.
const FEW_POINTS: usize = 10;
/// The finest step a re-read asks for: the most common scrape interval (a finer step only
/// repeats samples).
const NATIVE_STEP: Duration = Duration::from_secs(15);

/// Re-reads the series of `series` that are young (fewer than [`FEW_POINTS`] points, or a
/// first point more than a step after `start`) from just before their first point at a
/// step near the scrape interval, so a series minutes old read over a day gets a rate and
/// a time to full instead of one flat point. Replaces their values in place; returns the
/// re-read's start and step (`step_for`: the step that keeps a range small), `None` when nothing was re-read (a failed re-read keeps the
/// coarse answer).
pub(crate) async fn reread_young(
    client: &PrometheusClient,
    query: &str,
    series: &mut [Series],
    start: DateTime<Utc>,
    end: DateTime<Utc>,
    step: Duration,
    step_for: impl Fn(Duration) -> Duration,
) -> Option<(DateTime<Utc>, Duration)> {
    let s = step.as_secs_f64();
    let young = |v: &[(f64, f64)]| -> Option<f64> {
        let first = v.iter().find(|p| p.1.is_finite())?.0;
        let n = v.iter().filter(|p| p.1.is_finite()).count();
        (n < FEW_POINTS || first > start.timestamp() as f64 + 1.5 * s).then_some(first)
    };
    let first = series
        .iter()
        .filter_map(|x| young(&x.values))
        .fold(None, |acc: Option<f64>, t| {
            Some(acc.map_or(t, |a| a.min(t)))
        })?;
    // The coarse point stands for up to a step of samples before it.
    let from = (first - s).max(start.timestamp() as f64);
    let from = DateTime::<Utc>::from_timestamp_millis((from * 1000.0) as i64)?;
    let range = (end - from).to_std().ok()?;
    let fine = step_for(range).max(NATIVE_STEP);
    if fine >= step {
        return None;
    }
    let again = match client.query_range(query, from, end, fine).await {
        Ok(v) => v,
        Err(e) => {
            tracing::debug!(error = %e, "re-reading young series failed");
            return None;
        }
    };
    let mut replaced = false;
    for x in series.iter_mut().filter(|x| young(&x.values).is_some()) {
        if let Some(f) = again.iter().find(|f| f.metric == x.metric) {
            x.values = f.values.clone();
            replaced = true;
        }
    }
    replaced.then_some((from, fine))
}
