//! When the trigger's own series left its level: an alert fires when a threshold is
//! crossed, often hours after what it measures began to move (a queue that grows from the
//! moment a relay refuses, a backlog, a count of failures). The series that carry every
//! label the alert shares with Prometheus (a Grafana alert carries no expression, its
//! labels are the series') are read back up to a week; one that held steady, then moved
//! and stayed moved, well before the alert's start, is a fact with that onset, and the
//! sweep reads around it as it does for any state of the trigger's that began early
//! (`sweep::onset`). A series that only counts is read as its rate.

use async_trait::async_trait;
use chrono::{DateTime, TimeDelta, Utc};

use super::since::run_start;
use super::{Prom, host, labels_map, selector};
use crate::analyze::{
    AnalyzeError, Analyzer, Entity, Fact, FactClass, ONSET_LEAD, Quantity, Scope, Severity, Source,
    human_seconds,
};
use crate::integrations::prometheus::Labels;

/// More series than this sharing the alert's labels: the labels name a host or a job,
/// not one thing, and other analyzers read those.
const MAX_SERIES: usize = 6;
/// How far back a series is read for the level it held.
const LOOKBACK: TimeDelta = TimeDelta::days(7);
/// Points of the coarse read over the lookback, and of the fine read around the onset.
const POINTS: i64 = 240;
const FINE_POINTS: i64 = 120;
/// Labels an alert adds that no series of its carries.
const ALERT_ONLY: [&str; 3] = ["alertname", "severity", "__name__"];

pub struct TriggerOnset(pub Prom);

#[async_trait]
impl Analyzer for TriggerOnset {
    fn name(&self) -> &'static str {
        "trigger_onset"
    }

    async fn run(&self, scope: &Scope) -> Result<Vec<Fact>, AnalyzeError> {
        let Some(focus) = scope.focus.as_ref().filter(|f| !f.is_question()) else {
            return Ok(Vec::new());
        };
        let Some(latest) = scope.started.checked_sub_signed(ONSET_LEAD) else {
            return Ok(Vec::new());
        };
        let client = &self.0.client;
        let names = client
            .label_names(&[], scope.window_start, scope.now)
            .await?;
        let shared: Vec<(&str, &str)> = focus
            .labels()
            .iter()
            .filter(|(k, _)| !ALERT_ONLY.contains(&k.as_str()) && names.contains(k))
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        if shared.is_empty() {
            return Ok(Vec::new());
        }
        let found = client
            .series(
                &selector(shared),
                scope.window_start,
                scope.now,
                4 * MAX_SERIES,
            )
            .await?;
        let series: Vec<Labels> = found
            .into_iter()
            .filter(|l| {
                l.get("__name__")
                    .is_some_and(|n| !n.starts_with("ALERTS") && !n.ends_with("_bucket"))
            })
            .collect();
        if series.is_empty() || series.len() > MAX_SERIES {
            return Ok(Vec::new());
        }
        let reads = series.iter().map(|l| self.onset_of(l, scope, latest));
        let facts = futures::future::join_all(reads)
            .await
            .into_iter()
            .flatten()
            .collect();
        Ok(facts)
    }
}

impl TriggerOnset {
    /// The fact of series `labels` when it left a steady level before `latest`.
    async fn onset_of(
        &self,
        labels: &Labels,
        scope: &Scope,
        latest: DateTime<Utc>,
    ) -> Option<Fact> {
        let name = labels.get("__name__")?;
        let sel = format!(
            "{name}{}",
            selector(
                labels
                    .iter()
                    .filter(|(k, _)| k.as_str() != "__name__")
                    .map(|(k, v)| (k.as_str(), v.as_str()))
            )
        );
        let back = scope.now.checked_sub_signed(LOOKBACK)?;
        let step = (LOOKBACK.num_seconds() / POINTS).max(15);
        let raw = self.read(&sel, back, scope.now, step).await?;
        let counting = counts(&raw);
        let expr = |step: i64| match counting {
            true => format!("rate({sel}[{}s])", (2 * step).max(300)),
            false => sel.clone(),
        };
        let coarse = match counting {
            true => self.read(&expr(step), back, scope.now, step).await?,
            false => raw,
        };
        let level = Level::of(&coarse)?;
        let mut onset = level.onset(&coarse)?;
        // Coarse points are far apart: read around the onset finely.
        let from = onset.checked_sub_signed(TimeDelta::seconds(2 * step))?;
        let to = onset.checked_add_signed(TimeDelta::seconds(step))?;
        let fine_step = (3 * step / FINE_POINTS).max(15);
        if let Some(fine) = self.read(&expr(fine_step), from, to, fine_step).await
            && let Some(t) = run_start(&fine, |v| level.departed(v))
        {
            onset = t;
        }
        if onset >= latest {
            return None;
        }
        let (was, now) = match counting {
            true => (
                Quantity::rate_of_counter(name, level.base),
                Quantity::rate_of_counter(name, level.now),
            ),
            false => (
                Quantity::of_metric(name, level.base),
                Quantity::of_metric(name, level.now),
            ),
        };
        let entity = Entity::new("series", name.clone())
            .on_host(host(labels))
            .with_labels(labels_map(labels));
        let before_alert = human_seconds((scope.started - onset).num_seconds() as f64);
        Some(
            Fact::new(
                FactClass::Change,
                "trigger_onset",
                entity,
                format!(
                    "{before_alert} before the alert began, {} to",
                    if level.now > level.base {
                        "rose"
                    } else {
                        "fell"
                    }
                ),
                Severity::Warning,
                Source::promql(&expr(step)),
            )
            .value(now)
            .since(Some(onset))
            .detail(format!(
                "{was} until {}, {now} since",
                onset.format("%Y-%m-%d %H:%M UTC")
            )),
        )
    }

