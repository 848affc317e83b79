//! `network_storm`: a broadcast or multicast storm on a shared layer-2 segment. A switch
//! or bridging loop (spanning tree off, a cable plugged back into its own switch) or a
//! device flooding the segment makes every host on it receive the same frames at once:
//! each host's received multicast frames (node_exporter
//! `node_network_receive_multicast_total`) jump by a large factor at about the same
//! moment. One host's surge is its own traffic (the per-host analyzers tell it); the same
//! jump on several hosts within [`ALIGN_SECS`] of each other is the network's.
//!
//! The interfaces receiving at least a storm's rate now are found first; when they are
//! on enough hosts, their instances' rates are read over the window, and an interface
//! whose rate now (the median of its last points, so one point read across a counter
//! reset is not a level) is many times the level it held before its rate last stood
//! below a third of now rose at that point. The hosts whose rises began together make one fact, their interface with the
//! largest rise each. Received packets (`node_network_receive_packets_total`) are read
//! the same way when no multicast counter shows it (a broadcast flood some drivers do not
//! count as multicast), from more hosts and a larger factor: many hosts receiving more at
//! once is rarer than one. Interrupts and context switches rising on the same hosts are
//! told as what the flood costs them.

use std::collections::{HashMap, HashSet};

use async_trait::async_trait;
use chrono::{DateTime, TimeDelta, Utc};

use super::history::time_of;
use super::{Prom, escape, host, label, labels_map};
use crate::analyze::{
    AnalyzeError, Analyzer, Entity, Fact, FactClass, Quantity, Scope, Severity, Source, Unit,
};
use crate::integrations::prometheus::{Labels, Series};

/// Points of the rate read over the window.
const POINTS: u32 = 120;
/// Points at the window's end whose median is the rate now.
const RECENT: usize = 3;
/// Points before a rise that make the level it rose from.
const MIN_BEFORE: usize = 3;
/// A rise began after the last point below this share of the rate now.
const BELOW_SHARE: f64 = 1.0 / 3.0;
/// Rates below this (per second) are read as this when dividing (a quiet segment's
/// multicast is a few frames a second, some hosts none).
const FLOOR: f64 = 1.0;
/// Rises that began within this many seconds of each other are one event.
const ALIGN_SECS: f64 = 600.0;
/// Interfaces receiving a storm's rate now whose instances' history is read, at most.
const MAX_READ: usize = 200;
/// Hosts named in a fact's entity (the rest counted).
const MAX_NAMED: usize = 6;
/// From this factor and rate (the hosts' median) a storm is critical.
const CRIT_FACTOR: f64 = 20.0;
const CRIT_RATE: f64 = 1000.0;
/// A consequence counter (interrupts, context switches) that rose by this factor on a
/// host of the storm is told with it.
const CONSEQUENCE_FACTOR: f64 = 2.0;

/// A counter of received frames and how much it must rise, on how many hosts at once.
pub(super) struct Signal {
    pub metric: &'static str,
    /// What it counts, in the fact ("multicast frames").
    pub word: &'static str,
    pub min_hosts: usize,
    pub min_factor: f64,
    /// Per second, now, and above the level before.
    pub min_rise: f64,
}

/// The signals read, in order: the first that shows a storm is told.
pub(super) const SIGNALS: [Signal; 2] = [
    Signal {
        metric: "node_network_receive_multicast_total",
        word: "multicast/broadcast frames received",
        min_hosts: 2,
        min_factor: 5.0,
        min_rise: 200.0,
    },
    Signal {
        metric: "node_network_receive_packets_total",
        word: "packets received",
        min_hosts: 3,
        min_factor: 10.0,
        min_rise: 5000.0,
    },
];

/// Host counters that a flood drives up with it.
const CONSEQUENCES: [(&str, &str); 2] = [
    ("node_intr_total", "interrupts"),
    ("node_context_switches_total", "context switches"),
];

pub struct NetworkStorm(pub Prom);

