//! A target scraped by two jobs at once: a scrape config added beside an old one (a file
//! dropped into a config directory, a second ServiceMonitor or PodMonitor selecting the
//! same pods, a static job left in place when service discovery took over) makes
//! Prometheus scrape one `instance` under each job. Every series of that target then
//! exists once per job, the same labels but `job`: a join `on(instance) group_left(…)`
//! finds two series on one side ("many-to-many matching not allowed"), so the recording
//! and alerting rules built on it fail, and sums over the host count it twice.
//!
//! Read from `up`: the instances present under two or more jobs now, both up. Two jobs may
//! rightly share an `instance` (a blackbox_exporter probing one URL with two modules, a
//! federation job beside the server's own): those scrape different series. Only a pair of
//! jobs whose series (counted per metric name, Prometheus' own `up` and `scrape_*` left
//! out) are mostly the same on that instance, both ways, is a duplicate. Since when is when the later
//! job's `up` first appeared in the look-back (coarsely, then finely). Rule evaluation
//! failures (`prometheus_rule_evaluation_failures_total`) that rose since then are told
//! with it; the fact stands without them.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use async_trait::async_trait;
use chrono::{DateTime, TimeDelta, Utc};

use super::history::time_of;
use super::{Prom, host, selector};
use crate::analyze::{
    AnalyzeError, Analyzer, Entity, Fact, FactClass, Scope, Severity, Source, human_seconds,
    round_sig,
};
use crate::integrations::prometheus::Sample;

/// Share of the larger job's series whose metric names the other job has as often, from
/// which two jobs scrape the same thing (a duplicated config: all of them; two blackbox
/// modules on one URL: half or less, the smaller module's names being the larger's too).
const MIN_SHARED: f64 = 0.9;
/// Instances whose series are compared per sweep (each costs a query per job), and facts.
const MAX_CHECKED: usize = 8;
const MAX_FACTS: usize = 4;
/// The shortest look-back since when is read over, and its points.
const MIN_LOOKBACK: TimeDelta = TimeDelta::days(1);
const POINTS: u64 = 240;
/// Points of the fine read between the last coarse point without the job and its first.
const FINE_POINTS: u64 = 120;

pub struct ScrapedTwice(pub Prom);

/// The instances of `up` (targets up now) present under two or more jobs, with their jobs
/// (sorted), by instance.
fn doubled(up: &[Sample]) -> BTreeMap<String, BTreeSet<String>> {
    let mut jobs: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for s in up.iter().filter(|s| s.value == 1.0) {
        if let (Some(i), Some(j)) = (s.metric.get("instance"), s.metric.get("job")) {
            jobs.entry(i.clone()).or_default().insert(j.clone());
        }
    }
    jobs.retain(|_, j| j.len() >= 2);
    jobs
}

/// The entity of a target by its instance.
fn target(instance: &str) -> Entity {
    let labels = BTreeMap::from([("instance".to_string(), instance.to_string())]);
    Entity::new("target", instance)
        .on_host(host(&labels))
        .with_labels(labels)
}

/// Whether a metric name is Prometheus' own per target (present for any job).
fn bookkeeping(name: &str) -> bool {
    name == "up" || name.starts_with("scrape_")
}

/// How many of two jobs' series (counted per metric name) both have, and the larger's
/// total; `None` when either has none.
fn shared(a: &HashMap<String, f64>, b: &HashMap<String, f64>) -> Option<(f64, f64)> {
    let total = |m: &HashMap<String, f64>| -> f64 {
        m.iter()
            .filter(|(n, _)| !bookkeeping(n))
            .map(|(_, c)| *c)
            .sum()
    };
    let (ta, tb) = (total(a), total(b));
    if ta.min(tb) <= 0.0 {
        return None;
    }
    let common: f64 = a
        .iter()
        .filter(|(n, _)| !bookkeeping(n))
        .filter_map(|(n, c)| b.get(n).map(|d| c.min(*d)))
        .sum();
    Some((common, ta.max(tb)))
}

/// The pairs of `jobs` that scrape the same series, with how many they share of how many.
fn twins(counts: &[(String, HashMap<String, f64>)]) -> Vec<(&str, &str, f64, f64)> {
    let mut out = Vec::new();
    for (i, (a, ca)) in counts.iter().enumerate() {
        for (b, cb) in counts.iter().skip(i + 1) {
            if let Some((common, of)) = shared(ca, cb)
                && common >= MIN_SHARED * of
            {
                out.push((a.as_str(), b.as_str(), common, of));
            }
        }
    }
    out
}

/// The first point of a range series, and whether it is the range's first (the series
/// was there before the range began).
fn first_point(values: &[(f64, f64)], start: DateTime<Utc>, step: f64) -> Option<(f64, bool)> {
    let (t, _) = *values.first()?;
    let at_start = t <= start.timestamp() as f64 + step;
    Some((t, at_start))
}

