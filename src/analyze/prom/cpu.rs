//! Hosts whose CPUs are busy (node_exporter `node_cpu_seconds_total`: the share of time not
//! idle over 5 minutes, and the share waiting on I/O), with what keeps them busy: the top
//! process group on that host (process-exporter `namedprocess_namegroup_cpu_seconds_total`,
//! every mode summed) and the top container (cAdvisor `container_cpu_usage_seconds_total`),
//! each its own fact with its share of the host so a finding can name it. A host whose load
//! (`node_load1`) per CPU is long while its CPUs are below the busy threshold is told by its
//! load, with the same consumers: a container burning three of four CPUs explains a load
//! alert on a Docker host whose CPUs never reach 90 %. CPUs waiting on
//! I/O name the process groups doing the most I/O there; a VM whose CPU time its
//! hypervisor gives to others (steal) is told apart from one busy with its own work.

use std::collections::HashMap;

use async_trait::async_trait;

use super::{Prom, by_identity, host, identity, io_consumers, labels_map, pick, selector};
use crate::analyze::{
    AnalyzeError, Analyzer, Entity, Fact, FactClass, Quantity, Scope, Severity, Source, Unit,
    round_sig,
};
use crate::integrations::prometheus::Sample;

/// Busy share of a host's CPUs worth a look (node-mixin's `NodeCPUHighUsage` is 90 %), and
/// critical.
const WARN_PERCENT: f64 = 90.0;
const CRIT_PERCENT: f64 = 98.0;
/// Share of CPU time spent waiting on I/O worth a look: the disks, not the CPUs, are slow.
const IOWAIT_PERCENT: f64 = 20.0;
/// Share of a VM's CPU time its hypervisor gave to others worth a look (the guest is slow
/// for reasons on its node).
const STEAL_PERCENT: f64 = 10.0;
/// Share of the host a consumer must use to be listed in the host's fact.
const NAMED_PERCENT: f64 = 5.0;
/// Share of the host a consumer must use to be its own fact, named as what keeps it busy.
const CONSUMER_PERCENT: f64 = 20.0;
/// Load (tasks running or waiting for a CPU, and in uninterruptible sleep) per CPU worth a
/// look when the CPUs are not busy enough to be told: a run queue half again as long as the
/// CPUs, and twice (node-mixin's `NodeSystemSaturation` is 2 per CPU).
const LOAD_WARN: f64 = 1.5;
const LOAD_CRIT: f64 = 2.0;

const BUSY: &str = r#"sum without (cpu, mode) (rate(node_cpu_seconds_total{mode!="idle"}[5m]))"#;
const ALL: &str = "sum without (cpu, mode) (rate(node_cpu_seconds_total[5m]))";
const CPUS: &str = r#"count without (cpu, mode) (node_cpu_seconds_total{mode="idle"})"#;
const PROCESSES: &str =
    "sum by (instance, job, groupname) (rate(namedprocess_namegroup_cpu_seconds_total[5m]))";
const CONTAINERS: &str = r#"sum without (cpu) (rate(container_cpu_usage_seconds_total{container!="",container!="POD"}[5m]))"#;
const CONTAINERS_DOCKER: &str =
    r#"sum without (cpu) (rate(container_cpu_usage_seconds_total{container="",name!=""}[5m]))"#;

pub struct CpuSaturation(pub Prom);

/// A process group or container using CPUs on a host.
struct Consumer {
    kind: &'static str,
    name: String,
    /// CPUs used (1.0: one CPU all the time).
    cpus: f64,
    sample: Sample,
}

