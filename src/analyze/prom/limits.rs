//! Gauges near their limit, found by the exporters' naming conventions rather than a list
//! of metrics: every metric name Prometheus holds over the window is split into words, and
//! a gauge pairs with a companion limit whose name is the gauge's with a limit word
//! (`node_nf_conntrack_entries` / `…_entries_limit`, `process_open_fds` / `process_max_fds`,
//! `node_filefd_allocated` / `node_filefd_maximum`, `kubelet_volume_stats_used_bytes` /
//! `…_capacity_bytes`, `node_systemd_unit_tasks_current` / `…_tasks_max`), or whose free
//! part is named with a free word (`…_available_bytes` against `…_capacity_bytes`). Pairs
//! are joined on the labels both sides share; a share above [`WARN_PERCENT`] (and not past
//! [`MAX_PLAUSIBLE_PERCENT`], where a "limit" is not one) is reported with the value, the
//! limit, and when rising the rate and time to the limit (the steepest material rise over
//! ten minutes, an hour, the window, as `filesystem.rs` does).
//!
//! The conventions live in `limit_names.rs`; a `…_total` name takes part only as a gauge,
//! as declared to Prometheus or, undeclared, as its samples move (`kinds.rs`). A series
//! that is one member of a cluster, pool or array is named by the labels that tell it
//! from the metric's other series (`members.rs`). Names the dedicated analyzers read
//! (filesystems, host and container memory) are left to them, so no fact is told twice.
//! Units come from the name: `_bytes`, `_bits`, or a count; a name with another unit
//! (`_seconds`, `_celsius`, `_hertz`, …) is not a share of a limit (a temperature, a
//! frequency or a time at 90 % of its maximum means nothing), and a cache is full by design.
//! A limit of 2^62 or more is the kernel's or Go's "unlimited", and a key with two
//! different limits is ambiguous: neither is reported.

use std::collections::{BTreeSet, HashMap};

use async_trait::async_trait;
use futures::StreamExt;

use super::kinds::{Kind, declared};
use super::members::{Member, Members};
use super::{Prom, host, identity, labels_map, long_span, selector, steepest};
use crate::analyze::{
    AnalyzeError, Analyzer, Entity, Fact, FactClass, Quantity, Rate, Scope, Severity, Source, Unit,
};
use crate::integrations::prometheus::{Labels, Sample};

pub use super::limit_names::{Pair, pairs};

/// Share of the limit worth a look, and critical.
const WARN_PERCENT: f64 = 80.0;
const CRIT_PERCENT: f64 = 95.0;
/// Above this share a pair is not a quantity and its limit (a limit holds, give or take a
/// soft limit's overshoot).
const MAX_PLAUSIBLE_PERCENT: f64 = 150.0;
/// Time to the limit under which it is critical.
const CRIT_ETA: f64 = 3600.0;
/// A limit at or above this is "unlimited" (2^62: the kernel's and Go's sentinels are
/// 2^63-1 and 2^64-1).
const UNLIMITED: f64 = 4.6e18;
/// Share of the limit a rise must reach over its span to count as a trend.
const MATERIAL_SHARE: f64 = 0.02;
/// Most pairs read per run, and at once.
const MAX_PAIRS: usize = 64;
const CONCURRENT: usize = 6;
/// Most series near their limit whose trend and since are read.
const MAX_TRENDS: usize = 10;

/// The unit of a pair's values.
fn unit_of(pair: &Pair) -> Unit {
    match pair.unit {
        "bytes" => Unit::Bytes,
        _ => Unit::Count,
    }
}

pub struct NearLimit(pub Prom);

/// A series of a pair near its limit.
struct Near {
    labels: Labels,
    /// Labels both sides share (the join).
    common: Vec<String>,
    used: f64,
    limit: f64,
    /// The member of a cluster, pool or array it is, told from the metric's other series.
    member: Option<Member>,
}