#[async_trait]
impl Analyzer for NetworkStorm {
    fn name(&self) -> &'static str {
        "network_storm"
    }

    async fn run(&self, scope: &Scope) -> Result<Vec<Fact>, AnalyzeError> {
        let names = self.0.metric_names(scope).await?;
        for signal in SIGNALS
            .iter()
            .filter(|s| names.iter().any(|n| n == s.metric))
        {
            // Only the hosts receiving that much now are read back, and only when they are
            // enough for a storm: a quiet fleet costs one instant query.
            let range = self.0.rate_range(signal.metric).await;
            let high = self
                .0
                .vector(&format!(
                    "rate({}[{range}]) >= {}",
                    signal.metric, signal.min_rise
                ))
                .await?;
            let hosts: HashSet<String> = high.iter().filter_map(|s| host(&s.metric)).collect();
            if hosts.len() < signal.min_hosts {
                continue;
            }
            let sel = instances_selector(high.iter().take(MAX_READ).map(|s| &s.metric));
            let series = self
                .0
                .range(
                    &format!("rate({}{sel}[{range}])", signal.metric),
                    scope,
                    POINTS,
                )
                .await?;
            let group = together(rises(&series, signal), signal.min_hosts);
            if group.is_empty() {
                continue;
            }
            let consequences = self.consequences(&group, &names).await;
            return Ok(vec![storm_fact(
                self.name(),
                signal,
                &group,
                &consequences,
                &range,
            )]);
        }
        Ok(Vec::new())
    }
}

/// One interface's rise: its series' labels, its host, the rate before and now, and when
/// it began (Unix seconds).
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Rise {
    pub labels: Labels,
    pub host: String,
    pub before: f64,
    pub now: f64,
    pub onset: f64,
}

/// How a rate series rose to its level now: `(onset, before, now)` when it is at least
/// `signal`'s factor and rise above the level it held before (`None`: no rise, one that
/// did not hold, or no level before it in the window).
pub(super) fn rise(values: &[(f64, f64)], signal: &Signal) -> Option<(f64, f64, f64)> {
    let v: Vec<(f64, f64)> = values
        .iter()
        .copied()
        .filter(|(t, x)| t.is_finite() && x.is_finite())
        .collect();
    let recent: Vec<f64> = v.iter().rev().take(RECENT).map(|(_, x)| *x).collect();
    if recent.len() < RECENT {
        return None;
    }
    let now = median(&recent)?;
    if now < signal.min_rise {
        return None;
    }
    let last_low = v.iter().rposition(|(_, x)| *x < now * BELOW_SHARE)?;
    if last_low + 1 < MIN_BEFORE {
        return None;
    }
    let before_points: Vec<f64> = v.get(..=last_low)?.iter().map(|(_, x)| *x).collect();
    let before = median(&before_points)?;
    let (onset, _) = *v.get(last_low + 1)?;
    let risen = now / before.max(FLOOR) >= signal.min_factor && now - before >= signal.min_rise;
    risen.then_some((onset, before, now))
}

/// Every host's largest rise among `series` (one interface per host: a bridge and the
/// port under it see the same flood).
pub(super) fn rises(series: &[Series], signal: &Signal) -> Vec<Rise> {
    let mut best: HashMap<String, Rise> = HashMap::new();
    for s in series {
        let Some(h) = host(&s.metric) else { continue };
        let Some((onset, before, now)) = rise(&s.values, signal) else {
            continue;
        };
        let r = Rise {
            labels: super::identity(&s.metric),
            host: h.clone(),
            before,
            now,
            onset,
        };
        match best.get(&h) {
            Some(b) if b.now - b.before >= now - before => {}
            _ => {
                best.insert(h, r);
            }
        }
    }
    let mut out: Vec<Rise> = best.into_values().collect();
    out.sort_by(|a, b| a.onset.total_cmp(&b.onset).then(a.host.cmp(&b.host)));
    out
}

/// The most hosts among `rises` (one rise per host, by onset) whose rises began within
/// [`ALIGN_SECS`] of the first of them, when at least `min_hosts` (else none).
pub(super) fn together(rises: Vec<Rise>, min_hosts: usize) -> Vec<Rise> {
    let mut best: (usize, usize) = (0, 0);
    for (i, r) in rises.iter().enumerate() {
        let n = rises[i..]
            .iter()
            .take_while(|o| o.onset - r.onset <= ALIGN_SECS)
            .count();
        if n > best.1 {
            best = (i, n);
        }
    }
    let (start, n) = best;
    if n < min_hosts.max(2) {
        return Vec::new();
    }
    rises.into_iter().skip(start).take(n).collect()
}

fn median(v: &[f64]) -> Option<f64> {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    s.get(s.len() / 2).copied()
}

