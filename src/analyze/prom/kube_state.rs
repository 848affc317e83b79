//! Kubernetes pods from kube-state-metrics, for users whose Prometheus scrapes it but who
//! gave sre-agent no API access: containers waiting (`kube_pod_container_status_waiting_reason`:
//! image pulls, crash loops, config errors) with how their last run ended, containers
//! OOM-killed in the window against their memory limit
//! (`kube_pod_container_status_last_terminated_reason` with restarts in the window), and
//! pods stuck `Pending` (`kube_pod_status_phase`; unschedulable when
//! `kube_pod_status_unschedulable` says so) with their requests. Since when comes from the
//! series' presence over the window; the node and owner from `kube_pod_info`.

use std::collections::{BTreeMap, HashMap};

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use super::{Prom, identity, pick, selector};
use crate::analyze::{
    AnalyzeError, Analyzer, Entity, Fact, FactClass, Quantity, Scope, Severity, Source, round_sig,
};
use crate::integrations::prometheus::{Labels, Series};

/// The waiting reasons of a container that is starting normally.
const STARTING: [&str; 2] = ["ContainerCreating", "PodInitializing"];
/// How long a pod may be Pending, or a container starting, before it counts.
const GRACE_SECS: f64 = 300.0;
/// Points of the range queries that date a state.
const POINTS: u32 = 120;
/// Most facts.
const MAX_FACTS: usize = 40;
/// Most Pending pods looked at (three queries each).
const MAX_PENDING: usize = 15;

const WAITING: &str = "kube_pod_container_status_waiting_reason";
const TERMINATED: &str = "kube_pod_container_status_last_terminated_reason";
const PHASE: &str = "kube_pod_status_phase";

pub struct KubeStatePods(pub Prom);

/// When the series in `values` has been present without a break until its end: the first
/// point of its last run (gaps of more than two steps break it); `None` when the run began
/// with the window (the state is older than what was looked at).
pub fn run_start(values: &[(f64, f64)], step: f64, window_start: f64) -> Option<DateTime<Utc>> {
    let mut start = values.last()?.0;
    for w in values.windows(2).rev() {
        if w[1].0 - w[0].0 > 2.0 * step {
            break;
        }
        start = w[0].0;
    }
    if start - window_start <= 2.0 * step {
        return None;
    }
    DateTime::from_timestamp_millis((start * 1000.0) as i64)
}

/// The step `Prom::range` uses for `scope` with `points`.
pub fn step_of(scope: &Scope, points: u32) -> f64 {
    (scope.window().num_seconds().max(60) as f64 / f64::from(points.max(1))).max(15.0)
}

/// `(namespace, pod)` of a series.
fn pod_key(l: &Labels) -> (String, String) {
    let get = |k: &str| l.get(k).cloned().unwrap_or_default();
    (get("namespace"), get("pod"))
}

/// The series of `range` by their labels.
fn by_labels(range: Vec<Series>) -> HashMap<Labels, Vec<(f64, f64)>> {
    range
        .into_iter()
        .map(|s| (identity(&s.metric), s.values))
        .collect()
}

impl KubeStatePods {
    /// `kube_pod_info` of the pods in `bad`: (node, owner kind, owner name) by pod.
    async fn pod_info(&self, bad: &str) -> Result<HashMap<(String, String), Labels>, AnalyzeError> {
        let q = format!("kube_pod_info and on(namespace, pod) ({bad})");
        Ok(self
            .0
            .vector(&q)
            .await?
            .into_iter()
            .map(|s| (pod_key(&s.metric), s.metric))
            .collect())
    }

    fn entity(&self, l: &Labels, info: Option<&Labels>) -> Entity {
        let (ns, pod) = pod_key(l);
        let mut labels: BTreeMap<String, String> = pick(l, &["namespace", "pod", "container"])
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let node = info.and_then(|i| i.get("node")).filter(|n| !n.is_empty());
        if let Some(n) = node {
            labels.insert("node".into(), n.clone());
        }
        if let Some(i) = info
            && let (Some(kind), Some(name)) = (i.get("created_by_kind"), i.get("created_by_name"))
            && !name.is_empty()
        {
            // A ReplicaSet stands for its Deployment, as in the API analyzers.
            let (kind, name) = match crate::analyze::kube::deployment_of(name) {
                Some(d) if kind == "ReplicaSet" => ("deployment".to_string(), d.to_string()),
                _ => (kind.to_lowercase(), name.clone()),
            };
            labels.insert("workload".into(), name.clone());
            labels.entry(kind).or_insert(name);
        }
        Entity::new("pod", format!("{ns}/{pod}"))
            .on_host(node.cloned())
            .with_labels(labels)
    }
}