#[async_trait]
impl Analyzer for ScrapedTwice {
    fn name(&self) -> &'static str {
        "scraped_twice"
    }

    async fn run(&self, scope: &Scope) -> Result<Vec<Fact>, AnalyzeError> {
        let up = self.0.vector("up == 1").await?;
        // The instances the trigger is about first (a fleet duplicated by one config has
        // more than are compared).
        let mut doubled: Vec<(String, BTreeSet<String>)> = doubled(&up).into_iter().collect();
        doubled.sort_by_key(|(i, _)| !scope.is_about(&target(i)));
        let mut found = Vec::new();
        for (instance, jobs) in doubled.into_iter().take(MAX_CHECKED) {
            let mut counts = Vec::new();
            for job in &jobs {
                let sel = selector([("instance", instance.as_str()), ("job", job.as_str())]);
                let by_name = self
                    .0
                    .vector(&format!("count by (__name__) ({sel})"))
                    .await?;
                let names: HashMap<String, f64> = by_name
                    .into_iter()
                    .filter_map(|s| Some((s.metric.get("__name__")?.clone(), s.value)))
                    .collect();
                counts.push((job.clone(), names));
            }
            let pairs = twins(&counts);
            let Some(&(a, b, common, of)) = pairs.first() else {
                continue;
            };
            let twinned: BTreeSet<String> = pairs
                .iter()
                .flat_map(|(x, y, _, _)| [x.to_string(), y.to_string()])
                .collect();
            found.push((
                instance,
                twinned,
                (a.to_string(), b.to_string(), common, of),
            ));
        }
        if found.is_empty() {
            return Ok(Vec::new());
        }
        let back = scope.window().max(MIN_LOOKBACK);
        let start = scope.now.checked_sub_signed(back).unwrap_or(scope.now);
        let step = (back.num_seconds().max(60) as u64 / POINTS).max(15);
        let mut facts = Vec::new();
        for (instance, jobs, (a, b, common, of)) in found {
            // The job that appeared last, and when.
            let mut latest: Option<(String, f64)> = None;
            let mut whole = true;
            for job in &jobs {
                let expr = format!(
                    "up{}",
                    selector([("instance", instance.as_str()), ("job", job.as_str())])
                );
                let Some(t) = self.appeared(&expr, (start, scope.now), step).await else {
                    continue;
                };
                whole = false;
                if latest.as_ref().is_none_or(|(_, l)| t > *l) {
                    latest = Some((job.clone(), t));
                }
            }
            let since = latest.as_ref().and_then(|(_, t)| time_of(*t));
            let names: Vec<&str> = jobs.iter().map(String::as_str).collect();
            // What tells this target apart first (the detail is cut at a few lines), the
            // consequence last.
            let mut detail = match (&latest, since) {
                (Some((job, _)), Some(t)) => {
                    format!("job {job} began scraping it at {}; ", t.format("%H:%M UTC"))
                }
                _ if whole => format!(
                    "both jobs scraped it for the whole look-back ({}); ",
                    human_seconds(back.num_seconds() as f64)
                ),
                _ => String::new(),
            };
            detail.push_str(&format!(
                "{} of {} series (by metric name) scraped by both job {a} and job {b}",
                round_sig(common),
                round_sig(of),
            ));
            let from = since.unwrap_or(start);
            if let Some(failures) = self.rule_failures(from, scope.now).await {
                detail.push_str(&failures);
            }
            detail.push_str(
                "; each series exists once per job, so a join on(instance) with group_left \
                 matches many-to-many and fails",
            );
            facts.push(
                Fact::new(
                    FactClass::Change,
                    self.name(),
                    target(&instance),
                    format!(
                        "scraped by {} jobs at once: {}",
                        names.len(),
                        names.join(", ")
                    ),
                    Severity::Warning,
                    Source::promql(&format!(
                        "count by (job) (up{})",
                        selector([("instance", instance.as_str())])
                    )),
                )
                .since(since)
                .detail(detail),
            );
        }
        // Those the trigger is about first, then the most recent (a config just changed).
        facts.sort_by(|x, y| {
            let about = |f: &Fact| scope.is_about(&f.entity);
            about(y).cmp(&about(x)).then(y.since.cmp(&x.since))
        });
        facts.truncate(MAX_FACTS);
        Ok(facts)
    }
}

impl ScrapedTwice {
    /// When the one series `expr` first appeared within `(start, now)`, read every `step`
    /// seconds and then finely before its first point (`None`: there from the start, or
    /// unknown).
    async fn appeared(
        &self,
        expr: &str,
        (start, now): (DateTime<Utc>, DateTime<Utc>),
        step: u64,
    ) -> Option<f64> {
        let coarse = self
            .0
            .client
            .query_range(expr, start, now, std::time::Duration::from_secs(step))
            .await
            .ok()?;
        let (t, at_start) = first_point(&coarse.first()?.values, start, step as f64)?;
        if at_start {
            return None;
        }
        let to = time_of(t)?;
        let from = to.checked_sub_signed(TimeDelta::seconds(step as i64))?;
        let fine = std::time::Duration::from_secs((step / FINE_POINTS).max(15));
        let refined = self.0.client.query_range(expr, from, to, fine).await.ok();
        let first = refined
            .and_then(|r| r.into_iter().next())
            .and_then(|s| s.values.first().map(|(t, _)| *t));
        Some(first.unwrap_or(t))
    }