#[async_trait]
impl Analyzer for NearLimit {
    fn name(&self) -> &'static str {
        "near_limit"
    }

    async fn run(&self, scope: &Scope) -> Result<Vec<Fact>, AnalyzeError> {
        let names = self.0.metric_names(scope).await?;
        // Without metadata (an old Prometheus, a failed read) the samples decide.
        let types = self.0.metric_types(scope).await.unwrap_or_default();
        let mut found = pairs(&names, &|n| declared(&types, n) != Kind::Counter);
        found.truncate(MAX_PAIRS);
        // An undeclared `…_total` side is a gauge only when its samples move like one.
        let types = &types;
        let found: Vec<Pair> = futures::stream::iter(found.into_iter().map(|p| async move {
            for (side, partner) in [(&p.gauge, &p.limit), (&p.limit, &p.gauge)] {
                if side.ends_with("_total") && declared(types, side) == Kind::Unknown {
                    let gauge = self.0.moves_like_gauge(side, partner, scope).await;
                    if !gauge.unwrap_or(false) {
                        return None;
                    }
                }
            }
            Some(p)
        }))
        .buffered(CONCURRENT)
        .filter_map(std::future::ready)
        .collect()
        .await;
        let read = futures::stream::iter(found.into_iter().map(|p| async move {
            let near = self.near(&p).await;
            (p, near)
        }))
        .buffer_unordered(CONCURRENT)
        .collect::<Vec<_>>()
        .await;
        let mut near: Vec<(Pair, Near)> = Vec::new();
        for (p, r) in read {
            near.extend(r?.into_iter().map(|n| (p.clone(), n)));
        }
        // The fullest first: those get a trend and a since.
        near.sort_by(|a, b| {
            let share = |n: &Near| n.used / n.limit;
            share(&b.1).total_cmp(&share(&a.1)).then(a.0.cmp(&b.0))
        });
        // Trends and sinces of the fullest, read concurrently (bounded by MAX_TRENDS and
        // the lookups).
        let left = super::Lookups::default();
        let facts = futures::future::join_all(
            near.iter()
                .enumerate()
                .map(|(i, (pair, n))| self.fact(pair, n, scope, &left, i < MAX_TRENDS)),
        )
        .await;
        Ok(facts)
    }
}

impl NearLimit {
    /// The series of `pair` at or above the warning share, joined on their shared labels.
    async fn near(&self, pair: &Pair) -> Result<Vec<Near>, AnalyzeError> {
        let gauges = self.0.vector(&pair.gauge).await?;
        if gauges.is_empty() {
            return Ok(Vec::new());
        }
        let limits = self.0.vector(&pair.limit).await?;
        let members = Members::of(gauges.iter().map(|s| &s.metric));
        let common = shared_labels(&gauges, &limits);
        let join = |l: &Labels| -> Vec<String> {
            common
                .iter()
                .map(|k| l.get(k).cloned().unwrap_or_default())
                .collect()
        };
        // A key with two different limits is ambiguous: no share is computed for it.
        let mut by_key: HashMap<Vec<String>, Option<f64>> = HashMap::new();
        for s in &limits {
            let e = by_key.entry(join(&s.metric)).or_insert(Some(s.value));
            if *e != Some(s.value) {
                *e = None;
            }
        }
        let mut out = Vec::new();
        for s in gauges {
            let Some(Some(limit)) = by_key.get(&join(&s.metric)).copied() else {
                continue;
            };
            if !limit.is_finite() || limit <= 0.0 || limit >= UNLIMITED || !s.value.is_finite() {
                continue;
            }
            let used = match pair.free {
                true => limit - s.value,
                false => s.value,
            };
            // Far past its limit, the "limit" is not one: a pairing by names that joined
            // two quantities of another kind (a queue's length against its configured
            // maximum's neighbour, a value against a setting it is not bounded by).
            let percent = 100.0 * used / limit;
            if used < 0.0 || !(WARN_PERCENT..=MAX_PLAUSIBLE_PERCENT).contains(&percent) {
                continue;
            }
            out.push(Near {
                member: members.member(&s.metric),
                labels: identity(&s.metric),
                common: common.clone(),
                used,
                limit,
            });
        }
        Ok(out)
    }

    async fn fact(
        &self,
        pair: &Pair,
        n: &Near,
        scope: &Scope,
        left: &super::Lookups,
        trend: bool,
    ) -> Fact {
        let unit = unit_of(pair);
        let percent = 100.0 * n.used / n.limit;
        let gauge_sel = selector(n.labels.iter().map(|(k, v)| (k.as_str(), v.as_str())));
        let limit_sel = selector(
            n.common
                .iter()
                .filter_map(|k| n.labels.get(k).map(|v| (k.as_str(), v.as_str()))),
        );
        let query = share_query(pair, &gauge_sel, &limit_sel, n);
        // How fast the used part rises (the free part falls), when the samples allow it.
        let slope = match trend {
            true => {
                self.slope(pair, &gauge_sel, &n.labels, n.limit, scope)
                    .await
            }
            false => None,
        };
        // At or over the limit already: no time to it.
        let eta = slope
            .filter(|_| n.used < n.limit)
            .map(|d| (n.limit - n.used) / d);
        let severity = match (percent, eta) {
            (p, _) if p >= CRIT_PERCENT => Severity::Critical,
            (_, Some(e)) if e < CRIT_ETA => Severity::Critical,
            _ => Severity::Warning,
        };
        let since = match trend {
            true => {
                self.0
                    .since(left, &query, scope, |v| v >= WARN_PERCENT)
                    .await
            }
            false => None,
        };
        let what = match pair.free {
            false => format!("{} at", pair.gauge),
            true => format!("{} used", pair.limit),
        };
        let mut fact = Fact::new(
            FactClass::Exhaustion,
            self.name(),
            entity(&n.labels, n.member.as_ref(), &pair.limit),
            what,
            severity,
            Source::promql(&query),
        )
        .value(Quantity::percent(percent))
        .limit(Quantity::new(n.limit, unit))
        .since(since)
        .detail(format!(
            "{} of {} {}",
            Quantity::new(n.used, unit),
            pair.limit,
            Quantity::new(n.limit, unit)
        ));
        if let Some(d) = slope {
            fact = fact.rate(Rate::from_per_second(d, unit));
        }
        if let Some(e) = eta {
            fact = fact.eta(e, "at the limit");
        }
        fact
    }