#[async_trait]
impl Analyzer for KubeStatePods {
    fn name(&self) -> &'static str {
        "kube_state_pods"
    }

    async fn run(&self, scope: &Scope) -> Result<Vec<Fact>, AnalyzeError> {
        let p = &self.0;
        let waiting = p.vector(&format!("{WAITING} == 1")).await?;
        let pending = p
            .vector(&format!("{PHASE}{{phase=\"Pending\"}} == 1"))
            .await?;
        if waiting.is_empty() && pending.is_empty() && p.vector(PHASE).await?.is_empty() {
            // No kube-state-metrics here.
            return Ok(Vec::new());
        }
        let step = step_of(scope, POINTS);
        let start = scope.window_start.timestamp() as f64;
        let window = scope.promql_range();
        let waiting_since = by_labels(p.range(&format!("{WAITING} == 1"), scope, POINTS).await?);
        let info = self
            .pod_info(&format!(
                "{WAITING} == 1 or {PHASE}{{phase=\"Pending\"}} == 1 or {TERMINATED}{{reason=\"OOMKilled\"}} == 1"
            ))
            .await?;
        // How each container's last run ended, for those that restarted in the window.
        let restarted = format!(
            "{TERMINATED} == 1 and on(namespace, pod, container) increase(kube_pod_container_status_restarts_total{window}) > 0"
        );
        let ended: HashMap<(String, String, String), String> = p
            .vector(&restarted)
            .await?
            .into_iter()
            .filter_map(|s| {
                let (ns, pod) = pod_key(&s.metric);
                Some((
                    (ns, pod, s.metric.get("container")?.clone()),
                    s.metric.get("reason")?.clone(),
                ))
            })
            .collect();
        let limits: HashMap<(String, String, String), f64> = p
            .vector("kube_pod_container_resource_limits{resource=\"memory\"}")
            .await?
            .into_iter()
            .filter_map(|s| {
                let (ns, pod) = pod_key(&s.metric);
                Some(((ns, pod, s.metric.get("container")?.clone()), s.value))
            })
            .collect();
        let mut facts = Vec::new();
        let mut explained = std::collections::HashSet::new();
        for s in &waiting {
            let l = identity(&s.metric);
            let (Some(reason), Some(container)) = (l.get("reason"), l.get("container")) else {
                continue;
            };
            let since = waiting_since
                .get(&l)
                .and_then(|v| run_start(v, step, start));
            let starting = STARTING.contains(&reason.as_str());
            if starting
                && since.is_some_and(|t| ((scope.now - t).num_seconds() as f64) < GRACE_SECS)
            {
                continue;
            }
            let key = (pod_key(&l).0, pod_key(&l).1, container.clone());
            explained.insert(pod_key(&l));
            let mut detail = Vec::new();
            if let Some(r) = ended.get(&key) {
                detail.push(format!("last exit {r}"));
                if r == "OOMKilled"
                    && let Some(m) = limits.get(&key)
                {
                    detail.push(format!("memory limit {}", Quantity::bytes(*m)));
                }
            }
            let q = format!(
                "{WAITING}{}",
                selector(pick(&l, &["namespace", "pod", "container"]))
            );
            facts.push(
                Fact::new(
                    FactClass::Kubernetes,
                    self.name(),
                    self.entity(&l, info.get(&pod_key(&l))),
                    format!("container {container} {reason}"),
                    if starting {
                        Severity::Warning
                    } else {
                        Severity::Critical
                    },
                    Source::promql(&q),
                )
                .since(since)
                .detail(detail.join(", ")),
            );
        }
        facts.extend(
            self.oom(&ended, &limits, &info, &explained, &window)
                .await?,
        );
        for s in pending.iter().take(MAX_PENDING) {
            let l = identity(&s.metric);
            let key = pod_key(&l);
            if explained.contains(&key) {
                continue;
            }
            let sel = selector(pick(&l, &["namespace", "pod"]));
            let q = format!("{PHASE}{sel}");
            let presence = format!(
                "{PHASE}{} == 1",
                selector(pick(&l, &["namespace", "pod", "phase"]))
            );
            let series = p.range(&presence, scope, POINTS).await?;
            let since = series
                .first()
                .and_then(|s| run_start(&s.values, step, start));
            if since.is_some_and(|t| ((scope.now - t).num_seconds() as f64) < GRACE_SECS) {
                continue;
            }
            let unschedulable = !p
                .vector(&format!("kube_pod_status_unschedulable{sel} == 1"))
                .await?
                .is_empty();
            let requests: HashMap<String, f64> = p
                .vector(&format!(
                    "sum by (resource) (kube_pod_container_resource_requests{sel})"
                ))
                .await?
                .into_iter()
                .filter_map(|s| Some((s.metric.get("resource")?.clone(), s.value)))
                .collect();
            let mut what = String::from(if unschedulable {
                "unschedulable"
            } else {
                "Pending"
            });
            if let Some(c) = requests.get("cpu") {
                what.push_str(&format!(", requests cpu {}", round_sig(*c)));
            }
            let mut fact = Fact::new(
                FactClass::Kubernetes,
                self.name(),
                self.entity(&l, info.get(&key)),
                what,
                if unschedulable {
                    Severity::Critical
                } else {
                    Severity::Warning
                },
                Source::promql(&q),
            )
            .since(since);
            if let Some(m) = requests.get("memory") {
                fact.what.push_str(if requests.contains_key("cpu") {
                    ", memory"
                } else {
                    ", requests memory"
                });
                fact = fact.value(Quantity::bytes(*m));
            }
            facts.push(fact);
            if facts.len() >= MAX_FACTS {
                break;
            }
        }
        facts.truncate(MAX_FACTS);
        Ok(facts)
    }
}

