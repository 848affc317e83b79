//! `major_faults`: hosts whose major page faults rose: pages a process touched that were
//! not in memory and had to be read from disk (a binary's or a mapped file's pages the
//! kernel evicted, or swapped-out memory). A host that pages its working set in and out
//! (memory pressure thrashing the page cache) is slow in everything while its CPUs and
//! memory graphs look merely busy. Read from node_exporter's `node_vmstat_pgmajfault` (the
//! host's count), process-exporter's `namedprocess_namegroup_major_page_faults_total` (by
//! `groupname`) and cAdvisor's `container_memory_failures_total{failure_type="pgmajfault",
//! scope="container"}` (by container: `namespace`/`pod`/`container` under Kubernetes,
//! `name` under Docker): one fact per host with its rate per second, what it was before it
//! rose and since when, the top process groups and containers with their share of the
//! host's faults, its available memory and swap-ins; the top consumer its own fact when it
//! makes most of them.

use std::collections::HashMap;

use async_trait::async_trait;
use chrono::{DateTime, TimeDelta, Utc};

use super::{Prom, by_host, host, labels_map, pick, selector};
use crate::analyze::{
    AnalyzeError, Analyzer, Entity, Fact, FactClass, Quantity, Scope, Severity, Source, Unit,
    human_bytes,
};
use crate::integrations::prometheus::{Labels, Sample};

const NAME: &str = "major_faults";
const HOST_METRIC: &str = "node_vmstat_pgmajfault";
const HOST: &str = "rate(node_vmstat_pgmajfault[5m])";
const PROCESSES: &str =
    "sum by (instance, job, groupname) (rate(namedprocess_namegroup_major_page_faults_total[5m]))";
const CONTAINERS: &str = r#"sum without (id, image, failure_type, scope) (rate(container_memory_failures_total{failure_type="pgmajfault",scope="container"}[5m]))"#;
const AVAILABLE: &str = "node_memory_MemAvailable_bytes";
const TOTAL: &str = "node_memory_MemTotal_bytes";
const SWAP_INS: &str = "rate(node_vmstat_pswpin[5m])";

/// Faults a second below which a host is not paging enough to matter.
const FLOOR: f64 = 50.0;
/// Faults a second that are a warning whatever came before (node-mixin's
/// `NodeMemoryMajorPagesFaults` fires above 500), and critical.
const WARN_RATE: f64 = 500.0;
const CRIT_RATE: f64 = 5000.0;
/// How many times its rate before a host's rate must be to have risen (below `WARN_RATE`).
const RISE: f64 = 10.0;
/// Share of the host's faults a consumer must make to be named, and to be its own fact.
const NAMED_SHARE: f64 = 0.05;
const OWN_FACT_SHARE: f64 = 0.5;
/// Consumers named in a host's fact.
const NAMED: usize = 3;
/// Most hosts looked at closely per run (each costs a few range queries).
const MAX_HOSTS: usize = 8;

pub struct MajorFaults(pub Prom);

/// A process group or container faulting on a host.
struct Consumer {
    kind: &'static str,
    name: String,
    per_sec: f64,
    sample: Sample,
    /// The PromQL of its rate.
    query: String,
}

