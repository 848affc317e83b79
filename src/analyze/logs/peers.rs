//! The other end of a failing connection: around the trigger's start (over the window for
//! a question), the lines in any stream that report a failure to connect (one query with
//! a constant line filter, [`FAILING`]) are read for the peer they name ([`failed_peers`]:
//! a host name or an address, and a port); a peer is resolved to a host or a service Loki
//! has (a domain suffix aside; an address through Prometheus' `node_uname_info` or
//! `node_network_address_info` when Loki does not spell it), and that peer's own streams
//! are read from half an hour before the first failure to ten minutes after it. Their
//! worst and rarest lines (an upgrade, "listening on 127.0.0.1 only", a crash, a config
//! error) come as one fact with the failing connection: "connection to mqtt.lan:1883
//! refused (since 20:01): brokerpi logged from 19:31: 19:58 …".
//!
//! Bounded: [`MAX_PEERS`] peers per sweep, one Loki query each, a few lookups to resolve
//! them. Queries are built from constants and label values found in Loki or Prometheus,
//! escaped; text from log lines is only compared, never put in a query.

use std::collections::BTreeMap;

use chrono::{DateTime, TimeDelta, Utc};
use serde_json::json;

use super::around::{Catalog, Pick, quote, range_around, read_near, same_host, stream_selector};
use super::peer::{FAILING, Peer, failed_peers};
use super::traces::fold_entries;
use crate::analyze::prom::escape;
use crate::analyze::{Entity, Fact, FactClass, Scope, Severity, Source, host_of, quote_line};
use crate::integrations::{LokiClient, PrometheusClient};

/// Most peers whose logs are read per sweep, and failing connections tried to find them.
const MAX_PEERS: usize = 2;
const MAX_TRIES: usize = 6;
/// Failing lines read.
const LINES: u32 = 500;
/// How long before and after the first failure the peer's lines are read.
const BEFORE: TimeDelta = TimeDelta::minutes(30);
const AFTER: TimeDelta = TimeDelta::minutes(10);
/// Patterns of the peer quoted, and characters per quoted line.
const QUOTED: usize = 4;
const LINE_CHARS: usize = 70;

/// One client's failing connections to one peer.
struct Attempts {
    service: String,
    host: Option<String>,
    peers: Vec<Peer>,
    how: &'static str,
    first: DateTime<Utc>,
    count: usize,
    example: String,
    about: bool,
}

/// Where a peer's lines are: a label value Loki has.
#[derive(Clone, PartialEq)]
struct Target {
    label: &'static str,
    value: String,
}

