//! The name of a member of a cluster, a pool or an array, from the labels of a metric's
//! series: the labels whose values differ among the series that share its metric name
//! and scrape context (`instance`, `job`, `cluster`) are the ones that tell the members
//! apart. A label that alone tells every peer apart names the member by its value
//! (`es-3`, `orders`, `md0`); when none does, the fewest such labels that together do
//! (greedily, at most three), as `k=v` pairs (a topic and its partition). A short
//! preference list only breaks ties between labels that tell the peers apart equally
//! well. A series without peers is named by a preferred label it has, else by its labels
//! that do not look constant (scrape context, `true`/`false` flags), else by its cluster.
//! The member's host is the value of a host label (`node`, `host`, …, as [`super::host`]
//! reads them) that varies with it (or that a series without peers carries), else the
//! series' host.

use std::collections::{BTreeMap, BTreeSet};

use crate::integrations::prometheus::Labels;

/// Labels that say where a series was scraped or which whole it belongs to: never a
/// member's name.
const CONTEXT: [&str; 4] = ["__name__", "instance", "job", "cluster"];
/// Labels that name members, in the order that breaks ties between equally telling ones.
const PREFERRED: [&str; 14] = [
    "name", "node", "member", "host", "hostname", "device", "queue", "pool", "topic", "volume",
    "database", "db", "server", "subnet",
];
/// Labels that carry a member's host (as `super::host` reads them after `instance`).
const HOST_LABELS: [&str; 4] = ["node", "nodename", "hostname", "host"];
/// Most labels a combined name joins.
const MAX_PARTS: usize = 3;

/// How the series of one metric name their members.
#[derive(Debug, Default)]
pub struct Members {
    /// Per scrape context (the values of [`CONTEXT`]), the labels that tell its series
    /// apart in the order the name joins them, and the host label that varies among them.
    naming: BTreeMap<Vec<String>, (Vec<String>, Option<String>)>,
}

/// A member: its name, and its host when a label that varies with it carries one.
#[derive(Debug, PartialEq, Eq)]
pub struct Member {
    pub name: String,
    pub host: Option<String>,
}

/// The metric name and scrape context of a series: its peers share them.
fn context(labels: &Labels) -> Vec<String> {
    CONTEXT
        .iter()
        .map(|k| labels.get(*k).cloned().unwrap_or_default())
        .collect()
}

/// Whether `k=v` can be part of a name: not scrape context, not empty, not a flag.
fn nameable(k: &str, v: &str) -> bool {
    !CONTEXT.contains(&k)
        && !v.is_empty()
        && !["true", "false", "yes", "no"].contains(&v.to_ascii_lowercase().as_str())
}

fn rank(k: &str) -> usize {
    PREFERRED
        .iter()
        .position(|p| *p == k)
        .unwrap_or(PREFERRED.len())
}

/// The labels that together tell `peers` apart: greedily the one that splits them into
/// the most groups (ties by preference, then name), until every peer stands alone or
/// nothing splits further; and the first host label among those that vary.
fn telling(peers: &[&Labels]) -> (Vec<String>, Option<String>) {
    let mut keys: BTreeSet<&str> = BTreeSet::new();
    for p in peers {
        keys.extend(
            p.iter()
                .filter(|(k, v)| nameable(k, v))
                .map(|(k, _)| k.as_str()),
        );
    }
    // Labels whose values differ among the peers (absent counts as a value).
    let varying: Vec<&str> = keys
        .into_iter()
        .filter(|k| {
            let values: BTreeSet<Option<&String>> = peers.iter().map(|p| p.get(*k)).collect();
            values.len() > 1
        })
        .collect();
    let groups = |chosen: &[&str]| -> usize {
        peers
            .iter()
            .map(|p| chosen.iter().map(|k| p.get(*k)).collect::<Vec<_>>())
            .collect::<BTreeSet<_>>()
            .len()
    };
    let mut chosen: Vec<&str> = Vec::new();
    while chosen.len() < MAX_PARTS && groups(&chosen) < peers.len() {
        let before = groups(&chosen);
        let best = varying
            .iter()
            .filter(|k| !chosen.contains(k))
            .map(|k| {
                let mut with = chosen.clone();
                with.push(k);
                (groups(&with), *k)
            })
            .filter(|(g, _)| *g > before)
            .max_by(|a, b| {
                a.0.cmp(&b.0)
                    .then(rank(b.1).cmp(&rank(a.1)))
                    .then(b.1.cmp(a.1))
            });
        match best {
            Some((_, k)) => chosen.push(k),
            None => break,
        }
    }
    chosen.sort_by_key(|k| (rank(k), *k));
    let host = HOST_LABELS
        .iter()
        .find(|h| varying.contains(h))
        .map(|h| h.to_string());
    (chosen.into_iter().map(String::from).collect(), host)
}

