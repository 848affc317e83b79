//! What changed on the trigger's host when the trouble began, whatever it is called: every
//! series of the instances on that host, read at four times (two hours and one hour
//! before the change window, at its start, and now), and those whose slope was steady
//! before and is not since — a gauge that stepped (a fan at 0 rpm, a filesystem read-only,
//! a process group gone, a latency ten times higher) or a counter that began or stopped
//! counting (OOM kills, link flaps, errors), or a level that moved just before the window
//! and held (a cause precedes the alert; `judge.rs` decides). No metric name is known in advance: this is
//! the sweep's net for failure classes no other analyzer covers. The hosts the trigger
//! names are read first; in a small fleet the others too, and their clearest steps are
//! context ("at the same time, …"): a cause on another host; when the trigger names no
//! host, they are the answer. What changed together on one instance is one fact, with when
//! its clearest step happened (`describe.rs` tells a series), and counts that climbed
//! while their peers stayed at zero stand out (`outliers.rs`), as does the member whose
//! rise is most of its group's (`shares.rs`: the client holding the connections). The
//! exporters' own
//! bookkeeping series are left out.

mod describe;
mod histograms;
mod judge;
mod outliers;
mod shares;

use std::collections::{HashMap, HashSet};

use async_trait::async_trait;
use chrono::{DateTime, TimeDelta, Utc};

use super::kinds::{Kind, declared};
use super::{Prom, escape};
use crate::analyze::{AnalyzeError, Analyzer, Fact, Scope, Severity};
use crate::integrations::prometheus::{Labels, Sample};
use describe::{brief, fact, points_expr};
use judge::{counted, counter, early, moved, surprise};

/// Instances reported, by their clearest step (each costs the model tokens).
const MAX_FACTS: usize = 3;
/// Instances of the trigger's hosts read per sweep (a host runs a few exporters).
const MAX_INSTANCES: usize = 4;
/// Changed series of one instance shown in its fact.
const SERIES_PER_FACT: usize = 5;
/// Longest span read before the window (twice: two and one spans before its start).
const MAX_SPAN_BEFORE: TimeDelta = TimeDelta::hours(2);
/// Points read to find when the clearest step happened.
const CHANGE_POINTS: u64 = 120;
/// A series whose name states a span of time ([`super::ages::age_name`]) that grows by one
/// a second, give or take this share, is an age or a duration (a replication lag, the oldest transaction, the time
/// since the last success): its value says when it began.
const AGE_TOLERANCE: f64 = 0.1;
/// Series that stand out from peers at zero reported per read.
const MAX_OUTLIERS: usize = 2;
/// Members whose rise is most of their group's reported per read.
const MAX_RISERS: usize = 2;
/// The other instances are read when there are at most this many (a homelab's), and
/// their clearest steps reported as context.
const MAX_OTHER_INSTANCES: usize = 12;
const MAX_OTHER_FACTS: usize = 2;
/// Families that describe the exporter or the scrape, not the host (client_golang,
/// client_python, promhttp, Prometheus' own scrape series), and clocks that always move.
const BOOKKEEPING: [&str; 12] = [
    "go_",
    "process_",
    "python_",
    "promhttp_",
    "scrape_",
    "up",
    "node_scrape_collector_",
    "node_time",
    "node_boot_time",
    "node_textfile_mtime",
    "namedprocess_scrape_",
    "node_timex_",
];

pub struct Steps(pub Prom);

/// A series at the four times.
#[derive(Default)]
struct Points {
    labels: Labels,
    /// What the scrape declared it (`kinds.rs`): a gauge named `…_total` is one.
    kind: Kind,
    /// Values at `times[0..4]` (`NaN` when absent).
    v: [f64; 4],
    /// Its change came in the span just before the window (a level it has held since).
    early: bool,
    /// A histogram read as its quantile (`histograms.rs`): `labels` name the family, `v`
    /// is the quantile and `mean` the mean at each time.
    quantile: bool,
    mean: [f64; 4],
}