#[async_trait]
impl Analyzer for CpuSaturation {
    fn name(&self) -> &'static str {
        "cpu"
    }

    async fn run(&self, scope: &Scope) -> Result<Vec<Fact>, AnalyzeError> {
        let left = super::Lookups::default();
        let busy = self.0.vector(BUSY).await?;
        if busy.is_empty() {
            return Ok(Vec::new());
        }
        let all = by_identity(self.0.vector(ALL).await?);
        let iowait = by_identity(self.0.vector(&mode_rate("iowait")).await?);
        let steal = by_identity(self.0.vector(&mode_rate("steal")).await?);
        let cpus = by_identity(self.0.vector(CPUS).await?);
        let load = by_identity(self.0.vector("node_load1").await.unwrap_or_default());
        let mut facts = Vec::new();
        let mut consumers: Option<HashMap<String, Vec<Consumer>>> = None;
        let mut io = None;
        for s in busy {
            let key = identity(&s.metric);
            let Some(&total) = all.get(&key).filter(|t| **t > 0.0) else {
                continue;
            };
            let host_name = host(&s.metric).unwrap_or_else(|| "?".into());
            let sel = selector(pick(&s.metric, &["instance", "job"]));
            let n = cpus.get(&key).copied().unwrap_or(total);
            let share = 100.0 * s.value / total;
            let wait = 100.0 * iowait.get(&key).copied().unwrap_or(0.0) / total;
            let stolen = 100.0 * steal.get(&key).copied().unwrap_or(0.0) / total;
            for (mode, percent, threshold, what) in [
                ("iowait", wait, IOWAIT_PERCENT, "CPU time waiting on I/O"),
                (
                    "steal",
                    stolen,
                    STEAL_PERCENT,
                    "CPU time stolen by the hypervisor",
                ),
            ] {
                if percent < threshold {
                    continue;
                }
                let query = format!(
                    "100 * sum without (cpu, mode) (rate(node_cpu_seconds_total{}[5m])) / sum without (cpu, mode) (rate(node_cpu_seconds_total{sel}[5m]))",
                    with_mode(&sel, mode)
                );
                let since = self.0.since(&left, &query, scope, |v| v >= threshold).await;
                let mut fact = Fact::new(
                    FactClass::Saturation,
                    self.name(),
                    Entity::new("host", host_name.clone())
                        .on_host(Some(host_name.clone()))
                        .with_labels(labels_map(&s.metric)),
                    what,
                    Severity::Warning,
                    Source::promql(&query),
                )
                .value(Quantity::percent(percent))
                .since(since);
                if mode == "iowait" {
                    if io.is_none() {
                        io = Some(io_consumers::by_host(&self.0).await?);
                    }
                    if let Some(c) = io.as_ref().and_then(|io| io.get(&host_name)) {
                        fact = fact.detail(io_consumers::named(c));
                    }
                } else {
                    // Stolen time is time the VM was ready to run and its hypervisor ran
                    // something else: the cause is on the node, not in the guest.
                    let own = (share - wait - stolen).max(0.0);
                    fact = fact.detail(format!(
                        "the guest's own work {} of its CPU time; its vCPUs wait while the hypervisor node runs other guests (a busy or over-committed node)",
                        Quantity::percent(own)
                    ));
                }
                facts.push(fact);
            }
            // CPUs busy, else a run queue longer than the CPUs (load counts the tasks
            // waiting for a CPU as well as those running).
            let per_cpu = load.get(&key).map(|l| l / n).filter(|p| p.is_finite());
            let (severity, by_load) = match (share, per_cpu) {
                (v, _) if v >= CRIT_PERCENT => (Severity::Critical, false),
                (v, _) if v >= WARN_PERCENT => (Severity::Warning, false),
                (_, Some(p)) if p >= LOAD_CRIT => (Severity::Critical, true),
                (_, Some(p)) if p >= LOAD_WARN => (Severity::Warning, true),
                _ => continue,
            };
            if consumers.is_none() {
                consumers = Some(self.consumers().await?);
            }
            let top: Vec<&Consumer> = consumers
                .as_ref()
                .and_then(|c| c.get(&host_name))
                .map(|v| {
                    v.iter()
                        .filter(|c| 100.0 * c.cpus >= NAMED_PERCENT * n)
                        .take(3)
                        .collect()
                })
                .unwrap_or_default();
            let (query, level) = match by_load {
                true => (
                    format!(
                        "node_load1{sel} / count without (cpu, mode) (node_cpu_seconds_total{})",
                        with_mode(&sel, "idle")
                    ),
                    LOAD_WARN,
                ),
                false => (
                    format!(
                        "100 * (1 - avg without (cpu, mode) (rate(node_cpu_seconds_total{}[5m])))",
                        with_mode(&sel, "idle")
                    ),
                    WARN_PERCENT,
                ),
            };
            let since = self.0.since(&left, &query, scope, |v| v >= level).await;
            let mut detail = match (by_load, per_cpu) {
                (true, Some(p)) => format!(
                    "load1 {} on {} CPUs; CPUs busy {}, waiting on I/O {}",
                    round_sig(p * n),
                    round_sig(n),
                    Quantity::percent(share),
                    Quantity::percent(wait)
                ),
                _ => format!("{} CPUs", round_sig(n)),
            };
            if !top.is_empty() {
                let named: Vec<String> = top
                    .iter()
                    .map(|c| {
                        format!(
                            "{} {} {} CPUs ({} of the host)",
                            c.kind,
                            c.name,
                            round_sig(c.cpus),
                            Quantity::percent(100.0 * c.cpus / n)
                        )
                    })
                    .collect();
                detail.push_str(&format!("; top: {}", named.join(", ")));
            }
            facts.push(
                Fact::new(
                    FactClass::Saturation,
                    self.name(),
                    Entity::new("host", host_name.clone())
                        .on_host(Some(host_name.clone()))
                        .with_labels(labels_map(&s.metric)),
                    if by_load { "load per CPU" } else { "CPU busy" },
                    severity,
                    Source::promql(&query),
                )
                .value(match (by_load, per_cpu) {
                    (true, Some(p)) => Quantity::new(p, Unit::Plain),
                    _ => Quantity::percent(share),
                })
                .since(since)
                .detail(detail),
            );
            // The top process and the top container, each its own fact.
            for kind in ["process", "container"] {
                let Some(c) = top.iter().find(|c| c.kind == kind) else {
                    continue;
                };
                let of_host = 100.0 * c.cpus / n;
                if of_host < CONSUMER_PERCENT {
                    continue;
                }
                facts.push(consumer_fact(
                    self.name(),
                    c,
                    &host_name,
                    of_host,
                    n,
                    severity,
                    since,
                ));
            }
        }
        Ok(facts)
    }
}