#[async_trait]
impl Analyzer for MajorFaults {
    fn name(&self) -> &'static str {
        NAME
    }

    async fn run(&self, scope: &Scope) -> Result<Vec<Fact>, AnalyzeError> {
        let names = self.0.metric_names(scope).await?;
        if !names.iter().any(|n| n == HOST_METRIC) {
            return Ok(Vec::new());
        }
        let mut hosts: Vec<Sample> = self
            .0
            .vector(HOST)
            .await?
            .into_iter()
            .filter(|s| s.value.is_finite() && s.value >= FLOOR)
            .collect();
        if hosts.is_empty() {
            return Ok(Vec::new());
        }
        hosts.sort_by(|a, b| b.value.total_cmp(&a.value));
        hosts.truncate(MAX_HOSTS);
        let consumers = self.consumers().await;
        let available = by_host(&self.0.vector(AVAILABLE).await.unwrap_or_default());
        let total = by_host(&self.0.vector(TOTAL).await.unwrap_or_default());
        let swap_ins = by_host(&self.0.vector(SWAP_INS).await.unwrap_or_default());
        let left = super::Lookups::default();
        let mut facts = Vec::new();
        for s in hosts {
            let Some(host_name) = host(&s.metric) else {
                continue;
            };
            let now = s.value;
            let sel = selector(pick(&s.metric, &["instance", "job"]));
            let query = format!("rate({HOST_METRIC}{sel}[5m])");
            let level = (now / 2.0).clamp(FLOOR, WARN_RATE);
            let since = self.0.since(&left, &query, scope, |v| v >= level).await;
            let before = match since {
                Some(t) => self.rate_before(&format!("{HOST_METRIC}{sel}"), t).await,
                None => None,
            };
            let rose = before.is_some_and(|b| now >= RISE * b.max(1.0));
            if now < WARN_RATE && !rose {
                continue;
            }
            let severity = match now >= CRIT_RATE {
                true => Severity::Critical,
                false => Severity::Warning,
            };
            let mut detail = Vec::new();
            if let Some(b) = before {
                detail.push(format!("was {} before", Quantity::new(b, Unit::PerSecond)));
            }
            let top: Vec<&Consumer> = consumers
                .get(&host_name)
                .map(|v| {
                    v.iter()
                        .filter(|c| c.per_sec >= NAMED_SHARE * now)
                        .take(NAMED)
                        .collect()
                })
                .unwrap_or_default();
            if !top.is_empty() {
                let named: Vec<String> = top
                    .iter()
                    .map(|c| {
                        format!(
                            "{} {} {} ({} of the host's)",
                            c.kind,
                            c.name,
                            Quantity::new(c.per_sec, Unit::PerSecond),
                            Quantity::percent(share(c.per_sec, now))
                        )
                    })
                    .collect();
                detail.push(format!("top: {}", named.join(", ")));
            }
            if let (Some(a), Some(t)) = (available.get(&host_name), total.get(&host_name))
                && *t > 0.0
            {
                detail.push(format!(
                    "memory available {} of {} ({})",
                    human_bytes(*a),
                    human_bytes(*t),
                    Quantity::percent(100.0 * a / t)
                ));
            }
            match swap_ins.get(&host_name) {
                Some(w) if *w >= 1.0 => detail.push(format!(
                    "swap-ins {} pages: swapped-out memory read back",
                    Quantity::new(*w, Unit::PerSecond)
                )),
                Some(_) => detail.push(
                    "no swap-ins: file-backed pages (code, mapped files) evicted and read back"
                        .into(),
                ),
                None => {}
            }
            facts.push(
                Fact::new(
                    FactClass::Saturation,
                    NAME,
                    Entity::new("host", host_name.clone())
                        .on_host(Some(host_name.clone()))
                        .with_labels(labels_map(&s.metric)),
                    "major page faults (pages read back from disk)",
                    severity,
                    Source::promql(&query),
                )
                .value(Quantity::new(now, Unit::PerSecond))
                .since(since)
                .detail(detail.join("; ")),
            );
            if let Some(c) = top.first().filter(|c| c.per_sec >= OWN_FACT_SHARE * now) {
                let was = match since {
                    Some(t) => self.rate_before(&c.query, t).await,
                    None => None,
                };
                let mut d = format!(
                    "{} of the host's {}",
                    Quantity::percent(share(c.per_sec, now)),
                    Quantity::new(now, Unit::PerSecond)
                );
                if let Some(w) = was {
                    d.push_str(&format!(
                        "; was {} before",
                        Quantity::new(w, Unit::PerSecond)
                    ));
                }
                facts.push(
                    Fact::new(
                        FactClass::Saturation,
                        NAME,
                        Entity::new(c.kind, c.name.clone())
                            .on_host(Some(host_name.clone()))
                            .with_labels(labels_map(&c.sample.metric)),
                        "major page faults, the most on its host",
                        severity,
                        Source::promql(&format!("rate({}[5m])", c.query)),
                    )
                    .value(Quantity::new(c.per_sec, Unit::PerSecond))
                    .since(since)
                    .detail(d),
                );
            }
        }
        Ok(facts)
    }
}

/// `part` as a percentage of `whole`, at most 100 (two exporters' rates of one host differ a
/// little).
fn share(part: f64, whole: f64) -> f64 {
    match whole > 0.0 {
        true => (100.0 * part / whole).min(100.0),
        false => 0.0,
    }
}

