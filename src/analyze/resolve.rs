//! Where the services the trigger names run: "Is Home Assistant OK?" names no host, but
//! Prometheus and Loki know which hosts carry series or streams of a service called so
//! (under the labels exporters and log shippers name services by). Those hosts join the
//! focus before the analyzers run, so what is read first about named hosts (the steps
//! of their exporters, their logs around the start) is read about the service's hosts.
//! Best effort within a short time: a failed or slow lookup adds nothing. A name found on
//! many hosts (`node`, a job every host has) singles none out and adds nothing.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use super::{Entity, Focus, Scope, host_of, logs, prom};
use crate::integrations::query_result::QueryResult;
use crate::integrations::{LokiClient, PrometheusClient};

/// How long the lookups may take together, before the analyzers start.
const TIME_LIMIT: Duration = Duration::from_secs(2);
/// A name on more hosts than this is not one service's.
const MAX_HOSTS_PER_NAME: usize = 3;
/// Labels exporters and scrape configs name a service by (Prometheus' `job`, Kubernetes'
/// recommended labels, process-exporter's `groupname`, systemd units, containers).
const PROMETHEUS_SERVICE_LABELS: [&str; 9] = [
    "job",
    "service",
    "app",
    "app_kubernetes_io_name",
    "container",
    "groupname",
    "name",
    "unit",
    "service_name",
];

/// The clients the lookups read.
#[derive(Clone, Default)]
pub struct Resolver {
    pub prometheus: Option<Arc<PrometheusClient>>,
    pub loki: Option<Arc<LokiClient>>,
}

impl Resolver {
    /// `scope` with the hosts of the services its focus names added to the focus (the
    /// scope as it was when there is nothing to add).
    pub async fn resolve(&self, scope: Scope) -> Scope {
        let Some(focus) = scope.focus.clone() else {
            return scope;
        };
        if focus.has_hosts() {
            return scope;
        }
        let lookups = async {
            let (p, l) = tokio::join!(self.prometheus_hosts(&scope), self.loki_hosts(&scope));
            p.into_iter().chain(l).collect::<BTreeSet<String>>()
        };
        let hosts = tokio::time::timeout(TIME_LIMIT, lookups)
            .await
            .unwrap_or_default();
        if hosts.is_empty() {
            return scope;
        }
        tracing::debug!(?hosts, "hosts of the services the trigger names");
        let focus: Focus = (*focus).clone().with_hosts(hosts);
        scope.with_focus(focus)
    }

    async fn prometheus_hosts(&self, scope: &Scope) -> BTreeSet<String> {
        let Some(client) = &self.prometheus else {
            return BTreeSet::new();
        };
        let mut hosts = BTreeSet::new();
        for label in PROMETHEUS_SERVICE_LABELS {
            let values = client
                .label_values_between(label, &[], scope.window_start, scope.now)
                .await
                .unwrap_or_default();
            let named = named(scope, label, values);
            if named.is_empty() {
                continue;
            }
            let expr = format!(
                "count by (instance, {label}) ({{{label}=~\"{}\"}})",
                prom::escape(&alternation(&named))
            );
            let Ok(samples) = client.query_vector(&expr, Some(scope.now)).await else {
                continue;
            };
            let pairs = samples.iter().filter_map(|s| {
                Some((
                    s.metric.get(label)?.clone(),
                    host_of(s.metric.get("instance")?),
                ))
            });
            hosts.extend(few_per_name(pairs));
        }
        hosts
    }

    async fn loki_hosts(&self, scope: &Scope) -> BTreeSet<String> {
        let Some(client) = &self.loki else {
            return BTreeSet::new();
        };
        let Ok(labels) = client.labels(scope.window_start, scope.now).await else {
            return BTreeSet::new();
        };
        let Some(host_label) = logs::HOST_LABELS
            .into_iter()
            .find(|h| labels.iter().any(|l| l == h))
        else {
            return BTreeSet::new();
        };
        let mut hosts = BTreeSet::new();
        for label in logs::SERVICE_LABELS
            .into_iter()
            .filter(|l| *l != host_label && labels.iter().any(|x| x == l))
        {
            let values = client
                .label_values(label, scope.window_start, scope.now)
                .await
                .unwrap_or_default();
            let named = named(scope, label, values);
            if named.is_empty() {
                continue;
            }
            let expr = format!(
                "sum by ({host_label}, {label}) (count_over_time({{{label}=~\"{}\"}}{}))",
                prom::escape(&alternation(&named)),
                scope.promql_range()
            );
            let Ok(result) = client.query(&expr, Some(scope.now)).await else {
                continue;
            };
            let QueryResult::Vector(samples) = result else {
                continue;
            };
            let pairs = samples.iter().filter_map(|s| {
                Some((
                    s.metric.get(label)?.clone(),
                    host_of(s.metric.get(host_label)?),
                ))
            });
            hosts.extend(few_per_name(pairs));
        }
        hosts
    }
}

/// The values of `label` the focus names (as a service's name).
fn named(scope: &Scope, label: &str, values: Vec<String>) -> Vec<String> {
    values
        .into_iter()
        .filter(|v| {
            let labels = BTreeMap::from([(label.to_string(), v.clone())]);
            scope.is_about(&Entity::new("service", v.clone()).with_labels(labels))
        })
        .collect()
}

/// A regex matching exactly the values.
fn alternation(values: &[String]) -> String {
    let quoted: Vec<String> = values.iter().map(|v| regex_lite::escape(v)).collect();
    quoted.join("|")
}

/// The hosts of `(name, host)` pairs, leaving out names found on more than
/// [`MAX_HOSTS_PER_NAME`] hosts.
fn few_per_name(pairs: impl Iterator<Item = (String, String)>) -> BTreeSet<String> {
    let mut by: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (name, host) in pairs {
        by.entry(name).or_default().insert(host);
    }
    by.into_values()
        .filter(|h| h.len() <= MAX_HOSTS_PER_NAME)
        .flatten()
        .filter(|h| !h.is_empty())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_on_a_few_hosts_gives_them_and_one_on_every_host_gives_none() {
        let pairs = [
            ("jellyfin", "screenhouse"),
            ("node", "a"),
            ("node", "b"),
            ("node", "c"),
            ("node", "d"),
            ("hass", "garage-hub"),
            ("hass", "garage-hub"),
        ]
        .map(|(n, h)| (n.to_string(), h.to_string()));
        let hosts = few_per_name(pairs.into_iter());
        assert_eq!(
            hosts.into_iter().collect::<Vec<_>>(),
            ["garage-hub", "screenhouse"]
        );
    }
}
