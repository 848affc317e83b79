//! The series that stand out from their peers: among series of one metric that differ in
//! one label only (the disks of a SMART attribute, the memory controllers' rows, the
//! interfaces of an error counter, the vdevs of a pool), the one that is above zero and
//! rose while every peer stayed at zero — a disk reallocating sectors, a DIMM counting
//! corrected errors, a port dropping frames. Whatever the metric and the label are
//! called: a steady climb that no step shows still stands out against peers at zero.

use std::collections::{BTreeMap, HashMap};

use chrono::{DateTime, Utc};

use super::Points;
use super::describe::{Motion, motion, series_entity, series_expr, series_name};
use crate::analyze::prom::identity;
use crate::analyze::{Fact, FactClass, Quantity, Severity, Source};
use crate::integrations::prometheus::Labels;

/// Least peers (series differing in the one label) for a series to stand out from them.
const MIN_PEERS: usize = 2;
/// Base units of Prometheus' naming conventions: a quantity in a unit (bytes read, seconds
/// of CPU, degrees) is nonzero for whatever does the work; a count without a unit
/// (errors, sectors, kills, drops) is the kind that is zero while all is well.
const UNITS: [&str; 10] = [
    "_bytes", "_seconds", "_ratio", "_percent", "_celsius", "_volts", "_watts", "_hertz",
    "_joules", "_amperes",
];
/// Most a standing-out series may rise a second over the window: faults come a few an
/// hour (sectors, corrected errors, drops); what counts many a second while its peers
/// count none is work (a busy thread's page faults beside idle threads'), not a fault.
const MAX_PACE: f64 = 0.1;
/// Families that break one process's activity down by thread (process-exporter's
/// `-threads`): a thread counting while its siblings idle is that process at work.
const BREAKDOWNS: [&str; 1] = ["namedprocess_namegroup_thread_"];
/// Least growth over the window, as a share of the level before it: a count that grew by
/// less is a lifetime's tally going on as always (a thread's page faults), not news.
const MIN_GROWTH: f64 = 0.03;
/// Peers named in the fact.
const MAX_NAMED_PEERS: usize = 6;

/// One series that stands out, by the label its peers differ in.
pub struct Outlier<'a> {
    pub points: &'a Points,
    /// The label the peers differ in (`device`) and their values of it (`sda`, `sdb`).
    label: String,
    peers: Vec<String>,
}

/// Whether metric `name` is a quantity in a base unit ([`UNITS`]).
fn has_unit(name: &str) -> bool {
    let base = name.strip_suffix("_total").unwrap_or(name);
    UNITS.iter().any(|u| base.ends_with(u))
}

/// Peers: the metric, the one label they differ in, and every other identity label.
pub(super) type Group = (String, String, BTreeMap<String, String>);

/// The peer groups of `series`: for each series, one group per identity label but `job`
/// (its peers differ in that label only), without per-thread breakdowns.
pub(super) fn peer_groups(series: &HashMap<Labels, Points>) -> HashMap<Group, Vec<&Points>> {
    let mut groups: HashMap<Group, Vec<&Points>> = HashMap::new();
    for p in series.values() {
        let name = p.labels.get("__name__").cloned().unwrap_or_default();
        // A quantile is no count, and quantiles do not add up.
        if p.quantile || BREAKDOWNS.iter().any(|b| name.starts_with(b)) {
            continue;
        }
        let own = identity(&p.labels);
        for k in own.keys().filter(|k| k.as_str() != "job") {
            let mut rest: BTreeMap<String, String> = own.clone().into_iter().collect();
            rest.remove(k);
            groups
                .entry((name.clone(), k.clone(), rest))
                .or_default()
                .push(p);
        }
    }
    groups
}