#[async_trait]
impl Analyzer for Steps {
    fn name(&self) -> &'static str {
        "steps"
    }

    async fn run(&self, scope: &Scope) -> Result<Vec<Fact>, AnalyzeError> {
        let Some(focus) = &scope.focus else {
            return Ok(Vec::new());
        };
        let all = self.0.client.label_values("instance", &[]).await?;
        let (named, others): (Vec<String>, Vec<String>) = all
            .into_iter()
            .partition(|i| focus.names_host(&crate::analyze::host_of(i)));
        let times = times(scope);
        // Without metadata, names and samples tell counters from gauges.
        let types = self.0.metric_types(scope).await.unwrap_or_default();
        let mut facts = self
            .steps(
                &named[..named.len().min(MAX_INSTANCES)],
                &times,
                MAX_FACTS,
                &types,
            )
            .await?;
        // What else changed at that moment, elsewhere: another host's backup filling the
        // uplink the alerting host's probe crosses, the NFS server that went away. When
        // the trigger names no host (a question about a service), that is the answer
        // itself, not context.
        if others.len() <= MAX_OTHER_INSTANCES {
            let alongside = !named.is_empty();
            let max = if alongside {
                MAX_OTHER_FACTS
            } else {
                MAX_FACTS
            };
            let elsewhere = self.steps(&others, &times, max, &types).await?;
            facts.extend(elsewhere.into_iter().map(|mut f| {
                if alongside {
                    f.severity = Severity::Info;
                    f.what = format!("at the same time, {}", f.what);
                }
                f
            }));
        }
        Ok(facts)
    }
}

impl Steps {
    /// The `max` clearest steps among every series of `instances` at `times`.
    async fn steps(
        &self,
        instances: &[String],
        times: &[DateTime<Utc>; 4],
        max: usize,
        types: &HashMap<String, String>,
    ) -> Result<Vec<Fact>, AnalyzeError> {
        let reads = instances.iter().flat_map(|instance| {
            let query = format!("{{instance=\"{}\"}}", escape(instance));
            times
                .iter()
                .enumerate()
                .map(move |(k, t)| (k, query.clone(), *t))
        });
        let answers = futures::future::join_all(
            reads.map(|(k, query, t)| async move { (k, self.0.vector_at(&query, t).await) }),
        )
        .await;
        let mut at: [Vec<Sample>; 4] = Default::default();
        for (k, answer) in answers {
            at[k].extend(answer?);
        }
        // Histograms are read as their quantile, their buckets and sums not as counters.
        let families: HashSet<String> = at
            .iter()
            .flatten()
            .filter_map(|s| histograms::family(&s.metric, types))
            .filter(|f| !bookkeeping(f))
            .map(str::to_string)
            .collect();
        let mut series: HashMap<Labels, Points> = HashMap::new();
        for (k, samples) in at.iter().enumerate() {
            for s in samples {
                let name = s.metric.get("__name__").map_or("", String::as_str);
                if bookkeeping(name) || histograms::part(name, &families) {
                    continue;
                }
                let p = series.entry(s.metric.clone()).or_insert_with(|| Points {
                    kind: declared(types, name),
                    labels: s.metric.clone(),
                    v: [f64::NAN; 4],
                    ..Points::default()
                });
                p.v[k] = s.value;
            }
        }
        if !families.is_empty() {
            for h in self.histograms(&at, times, &families).await? {
                let p = Points {
                    labels: h.labels.clone(),
                    kind: Kind::Gauge,
                    v: h.quantile,
                    early: false,
                    quantile: true,
                    mean: h.mean,
                };
                series.insert(h.labels, p);
            }
        }
        for p in series.values_mut() {
            if counter(p) {
                p.v = counted(&p.v);
            }
        }
        // A change within the window, else a level that moved just before it and held.
        let mut scores: HashMap<Labels, f64> = HashMap::new();
        for p in series.values_mut() {
            // A gauge that stepped moved by a share of its level, not by its jitter (a
            // file-descriptor limit wandering by 1 %).
            let is_counter = counter(p);
            let within = surprise(&p.v, times).filter(|_| is_counter || moved(&p.v));
            let score = within.or_else(|| early(is_counter, &p.v));
            p.early = within.is_none() && score.is_some();
            if let Some(s) = score {
                scores.insert(p.labels.clone(), s);
            }
        }
        let mut found: Vec<(f64, &Points)> = series
            .values()
            .filter_map(|p| Some((*scores.get(&p.labels)?, p)))
            .collect();
        found.sort_by(|a, b| b.0.total_cmp(&a.0));
        tracing::debug!(
            instances = instances.len(),
            series = series.len(),
            steps = found.len(),
            "steps read"
        );
        // What changed together on one instance is one event (a UPS on battery: its
        // status flags, input voltage, charge and runtime): one fact per instance, its
        // clearest step first and the others with it.
        let mut groups: Vec<(&str, Vec<&Points>)> = Vec::new();
        for (_, p) in found {
            let instance = p.labels.get("instance").map_or("", String::as_str);
            let room = groups.len() < max;
            match groups.iter_mut().find(|(i, _)| *i == instance) {
                Some((_, g)) => g.push(p),
                None if room => groups.push((instance, vec![p])),
                None => {}
            }
        }
        let mut facts = Vec::new();
        let mut shown: Vec<&Labels> = Vec::new();
        for (instance, group) in groups {
            let group = varied(group);
            shown.extend(group.iter().map(|p| &p.labels));
            let mut fact = fact(self.name(), group[0], times);
            if fact.since.is_none() {
                fact.since = self.changed_at(group[0], times).await;
            }
            let others: Vec<String> = group[1..].iter().map(|p| brief(p, times)).collect();
            if !others.is_empty() {
                let with = format!("with it on {instance}: {}", others.join("; "));
                fact = match fact.detail.take() {
                    Some(detail) => fact.detail(format!("{detail}; {with}")),
                    None => fact.detail(with),
                };
            }
            facts.push(fact);
        }
        // Peers at zero show what no step does (a steady climb); a series already told in
        // an instance's fact is not told twice.
        let outliers = outliers::find(&series, times);
        let stand_out = outliers
            .iter()
            .filter(|o| !shown.contains(&&o.points.labels))
            .take(MAX_OUTLIERS)
            .map(|o| outliers::fact(self.name(), o, times))
            .collect::<Vec<_>>();
        facts.extend(stand_out);
        // The member whose rise is most of its group's, even when it is the instance's
        // clearest step: its share is what that fact does not tell.
        let risers = shares::find(&series);
        facts.extend(
            risers
                .iter()
                .take(MAX_RISERS)
                .map(|r| shares::fact(self.name(), r, times)),
        );
        Ok(facts)
    }