/// The facts of the failing connections whose peer the logs know, with what the peer
/// logged around the first failure.
pub(crate) async fn failing_peers(
    loki: &LokiClient,
    prometheus: Option<&PrometheusClient>,
    catalog: &Catalog,
    scope: &Scope,
) -> Vec<Fact> {
    let Some(service_label) = catalog.service_label() else {
        return Vec::new();
    };
    let host_label = catalog.host.as_ref().map(|(l, _)| *l);
    let (start, end) = super::at_start::range(scope);
    if start >= end {
        return Vec::new();
    }
    let query = format!(
        "{{{}=~\".+\"}} |~ `{FAILING}`",
        host_label.unwrap_or(service_label)
    );
    let Ok(streams) = loki.query_logs(&query, start, end, LINES).await else {
        return Vec::new();
    };
    let mut by: BTreeMap<(String, Option<String>, String), Attempts> = BTreeMap::new();
    for s in &streams {
        let service = s.labels.get(service_label).cloned().unwrap_or_default();
        let host = host_label.and_then(|h| s.labels.get(h).cloned());
        let entity = client_entity(service_label, &service, host_label, host.as_deref());
        let about = scope.is_about(&entity);
        for (ns, line, _) in fold_entries(&s.entries) {
            let Some((peers, how)) = failed_peers(&line) else {
                continue;
            };
            let t = DateTime::from_timestamp_nanos(ns);
            let key = (service.clone(), host.clone(), peers[0].to_string());
            let a = by.entry(key).or_insert_with(|| Attempts {
                service: service.clone(),
                host: host.clone(),
                peers,
                how,
                first: t,
                count: 0,
                example: line.clone(),
                about,
            });
            a.count += 1;
            if t < a.first {
                a.first = t;
                a.example = line;
            }
        }
    }
    let mut attempts: Vec<Attempts> = by.into_values().collect();
    attempts.sort_by_key(|a| (!a.about, std::cmp::Reverse(a.count), a.first));
    let mut picked: Vec<(Attempts, Target)> = Vec::new();
    for a in attempts.into_iter().take(MAX_TRIES) {
        if picked.len() == MAX_PEERS {
            break;
        }
        let Some(target) = resolve(&a.peers, catalog, prometheus, scope).await else {
            continue;
        };
        // The client's own host or service: its own lines are `logs_at_start`'s.
        let own = match Some(target.label) == host_label {
            true => a
                .host
                .as_deref()
                .is_some_and(|h| same_host(h, &target.value)),
            false => target.value == a.service,
        };
        if own || picked.iter().any(|(_, t)| *t == target) {
            continue;
        }
        picked.push((a, target));
    }
    let reads = picked.iter().map(|(a, t)| {
        let selector = stream_selector((t.label, &t.value), None);
        let range = range_around(a.first, BEFORE, AFTER, scope.now);
        let pick = Pick {
            max: QUOTED,
            rare_too: true,
        };
        async move {
            let near = read_near(loki, &selector, range, a.first, pick).await;
            (selector, range, near)
        }
    });
    let read = futures::future::join_all(reads).await;
    picked
        .into_iter()
        .zip(read)
        .filter_map(|((a, t), (selector, (from, to), near))| {
            let near = near.ok()?;
            let span = format!("{} to {}", from.format("%H:%M"), to.format("%H:%M"));
            let said = match (near.lines, near.picked.is_empty()) {
                (0, _) => format!("{} logged nothing from {span}", t.value),
                (n, true) => format!(
                    "{} logged {n} lines from {span}, none that look bad or rare",
                    t.value
                ),
                _ => format!(
                    "{} logged from {span}: {}",
                    t.value,
                    quote(&near.picked, LINE_CHARS)
                ),
            };
            let detail = format!(
                "{said}; {} failing lines here from {}, e.g.: {}",
                a.count,
                a.first.format("%H:%M"),
                quote_line(&a.example, LINE_CHARS)
            );
            let since = format!("{}m", (scope.now - from).num_minutes().max(1));
            let entity = client_entity(service_label, &a.service, host_label, a.host.as_deref());
            Some(
                Fact::new(
                    FactClass::Availability,
                    "connection_peers",
                    entity,
                    format!("connection to {} {}", a.peers[0], a.how),
                    Severity::Warning,
                    Source::new("loki_query", json!({"query": selector, "since": since})),
                )
                .since(Some(a.first))
                .detail(detail),
            )
        })
        .collect()
}

/// The client of a failing connection: its service on its host.
fn client_entity(
    service_label: &str,
    service: &str,
    host_label: Option<&str>,
    host: Option<&str>,
) -> Entity {
    let mut labels = BTreeMap::from([(service_label.to_string(), service.to_string())]);
    if let (Some(l), Some(h)) = (host_label, host) {
        labels.insert(l.to_string(), h.to_string());
    }
    let name = match service.is_empty() {
        true => host.unwrap_or_default(),
        false => service,
    };
    Entity::new("service", name)
        .on_host(host.map(host_of))
        .with_labels(labels)
}

/// The host or service of Loki that one of `peers` is: by name, then an address through
/// Prometheus' node_exporter (the host whose `instance` is that address, or that has it
/// on an interface).
async fn resolve(
    peers: &[Peer],
    catalog: &Catalog,
    prometheus: Option<&PrometheusClient>,
    scope: &Scope,
) -> Option<Target> {
    let names: Vec<String> = peers.iter().flat_map(|p| p.names()).collect();
    let by_name = |name: &str| {
        catalog
            .host_named(name)
            .or_else(|| {
                let ip = name.parse::<std::net::IpAddr>().is_ok();
                let named = catalog.services_named(&[name.to_string()], &[]);
                named.into_iter().next().filter(|_| !ip)
            })
            .map(|(label, value)| Target { label, value })
    };
    if let Some(t) = names.iter().find_map(|n| by_name(n)) {
        return Some(t);
    }
    let prometheus = prometheus?;
    for ip in names
        .iter()
        .filter(|n| n.parse::<std::net::IpAddr>().is_ok())
    {
        let instance = format!("\\[?{}\\]?(?::[0-9]+)?", regex_lite::escape(ip));
        let expr = format!(
            "count by (instance, nodename) (node_uname_info{{instance=~\"{}\"}}) or count by (instance) (node_network_address_info{{address=\"{}\"}})",
            escape(&instance),
            escape(ip)
        );
        let Ok(samples) = prometheus.query_vector(&expr, Some(scope.now)).await else {
            continue;
        };
        let found = samples.iter().find_map(|s| {
            let names = [
                s.metric.get("nodename").cloned(),
                s.metric.get("instance").map(|i| host_of(i)),
            ];
            names.into_iter().flatten().find_map(|n| by_name(&n))
        });
        if found.is_some() {
            return found;
        }
    }
    None
}
