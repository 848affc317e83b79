//! `containers_not_back`: standalone Docker or Podman containers (cAdvisor, `name` label)
//! that were running when their host's container runtime or the host restarted and did not
//! start again: what a restart policy of `no` looks like from metrics. The containers whose
//! policy restarts them all start within minutes of one another
//! (`container_start_time_seconds` jumps for each, their cgroup `id` unchanged: restarted
//! in place, not recreated by a deploy), none that ran before kept running through it, and
//! those left behind were last seen (`container_last_seen`) as the others went down and
//! never since. A host whose `node_boot_time_seconds` moved to just before it rebooted.
//!
//! One instant query of every container's start time; then, for each host with such a
//! cluster of starts (at most [`MAX_HOSTS`]), what it ran just before (the last seen of
//! each container over the hour before the restart, with its cgroup id) and each
//! container's last seen since. A redeploy (new ids, no boot) and a host where a container
//! kept running through the moment are left alone.

use std::collections::{BTreeMap, HashMap};

use async_trait::async_trait;
use chrono::{DateTime, TimeDelta, Utc};

use super::{Prom, by_host, host, long_span, selector};
use crate::analyze::{
    AnalyzeError, Analyzer, Entity, Fact, FactClass, Quantity, Scope, Severity, Source,
    human_seconds,
};
use crate::integrations::prometheus::Sample;

/// Every named container's start time (cAdvisor without Kubernetes: no `container` label).
const STARTS: &str = r#"container_start_time_seconds{name!="",container=""}"#;
/// Starts at most this far apart are one restart of the runtime or the host.
pub(super) const CLUSTER_SECS: f64 = 300.0;
/// Containers that must come back together for a restart (one is a container restarting).
pub(super) const MIN_BACK: usize = 2;
/// How long after the restart a container still missing did not come back (a stopped
/// container's series stays in instant queries for Prometheus' 5-minute lookback).
const GRACE_SECS: f64 = 300.0;
/// A container last seen at most this long before the others went down went down with
/// them (a runtime stops its containers over a few scrapes).
pub(super) const DOWN_SLACK_SECS: f64 = 180.0;
/// A boot at most this long before the first start is the host's reboot.
const BOOT_BEFORE_SECS: f64 = 1800.0;
/// How far before the restart what ran is looked for (a host down longer is not read).
const BEFORE: &str = "1h";
/// Most hosts looked at, containers named.
const MAX_HOSTS: usize = 8;
const MAX_NAMED: usize = 6;

pub struct ContainersNotBack(pub Prom);

/// A container as one query saw it: its cgroup id and a time (its start, or last seen).
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Seen {
    pub id: String,
    pub at: f64,
}

/// What a restart of one host's containers left behind.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Verdict {
    /// The first start of the restart, and when the containers went down.
    pub at: f64,
    pub down: f64,
    /// Containers that ran before and started again, in order of their start.
    pub back: Vec<String>,
    /// Seconds from the first of them starting to the last.
    pub within: f64,
    /// How many of them kept their cgroup id (restarted in place).
    pub kept_ids: usize,
    /// Containers that ran until the others went down and were not seen since, with when
    /// they were last seen, the latest first.
    pub missing: Vec<(String, f64)>,
}

/// The named containers of `v` by name (the latest time of a name seen twice).
fn by_name(v: &[Sample]) -> HashMap<String, Seen> {
    let mut out: HashMap<String, Seen> = HashMap::new();
    for s in v.iter().filter(|s| s.value.is_finite()) {
        let Some(name) = s.metric.get("name").filter(|n| !n.is_empty()) else {
            continue;
        };
        if s.metric.get("container").is_some_and(|c| !c.is_empty()) {
            continue;
        }
        let id = s.metric.get("id").cloned().unwrap_or_default();
        let seen = Seen { id, at: s.value };
        match out.get(name) {
            Some(old) if old.at >= seen.at => {}
            _ => {
                out.insert(name.clone(), seen);
            }
        }
    }
    out
}