    /// When series `p` left its level (a gauge) or its pace (a counter) between the last
    /// two times: read once more over that span, finely (`None` when the read fails).
    async fn changed_at(&self, p: &Points, t: &[DateTime<Utc>; 4]) -> Option<DateTime<Utc>> {
        // An early change happened between the two times before; the others since.
        let (a, b) = if p.early { (1, 2) } else { (2, 3) };
        let span = (t[b] - t[a]).num_seconds().max(60) as u64;
        let step = std::time::Duration::from_secs((span / CHANGE_POINTS).max(15));
        let expr = points_expr(p);
        let series = self
            .0
            .client
            .query_range(&expr, t[a], t[b], step)
            .await
            .ok()?;
        let values = &series.first()?.values;
        let i = match counter(p) {
            false => {
                let half = (p.v[b] - p.v[a]).abs() / 2.0;
                values
                    .iter()
                    .position(|(_, x)| (x - p.v[a]).abs() >= half)?
            }
            true => {
                let secs = |a: usize, b: usize| (t[b] - t[a]).num_seconds().max(1) as f64;
                let (before, since) = (
                    (p.v[2] - p.v[1]) / secs(1, 2),
                    (p.v[3] - p.v[2]) / secs(2, 3),
                );
                let mid = (before + since) / 2.0;
                let rising = since > before;
                values.windows(2).position(|w| {
                    let pace = (w[1].1 - w[0].1) / (w[1].0 - w[0].0).max(1.0);
                    if rising { pace >= mid } else { pace <= mid }
                })?
            }
        };
        let (at, _) = values.get(i)?;
        DateTime::from_timestamp_millis((at * 1000.0) as i64)
    }
}

impl Steps {
    /// The histograms of `families` among the reads `at` of the four `times`, read again
    /// [`histograms::RATE_WINDOW`] before each time (the instances that have them), as
    /// their quantile and mean at each time.
    async fn histograms(
        &self,
        at: &[Vec<Sample>; 4],
        times: &[DateTime<Utc>; 4],
        families: &HashSet<String>,
    ) -> Result<Vec<histograms::Read4>, AnalyzeError> {
        let instances: std::collections::BTreeSet<&str> = at
            .iter()
            .flatten()
            .filter(|s| {
                let name = s.metric.get("__name__").map_or("", String::as_str);
                histograms::part(name, families)
            })
            .filter_map(|s| s.metric.get("instance").map(String::as_str))
            .collect();
        let reads = instances.iter().flat_map(|instance| {
            let query = format!(
                "{{instance=\"{}\",{}}}",
                escape(instance),
                histograms::PARTS_SELECTOR
            );
            times.iter().enumerate().map(move |(k, t)| {
                let then = t.checked_sub_signed(histograms::RATE_WINDOW).unwrap_or(*t);
                (k, query.clone(), then)
            })
        });
        let answers = futures::future::join_all(
            reads.map(|(k, query, t)| async move { (k, self.0.vector_at(&query, t).await) }),
        )
        .await;
        let mut before: [Vec<Sample>; 4] = Default::default();
        for (k, answer) in answers {
            before[k].extend(answer?);
        }
        Ok(histograms::fold(at, &before, families))
    }
}