    /// The finite points of the first series of `expr` from `from` to `to`.
    async fn read(
        &self,
        expr: &str,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
        step: i64,
    ) -> Option<Vec<(f64, f64)>> {
        let step = std::time::Duration::from_secs(u64::try_from(step).ok()?);
        let series = self.0.client.query_range(expr, from, to, step).await.ok()?;
        let s = series.into_iter().next()?;
        Some(
            s.values
                .into_iter()
                .filter(|(_, v)| v.is_finite())
                .collect(),
        )
    }
}

/// Whether the points only count up (falls of more than half are restarts) and did count.
fn counts(v: &[(f64, f64)]) -> bool {
    let rose = v.windows(2).any(|w| w[1].1 > w[0].1);
    let only_up = v
        .windows(2)
        .all(|w| w[1].1 >= w[0].1 || w[1].1 <= 0.5 * w[0].1);
    rose && only_up
}

/// The level a series held at first and the one it holds now.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Level {
    base: f64,
    now: f64,
    /// How far from `base` a point is departed.
    tolerance: f64,
}

/// How much of the move the first points may wander and still be a steady level.
const STEADY_SHARE: f64 = 0.05;
/// How much of the move a point must have made to have departed.
const DEPARTED_SHARE: f64 = 0.1;
/// Fewest points of the first level.
const MIN_BASE_POINTS: usize = 3;

impl Level {
    /// The first fifth of `v` (at least three points) as the level held, when it was
    /// steady and the last points are well away from it.
    fn of(v: &[(f64, f64)]) -> Option<Self> {
        let k = (v.len() / 5).max(MIN_BASE_POINTS);
        if v.len() < 2 * k + MIN_BASE_POINTS {
            return None;
        }
        let first: Vec<f64> = v[..k].iter().map(|(_, x)| *x).collect();
        let last: Vec<f64> = v[v.len() - MIN_BASE_POINTS..]
            .iter()
            .map(|(_, x)| *x)
            .collect();
        let (base, now) = (median(&first), median(&last));
        let shift = (now - base).abs();
        let spread = first.iter().fold(f64::MIN, |a, b| a.max(*b))
            - first.iter().fold(f64::MAX, |a, b| a.min(*b));
        let steady = shift > 0.0 && spread <= STEADY_SHARE * shift;
        steady.then_some(Self {
            base,
            now,
            tolerance: DEPARTED_SHARE * shift,
        })
    }

    fn departed(&self, v: f64) -> bool {
        (v - self.base).abs() > self.tolerance
    }

    /// When `v`'s last run of departed points began, if after the first level.
    fn onset(&self, v: &[(f64, f64)]) -> Option<DateTime<Utc>> {
        let i = v.iter().rposition(|(_, x)| !self.departed(*x))?;
        let (t, _) = v.get(i + 1)?;
        DateTime::from_timestamp_millis((t * 1000.0) as i64)
    }
}

fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    s[s.len() / 2]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn points(v: &[f64]) -> Vec<(f64, f64)> {
        v.iter()
            .enumerate()
            .map(|(i, x)| (1_700_000_000.0 + 60.0 * i as f64, *x))
            .collect()
    }

    #[test]
    fn a_steady_level_that_moved_and_stayed_has_its_onset() {
        let mut v = vec![0.0; 10];
        v.extend([0.0065, 0.0066, 0.0064, 0.0065, 0.0065, 0.0066, 0.0065]);
        let p = points(&v);
        let level = Level::of(&p).unwrap();
        assert_eq!(level.base, 0.0);
        assert_eq!(level.onset(&p).unwrap().timestamp(), 1_700_000_000 + 600);
        // A ramp departs where it begins (a tenth of its rise later), not halfway.
        let ramp: Vec<f64> = (0..20)
            .map(|i| {
                if i < 8 {
                    5.0
                } else {
                    5.0 + 10.0 * (i - 7) as f64
                }
            })
            .collect();
        let p = points(&ramp);
        assert_eq!(
            Level::of(&p).unwrap().onset(&p).unwrap().timestamp(),
            1_700_000_000 + 540
        );
    }

    #[test]
    fn noise_a_trend_from_the_start_or_no_move_has_no_level() {
        let noisy: Vec<f64> = (0..30)
            .map(|i| 50.0 + if i % 2 == 0 { 20.0 } else { -20.0 })
            .collect();
        assert_eq!(Level::of(&points(&noisy)), None);
        let trend: Vec<f64> = (0..30).map(|i| 100.0 - 2.0 * i as f64).collect();
        assert_eq!(Level::of(&points(&trend)), None);
        assert_eq!(Level::of(&points(&[7.0; 30])), None);
        assert_eq!(
            Level::of(&points(&[0.0, 0.0, 0.0, 5.0])),
            None,
            "too few points"
        );
    }

    #[test]
    fn a_counter_counts_and_a_gauge_does_not() {
        assert!(counts(&points(&[1.0, 2.0, 2.0, 5.0, 0.5, 3.0])));
        assert!(!counts(&points(&[1.0, 2.0, 1.8, 5.0])));
        assert!(!counts(&points(&[4.0, 4.0, 4.0])));
    }
}