/// The start of the largest cluster of `starts` within [`CLUSTER_SECS`] (the latest of
/// equal ones) and its size, among starts in `[from, to]`.
pub(super) fn restart_moment(starts: &[f64], from: f64, to: f64) -> Option<(f64, usize)> {
    let mut s: Vec<f64> = starts
        .iter()
        .copied()
        .filter(|t| t.is_finite() && *t >= from && *t <= to)
        .collect();
    s.sort_by(f64::total_cmp);
    let mut best: Option<(f64, usize)> = None;
    for (i, first) in s.iter().enumerate() {
        let n = s
            .get(i..)
            .unwrap_or_default()
            .iter()
            .take_while(|t| **t - first <= CLUSTER_SECS)
            .count();
        if best.is_none_or(|(_, b)| n >= b) {
            best = Some((*first, n));
        }
    }
    best.filter(|(_, n)| *n >= MIN_BACK)
}

/// What the restart at `at` left behind: `now` the running containers' starts, `before`
/// what ran in the hour before it (last seen, with ids), `last` every container's last
/// seen since. `None` when it was no restart of every container (one kept running through
/// it, fewer than [`MIN_BACK`] came back) or none was left behind.
pub(super) fn judge(
    at: f64,
    now: &HashMap<String, Seen>,
    before: &HashMap<String, Seen>,
    last: &HashMap<String, f64>,
) -> Option<Verdict> {
    let mut back: Vec<(&String, &Seen)> = Vec::new();
    for (name, was) in before {
        match now.get(name) {
            Some(s) if s.at >= at => back.push((name, was)),
            Some(_) => return None,
            None => {}
        }
    }
    if back.len() < MIN_BACK {
        return None;
    }
    let kept_ids = back
        .iter()
        .filter(|(n, was)| {
            now.get(*n)
                .is_some_and(|s| !s.id.is_empty() && s.id == was.id)
        })
        .count();
    let down = back.iter().map(|(_, was)| was.at).fold(f64::MIN, f64::max);
    let mut missing: Vec<(String, f64)> = before
        .iter()
        .filter(|(n, _)| !now.contains_key(*n))
        .filter(|(_, was)| was.at >= down - DOWN_SLACK_SECS)
        .filter(|(n, _)| last.get(*n).is_none_or(|l| *l < at))
        .map(|(n, was)| (n.clone(), was.at))
        .collect();
    if missing.is_empty() {
        return None;
    }
    missing.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    back.sort_by(|a, b| {
        let start = |n: &String| now.get(n).map_or(0.0, |s| s.at);
        start(a.0).total_cmp(&start(b.0)).then(a.0.cmp(b.0))
    });
    let within = back
        .iter()
        .filter_map(|(n, _)| now.get(*n))
        .map(|s| s.at - at)
        .fold(0.0, f64::max);
    Some(Verdict {
        at,
        down,
        within,
        back: back.into_iter().map(|(n, _)| n.clone()).collect(),
        kept_ids,
        missing,
    })
}

/// "14:02:10 UTC".
fn clock(secs: f64) -> String {
    Some(secs)
        .filter(|s| s.is_finite())
        .and_then(|s| DateTime::from_timestamp(s as i64, 0))
        .map(|t| t.format("%H:%M:%S UTC").to_string())
        .unwrap_or_else(|| "?".into())
}

/// "a, b, c and 2 more".
fn named(names: &[String]) -> String {
    let shown: Vec<&str> = names.iter().take(MAX_NAMED).map(String::as_str).collect();
    match names.len().saturating_sub(MAX_NAMED) {
        0 => shown.join(", "),
        n => format!("{} and {n} more", shown.join(", ")),
    }
}

/// The fact's detail: how many came back when, which did not and when each was last seen,
/// and the host's boot when it rebooted.
pub(super) fn detail(v: &Verdict, boot: Option<f64>) -> String {
    let gone: Vec<String> = v
        .missing
        .iter()
        .map(|(n, t)| {
            let before = (v.at - t).max(0.0);
            format!(
                "{n} (last seen {}, {} before)",
                clock(*t),
                human_seconds(before)
            )
        })
        .collect();
    let cause = match boot {
        Some(b) => format!("the host booted at {}", clock(b)),
        None => "its container runtime restarted them".to_string(),
    };
    format!(
        "{} containers came back at {} within {} ({}); {} did not: {}; {cause}; a container \
         whose restart policy is `no` (or one stopped by hand just before) stays down",
        v.back.len(),
        clock(v.at),
        human_seconds(v.within),
        named(&v.back),
        v.missing.len(),
        gone.into_iter()
            .take(MAX_NAMED)
            .collect::<Vec<_>>()
            .join(", "),
    )
}