    /// "; N rule evaluations failed since (rule groups …)" when Prometheus' rule failures
    /// rose between `from` and `now` (`None`: none, or not read).
    async fn rule_failures(&self, from: DateTime<Utc>, now: DateTime<Utc>) -> Option<String> {
        let secs = (now - from).num_seconds().max(60);
        let v = self
            .0
            .vector(&format!(
                "sum by (rule_group) (increase(prometheus_rule_evaluation_failures_total[{secs}s])) > 0"
            ))
            .await
            .ok()?;
        let total: f64 = v.iter().map(|s| s.value).filter(|x| x.is_finite()).sum();
        if total < 1.0 {
            return None;
        }
        // A group is "file;name": its name says which rules.
        let groups: BTreeSet<&str> = v
            .iter()
            .filter_map(|s| s.metric.get("rule_group"))
            .map(|g| g.rsplit_once(';').map_or(g.as_str(), |(_, n)| n))
            .collect();
        let groups: Vec<&str> = groups.into_iter().take(3).collect();
        let mut out = format!("; with it, {} rule evaluations failed", round_sig(total));
        if !groups.is_empty() {
            out.push_str(&format!(" (rule groups {})", groups.join(", ")));
        }
        Some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::prom::labels;

    fn up(instance: &str, job: &str, v: f64) -> Sample {
        Sample {
            metric: labels(&[("instance", instance), ("job", job)]),
            value: v,
            ts: 0.0,
        }
    }

    #[test]
    fn an_instance_up_under_two_jobs_is_doubled_and_a_down_one_or_a_single_job_is_not() {
        let v = [
            up("db-1:9100", "node", 1.0),
            up("db-1:9100", "node-exporter", 1.0),
            up("db-2:9100", "node", 1.0),
            // A renamed job whose old target is down: not scraped twice.
            up("db-3:9100", "node", 1.0),
            up("db-3:9100", "old", 0.0),
        ];
        let d = doubled(&v);
        assert_eq!(d.len(), 1);
        let jobs: Vec<&str> = d["db-1:9100"].iter().map(String::as_str).collect();
        assert_eq!(jobs, vec!["node", "node-exporter"]);
    }

    fn names(pairs: &[(&str, f64)]) -> HashMap<String, f64> {
        pairs.iter().map(|(n, c)| (n.to_string(), *c)).collect()
    }

    #[test]
    fn two_jobs_of_the_same_exporter_are_twins_and_two_probe_modules_are_not() {
        // The same node_exporter under two jobs; one drops a series by relabeling.
        let node = names(&[
            ("node_cpu_seconds_total", 32.0),
            ("node_filesystem_avail_bytes", 5.0),
            ("node_uname_info", 1.0),
            ("up", 1.0),
            ("scrape_duration_seconds", 1.0),
        ]);
        let trimmed = names(&[
            ("node_cpu_seconds_total", 32.0),
            ("node_filesystem_avail_bytes", 4.0),
            ("node_uname_info", 1.0),
            ("up", 1.0),
        ]);
        // blackbox_exporter on one URL: http_2xx and tcp modules (tcp's names are all
        // http's too: compared one way only they would be twins).
        let http = names(&[
            ("probe_success", 1.0),
            ("probe_duration_seconds", 1.0),
            ("probe_http_status_code", 1.0),
            ("probe_http_duration_seconds", 5.0),
            ("probe_dns_lookup_time_seconds", 1.0),
        ]);
        let tcp = names(&[
            ("probe_success", 1.0),
            ("probe_duration_seconds", 1.0),
            ("probe_dns_lookup_time_seconds", 1.0),
        ]);
        let counts = vec![
            ("node".to_string(), node),
            ("node-exporter".to_string(), trimmed),
        ];
        assert_eq!(twins(&counts), vec![("node", "node-exporter", 37.0, 38.0)]);
        let probes = vec![("http".to_string(), http), ("tcp".to_string(), tcp)];
        assert!(twins(&probes).is_empty());
        // Targets down under a job: only bookkeeping series, nothing to compare.
        assert_eq!(shared(&names(&[("up", 1.0)]), &names(&[("up", 1.0)])), None);
    }

    #[test]
    fn a_series_first_seen_at_the_ranges_start_was_there_before_it() {
        let start = DateTime::from_timestamp(1000, 0).unwrap();
        assert_eq!(
            first_point(&[(1000.0, 1.0), (1060.0, 1.0)], start, 60.0),
            Some((1000.0, true))
        );
        assert_eq!(
            first_point(&[(5000.0, 1.0)], start, 60.0),
            Some((5000.0, false))
        );
        assert_eq!(first_point(&[], start, 60.0), None);
    }
}