/// `v` as a literal of a regular expression (its metacharacters escaped), for a PromQL
/// `=~` string.
fn regex_literal(v: &str) -> String {
    let mut out = String::with_capacity(v.len());
    for c in v.chars() {
        if "\\.+*?()|[]{}^$".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// The selector of the series of the instances of `labels` (`{instance=~"a:9100|b:9100"}`).
fn instances_selector<'a>(labels: impl IntoIterator<Item = &'a Labels>) -> String {
    let mut instances: Vec<String> = labels
        .into_iter()
        .filter_map(|l| l.get("instance"))
        .map(|i| regex_literal(i))
        .collect();
    instances.sort();
    instances.dedup();
    match instances.is_empty() {
        true => String::new(),
        false => format!("{{instance=~\"{}\"}}", escape(&instances.join("|"))),
    }
}

impl NetworkStorm {
    /// What rose with the storm on its hosts: per consequence counter present, how many
    /// of the hosts and by up to what factor, between before the first onset and now
    /// (nothing when a read fails: the storm is told without it).
    async fn consequences(&self, group: &[Rise], names: &[String]) -> Vec<String> {
        let Some(first) = group.iter().map(|r| r.onset).reduce(f64::min) else {
            return Vec::new();
        };
        let Some(before) = time_of(first).and_then(|t| t.checked_sub_signed(TimeDelta::minutes(5)))
        else {
            return Vec::new();
        };
        let sel = instances_selector(group.iter().map(|r| &r.labels));
        let mut out = Vec::new();
        for (metric, word) in CONSEQUENCES {
            if !names.iter().any(|n| n == metric) {
                continue;
            }
            let range = self.0.rate_range(metric).await;
            let expr = format!("rate({metric}{sel}[{range}])");
            let (Ok(then), Ok(now)) = (
                self.0.vector_at(&expr, before).await,
                self.0.vector(&expr).await,
            ) else {
                continue;
            };
            let then = super::by_host(&then);
            let factors: Vec<f64> = super::by_host(&now)
                .into_iter()
                .filter_map(|(h, v)| Some(v / then.get(&h)?.max(FLOOR)))
                .filter(|f| f.is_finite() && *f >= CONSEQUENCE_FACTOR)
                .collect();
            if let Some(max) = factors.iter().copied().reduce(f64::max) {
                out.push(format!(
                    "{word} rose with it on {} of the {} hosts (up to {}-fold)",
                    factors.len(),
                    group.len(),
                    crate::analyze::round_sig(max)
                ));
            }
        }
        out
    }
}

/// The fact of a storm seen on the hosts of `group` (at least two).
pub(super) fn storm_fact(
    analyzer: &str,
    signal: &Signal,
    group: &[Rise],
    consequences: &[String],
    range: &str,
) -> Fact {
    let before = median(&group.iter().map(|r| r.before).collect::<Vec<_>>()).unwrap_or(0.0);
    let now = median(&group.iter().map(|r| r.now).collect::<Vec<_>>()).unwrap_or(0.0);
    let factor = now / before.max(FLOOR);
    let since: Option<DateTime<Utc>> = group
        .iter()
        .map(|r| r.onset)
        .reduce(f64::min)
        .and_then(time_of);
    let mut hosts: Vec<&str> = group.iter().map(|r| r.host.as_str()).collect();
    hosts.sort_unstable();
    let mut name = hosts
        .iter()
        .take(MAX_NAMED)
        .copied()
        .collect::<Vec<_>>()
        .join(", ");
    if hosts.len() > MAX_NAMED {
        name.push_str(&format!(" and {} more", hosts.len() - MAX_NAMED));
    }
    let severity = match factor >= CRIT_FACTOR && now >= CRIT_RATE {
        true => Severity::Critical,
        false => Severity::Warning,
    };
    let rate = |v: f64| Quantity::new(v, Unit::PerSecond);
    let each: Vec<String> = group
        .iter()
        .map(|r| {
            format!(
                "{} {} {} → {}",
                r.host,
                label(&r.labels, "device"),
                rate(r.before),
                rate(r.now)
            )
        })
        .collect();
    let mut detail = String::from(
        "a flood across the shared network, typically a layer-2 loop (a bridging or switch \
         loop, spanning tree off) or a device broadcasting",
    );
    for c in consequences {
        detail.push_str("; ");
        detail.push_str(c);
    }
    detail.push_str("; per host: ");
    detail.push_str(&each.join(", "));
    let mut fact = Fact::new(
        FactClass::Saturation,
        analyzer,
        Entity::new("network", name),
        format!(
            "{} rose on {} hosts at once ({}-fold), from {} to",
            signal.word,
            group.len(),
            crate::analyze::round_sig(factor),
            rate(before)
        ),
        severity,
        Source::promql(&format!(
            "rate({}{}[{range}])",
            signal.metric,
            instances_selector(group.iter().map(|r| &r.labels))
        )),
    )
    .value(rate(now))
    .since(since)
    .detail(detail);
    for r in group {
        fact = fact.related(
            Entity::new("interface", label(&r.labels, "device"))
                .on_host(Some(r.host.clone()))
                .with_labels(labels_map(&r.labels)),
        );
    }
    fact
}

#[cfg(test)]
mod tests;
