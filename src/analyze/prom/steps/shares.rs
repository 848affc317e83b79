//! The member that accounts for its group's rise: among gauges of one metric that differ
//! in one label only (connections by user or by client host, processes by group, a queue's
//! depth by consumer, sessions by backend), the one whose rise since the hour before the
//! window is most of the group's — the client that took the connections, the tenant that
//! filled the queue. Whatever the metric and the label are called; the group's total must
//! have grown by half and the member at least doubled, so the ordinary drift of a busy
//! member is not news.

use std::collections::HashMap;

use chrono::{DateTime, Utc};

use super::Points;
use super::describe::{series_entity, series_expr, series_name};
use super::outliers::peer_groups;
use crate::analyze::prom::identity;
use crate::analyze::prom::kinds::Kind;
use crate::analyze::{Fact, FactClass, Quantity, Severity, Source};
use crate::integrations::prometheus::Labels;

/// Least members for one to account for the group's rise.
const MIN_MEMBERS: usize = 3;
/// Least growth of the group's total, as a share of its total before.
const MIN_GROUP_GROWTH: f64 = 0.5;
/// Least share of the group's rise the member's own rise must be.
const MIN_SHARE: f64 = 0.7;
/// Other members named in the fact, largest first.
const MAX_NAMED: usize = 5;

/// One member whose rise is most of its group's.
pub struct Riser<'a> {
    pub points: &'a Points,
    /// The label the members differ in (`mysql_user`).
    label: String,
    /// The group's total at the earlier read and now.
    total: (f64, f64),
    /// The other members and their values now, largest first.
    others: Vec<(String, f64)>,
}

/// A member's value at read `i`; a member not there yet (a new client) held none.
fn at(p: &Points, i: usize) -> f64 {
    if p.v[i].is_finite() { p.v[i] } else { 0.0 }
}

/// The members of `series` whose rise is most of their group's, largest rise first.
pub fn find(series: &HashMap<Labels, Points>) -> Vec<Riser<'_>> {
    let mut found: Vec<(f64, Riser<'_>)> = Vec::new();
    for ((name, label, _), members) in peer_groups(series) {
        // A counter's total rises as it works: its rate, not its total, would say who. A
        // gauge named `…_total` (as its scrape declared) is a quantity like any other.
        let counter = match members.first().map(|p| p.kind) {
            Some(Kind::Gauge) => false,
            Some(Kind::Counter) => true,
            _ => ["_total", "_count", "_sum", "_bucket"]
                .iter()
                .any(|x| name.ends_with(x)),
        };
        if members.len() < MIN_MEMBERS || counter {
            continue;
        }
        // From the hour before the window (the earlier read) to now.
        let (before, now): (f64, f64) = members
            .iter()
            .fold((0.0, 0.0), |(b, n), p| (b + at(p, 1), n + at(p, 3)));
        let rise = now - before;
        if !(rise > 0.0 && rise >= MIN_GROUP_GROWTH * before) {
            continue;
        }
        let Some(top) = members
            .iter()
            .copied()
            .filter(|p| p.v[3].is_finite())
            .max_by(|a, b| (at(a, 3) - at(a, 1)).total_cmp(&(at(b, 3) - at(b, 1))))
        else {
            continue;
        };
        // The others were there before (a store that holds less than the earlier read
        // would make every member new).
        let others_read = members
            .iter()
            .filter(|p| p.labels != top.labels)
            .all(|p| p.v[1].is_finite() && p.v[3].is_finite());
        if !others_read {
            continue;
        }
        let own = at(top, 3) - at(top, 1);
        // A flag that went from 0 to 1 is a state, told by the step; a share is of counts.
        if own < MIN_SHARE * rise || at(top, 3) < 2.0 * at(top, 1) || own <= 1.0 {
            continue;
        }
        let mut others: Vec<(String, f64)> = members
            .iter()
            .filter(|p| p.labels != top.labels)
            .filter_map(|p| Some((p.labels.get(&label)?.clone(), at(p, 3))))
            .collect();
        others.sort_by(|a, b| b.1.total_cmp(&a.1));
        found.push((
            own,
            Riser {
                points: top,
                label,
                total: (before, now),
                others,
            },
        ));
    }
    found.sort_by(|a, b| b.0.total_cmp(&a.0));
    // A member found by two labels (its user and the instance) once.
    let mut seen = std::collections::HashSet::new();
    found
        .into_iter()
        .map(|(_, r)| r)
        .filter(|r| seen.insert(r.points.labels.clone()))
        .collect()
}