#[async_trait]
impl Analyzer for ContainersNotBack {
    fn name(&self) -> &'static str {
        "containers_not_back"
    }

    async fn run(&self, scope: &Scope) -> Result<Vec<Fact>, AnalyzeError> {
        let names = self.0.metric_names(scope).await?;
        let has = |m: &str| names.iter().any(|n| n == m);
        if !has("container_start_time_seconds") || !has("container_last_seen") {
            return Ok(Vec::new());
        }
        let now_secs = scope.now.timestamp() as f64;
        let span = long_span(scope);
        let mut hosts: BTreeMap<(String, String), Vec<Sample>> = BTreeMap::new();
        for s in self.0.vector(STARTS).await? {
            let key = |k: &str| s.metric.get(k).cloned().unwrap_or_default();
            hosts
                .entry((key("instance"), key("job")))
                .or_default()
                .push(s);
        }
        let boots = match has("node_boot_time_seconds") {
            true => by_host(&self.0.vector("node_boot_time_seconds").await?),
            false => HashMap::new(),
        };
        let mut facts = Vec::new();
        for ((instance, job), samples) in hosts.into_iter().take(MAX_HOSTS) {
            let now = by_name(&samples);
            let starts: Vec<f64> = now.values().map(|s| s.at).collect();
            let from = now_secs - span as f64;
            let Some((at, _)) = restart_moment(&starts, from, now_secs - GRACE_SECS) else {
                continue;
            };
            let sel = selector([("instance", instance.as_str()), ("job", job.as_str())]);
            let Some(before_at) = DateTime::<Utc>::from_timestamp(at as i64, 0)
                .and_then(|t| t.checked_sub_signed(TimeDelta::seconds(1)))
            else {
                continue;
            };
            let before_q = format!("last_over_time(container_last_seen{sel}[{BEFORE}])");
            let before = by_name(&self.0.vector_at(&before_q, before_at).await?);
            let last_q = format!("last_over_time(container_last_seen{sel}[{span}s])");
            let last: HashMap<String, f64> = by_name(&self.0.vector(&last_q).await?)
                .into_iter()
                .map(|(n, s)| (n, s.at))
                .collect();
            let Some(v) = judge(at, &now, &before, &last) else {
                continue;
            };
            let h = samples.first().and_then(|s| host(&s.metric));
            let boot = h
                .as_ref()
                .and_then(|h| boots.get(h))
                .copied()
                .filter(|b| *b >= at - BOOT_BEFORE_SECS && *b <= at + 60.0);
            // Recreated by a deploy (new ids) and no boot: not a restart.
            if boot.is_none() && v.kept_ids * 2 < v.back.len() {
                continue;
            }
            let severity = match v.missing.len() >= v.back.len() {
                true => Severity::Critical,
                false => Severity::Warning,
            };
            let labels = BTreeMap::from([
                ("instance".to_string(), instance.clone()),
                ("job".to_string(), job.clone()),
            ]);
            let entity = Entity::new("host", h.clone().unwrap_or_else(|| instance.clone()))
                .on_host(h.clone())
                .with_labels(labels.clone());
            let mut fact = Fact::new(
                FactClass::Availability,
                self.name(),
                entity,
                "containers did not come back after a restart",
                severity,
                Source::promql(&last_q),
            )
            .value(Quantity::count(v.missing.len() as f64))
            .since(DateTime::from_timestamp(v.down as i64, 0))
            .detail(detail(&v, boot));
            for (name, _) in v.missing.iter().take(MAX_NAMED) {
                let mut l = labels.clone();
                l.insert("name".to_string(), name.clone());
                fact = fact.related(
                    Entity::new("container", name.clone())
                        .on_host(h.clone())
                        .with_labels(l),
                );
            }
            facts.push(fact);
        }
        Ok(facts)
    }
}

#[cfg(test)]
mod tests;
