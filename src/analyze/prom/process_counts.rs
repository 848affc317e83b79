//! Processes that multiply: a cron job started every few minutes that no longer finishes
//! before the next (no lock), a parent that never reaps its children (zombies), a host
//! running out of process ids (forks then fail with EAGAIN). Read from process-exporter's
//! count per group (`namedprocess_namegroup_num_procs`) and its zombies
//! (`namedprocess_namegroup_states{state="Zombie"}`), and node_exporter's processes
//! collector (`node_processes_state{state="Z"}`, `node_processes_pids` against
//! `node_processes_max_processes`). A count is told when it is now many times its usual
//! over the look-back (the low quantile, so that a rise over most of it still shows), with
//! since when; the ids when most of the host's limit is in use.

use std::collections::HashMap;

use async_trait::async_trait;
use chrono::TimeDelta;

use super::since::rose_to;
use super::{Prom, by_identity, host, identity, label, labels_map, selector};
use crate::analyze::{
    AnalyzeError, Analyzer, Entity, Fact, FactClass, Quantity, Scope, Severity, Source, round_sig,
};
use crate::integrations::prometheus::Labels;

/// How many times its usual count a group must run, and by how many more processes: a
/// service forks a few workers under load; a job piling up multiplies.
const RATIO: f64 = 3.0;
const MIN_MORE_PROCS: f64 = 5.0;
/// Zombies: how many more than usual (a few come and go between a child's exit and its
/// reaping), and from how many critical (the process table fills).
const MIN_MORE_ZOMBIES: f64 = 10.0;
const CRIT_ZOMBIES: f64 = 1000.0;
/// Zombies told whatever their usual (a parent leaking them for days has a high usual).
const ENOUGH_ZOMBIES: f64 = 100.0;
/// A group at this many times its usual count is critical.
const CRIT_RATIO: f64 = 10.0;
/// Shares of the host's process-id limit in use from which it is a warning, a critical.
const PIDS_WARN: f64 = 0.75;
const PIDS_CRIT: f64 = 0.9;
/// The quantile of the look-back taken as usual.
const USUAL_QUANTILE: f64 = 0.1;
/// Facts per kind of count, the largest rise first; points read for since when.
const MAX_FACTS: usize = 3;
const POINTS: u64 = 240;

pub struct ProcessCounts(pub Prom);

/// A count now and its usual.
#[derive(Debug, PartialEq)]
struct Risen {
    labels: Labels,
    usual: f64,
    now: f64,
}

/// The series of `now` at [`RATIO`] times their `usual` (or at `enough`, whatever the
/// usual: zombies pile up for days) and `min_more` above it, the largest rise first.
fn risen(
    now: &HashMap<Labels, f64>,
    usual: &HashMap<Labels, f64>,
    min_more: f64,
    enough: f64,
) -> Vec<Risen> {
    let mut out: Vec<Risen> = now
        .iter()
        .filter_map(|(k, &n)| {
            let u = usual.get(k).copied().unwrap_or(0.0).max(0.0);
            let many = n >= RATIO * u.max(1.0) || n >= enough;
            (many && n - u >= min_more).then(|| Risen {
                labels: k.clone(),
                usual: u,
                now: n,
            })
        })
        .collect();
    out.sort_by(|a, b| (b.now - b.usual).total_cmp(&(a.now - a.usual)));
    out.truncate(MAX_FACTS);
    out
}

/// What kind of count rose, and how it is told.
#[derive(Clone, Copy)]
enum Count {
    Group,
    GroupZombies,
    HostZombies,
}