/// The series of `series` that rose above peers that all stayed at zero, by how far they
/// rose (most first).
pub fn find<'a>(series: &'a HashMap<Labels, Points>, t: &[DateTime<Utc>; 4]) -> Vec<Outlier<'a>> {
    let groups = peer_groups(series);
    let zero = |p: &Points| p.v.iter().all(|x| *x == 0.0);
    // Groups where nearly every member stayed at zero, with their members that did not.
    let mut mostly_zero: HashMap<&Group, Vec<&Points>> = HashMap::new();
    for (key, members) in &groups {
        let loud: Vec<&Points> = members.iter().copied().filter(|p| !zero(p)).collect();
        // One alone above its peers; two or three of many still stand out.
        if members.len() > MIN_PEERS && !loud.is_empty() && loud.len() * 3 <= members.len() {
            mostly_zero.insert(key, loud);
        }
    }
    // Members alone at work in a quantity with a unit (the one busy thread's CPU seconds
    // among idle threads): their counts beside idle peers are work, not faults.
    let instance = |p: &Points| p.labels.get("instance").cloned().unwrap_or_default();
    let working: std::collections::HashSet<(String, String, String)> = mostly_zero
        .iter()
        .filter(|((name, _, _), _)| has_unit(name))
        .flat_map(|((_, label, _), loud)| {
            loud.iter()
                .filter_map(|p| Some((label.clone(), p.labels.get(label)?.clone(), instance(p))))
        })
        .collect();
    let mut found: Vec<(f64, usize, Outlier<'_>)> = Vec::new();
    for (key, loud) in &mostly_zero {
        let (name, label, _) = key;
        if has_unit(name) {
            continue;
        }
        for p in loud {
            let member = p.labels.get(label).cloned().unwrap_or_default();
            if working.contains(&(label.clone(), member, instance(p))) {
                continue;
            }
            let v = &p.v;
            let pace = (v[3] - v[0]) / (t[3] - t[0]).num_seconds().max(1) as f64;
            let rose = v.iter().all(|x| x.is_finite()) && v[3] > 0.0 && v[3] > v[0];
            let rare = pace <= MAX_PACE;
            let news = v[3] - v[0] >= MIN_GROWTH * v[0];
            if !rose || !rare || !news {
                continue;
            }
            let mut peers: Vec<String> = groups[*key]
                .iter()
                .filter(|q| zero(q))
                .filter_map(|q| q.labels.get(label).cloned())
                .collect();
            peers.sort();
            found.push((
                v[3] - v[0],
                peers.len(),
                Outlier {
                    points: p,
                    label: label.clone(),
                    peers,
                },
            ));
        }
    }
    // Most risen first; a series found by two labels (its device and the hosts) once, by
    // the label with more peers.
    found.sort_by(|a, b| b.0.total_cmp(&a.0).then(b.1.cmp(&a.1)));
    let mut seen = std::collections::HashSet::new();
    found
        .into_iter()
        .map(|(_, _, o)| o)
        .filter(|o| seen.insert(o.points.labels.clone()))
        .collect()
}

