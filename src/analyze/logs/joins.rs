//! Log lines joined to the facts other analyzers found, after they ran: the labels Loki
//! has are read once ([`Catalog`]), then
//!
//! - a failed config reload, a failed systemd unit, a restart loop or a crash loop known
//!   only from kube-state-metrics gets, as its detail, the worst lines the service itself
//!   logged within a few minutes of when it failed (Prometheus says that a reload failed;
//!   the reason, "line 42: field foo not found", is one line of the service's log). Its
//!   streams are found by the service's, job's, unit's, container's or pod's name (case
//!   and a `.service` suffix aside) on its host;
//! - the most severe log facts get when the line they quote first appeared, when that was
//!   well before the window, and what the host logged just before ([`super::first_seen`]);
//! - the failing connections of the logs get their own facts with what the peer logged
//!   ([`super::peers`]).
//!
//! Bounded: [`MAX_OWN`] facts joined, one Loki query each; the sweep runs it within an
//! analyzer's time limit.

use chrono::TimeDelta;

use super::around::{Catalog, Pick, quote, range_around, read_near, stream_selector};
use super::first_seen::first_seen;
use super::peers::failing_peers;
use crate::analyze::{Fact, Scope, Severity};
use crate::integrations::{LokiClient, PrometheusClient};

/// Most facts joined to their service's lines per sweep.
const MAX_OWN: usize = 3;
/// How long before and after a failure its service's lines are read.
const BEFORE: TimeDelta = TimeDelta::minutes(5);
const AFTER: TimeDelta = TimeDelta::minutes(5);
/// Patterns quoted, and characters per quoted line (a config error's reason is at its end).
const QUOTED: usize = 2;
const LINE_CHARS: usize = 150;
/// Entity labels that name a service, a unit, a container or a pod.
const NAME_LABELS: [&str; 9] = [
    "job",
    "name",
    "unit",
    "container",
    "pod",
    "app",
    "service",
    "service_name",
    "groupname",
];

/// The facts whose reason is usually a line of the service's own log: a failed reload
/// (`config_reloads`), a failed unit, a restart loop (`process_restarts` at a warning),
/// a crash loop seen in kube-state-metrics, whose pod log no analyzer read (`kube_pods`
/// reads it through the API).
fn wants_own_lines(f: &Fact) -> bool {
    match f.analyzer.as_str() {
        "config_reloads" | "process_restarts" => f.severity >= Severity::Warning,
        "systemd_failed_units" => true,
        "kube_state_pods" => f.what.contains("CrashLoopBackOff"),
        _ => false,
    }
}

/// Joins log lines to `facts` and returns the facts of failing connections.
pub async fn join_logs(
    loki: &LokiClient,
    prometheus: Option<&PrometheusClient>,
    facts: &mut [Fact],
    scope: &Scope,
) -> Vec<Fact> {
    let Ok(catalog) = Catalog::read(loki, scope.window_start, scope.now).await else {
        return Vec::new();
    };
    let joined = async {
        own_lines(loki, &catalog, facts, scope).await;
        first_seen(loki, &catalog, facts, scope).await;
    };
    let (_, peers) = tokio::join!(joined, failing_peers(loki, prometheus, &catalog, scope));
    peers
}

