//! The naming conventions that pair a gauge with its limit, over the metric names
//! Prometheus holds: a name is split into words (its unit, `_bytes` or `_bits`, set
//! apart), and a limit word (`limit`, `max`, `maximum`, `capacity`, `size`, `hard`) dropped
//! from a name gives the key of the gauge it limits: the plain name with that key, or one
//! with a used word (`used`, `current`, `allocated`, `open`, …) dropped, or else one with a
//! free word (`free`, `avail`, `available`). kube-state-metrics' `spec`/`status` words are
//! left out of keys (a desired maximum against an observed current). A gauge named
//! `…_total` (as `kinds.rs` tells) is read without its `total`: with a used or free word it
//! is that part (`…_addresses_assigned_total`), without one it is the whole, a limit
//! (`…_addresses_total`, the pool's size). Counters, histograms, names with other units,
//! caches (full by design) and the names the dedicated analyzers read are not paired.

use std::collections::{BTreeMap, BTreeSet, HashMap};

/// Words that name a limit (`_limit`, `_max`, `_maximum`, `_capacity`, `_size`, `_hard`).
const LIMIT_WORDS: [&str; 6] = ["limit", "max", "maximum", "capacity", "size", "hard"];
/// Words that name the used part (`_used`, `_current`, `_open`, `_assigned`, …).
const USED_WORDS: [&str; 9] = [
    "used",
    "usage",
    "current",
    "allocated",
    "assigned",
    "open",
    "active",
    "length",
    "inuse",
];
/// Words that name the free part.
const FREE_WORDS: [&str; 3] = ["free", "avail", "available"];
/// kube-state-metrics' words for the desired (spec) and observed (status) sides of one
/// quantity (`kube_horizontalpodautoscaler_spec_max_replicas` against `…_status_current_replicas`).
const SIDE_WORDS: [&str; 2] = ["spec", "status"];
/// Units a share of a limit means something for (others end a name and stop the pairing).
const SHARE_UNITS: [&str; 2] = ["bytes", "bits"];
/// Units after which a name is not a share of a limit.
const OTHER_UNITS: [&str; 13] = [
    "seconds",
    "celsius",
    "hertz",
    "rpm",
    "volts",
    "amperes",
    "watts",
    "joules",
    "ratio",
    "percent",
    "meters",
    "grams",
    "timestamp",
];
/// Endings of counters, histograms and info series: not gauges of a quantity.
const NOT_GAUGES: [&str; 6] = ["total", "sum", "count", "bucket", "created", "info"];
/// Words of things full by design (a cache, ZFS's adaptive replacement cache).
const FULL_BY_DESIGN: [&str; 2] = ["cache", "arc"];
/// Name prefixes the dedicated analyzers read (filesystem.rs, memory.rs,
/// container_memory.rs).
const COVERED: [&str; 5] = [
    "node_filesystem_",
    "node_memory_",
    "windows_logical_disk_",
    "container_memory_",
    "container_spec_memory_",
];

/// A gauge and its limit, as named in the data.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Pair {
    /// The used part, or (`free`) the part left.
    pub gauge: String,
    pub limit: String,
    pub free: bool,
    /// `bytes`, `bits`, or empty for a count.
    pub unit: &'static str,
}

/// A name split for pairing: its words without the unit (and without the `total` of a
/// gauge so named), the unit, and whether it was such a gauge.
fn split<'a>(
    name: &'a str,
    gauge_total: &dyn Fn(&str) -> bool,
) -> Option<(Vec<&'a str>, &'static str, bool)> {
    if COVERED.iter().any(|p| name.starts_with(p)) {
        return None;
    }
    let mut words: Vec<&str> = name.split('_').filter(|w| !w.is_empty()).collect();
    let total = words.last() == Some(&"total") && gauge_total(name);
    if total {
        words.pop();
    }
    let last = *words.last()?;
    if NOT_GAUGES.contains(&last) || OTHER_UNITS.contains(&last) {
        return None;
    }
    if words
        .iter()
        .any(|w| FULL_BY_DESIGN.contains(&w.to_ascii_lowercase().as_str()))
    {
        return None;
    }
    let unit = match SHARE_UNITS.iter().find(|u| **u == last) {
        Some(u) => {
            words.pop();
            *u
        }
        None => "",
    };
    words.retain(|w| !SIDE_WORDS.contains(w));
    (words.len() >= 2).then_some((words, unit, total))
}

/// The keys a name answers to when one word of `marks` is dropped from it.
fn marked(words: &[&str], unit: &str, marks: &[&str]) -> Vec<String> {
    (1..words.len())
        .filter(|i| marks.contains(&words[*i]))
        .map(|i| {
            let mut w = words.to_vec();
            w.remove(i);
            key(&w, unit)
        })
        .collect()
}

fn key(words: &[&str], unit: &str) -> String {
    format!("{}/{unit}", words.join("_"))
}