/// A host's CPU seconds a second in `mode`, every CPU summed.
fn mode_rate(mode: &str) -> String {
    format!(r#"sum without (cpu, mode) (rate(node_cpu_seconds_total{{mode="{mode}"}}[5m]))"#)
}

/// `sel` with `mode="…"` added (`{instance="a"}` → `{instance="a",mode="idle"}`).
fn with_mode(sel: &str, mode: &str) -> String {
    let inner = sel.trim_start_matches('{').trim_end_matches('}');
    match inner.is_empty() {
        true => format!("{{mode=\"{mode}\"}}"),
        false => format!("{{{inner},mode=\"{mode}\"}}"),
    }
}

fn consumer_fact(
    analyzer: &str,
    c: &Consumer,
    host_name: &str,
    of_host: f64,
    cpus: f64,
    severity: Severity,
    since: Option<chrono::DateTime<chrono::Utc>>,
) -> Fact {
    let query = match c.kind {
        "process" => format!(
            "sum by (groupname) (rate(namedprocess_namegroup_cpu_seconds_total{}[5m]))",
            selector(pick(&c.sample.metric, &["instance", "groupname"]))
        ),
        _ => format!(
            "sum without (cpu) (rate(container_cpu_usage_seconds_total{}[5m]))",
            selector(pick(
                &c.sample.metric,
                &["instance", "namespace", "pod", "container", "name"]
            ))
        ),
    };
    Fact::new(
        FactClass::Saturation,
        analyzer,
        Entity::new(c.kind, c.name.clone())
            .on_host(Some(host_name.to_string()))
            .with_labels(labels_map(&c.sample.metric)),
        "CPU used, the most on its host",
        severity,
        Source::promql(&query),
    )
    .value(Quantity::percent(of_host))
    .since(since)
    .detail(format!("{} of {} CPUs", round_sig(c.cpus), round_sig(cpus)))
}

impl CpuSaturation {
    /// Process groups and containers by host, the busiest first.
    async fn consumers(&self) -> Result<HashMap<String, Vec<Consumer>>, AnalyzeError> {
        let mut by: HashMap<String, Vec<Consumer>> = HashMap::new();
        for s in self.0.vector(PROCESSES).await? {
            let (Some(h), Some(g)) = (host(&s.metric), s.metric.get("groupname").cloned()) else {
                continue;
            };
            by.entry(h).or_default().push(Consumer {
                kind: "process",
                name: g,
                cpus: s.value,
                sample: s,
            });
        }
        for q in [CONTAINERS, CONTAINERS_DOCKER] {
            for s in self.0.vector(q).await? {
                let l = &s.metric;
                let name = match (l.get("pod"), l.get("name")) {
                    (Some(pod), _) => format!(
                        "{}/{pod}/{}",
                        l.get("namespace").map_or("", String::as_str),
                        l.get("container").map_or("", String::as_str)
                    ),
                    (None, Some(n)) => n.clone(),
                    _ => continue,
                };
                let Some(h) = l.get("node").cloned().or_else(|| host(l)) else {
                    continue;
                };
                by.entry(h).or_default().push(Consumer {
                    kind: "container",
                    name,
                    cpus: s.value,
                    sample: s,
                });
            }
        }
        for v in by.values_mut() {
            v.retain(|c| c.cpus.is_finite());
            v.sort_by(|a, b| b.cpus.total_cmp(&a.cpus));
        }
        Ok(by)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mode_is_added_to_a_selector_with_or_without_labels() {
        assert_eq!(
            with_mode(r#"{instance="a:1"}"#, "idle"),
            r#"{instance="a:1",mode="idle"}"#
        );
        assert_eq!(with_mode("{}", "iowait"), r#"{mode="iowait"}"#);
    }
}
