//! Not a problem but what the data covers: the scrape jobs with their targets (how many
//! are up, on which hosts) and the metric families (the first word of the metric names,
//! with how many names each has). A question about something nothing measures ("the UPS's
//! runtime") can then be answered "there is no data for it", and an answer that all is well
//! can cite what was looked at.

use std::collections::{BTreeMap, BTreeSet};

use async_trait::async_trait;
use serde_json::json;

use super::{Prom, host};
use crate::analyze::{AnalyzeError, Analyzer, Entity, Fact, FactClass, Scope, Severity, Source};

/// Most jobs listed, most targets first.
const MAX_JOBS: usize = 8;
/// Most hosts named per job.
const MAX_HOSTS: usize = 5;
/// Most metric families listed, largest first.
const MAX_FAMILIES: usize = 14;

pub struct Inventory(pub Prom);

/// One scrape job: its targets, how many are up, the hosts they are on.
#[derive(Default)]
struct Job {
    targets: usize,
    up: usize,
    hosts: BTreeSet<String>,
}

#[async_trait]
impl Analyzer for Inventory {
    fn name(&self) -> &'static str {
        "inventory"
    }

    async fn run(&self, scope: &Scope) -> Result<Vec<Fact>, AnalyzeError> {
        let up = self.0.vector("up").await?;
        if up.is_empty() {
            return Ok(Vec::new());
        }
        let mut jobs: BTreeMap<String, Job> = BTreeMap::new();
        for s in &up {
            let name = s.metric.get("job").cloned().unwrap_or_else(|| "?".into());
            let job = jobs.entry(name).or_default();
            job.targets += 1;
            if s.value == 1.0 {
                job.up += 1;
            }
            if let Some(h) = host(&s.metric) {
                job.hosts.insert(h);
            }
        }
        let targets: usize = jobs.values().map(|j| j.targets).sum();
        let running: usize = jobs.values().map(|j| j.up).sum();
        let mut detail = vec![describe_jobs(&jobs)];
        // The names only explain; without them the jobs still stand.
        match self.0.metric_names(scope).await {
            Ok(names) if !names.is_empty() => detail.push(describe_families(&names)),
            Ok(_) => {}
            Err(e) => tracing::debug!(error = %e, "metric names unavailable to inventory"),
        }
        let what = format!(
            "{targets} scrape targets in {} jobs, {running} up",
            jobs.len()
        );
        let fact = Fact::new(
            FactClass::Context,
            self.name(),
            Entity::new("monitoring", "prometheus"),
            what,
            Severity::Info,
            Source::new("prometheus_targets", json!({})),
        )
        .detail(detail.join("; "));
        Ok(vec![fact])
    }
}

/// "jobs: node 3 of 3 up (db1, nas, pve1), blackbox 1 of 2 up (…)", most targets first.
fn describe_jobs(jobs: &BTreeMap<String, Job>) -> String {
    let mut sorted: Vec<(&String, &Job)> = jobs.iter().collect();
    sorted.sort_by(|a, b| b.1.targets.cmp(&a.1.targets).then(a.0.cmp(b.0)));
    let mut parts: Vec<String> = sorted
        .iter()
        .take(MAX_JOBS)
        .map(|(name, j)| {
            let mut hosts: Vec<&str> = j.hosts.iter().map(String::as_str).take(MAX_HOSTS).collect();
            if j.hosts.len() > MAX_HOSTS {
                hosts.push("…");
            }
            format!("{name} {} of {} up ({})", j.up, j.targets, hosts.join(", "))
        })
        .collect();
    if sorted.len() > MAX_JOBS {
        parts.push(format!("{} more jobs", sorted.len() - MAX_JOBS));
    }
    format!("jobs: {}", parts.join(", "))
}

/// "metric families: node (412 names), go (30), …", largest first.
fn describe_families(names: &[String]) -> String {
    let mut families: BTreeMap<&str, usize> = BTreeMap::new();
    for n in names {
        let family = n.split(['_', ':']).find(|p| !p.is_empty()).unwrap_or(n);
        *families.entry(family).or_default() += 1;
    }
    let mut sorted: Vec<(&str, usize)> = families.into_iter().collect();
    sorted.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let mut parts: Vec<String> = sorted
        .iter()
        .take(MAX_FAMILIES)
        .enumerate()
        .map(|(i, (f, n))| match i {
            0 => format!("{f} ({n} names)"),
            _ => format!("{f} ({n})"),
        })
        .collect();
    if sorted.len() > MAX_FAMILIES {
        parts.push(format!("{} more", sorted.len() - MAX_FAMILIES));
    }
    format!("metric families: {}", parts.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families_are_the_first_word_of_the_names_largest_first() {
        let names: Vec<String> = [
            "node_load1",
            "node_load5",
            "node_cpu_seconds_total",
            "go_goroutines",
            "up",
            "job:requests:rate5m",
            "_odd",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        assert_eq!(
            describe_families(&names),
            "metric families: node (3 names), go (1), job (1), odd (1), up (1)"
        );
    }

    #[test]
    fn jobs_list_their_targets_up_and_hosts_most_targets_first() {
        let mut jobs = BTreeMap::new();
        jobs.insert(
            "blackbox".to_string(),
            Job {
                targets: 1,
                up: 0,
                hosts: ["git.lan".to_string()].into(),
            },
        );
        jobs.insert(
            "node".to_string(),
            Job {
                targets: 7,
                up: 7,
                hosts: (1..=7).map(|i| format!("h{i}")).collect(),
            },
        );
        assert_eq!(
            describe_jobs(&jobs),
            "jobs: node 7 of 7 up (h1, h2, h3, h4, h5, …), blackbox 0 of 1 up (git.lan)"
        );
    }
}