/// "most of the rise: mysql_info_schema_processes_by_user{mysql_user=bookstack} (mysql_user
/// bookstack)", with the member's and the group's levels before and now.
pub fn fact(analyzer: &'static str, r: &Riser<'_>, t: &[DateTime<Utc>; 4]) -> Fact {
    let p = r.points;
    let name = p.labels.get("__name__").cloned().unwrap_or_default();
    let q = |v: f64| Quantity::of_metric(&name, v);
    let own = identity(&p.labels);
    let member = own.get(&r.label).map_or("", String::as_str);
    let (own_rise, rise) = (at(p, 3) - at(p, 1), r.total.1 - r.total.0);
    let mut others: Vec<String> = r
        .others
        .iter()
        .take(MAX_NAMED)
        .map(|(m, v)| format!("{m} {}", q(*v)))
        .collect();
    if r.others.len() > MAX_NAMED {
        others.push("…".into());
    }
    Fact::new(
        FactClass::Change,
        analyzer,
        series_entity(p),
        format!(
            "most of the rise: {} ({} {member})",
            series_name(p),
            r.label
        ),
        Severity::Warning,
        Source::promql(&series_expr(&p.labels)),
    )
    .value(q(at(p, 3)))
    .detail(format!(
        "{} at {} UTC, {} now: {:.0} % of the rise of all {} {}s together ({} → {}); the others now: {}",
        q(at(p, 1)),
        t[1].format("%H:%M"),
        q(at(p, 3)),
        100.0 * own_rise / rise,
        r.others.len() + 1,
        r.label,
        q(r.total.0),
        q(r.total.1),
        others.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::super::points;
    use super::*;

    fn member(name: &str, label: &str, value: &str, v: [f64; 4]) -> (Labels, Points) {
        let pairs = [
            ("__name__", name),
            ("instance", "db-7:9104"),
            ("job", "mysql"),
            (label, value),
        ];
        points(&pairs, v)
    }

    fn times() -> [DateTime<Utc>; 4] {
        let now = DateTime::from_timestamp(1_800_000_000, 0).unwrap();
        [3, 2, 1, 0].map(|h| now - chrono::TimeDelta::hours(h))
    }

    #[test]
    fn the_client_whose_connections_are_most_of_the_rise_is_named_with_its_share() {
        let m = "db_sessions_by_client";
        let series: HashMap<Labels, Points> = [
            member(m, "client", "wiki", [4.0, 4.0, 121.0, 121.0]),
            member(m, "client", "tasks", [14.0, 14.0, 15.0, 14.0]),
            member(m, "client", "ci", [9.0, 9.0, 9.0, 10.0]),
            member(m, "client", "grafana", [2.0, 2.0, 2.0, 2.0]),
        ]
        .into_iter()
        .collect();
        let found = find(&series);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].points.labels["client"], "wiki");
        let f = fact("steps", &found[0], &times());
        assert!(f.what.contains("client wiki"), "{}", f.what);
        assert_eq!(f.value.map(|q| q.value), Some(121.0));
        let detail = f.detail.unwrap();
        assert!(detail.contains("4 at "), "{detail}");
        assert!(
            detail.contains("99 % of the rise of all 4 clients"),
            "{detail}"
        );
        assert!(detail.contains("tasks 14, ci 10, grafana 2"), "{detail}");
    }

    #[test]
    fn a_rise_shared_by_many_a_small_one_or_a_counters_names_no_member() {
        let m = "db_sessions_by_client";
        // Every member grew alike: the load grew, no one member did.
        let shared: HashMap<Labels, Points> = ["a", "b", "c", "d"]
            .map(|c| member(m, "client", c, [10.0, 10.0, 30.0, 30.0]))
            .into_iter()
            .collect();
        assert!(find(&shared).is_empty());
        // One member doubled but the total barely moved.
        let small: HashMap<Labels, Points> = [
            member(m, "client", "a", [2.0, 2.0, 4.0, 4.0]),
            member(m, "client", "b", [100.0, 100.0, 100.0, 100.0]),
            member(m, "client", "c", [90.0, 90.0, 90.0, 90.0]),
        ]
        .into_iter()
        .collect();
        assert!(find(&small).is_empty());
        // A condition flag of one node among four turning on is a state, not a share.
        let flags: HashMap<Labels, Points> = [
            member("node_ready_unknown", "node", "a", [0.0, 0.0, 1.0, 1.0]),
            member("node_ready_unknown", "node", "b", [0.0; 4]),
            member("node_ready_unknown", "node", "c", [0.0; 4]),
        ]
        .into_iter()
        .collect();
        assert!(find(&flags).is_empty());
        // Counters rise as they work; their rates, not their totals, would say who.
        let counters: HashMap<Labels, Points> = [
            member("db_queries_total", "client", "a", [1.0, 1.0, 900.0, 900.0]),
            member("db_queries_total", "client", "b", [1.0, 1.0, 1.0, 1.0]),
            member("db_queries_total", "client", "c", [1.0, 1.0, 1.0, 1.0]),
        ]
        .into_iter()
        .collect();
        assert!(find(&counters).is_empty());
    }

    #[test]
    fn members_not_read_before_the_window_are_no_rise() {
        // A store that holds less than the earlier read: every member is "new".
        let m = "db_sessions_by_client";
        let series: HashMap<Labels, Points> = [
            member(m, "client", "a", [f64::NAN, f64::NAN, 200.0, 200.0]),
            member(m, "client", "b", [f64::NAN, f64::NAN, 10.0, 10.0]),
            member(m, "client", "c", [f64::NAN, f64::NAN, 9.0, 9.0]),
        ]
        .into_iter()
        .collect();
        assert!(find(&series).is_empty());
    }

    #[test]
    fn a_new_member_that_holds_most_of_the_group_is_named() {
        let m = "queue_messages_ready";
        let series: HashMap<Labels, Points> = [
            member(m, "queue", "mail", [3.0, 3.0, 3.0, 3.0]),
            member(m, "queue", "thumbs", [0.0, 1.0, 0.0, 1.0]),
            member(m, "queue", "import", [f64::NAN, f64::NAN, 800.0, 5000.0]),
        ]
        .into_iter()
        .collect();
        let found = find(&series);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].points.labels["queue"], "import");
    }
}