impl Members {
    /// How the series `all` are told apart (each among those of its metric name).
    pub fn of<'a>(all: impl IntoIterator<Item = &'a Labels>) -> Self {
        let mut by_context: BTreeMap<Vec<String>, Vec<&Labels>> = BTreeMap::new();
        for l in all {
            by_context.entry(context(l)).or_default().push(l);
        }
        let naming = by_context
            .into_iter()
            .map(|(c, peers)| (c, telling(&peers)))
            .collect();
        Self { naming }
    }

    /// The member `labels` is (`None`: nothing names it but its scrape context).
    pub fn member(&self, labels: &Labels) -> Option<Member> {
        let (keys, varying_host) = match self.naming.get(&context(labels)) {
            Some((keys, host)) if !keys.is_empty() => (keys.clone(), host.clone()),
            // Alone, a host label it carries is its own.
            _ => (
                alone(labels),
                HOST_LABELS
                    .iter()
                    .find(|h| labels.contains_key(**h))
                    .map(|h| h.to_string()),
            ),
        };
        let parts: Vec<(&String, &String)> = keys
            .iter()
            .filter_map(|k| labels.get_key_value(k))
            .filter(|(k, v)| nameable(k, v) || (k.as_str() == "cluster" && !v.is_empty()))
            .collect();
        let name = match parts.as_slice() {
            [] => return None,
            [(_, v)] => v.to_string(),
            many => many
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(","),
        };
        // A host label that names the member, or varies with it though another names it.
        let host = keys
            .iter()
            .find(|k| HOST_LABELS.contains(&k.as_str()))
            .or(varying_host.as_ref())
            .and_then(|k| labels.get(k))
            .filter(|h| !h.is_empty())
            .map(|h| crate::analyze::host_of(h));
        Some(Member { name, host })
    }
}