impl KubeStatePods {
    /// Containers OOM-killed in the window that are not waiting now (those are reported
    /// with their waiting reason).
    async fn oom(
        &self,
        ended: &HashMap<(String, String, String), String>,
        limits: &HashMap<(String, String, String), f64>,
        info: &HashMap<(String, String), Labels>,
        explained: &std::collections::HashSet<(String, String)>,
        window: &str,
    ) -> Result<Vec<Fact>, AnalyzeError> {
        let mut facts = Vec::new();
        for ((ns, pod, container), reason) in ended {
            if reason != "OOMKilled" || explained.contains(&(ns.clone(), pod.clone())) {
                continue;
            }
            let l: Labels = [("namespace", ns), ("pod", pod), ("container", container)]
                .into_iter()
                .map(|(k, v)| (k.to_string(), v.clone()))
                .collect();
            let sel = selector(pick(&l, &["namespace", "pod", "container"]));
            let restarts = self
                .0
                .vector(&format!(
                    "increase(kube_pod_container_status_restarts_total{sel}{window})"
                ))
                .await?
                .first()
                .map(|s| s.value.round());
            let q = format!("{TERMINATED}{sel}");
            let mut fact = Fact::new(
                FactClass::Kubernetes,
                self.name(),
                self.entity(&l, info.get(&(ns.clone(), pod.clone()))),
                format!("container {container} OOMKilled at its memory limit"),
                Severity::Warning,
                Source::promql(&q),
            );
            if let Some(m) = limits.get(&(ns.clone(), pod.clone(), container.clone())) {
                fact = fact.limit(Quantity::bytes(*m));
            }
            if let Some(r) = restarts {
                fact = fact.detail(format!("restarts in the window {}", round_sig(r)));
            }
            facts.push(fact);
        }
        Ok(facts)
    }
}

#[cfg(test)]
mod tests {
    use super::run_start;

    #[test]
    fn a_state_dates_from_the_first_point_of_its_last_unbroken_run_within_the_window() {
        // Present at 1000-1120, absent, then again from 1600 on (steps of 40 s).
        let v: Vec<(f64, f64)> = [1000.0, 1040.0, 1080.0, 1120.0, 1600.0, 1640.0, 1680.0]
            .iter()
            .map(|t| (*t, 1.0))
            .collect();
        assert_eq!(run_start(&v, 40.0, 900.0).unwrap().timestamp(), 1600);
        // Present since the window began: older than what was looked at.
        assert_eq!(run_start(&v[..4], 40.0, 1000.0), None);
        assert_eq!(run_start(&[], 40.0, 0.0), None);
    }
}