/// A cAdvisor container's name: `namespace/pod/container` under Kubernetes, its Docker
/// `name` otherwise; `None` for a pod's own cgroup, its pause container and the cgroups
/// above the containers (no container, no name).
fn container_name(l: &Labels) -> Option<String> {
    let filled = |k: &str| l.get(k).filter(|v| !v.is_empty() && *v != "POD");
    match (filled("pod"), filled("container"), filled("name")) {
        (Some(pod), Some(c), _) => Some(format!(
            "{}/{pod}/{c}",
            l.get("namespace").map_or("", String::as_str)
        )),
        (None, _, Some(n)) => Some(n.clone()),
        _ => None,
    }
}

/// How long before a rise its rate is read over.
const BEFORE_SPAN: TimeDelta = TimeDelta::minutes(30);

impl MajorFaults {
    /// The rate of the counter `counter` (a selector) over the half hour ending a minute
    /// before `t`.
    async fn rate_before(&self, counter: &str, t: DateTime<Utc>) -> Option<f64> {
        let at = t.checked_sub_signed(TimeDelta::minutes(1))?;
        let expr = format!("sum(rate({counter}[{}s]))", BEFORE_SPAN.num_seconds());
        let v = self.0.client.query_vector(&expr, Some(at)).await.ok()?;
        v.first().map(|s| s.value).filter(|v| v.is_finite())
    }

    /// Process groups and containers by host, the most faulting first (a failed read only
    /// loses its source).
    async fn consumers(&self) -> HashMap<String, Vec<Consumer>> {
        let mut by: HashMap<String, Vec<Consumer>> = HashMap::new();
        for s in self.0.vector(PROCESSES).await.unwrap_or_default() {
            let (Some(h), Some(g)) = (host(&s.metric), s.metric.get("groupname").cloned()) else {
                continue;
            };
            let query = format!(
                "namedprocess_namegroup_major_page_faults_total{}",
                selector(pick(&s.metric, &["instance", "job", "groupname"]))
            );
            by.entry(h).or_default().push(Consumer {
                kind: "process",
                name: g,
                per_sec: s.value,
                sample: s,
                query,
            });
        }
        for s in self.0.vector(CONTAINERS).await.unwrap_or_default() {
            let l = &s.metric;
            let Some(name) = container_name(l) else {
                continue;
            };
            let Some(h) = l.get("node").cloned().or_else(|| host(l)) else {
                continue;
            };
            let mut keys = pick(l, &["instance", "namespace", "pod", "container", "name"]);
            keys.extend([("failure_type", "pgmajfault"), ("scope", "container")]);
            let query = format!("container_memory_failures_total{}", selector(keys));
            by.entry(h).or_default().push(Consumer {
                kind: "container",
                name,
                per_sec: s.value,
                sample: s,
                query,
            });
        }
        for v in by.values_mut() {
            v.retain(|c| c.per_sec.is_finite() && c.per_sec > 0.0);
            v.sort_by(|a, b| b.per_sec.total_cmp(&a.per_sec));
        }
        by
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn containers_are_named_as_kubernetes_and_docker_name_them_and_cgroups_are_not() {
        let name = |pairs: &[(&str, &str)]| container_name(&crate::analyze::prom::labels(pairs));
        assert_eq!(
            name(&[
                ("namespace", "media"),
                ("pod", "ml-0"),
                ("container", "ml"),
                ("name", "k8s_ml")
            ]),
            Some("media/ml-0/ml".into())
        );
        assert_eq!(
            name(&[
                ("namespace", "media"),
                ("pod", "ml-0"),
                ("container", "POD")
            ]),
            None
        );
        assert_eq!(
            name(&[("namespace", "media"), ("pod", "ml-0"), ("container", "")]),
            None
        );
        assert_eq!(
            name(&[("name", "ml-worker"), ("id", "/docker/4f")]),
            Some("ml-worker".into())
        );
        assert_eq!(name(&[("id", "/"), ("name", "")]), None);
    }

    #[test]
    fn a_share_is_capped_at_the_whole_and_zero_of_nothing() {
        assert_eq!(share(50.0, 200.0), 25.0);
        assert_eq!(share(210.0, 200.0), 100.0);
        assert_eq!(share(5.0, 0.0), 0.0);
    }
}