/// The labels that name a series without peers: a preferred label it has, else all its
/// nameable labels, else the whole it belongs to (`cluster`).
fn alone(labels: &Labels) -> Vec<String> {
    let mut own: Vec<&String> = labels
        .iter()
        .filter(|(k, v)| nameable(k, v))
        .map(|(k, _)| k)
        .collect();
    own.sort_by_key(|k| (rank(k), k.as_str()));
    match own.first() {
        Some(k) if rank(k) < PREFERRED.len() => vec![k.to_string()],
        Some(_) => own.into_iter().cloned().collect(),
        None => vec!["cluster".to_string()],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::prom::labels;

    fn member(all: &[Labels], i: usize) -> Option<Member> {
        Members::of(all).member(&all[i])
    }

    fn named(name: &str, host: Option<&str>) -> Option<Member> {
        Some(Member {
            name: name.into(),
            host: host.map(String::from),
        })
    }

    /// elasticsearch_exporter's filesystem gauges: one exporter, every node of the cluster.
    fn es(cluster: &str, name: &str, host: &str) -> Labels {
        labels(&[
            ("__name__", "elasticsearch_filesystem_data_available_bytes"),
            ("cluster", cluster),
            ("es_client_node", "true"),
            ("es_data_node", "true"),
            ("es_ingest_node", "true"),
            ("es_master_node", "true"),
            ("host", host),
            ("instance", "es-exporter:9114"),
            ("job", "elasticsearch"),
            ("mount", "/usr/share/elasticsearch/data (/dev/sdb1)"),
            ("name", name),
            ("path", "/usr/share/elasticsearch/data"),
        ])
    }

    #[test]
    fn a_cluster_node_is_named_by_the_label_that_tells_it_from_its_peers_on_its_own_host() {
        let all = [
            es("logsearch", "es-1", "10.0.5.11"),
            es("logsearch", "es-2", "10.0.5.12"),
            es("logsearch", "es-3", "10.0.5.13"),
            // Another cluster with the same node names: its own peers.
            es("metrics", "es-1", "10.0.9.11"),
        ];
        assert_eq!(member(&all, 2), named("es-3", Some("10.0.5.13")));
        assert_eq!(member(&all, 3), named("es-1", Some("10.0.9.11")));
    }

    #[test]
    fn labels_that_only_together_tell_members_apart_name_them_together() {
        // kafka_exporter: `kafka_topic_partition_current_offset{partition, topic}`.
        let p = |topic: &str, partition: &str| {
            labels(&[
                ("__name__", "kafka_topic_partition_current_offset"),
                ("instance", "kafka-exporter:9308"),
                ("job", "kafka"),
                ("partition", partition),
                ("topic", topic),
            ])
        };
        let all = [p("orders", "0"), p("orders", "1"), p("audit", "0")];
        assert_eq!(member(&all, 1), named("topic=orders,partition=1", None));
        // rabbitmq_exporter: queues of two vhosts, flags and the node constant.
        let q = |vhost: &str, queue: &str| {
            labels(&[
                ("__name__", "rabbitmq_queue_messages_ready"),
                ("cluster", "rabbit@mq-a"),
                ("durable", "true"),
                ("instance", "mq-a:9419"),
                ("policy", "ha-all"),
                ("queue", queue),
                ("self", "1"),
                ("vhost", vhost),
            ])
        };
        let all = [q("/", "mail"), q("/", "billing"), q("shop", "mail")];
        assert_eq!(member(&all, 1), named("queue=billing,vhost=/", None));
        assert_eq!(member(&all, 2), named("queue=mail,vhost=shop", None));
    }

    #[test]
    fn a_series_without_peers_is_named_by_its_preferred_or_its_own_labels_and_never_by_flags() {
        // ceph's exporter: one OSD on this instance.
        let osd = [labels(&[
            ("__name__", "ceph_osd_stat_bytes"),
            ("ceph_daemon", "osd.4"),
            ("instance", "ceph-mgr:9283"),
        ])];
        assert_eq!(member(&osd, 0), named("osd.4", None));
        // node_exporter's mdadm: one array, named by its device.
        let md = [labels(&[
            ("__name__", "node_md_disks"),
            ("device", "md0"),
            ("instance", "nas:9100"),
            ("state", "active"),
        ])];
        assert_eq!(member(&md, 0), named("md0", None));
        // Nothing but context and flags: the cluster it belongs to, else nothing.
        let health = [labels(&[
            ("__name__", "elasticsearch_cluster_health_number_of_nodes"),
            ("cluster", "logsearch"),
            ("instance", "es-exporter:9114"),
        ])];
        assert_eq!(member(&health, 0), named("logsearch", None));
        let bare = [labels(&[("instance", "h:9100"), ("enabled", "true")])];
        assert_eq!(member(&bare, 0), None);
    }

    #[test]
    fn members_on_one_host_each_are_named_by_their_own_label_not_their_instance() {
        let n = |instance: &str, device: &str| {
            labels(&[("instance", instance), ("device", device), ("job", "node")])
        };
        let all = [n("a:9100", "md0"), n("b:9100", "md1")];
        assert_eq!(member(&all, 1), named("md1", None));
    }
}
