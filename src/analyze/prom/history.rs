//! What the availability and change analyzers share: instant queries at the window's
//! start (to compare what was there then with what is there now), range lookups over the
//! few entities already found bad (at most [`MAX_LOOKUPS`], run concurrently), and when a
//! range series changed and from what.

use chrono::{DateTime, Utc};

use super::Prom;
use crate::analyze::{AnalyzeError, Scope};
use crate::integrations::prometheus::{Sample, Series};

/// Most entities whose history one analyzer reads (the rest are reported without a since).
pub const MAX_LOOKUPS: usize = 10;
/// Points of a history lookup over the window (at least 15 s apart).
pub const POINTS: u32 = 240;

impl Prom {
    /// The instant vector of `expr` at `at`.
    pub async fn vector_at(
        &self,
        expr: &str,
        at: DateTime<Utc>,
    ) -> Result<Vec<Sample>, AnalyzeError> {
        let v = self.client.query_vector(expr, Some(at)).await?;
        if v.len() > super::MAX_SERIES {
            return Err(AnalyzeError::Other(format!(
                "{} series for {expr}, more than {}",
                v.len(),
                super::MAX_SERIES
            )));
        }
        Ok(v)
    }

    /// The history over the window of each of the first [`MAX_LOOKUPS`] `exprs`, queried
    /// concurrently (one answer per expression, in order).
    pub async fn histories(
        &self,
        exprs: &[String],
        scope: &Scope,
    ) -> Result<Vec<Vec<Series>>, AnalyzeError> {
        let runs = exprs
            .iter()
            .take(MAX_LOOKUPS)
            .map(|e| self.range(e, scope, POINTS));
        futures::future::join_all(runs).await.into_iter().collect()
    }
}

/// A time from Unix seconds, when it is a representable one.
pub fn time_of(secs: f64) -> Option<DateTime<Utc>> {
    if !secs.is_finite() {
        return None;
    }
    DateTime::from_timestamp_millis((secs * 1000.0).round() as i64)
}

/// When a range series last changed value, and the value it had before: the first point
/// of the last run of equal values and the point before it (`None`: no change).
pub fn last_transition(values: &[(f64, f64)]) -> Option<(DateTime<Utc>, f64)> {
    let (_, last) = *values.last()?;
    let i = values.iter().rposition(|(_, v)| *v != last)?;
    let (_, before) = values[i];
    let (t, _) = values.get(i + 1)?;
    Some((time_of(*t)?, before))
}

/// The earliest point of `series` (when a series first appears in the window).
pub fn first_seen(series: &[Series]) -> Option<DateTime<Utc>> {
    series
        .iter()
        .filter_map(|s| s.values.first().map(|(t, _)| *t))
        .fold(None, |acc: Option<f64>, t| {
            Some(acc.map_or(t, |a| a.min(t)))
        })
        .and_then(time_of)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::integrations::prometheus::Labels;

    #[test]
    fn the_last_transition_gives_when_and_the_value_before() {
        let v = [
            (60.0, 200.0),
            (120.0, 200.0),
            (180.0, 502.0),
            (240.0, 502.0),
        ];
        let (t, before) = last_transition(&v).unwrap();
        assert_eq!((t.timestamp(), before), (180, 200.0));
        assert_eq!(last_transition(&[(60.0, 1.0), (120.0, 1.0)]), None);
        assert_eq!(last_transition(&[]), None);
    }

    #[test]
    fn a_series_is_first_seen_at_its_earliest_point_and_bad_times_are_none() {
        let s = |t: f64| Series {
            metric: Labels::new(),
            values: vec![(t, 1.0), (t + 60.0, 1.0)],
        };
        assert_eq!(first_seen(&[s(600.0), s(300.0)]).unwrap().timestamp(), 300);
        assert_eq!(first_seen(&[]), None);
        assert_eq!(time_of(f64::NAN), None);
        assert_eq!(time_of(1e300), None);
    }
}