    /// The steepest material rise of the used part, per second (`None`: not rising).
    async fn slope(
        &self,
        pair: &Pair,
        sel: &str,
        labels: &Labels,
        limit: f64,
        scope: &Scope,
    ) -> Option<f64> {
        let series = format!("{}{sel}", pair.gauge);
        let slopes = self
            .0
            .slopes(&series, &[600, 3600, long_span(scope)])
            .await
            .ok()?;
        // Rising in the last ten minutes still, or it is a level, not a trend.
        let key = labels.clone();
        let recent = slopes.first().and_then(|(_, by)| by.get(&key).copied())?;
        let rising = |d: f64| if pair.free { d < 0.0 } else { d > 0.0 };
        if !rising(recent) {
            return None;
        }
        steepest(&slopes, &key, MATERIAL_SHARE * limit, pair.free).map(f64::abs)
    }
}

/// Label names every series of both sides has (without the name): what joins them.
fn shared_labels(a: &[Sample], b: &[Sample]) -> Vec<String> {
    let mut all = a.iter().chain(b).map(|s| {
        s.metric
            .keys()
            .filter(|k| *k != "__name__")
            .cloned()
            .collect::<BTreeSet<String>>()
    });
    let Some(first) = all.next() else {
        return Vec::new();
    };
    all.fold(first, |acc, s| acc.intersection(&s).cloned().collect())
        .into_iter()
        .collect()
}

/// The query that shows the share: `100 * used / limit` (`100 * (1 - free / limit)`),
/// matched `on` the shared labels when the gauge has more.
fn share_query(pair: &Pair, gauge_sel: &str, limit_sel: &str, n: &Near) -> String {
    let matching = match n.labels.len() == n.common.len() {
        true => String::new(),
        false => {
            let on: Vec<&str> = n
                .common
                .iter()
                .map(String::as_str)
                .filter(|k| super::is_label_name(k))
                .collect();
            format!(" on({}) group_left", on.join(", "))
        }
    };
    let ratio = format!(
        "{}{gauge_sel} /{matching} {}{limit_sel}",
        pair.gauge, pair.limit
    );
    match pair.free {
        true => format!("100 * (1 - {ratio})"),
        false => format!("100 * {ratio}"),
    }
}

/// What a pair's series is about: a PVC, a pod, a systemd unit, the scraped process itself
/// (`process_*` of client libraries), else the member the labels that tell the metric's
/// series apart name (on its own host when a label carries it), else the host.
fn entity(labels: &Labels, member: Option<&Member>, limit: &str) -> Entity {
    let get = |k: &str| labels.get(k).filter(|v| !v.is_empty());
    let ns = |name: &str| match get("namespace") {
        Some(ns) => format!("{ns}/{name}"),
        None => name.to_string(),
    };
    let (kind, name) = if let Some(pvc) = get("persistentvolumeclaim") {
        ("pvc", ns(pvc))
    } else if let Some(hpa) = get("horizontalpodautoscaler").or(get("hpa")) {
        ("hpa", ns(hpa))
    } else if let Some(pod) = get("pod") {
        ("pod", ns(pod))
    } else if let Some(unit) = get("name").filter(|_| limit.contains("systemd")) {
        ("unit", unit.clone())
    } else if limit.starts_with("process_") {
        // The scraped process itself: named by its target (its job is among the labels).
        let target = get("instance").or(get("job"));
        ("process", target.cloned().unwrap_or_else(|| "?".into()))
    } else if let Some(m) = member {
        return Entity::new("series", m.name.clone())
            .on_host(m.host.clone().or_else(|| host(labels)))
            .with_labels(labels_map(labels));
    } else {
        match host(labels) {
            Some(h) => ("host", h),
            None => ("series", "?".to_string()),
        }
    };
    Entity::new(kind, name)
        .on_host(host(labels))
        .with_labels(labels_map(labels))
}
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_shared_by_every_series_of_both_sides_join_them() {
        let s = |pairs: &[(&str, &str)]| Sample {
            metric: pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            value: 1.0,
            ts: 0.0,
        };
        let a = [s(&[("__name__", "a"), ("instance", "x"), ("name", "u")])];
        let b = [s(&[("__name__", "b"), ("instance", "x"), ("job", "j")])];
        assert_eq!(shared_labels(&a, &b), vec!["instance".to_string()]);
        assert!(shared_labels(&[], &[]).is_empty());
    }
}
