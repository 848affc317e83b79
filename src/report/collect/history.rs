//! Firing history for alert hygiene: the episodes of each alert series in the period, from
//! Prometheus `ALERTS` samples or from the alerts received over webhooks.

use std::collections::BTreeMap;
use std::time::Duration;

use super::alerts::episodes;
use crate::alerts::model::AlertStatus;
use crate::alerts::store::AlertRecord;
use crate::integrations::prometheus::Series;

/// One firing episode in unix seconds; `open` when still firing at the end of the period.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Episode {
    pub start: f64,
    pub end: f64,
    pub open: bool,
}

impl Episode {
    pub fn secs(&self) -> f64 {
        self.end - self.start
    }
}

/// The episodes of one alert series (one label set).
#[derive(Clone, Debug, Default)]
pub struct Timeline {
    pub alertname: String,
    /// The series as a reader knows it: its `instance`, or its other labels.
    pub series: String,
    pub labels: BTreeMap<String, String>,
    pub episodes: Vec<Episode>,
}

fn series_name(labels: &BTreeMap<String, String>) -> String {
    if let Some(i) = labels.get("instance") {
        return i.clone();
    }
    let other: Vec<String> = labels
        .iter()
        .filter(|(k, _)| !matches!(k.as_str(), "alertname" | "alertstate" | "severity"))
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    other.join(",")
}

/// Timelines from `timestamp(ALERTS{alertstate="firing"})` series.
pub fn from_alerts_series(series: &[Series], step: Duration, end: f64) -> Vec<Timeline> {
    let step_s = step.as_secs_f64();
    series
        .iter()
        .map(|s| Timeline {
            alertname: s.metric.get("alertname").cloned().unwrap_or_default(),
            series: series_name(&s.metric),
            labels: s.metric.clone().into_iter().collect(),
            episodes: episodes(s, step)
                .into_iter()
                .map(|(first, last)| Episode {
                    start: first,
                    end: (last + step_s).min(end),
                    open: last >= end - 2.0 * step_s,
                })
                .collect(),
        })
        .collect()
}

/// Timelines from received alerts, fed one at a time (`add`): an episode per fingerprint
/// and `startsAt`, ended by a resolved notification (repeated firing notifications of one
/// episode count once).
#[derive(Default)]
pub struct Received {
    by_fp: BTreeMap<String, (Timeline, BTreeMap<i64, Option<f64>>)>,
}

impl Received {
    pub fn add(&mut self, r: &AlertRecord) {
        let a = &r.alert;
        let (_, eps) = self.by_fp.entry(a.fingerprint.clone()).or_insert_with(|| {
            let labels: BTreeMap<String, String> = a.labels.clone().into_iter().collect();
            let t = Timeline {
                alertname: a.name.clone(),
                series: series_name(&labels),
                labels,
                episodes: Vec::new(),
            };
            (t, BTreeMap::new())
        });
        let start = a.starts_at.unwrap_or(r.received_at).timestamp();
        match a.status {
            AlertStatus::Firing => {
                eps.entry(start).or_insert(None);
            }
            AlertStatus::Resolved => {
                let ended = a.ends_at.unwrap_or(r.received_at).timestamp() as f64;
                eps.insert(start, Some(ended));
            }
        }
    }

    /// The timelines, with episodes still open cut at `end` (unix seconds).
    pub fn finish(self, end: f64) -> Vec<Timeline> {
        self.by_fp
            .into_values()
            .map(|(mut t, eps)| {
                t.episodes = eps
                    .into_iter()
                    .map(|(start, ended)| Episode {
                        start: start as f64,
                        end: ended.unwrap_or(end).min(end),
                        open: ended.is_none(),
                    })
                    .collect();
                t
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use chrono::{DateTime, Utc};

    use super::*;
    use crate::alerts::model::{Alert, AlertSource};
    use crate::alerts::store::Outcome;

    fn at(secs: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_795_000_000 + secs, 0).unwrap()
    }

    fn record(
        fp: &str,
        status: AlertStatus,
        starts: i64,
        ends: Option<i64>,
        got: i64,
    ) -> AlertRecord {
        AlertRecord {
            batch: None,
            received_at: at(got),
            group_key: "g".into(),
            outcome: Outcome::Queued,
            alert: Alert {
                source: AlertSource::Grafana,
                fingerprint: fp.into(),
                status,
                name: "DiskFull".into(),
                labels: [("alertname", "DiskFull"), ("instance", fp)]
                    .into_iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
                annotations: Default::default(),
                starts_at: Some(at(starts)),
                ends_at: ends.map(at),
                generator_url: None,
                dashboard_url: None,
                panel_url: None,
                silence_url: None,
                value: None,
            },
        }
    }

    #[test]
    fn received_alerts_become_one_episode_per_start_ended_by_the_resolved_notice() {
        use AlertStatus::{Firing, Resolved};
        let end = at(10_000).timestamp() as f64;
        let records = [
            record("a", Firing, 0, None, 0),
            record("a", Firing, 0, None, 3600), // a repeat of the same episode
            record("a", Resolved, 0, Some(4000), 4000),
            record("a", Firing, 5000, None, 5000),
            record("b", Firing, 100, Some(999_999), 100), // endsAt in the future while firing
        ];
        let mut received = Received::default();
        records.iter().for_each(|r| received.add(r));
        let t = received.finish(end);
        assert_eq!(t.len(), 2);
        assert_eq!(t[0].series, "a");
        let start = at(0).timestamp() as f64;
        assert_eq!(
            t[0].episodes,
            [
                Episode {
                    start,
                    end: start + 4000.0,
                    open: false
                },
                Episode {
                    start: start + 5000.0,
                    end,
                    open: true
                },
            ]
        );
        assert_eq!(t[1].episodes.len(), 1);
        assert!(t[1].episodes[0].open && t[1].episodes[0].end == end);
    }

    #[test]
    fn alerts_series_samples_become_episodes_open_when_firing_at_the_end() {
        let step = Duration::from_secs(60);
        let series = Series {
            metric: [
                ("alertname", "CpuHigh"),
                ("job", "node"),
                ("severity", "warning"),
            ]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
            // Two samples, a gap, then samples up to the end.
            values: [0.0, 60.0, 600.0, 660.0, 720.0]
                .into_iter()
                .map(|t| (t, t))
                .collect(),
        };
        let t = from_alerts_series(&[series], step, 780.0);
        assert_eq!(t[0].series, "job=node");
        assert_eq!(
            t[0].episodes,
            [
                Episode {
                    start: 0.0,
                    end: 120.0,
                    open: false
                },
                Episode {
                    start: 600.0,
                    end: 780.0,
                    open: true
                },
            ]
        );
    }
}