/// "stands out: smartctl_device_attribute{attribute_name=Reallocated_Sector_Ct,device=sdc}
/// 312, up from 8 at 05:10; its peers by device (sda, sdb, sdd) stayed at 0".
pub fn fact(analyzer: &'static str, o: &Outlier<'_>, t: &[DateTime<Utc>; 4]) -> Fact {
    let p = o.points;
    let name = p.labels.get("__name__").cloned().unwrap_or_default();
    let at = |i: usize| Quantity::of_metric(&name, p.v[i]);
    let mut peers: Vec<&str> = o
        .peers
        .iter()
        .take(MAX_NAMED_PEERS)
        .map(String::as_str)
        .collect();
    if o.peers.len() > MAX_NAMED_PEERS {
        peers.push("…");
    }
    let own = identity(&p.labels);
    let by = own.get(&o.label).map_or("", String::as_str);
    // The level is the figure (312 sectors, 1899 errors); the pace says it goes on.
    let (value, moved) = match motion(p, t) {
        Motion::Counter { before, since } => (
            at(3),
            format!(
                "{} now, counting {} since {} ({} before)",
                at(3),
                Quantity::rate_of_counter(&name, since),
                t[2].format("%H:%M UTC"),
                Quantity::rate_of_counter(&name, before)
            ),
        ),
        _ => (
            at(3),
            format!(
                "up from {} at {}, {} at {} UTC",
                at(0),
                t[0].format("%H:%M"),
                at(2),
                t[2].format("%H:%M")
            ),
        ),
    };
    Fact::new(
        FactClass::Change,
        analyzer,
        series_entity(p),
        format!("stands out: {} ({} {by})", series_name(p), o.label),
        Severity::Warning,
        Source::promql(&series_expr(&p.labels)),
    )
    .value(value)
    .detail(format!(
        "{moved}; the {} other {}s ({}) stayed at 0",
        o.peers.len(),
        o.label,
        peers.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::super::points;
    use super::*;

    fn attr(device: &str, attribute: &str, v: [f64; 4]) -> (Labels, Points) {
        points(
            &[
                ("__name__", "smartctl_device_attribute"),
                ("instance", "tower:9633"),
                ("device", device),
                ("attribute_name", attribute),
            ],
            v,
        )
    }

    #[test]
    fn a_disk_climbing_while_its_peers_stay_at_zero_stands_out_and_an_old_count_does_not() {
        let series: HashMap<Labels, Points> = [
            attr("sda", "Reallocated_Sector_Ct", [0.0; 4]),
            attr("sdb", "Reallocated_Sector_Ct", [0.0; 4]),
            attr("sdc", "Reallocated_Sector_Ct", [8.0, 90.0, 200.0, 312.0]),
            attr("sdd", "Reallocated_Sector_Ct", [0.0; 4]),
            // Old news: a count that has not moved.
            attr("sda", "Current_Pending_Sector", [0.0; 4]),
            attr("sdb", "Current_Pending_Sector", [3.0; 4]),
            attr("sdc", "Current_Pending_Sector", [0.0; 4]),
            attr("sdd", "Current_Pending_Sector", [0.0; 4]),
            // Peers that differ anyway (hours powered on) are no reference, and a lifetime's
            // tally growing by an hour an hour is no news.
            attr("sda", "Power_On_Hours", [1200.0, 1201.0, 1202.0, 1203.0]),
            attr("sdb", "Power_On_Hours", [9000.0, 9001.0, 9002.0, 9003.0]),
            attr("sdc", "Power_On_Hours", [400.0, 401.0, 402.0, 403.0]),
            attr("sdd", "Power_On_Hours", [700.0, 701.0, 702.0, 703.0]),
        ]
        .into_iter()
        .collect();
        let now = DateTime::from_timestamp(1_800_000_000, 0).unwrap();
        let t = [
            now - chrono::TimeDelta::hours(3),
            now - chrono::TimeDelta::hours(2),
            now - chrono::TimeDelta::hours(1),
            now,
        ];
        let found = find(&series, &t);
        assert_eq!(found.len(), 1);
        let o = &found[0];
        assert_eq!(o.points.labels["device"], "sdc");
        assert_eq!(o.label, "device");
        assert_eq!(o.peers, ["sda", "sdb", "sdd"]);
        let f = fact("steps", o, &t);
        assert!(f.what.contains("device=sdc"), "{}", f.what);
        assert!(f.what.contains("Reallocated_Sector_Ct"), "{}", f.what);
        assert_eq!(f.value.map(|q| q.value), Some(312.0));
        assert!(f.detail.unwrap().contains("(sda, sdb, sdd) stayed at 0"));
    }

    #[test]
    fn with_one_peer_or_half_the_group_counting_nothing_stands_out() {
        let two: HashMap<Labels, Points> = [
            attr("sda", "Reallocated_Sector_Ct", [0.0; 4]),
            attr("sdb", "Reallocated_Sector_Ct", [1.0, 2.0, 3.0, 4.0]),
        ]
        .into_iter()
        .collect();
        let now = DateTime::from_timestamp(1_800_000_000, 0).unwrap();
        let t = [
            now - chrono::TimeDelta::hours(3),
            now - chrono::TimeDelta::hours(2),
            now - chrono::TimeDelta::hours(1),
            now,
        ];
        assert!(find(&two, &t).is_empty());
        let half: HashMap<Labels, Points> = [
            attr("sda", "Reallocated_Sector_Ct", [0.0; 4]),
            attr("sdb", "Reallocated_Sector_Ct", [1.0, 2.0, 3.0, 4.0]),
            attr("sdc", "Reallocated_Sector_Ct", [0.0; 4]),
            attr("sdd", "Reallocated_Sector_Ct", [1.0, 2.0, 3.0, 4.0]),
        ]
        .into_iter()
        .collect();
        assert!(find(&half, &t).is_empty());
    }
}