/// The gauge/limit pairs among `names`, by the naming conventions: for each limit, the
/// used gauge it names (a marked one before the plain name), else its free gauge. A plain
/// name is a limit too when nothing else is and a marked used or free gauge shares it
/// (`kubelet_volume_stats_inodes` against `…_inodes_used`). `gauge_total` says which
/// `…_total` names may be gauges (the others are counters and not paired).
pub fn pairs(names: &[String], gauge_total: &dyn Fn(&str) -> bool) -> Vec<Pair> {
    let mut limits: BTreeMap<String, Vec<&str>> = BTreeMap::new();
    let mut used: BTreeMap<String, Vec<(u8, &str)>> = BTreeMap::new();
    let mut free: BTreeMap<String, Vec<&str>> = BTreeMap::new();
    let mut plain: BTreeMap<String, &str> = BTreeMap::new();
    let mut units: HashMap<String, &'static str> = HashMap::new();
    for n in names {
        let Some((words, unit, total)) = split(n, gauge_total) else {
            continue;
        };
        let own = key(&words, unit);
        // A `…_total` gauge without a used, free or limit word is a whole: the limit of
        // the parts named from it.
        let whole = total
            && !words[1..].iter().any(|w| {
                USED_WORDS.contains(w) || FREE_WORDS.contains(w) || LIMIT_WORDS.contains(w)
            });
        if whole {
            units.insert(own.clone(), unit);
            limits.entry(own.clone()).or_default().push(n);
        }
        units.insert(own.clone(), unit);
        plain.insert(own.clone(), n);
        used.entry(own).or_default().push((1, n));
        for k in marked(&words, unit, &LIMIT_WORDS) {
            units.insert(k.clone(), unit);
            limits.entry(k).or_default().push(n);
        }
        for k in marked(&words, unit, &USED_WORDS) {
            units.insert(k.clone(), unit);
            used.entry(k).or_default().push((0, n));
        }
        for k in marked(&words, unit, &FREE_WORDS) {
            units.insert(k.clone(), unit);
            free.entry(k).or_default().push(n);
        }
    }
    // A plain name as the limit of its marked gauges, when no name says "limit".
    for (k, name) in &plain {
        let has_marked =
            used.get(k).is_some_and(|u| u.iter().any(|(r, _)| *r == 0)) || free.contains_key(k);
        if has_marked && !limits.contains_key(k) {
            limits.insert(k.clone(), vec![name]);
        }
    }
    let mut out = BTreeSet::new();
    for (k, ls) in &limits {
        let unit = units.get(k).copied().unwrap_or("");
        for limit in ls {
            let mut gauges: Vec<(u8, &str)> = used
                .get(k)
                .map(|u| u.iter().filter(|(_, n)| n != limit).copied().collect())
                .unwrap_or_default();
            gauges.sort();
            let pair = match gauges.first() {
                Some((_, g)) => Pair {
                    gauge: g.to_string(),
                    limit: limit.to_string(),
                    free: false,
                    unit,
                },
                None => match free.get(k).and_then(|f| f.iter().find(|n| *n != limit)) {
                    Some(f) => Pair {
                        gauge: f.to_string(),
                        limit: limit.to_string(),
                        free: true,
                        unit,
                    },
                    None => continue,
                },
            };
            out.insert(pair);
        }
    }
    out.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    fn pair(gauge: &str, limit: &str, free: bool, unit: &'static str) -> Pair {
        Pair {
            gauge: gauge.into(),
            limit: limit.into(),
            free,
            unit,
        }
    }

    /// No `…_total` name is a gauge.
    fn counters(_: &str) -> bool {
        false
    }

    #[test]
    fn the_exporters_conventions_pair_a_gauge_with_its_limit() {
        let found = pairs(
            &names(&[
                "node_nf_conntrack_entries",
                "node_nf_conntrack_entries_limit",
                "node_filefd_allocated",
                "node_filefd_maximum",
                "process_open_fds",
                "process_max_fds",
                "process_virtual_memory_bytes",
                "process_virtual_memory_max_bytes",
                "kubelet_volume_stats_used_bytes",
                "kubelet_volume_stats_available_bytes",
                "kubelet_volume_stats_capacity_bytes",
                "kubelet_volume_stats_inodes",
                "kubelet_volume_stats_inodes_free",
                "kubelet_volume_stats_inodes_used",
                "node_systemd_unit_tasks_current",
                "node_systemd_unit_tasks_max",
                "node_processes_threads",
                "node_processes_max_threads",
                "kube_horizontalpodautoscaler_spec_max_replicas",
                "kube_horizontalpodautoscaler_status_current_replicas",
                "prometheus_notifications_queue_length",
                "prometheus_notifications_queue_capacity",
            ]),
            &counters,
        );
        for want in [
            pair(
                "node_nf_conntrack_entries",
                "node_nf_conntrack_entries_limit",
                false,
                "",
            ),
            pair("node_filefd_allocated", "node_filefd_maximum", false, ""),
            pair("process_open_fds", "process_max_fds", false, ""),
            pair(
                "process_virtual_memory_bytes",
                "process_virtual_memory_max_bytes",
                false,
                "bytes",
            ),
            pair(
                "kubelet_volume_stats_used_bytes",
                "kubelet_volume_stats_capacity_bytes",
                false,
                "bytes",
            ),
            pair(
                "kubelet_volume_stats_inodes_used",
                "kubelet_volume_stats_inodes",
                false,
                "",
            ),
            pair(
                "node_systemd_unit_tasks_current",
                "node_systemd_unit_tasks_max",
                false,
                "",
            ),
            pair(
                "node_processes_threads",
                "node_processes_max_threads",
                false,
                "",
            ),
            pair(
                "kube_horizontalpodautoscaler_status_current_replicas",
                "kube_horizontalpodautoscaler_spec_max_replicas",
                false,
                "",
            ),
            pair(
                "prometheus_notifications_queue_length",
                "prometheus_notifications_queue_capacity",
                false,
                "",
            ),
        ] {
            assert!(found.contains(&want), "{want:?} not in {found:#?}");
        }
        assert_eq!(found.len(), 10, "{found:#?}");
    }

    #[test]
    fn a_free_gauge_pairs_when_no_used_one_exists_and_covered_or_unitful_names_do_not() {
        let found = pairs(
            &names(&[
                "zfs_pool_free_bytes",
                "zfs_pool_size_bytes",
                "node_filesystem_avail_bytes",
                "node_filesystem_size_bytes",
                "node_memory_MemAvailable_bytes",
                "node_hwmon_temp_celsius",
                "node_hwmon_temp_max_celsius",
                "node_cpu_scaling_frequency_hertz",
                "node_cpu_scaling_frequency_max_hertz",
                "node_zfs_arc_c",
                "node_zfs_arc_c_max",
                "http_request_size_bytes_sum",
                "http_request_size_bytes_count",
                "foo_limit",
                "limit",
            ]),
            &counters,
        );
        assert_eq!(
            found,
            vec![pair(
                "zfs_pool_free_bytes",
                "zfs_pool_size_bytes",
                true,
                "bytes"
            )]
        );
    }

    #[test]
    fn a_gauge_named_total_is_the_whole_its_parts_are_read_against_and_a_counter_is_not() {
        // kea-exporter's subnet gauges and packet counts, and a client library's requests.
        let all = names(&[
            "kea_dhcp4_addresses_assigned_total",
            "kea_dhcp4_addresses_declined_total",
            "kea_dhcp4_addresses_total",
            "kea_dhcp4_packets_received_total",
            "kea_dhcp6_na_assigned_total",
            "kea_dhcp6_na_total",
            "http_requests_active",
            "http_requests_total",
        ]);
        let gauges = |n: &str| n.starts_with("kea_");
        assert_eq!(
            pairs(&all, &gauges),
            vec![
                pair(
                    "kea_dhcp4_addresses_assigned_total",
                    "kea_dhcp4_addresses_total",
                    false,
                    ""
                ),
                pair(
                    "kea_dhcp6_na_assigned_total",
                    "kea_dhcp6_na_total",
                    false,
                    ""
                ),
            ]
        );
        // Read as counters, nothing pairs.
        assert!(pairs(&all, &counters).is_empty());
    }

    #[test]
    fn captured_exporters_pair_no_name_their_exposition_declares_a_counter() {
        use crate::analyze::prom::kinds::{Kind, declared};
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/exporters");
        let (mut names, mut types) = (BTreeSet::new(), HashMap::new());
        for file in [
            "node_exporter.prom",
            "node_exporter_systemd.prom",
            "process_exporter.prom",
            "prometheus_self.prom",
            "alertmanager_self.prom",
            "blackbox_exporter_self.prom",
            "kubelet_volume_stats.prom",
        ] {
            let text = std::fs::read_to_string(dir.join(file)).unwrap();
            for line in text.lines() {
                match line.strip_prefix("# TYPE ") {
                    Some(t) => {
                        let mut w = t.split_whitespace();
                        if let (Some(n), Some(k)) = (w.next(), w.next()) {
                            types.insert(n.to_string(), k.to_string());
                        }
                    }
                    None if !line.starts_with('#') => {
                        let end = line.find(['{', ' ']).unwrap_or(line.len());
                        names.insert(line[..end].to_string());
                    }
                    None => {}
                }
            }
        }
        let names: Vec<String> = names.into_iter().collect();
        let found = pairs(&names, &|n| declared(&types, n) != Kind::Counter);
        for p in &found {
            for side in [&p.gauge, &p.limit] {
                assert_ne!(declared(&types, side), Kind::Counter, "{p:?}");
            }
        }
        // The declared gauge named `…_total` (systemd's refused connections) is there but
        // has no part to pair with, so the pairs are those of the plain names.
        assert_eq!(found, pairs(&names, &counters));
        // Were every `…_total` a gauge, a counter would pair (Go's allocated bytes so far
        // against the bytes allocated now).
        let naive = pairs(&names, &|_| true);
        assert!(
            naive.contains(&pair(
                "go_memstats_alloc_bytes",
                "go_memstats_alloc_bytes_total",
                false,
                "bytes"
            )),
            "{naive:#?}"
        );
    }
}