/// Adds to the facts of [`wants_own_lines`] the worst lines their service logged then.
async fn own_lines(loki: &LokiClient, catalog: &Catalog, facts: &mut [Fact], scope: &Scope) {
    let mut picked: Vec<usize> = (0..facts.len())
        .filter(|i| wants_own_lines(&facts[*i]) && facts[*i].since.is_some())
        .collect();
    picked.sort_by_key(|i| {
        let f = &facts[*i];
        (std::cmp::Reverse(f.severity), std::cmp::Reverse(f.since))
    });
    let mut reads = Vec::new();
    for i in picked {
        if reads.len() == MAX_OWN {
            break;
        }
        let Some(selector) = own_streams(&facts[i], catalog) else {
            continue;
        };
        if reads.iter().any(|(_, s, _)| *s == selector) {
            continue;
        }
        let Some(at) = facts[i].since else {
            continue;
        };
        reads.push((i, selector, at));
    }
    let said = futures::future::join_all(reads.iter().map(|(_, selector, at)| {
        let range = range_around(*at, BEFORE, AFTER, scope.now);
        let pick = Pick {
            max: QUOTED,
            rare_too: false,
        };
        read_near(loki, selector, range, *at, pick)
    }))
    .await;
    for ((i, _, at), near) in reads.into_iter().zip(said) {
        let Ok(near) = near else {
            continue;
        };
        if near.picked.is_empty() {
            continue;
        }
        let f = &mut facts[i];
        let detail = f.detail.take().map_or(String::new(), |d| format!("{d}; "));
        f.detail = Some(format!(
            "{detail}its log around {}: {}",
            at.format("%H:%M"),
            quote(&near.picked, LINE_CHARS)
        ));
    }
}

/// The selector of the streams of `f`'s service on its host, when Loki has them.
fn own_streams(f: &Fact, catalog: &Catalog) -> Option<String> {
    let mut names = vec![f.entity.name.clone()];
    let mut prefer = Vec::new();
    for l in NAME_LABELS {
        if let Some(v) = f.entity.labels.get(l).filter(|v| !v.is_empty()) {
            names.push(v.clone());
            prefer.push(l);
        }
    }
    let (label, value) = catalog.services_named(&names, &prefer).into_iter().next()?;
    let host = match (&f.entity.host, &catalog.host) {
        (Some(h), Some(_)) => match catalog.host_named(h) {
            Some(found) => Some(found),
            // A pod's name is its own; a service's is not (node_exporter runs everywhere).
            None if label == "pod" => None,
            None => return None,
        },
        _ => None,
    };
    Some(stream_selector(
        (label, &value),
        host.as_ref().map(|(l, v)| (*l, v.as_str())),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::{Entity, FactClass, Source};

    fn fact(analyzer: &str, what: &str, entity: Entity) -> Fact {
        Fact::new(
            FactClass::Change,
            analyzer,
            entity,
            what,
            Severity::Warning,
            Source::promql("x"),
        )
    }

    #[test]
    fn a_failed_units_streams_are_its_units_on_its_host_and_none_on_an_unknown_host() {
        let catalog = Catalog {
            host: Some(("host", vec!["web1".into(), "db1".into()])),
            services: vec![
                ("job", vec!["systemd-journal".into(), "prometheus".into()]),
                ("unit", vec!["Caddy.service".into(), "sshd.service".into()]),
            ],
        };
        let labels = |pairs: &[(&str, &str)]| {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        let unit = fact(
            "systemd_failed_units",
            "failed",
            Entity::new("unit", "caddy.service")
                .on_host(Some("web1.lan".into()))
                .with_labels(labels(&[("name", "caddy.service")])),
        );
        assert!(wants_own_lines(&unit));
        assert_eq!(
            own_streams(&unit, &catalog).as_deref(),
            Some(r#"{unit="Caddy.service", host="web1"}"#)
        );
        let elsewhere = fact(
            "config_reloads",
            "config reload failed",
            Entity::new("service", "prometheus")
                .on_host(Some("mon9".into()))
                .with_labels(labels(&[("job", "prometheus")])),
        );
        assert_eq!(own_streams(&elsewhere, &catalog), None);
        let restarts = fact("process_restarts", "restarts", Entity::new("service", "x"));
        let mut quiet = restarts.clone();
        quiet.severity = Severity::Info;
        assert!(wants_own_lines(&restarts) && !wants_own_lines(&quiet));
        assert!(!wants_own_lines(&fact(
            "kube_state_pods",
            "container a ImagePullBackOff",
            Entity::new("pod", "a/b")
        )));
    }
}