impl Count {
    fn metric(self) -> &'static str {
        match self {
            Self::Group => "namedprocess_namegroup_num_procs",
            Self::GroupZombies => "namedprocess_namegroup_states{state=\"Zombie\"}",
            Self::HostZombies => "node_processes_state{state=\"Z\"}",
        }
    }

    fn min_more(self) -> f64 {
        match self {
            Self::Group => MIN_MORE_PROCS,
            _ => MIN_MORE_ZOMBIES,
        }
    }

    /// A count told whatever its usual: zombies should be none.
    fn enough(self) -> f64 {
        match self {
            Self::Group => f64::INFINITY,
            _ => ENOUGH_ZOMBIES,
        }
    }

    fn fact(self, r: &Risen, expr: &str, since: Option<chrono::DateTime<chrono::Utc>>) -> Fact {
        let host_name = host(&r.labels);
        let (entity, what, detail, severity) = match self {
            Self::Group => (
                Entity::new("process", label(&r.labels, "groupname")),
                "processes running at once",
                format!(
                    "{} processes of this group where there were {} ({}-fold): runs started \
                     before the last ones ended (a schedule without a lock) or workers that \
                     never exit",
                    round_sig(r.now),
                    round_sig(r.usual),
                    round_sig(r.now / r.usual.max(1.0))
                ),
                match r.now >= CRIT_RATIO * r.usual.max(1.0) {
                    true => Severity::Critical,
                    false => Severity::Warning,
                },
            ),
            Self::GroupZombies | Self::HostZombies => {
                let name = match self {
                    Self::GroupZombies => label(&r.labels, "groupname"),
                    _ => host_name.clone().unwrap_or_else(|| "?".into()),
                };
                let kind = match self {
                    Self::GroupZombies => "process",
                    _ => "host",
                };
                (
                    Entity::new(kind, name),
                    "zombie (defunct) processes",
                    format!(
                        "{} zombies where there were {}: their parent does not reap the \
                         children that exited; each holds a process id until it does",
                        round_sig(r.now),
                        round_sig(r.usual)
                    ),
                    match r.now >= CRIT_ZOMBIES {
                        true => Severity::Critical,
                        false => Severity::Warning,
                    },
                )
            }
        };
        Fact::new(
            FactClass::Saturation,
            "process_counts",
            entity.on_host(host_name).with_labels(labels_map(&r.labels)),
            what,
            severity,
            Source::promql(expr),
        )
        .value(Quantity::count(r.now))
        .since(since)
        .detail(detail)
    }
}

#[async_trait]
impl Analyzer for ProcessCounts {
    fn name(&self) -> &'static str {
        "process_counts"
    }

    async fn run(&self, scope: &Scope) -> Result<Vec<Fact>, AnalyzeError> {
        // A day at least: a pile-up grows for hours, and its usual is before it began.
        let span = scope.window().num_seconds().clamp(86400, 7 * 86400);
        let start = scope
            .now
            .checked_sub_signed(TimeDelta::seconds(span))
            .unwrap_or(scope.now);
        let step = std::time::Duration::from_secs((span.unsigned_abs() / POINTS).max(15));
        let mut facts = Vec::new();
        for count in [Count::Group, Count::GroupZombies, Count::HostZombies] {
            let m = count.metric();
            let now = by_identity(self.0.vector(m).await.unwrap_or_default());
            if now.is_empty() {
                continue;
            }
            let usual_q = format!("quantile_over_time({USUAL_QUANTILE}, {m}[{span}s])");
            let usual = by_identity(self.0.vector(&usual_q).await.unwrap_or_default());
            for r in risen(&now, &usual, count.min_more(), count.enough()) {
                let pairs = r.labels.iter().map(|(k, v)| (k.as_str(), v.as_str()));
                let base = m.split('{').next().unwrap_or(m);
                let expr = format!("{base}{}", selector(pairs));
                let mid = (r.usual + r.now) / 2.0;
                let since = rose_to(&self.0, &expr, (start, scope.now), step, mid).await;
                facts.push(count.fact(&r, &expr, since));
            }
        }
        facts.extend(self.pids().await?);
        Ok(facts)
    }
}

impl ProcessCounts {
    /// Hosts using most of their process-id limit.
    async fn pids(&self) -> Result<Vec<Fact>, AnalyzeError> {
        let used = self
            .0
            .vector("node_processes_pids")
            .await
            .unwrap_or_default();
        if used.is_empty() {
            return Ok(Vec::new());
        }
        let max = by_identity(
            self.0
                .vector("node_processes_max_processes")
                .await
                .unwrap_or_default(),
        );
        let mut facts = Vec::new();
        for s in used {
            let key = identity(&s.metric);
            let Some(&limit) = max.get(&key).filter(|m| **m > 0.0) else {
                continue;
            };
            let share = s.value / limit;
            if !share.is_finite() || share < PIDS_WARN {
                continue;
            }
            let severity = match share >= PIDS_CRIT {
                true => Severity::Critical,
                false => Severity::Warning,
            };
            let name = host(&s.metric).unwrap_or_else(|| "?".into());
            let pairs = key.iter().map(|(k, v)| (k.as_str(), v.as_str()));
            let expr = format!("node_processes_pids{}", selector(pairs));
            facts.push(
                Fact::new(
                    FactClass::Exhaustion,
                    "process_counts",
                    Entity::new("host", name.clone())
                        .on_host(Some(name))
                        .with_labels(labels_map(&s.metric)),
                    "process ids in use",
                    severity,
                    Source::promql(&expr),
                )
                .value(Quantity::count(s.value))
                .limit(Quantity::count(limit))
                .detail(format!(
                    "{} of the limit of {} ({:.0} %): new processes and threads fail to fork \
                     (EAGAIN) when it is reached",
                    round_sig(s.value),
                    round_sig(limit),
                    share * 100.0
                )),
            );
        }
        Ok(facts)
    }
}

#[cfg(test)]
mod tests;