/// At most [`SERIES_PER_FACT`] of `group` (clearest first): one of each metric first, so
/// a UPS's charge and runtime are not crowded out by its many status flags.
fn varied(group: Vec<&Points>) -> Vec<&Points> {
    let name = |p: &Points| p.labels.get("__name__").cloned().unwrap_or_default();
    let mut seen = std::collections::HashSet::new();
    let (first, rest): (Vec<&Points>, Vec<&Points>) =
        group.into_iter().partition(|p| seen.insert(name(p)));
    first
        .into_iter()
        .chain(rest)
        .take(SERIES_PER_FACT)
        .collect()
}

/// The four times: two and one window lengths before the change window, its start, now.
/// An alert's window starts 30 minutes before it fired (its rule's `for` and the time to
/// notice); a question's four hours back ("for a few hours now"), against the two hours
/// before, an hour apart.
fn times(scope: &Scope) -> [DateTime<Utc>; 4] {
    let question = scope.focus.as_ref().is_some_and(|f| f.is_question());
    if question || scope.started >= scope.now - TimeDelta::minutes(1) {
        let start = scope.now - TimeDelta::hours(4);
        let span = TimeDelta::hours(1);
        return [start - span - span, start - span, start, scope.now];
    }
    let start = scope.started - TimeDelta::minutes(30);
    // The spans before the window are as long as it, within bounds: slopes are per second,
    // and three times an old alert's age back is often before the data begins (a short
    // retention, a target added this morning).
    let span = (scope.now - start).clamp(TimeDelta::hours(1), MAX_SPAN_BEFORE);
    [start - span - span, start - span, start, scope.now]
}

/// A series with `pairs` for labels read as `v` (for the tests of the judges).
#[cfg(test)]
fn points(pairs: &[(&str, &str)], v: [f64; 4]) -> (Labels, Points) {
    let labels = super::labels(pairs);
    let p = Points {
        labels: labels.clone(),
        kind: Kind::Unknown,
        v,
        ..Points::default()
    };
    (labels, p)
}

fn bookkeeping(name: &str) -> bool {
    name.is_empty()
        || name.ends_with("_created")
        || name.ends_with("_info")
        || BOOKKEEPING.iter().any(|p| {
            if *p == "up" {
                name == "up"
            } else {
                name.starts_with(p)
            }
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(mins_ago: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_800_000_000, 0).unwrap() - TimeDelta::minutes(mins_ago)
    }

    #[test]
    fn a_question_compares_the_last_four_hours_with_the_two_before() {
        let now = at(0);
        let scope = Scope::new(now, Some(now - TimeDelta::hours(6)))
            .with_focus(crate::analyze::Focus::question("uploads fail"));
        assert_eq!(times(&scope), [at(360), at(300), at(240), at(0)]);
        // An alert that fired 20 minutes ago: from 30 minutes before it, spans of an hour
        // at least.
        let alert = crate::analyze::Focus::alert(&Default::default(), Some(at(20)));
        let scope = Scope::new(now, Some(at(20))).with_focus(alert);
        assert_eq!(times(&scope), [at(170), at(110), at(50), at(0)]);
        // One that fired 160 minutes ago reads two spans of two hours before its window,
        // not of its age (9 h 30 min back is before a short retention begins).
        let alert = crate::analyze::Focus::alert(&Default::default(), Some(at(160)));
        let scope = Scope::new(now, Some(at(160))).with_focus(alert);
        assert_eq!(times(&scope), [at(430), at(310), at(190), at(0)]);
    }

    #[test]
    fn the_exporters_own_series_are_bookkeeping_and_the_hosts_are_not() {
        for b in [
            "go_goroutines",
            "process_cpu_seconds_total",
            "up",
            "node_time_seconds",
        ] {
            assert!(bookkeeping(b), "{b}");
        }
        for h in ["upsd_battery", "node_hwmon_fan_rpm", "node_vmstat_oom_kill"] {
            assert!(!bookkeeping(h), "{h}");
        }
    }
}
