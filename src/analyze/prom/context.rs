//! Not a problem but what a comparison needs ("which host has the least free memory?"):
//! the comparison itself, computed — which host has the least memory available, the
//! busiest CPU and the fullest filesystem, with the runners-up — then one fact per host
//! with its memory available, CPU busy share and filesystems (the largest and the fullest,
//! each with its free space: "which has more room for 2 TB?") from node_exporter, all
//! at severity info so they rank below every problem.

use std::collections::BTreeMap;

use async_trait::async_trait;

use super::filesystem::PSEUDO;
use super::{Prom, by_identity, host, identity, labels_map, pick, selector};
use crate::analyze::{
    AnalyzeError, Analyzer, Entity, Fact, FactClass, Quantity, Scope, Severity, Source,
};

const BUSY: &str =
    r#"100 * (1 - avg without (cpu, mode) (rate(node_cpu_seconds_total{mode="idle"}[5m])))"#;

pub struct HostContext(pub Prom);

#[async_trait]
impl Analyzer for HostContext {
    fn name(&self) -> &'static str {
        "host_context"
    }

    async fn run(&self, _scope: &Scope) -> Result<Vec<Fact>, AnalyzeError> {
        let available = self.0.vector("node_memory_MemAvailable_bytes").await?;
        if available.is_empty() {
            return Ok(Vec::new());
        }
        let total = by_identity(self.0.vector("node_memory_MemTotal_bytes > 0").await?);
        let mut busy = BTreeMap::new();
        for s in self.0.vector(BUSY).await? {
            if let Some(h) = host(&s.metric) {
                busy.entry(h).or_insert(s.value);
            }
        }
        let filesystems = self.filesystems().await?;
        let mut fullest: BTreeMap<String, (String, f64)> = BTreeMap::new();
        for (h, list) in &filesystems {
            if let Some(f) = list.iter().max_by(|a, b| a.used().total_cmp(&b.used())) {
                fullest.insert(h.clone(), (f.mount.clone(), f.used()));
            }
        }
        let mut facts = Vec::new();
        let mut seen = std::collections::BTreeSet::new();
        for s in available {
            let Some(h) = host(&s.metric) else { continue };
            if !s.value.is_finite() || !seen.insert(h.clone()) {
                continue;
            }
            let mut parts = Vec::new();
            let size = total.get(&identity(&s.metric)).copied();
            if let Some(t) = size {
                parts.push(format!(
                    "{} of memory available",
                    Quantity::percent(100.0 * s.value / t)
                ));
            }
            if let Some(b) = busy.get(&h) {
                parts.push(format!("CPU busy {}", Quantity::percent(*b)));
            }
            if let Some(list) = filesystems.get(&h) {
                parts.push(format!("filesystems: {}", shown_filesystems(list)));
            }
            let sel = selector(pick(&s.metric, &["instance", "job"]));
            let mut fact = Fact::new(
                FactClass::Context,
                self.name(),
                Entity::new("host", h.clone())
                    .on_host(Some(h))
                    .with_labels(labels_map(&s.metric)),
                "memory available",
                Severity::Info,
                Source::promql(&format!("node_memory_MemAvailable_bytes{sel}")),
            )
            .value(Quantity::bytes(s.value))
            .detail(parts.join("; "));
            if let Some(t) = size {
                fact = fact.limit(Quantity::bytes(t));
            }
            facts.push(fact);
        }
        // The sweep keeps an analyzer's first facts: the comparisons, then the hosts
        // shortest of memory first.
        let share = |f: &Fact| match (f.value, f.limit) {
            (Some(v), Some(l)) if l.value > 0.0 => v.value / l.value,
            _ => f64::MAX,
        };
        facts.sort_by(|a, b| share(a).total_cmp(&share(b)));
        let mut out = self.comparisons(&facts, &busy, &fullest);
        out.extend(facts);
        Ok(out)
    }
}

/// Runners-up named in a comparison's detail.
const RUNNERS_UP: usize = 3;
/// Filesystems named in a host's fact: the largest, and the fullest whatever its size.
const SHOWN_FILESYSTEMS: usize = 3;

/// A host's filesystem now.
struct Filesystem {
    mount: String,
    avail: f64,
    size: f64,
}

impl Filesystem {
    fn used(&self) -> f64 {
        100.0 * (1.0 - self.avail / self.size)
    }
}

/// "/ 96 % used, 1.2 GiB free of 29.8 GiB; /data …": the largest filesystems and the fullest.
fn shown_filesystems(list: &[Filesystem]) -> String {
    let mut by_size: Vec<&Filesystem> = list.iter().collect();
    by_size.sort_by(|a, b| b.size.total_cmp(&a.size));
    let fullest = list.iter().max_by(|a, b| a.used().total_cmp(&b.used()));
    let mut shown: Vec<&Filesystem> = by_size.iter().take(SHOWN_FILESYSTEMS).copied().collect();
    if let Some(f) = fullest.filter(|f| !shown.iter().any(|s| s.mount == f.mount)) {
        shown.pop();
        shown.push(f);
    }
    shown
        .iter()
        .map(|f| {
            format!(
                "{} {} used, {} free of {}",
                f.mount,
                Quantity::percent(f.used()),
                Quantity::bytes(f.avail),
                Quantity::bytes(f.size)
            )
        })
        .collect::<Vec<_>>()
        .join("; ")
}

impl HostContext {
    /// Each host's real filesystems (one per mount point), by host.
    async fn filesystems(&self) -> Result<BTreeMap<String, Vec<Filesystem>>, AnalyzeError> {
        let key = |m: &BTreeMap<String, String>| Some((host(m)?, m.get("mountpoint")?.clone()));
        let size: BTreeMap<(String, String), f64> = self
            .0
            .vector(&format!("node_filesystem_size_bytes{{{PSEUDO}}} > 0"))
            .await?
            .into_iter()
            .filter_map(|s| Some((key(&s.metric)?, s.value)))
            .collect();
        let mut by: BTreeMap<String, Vec<Filesystem>> = BTreeMap::new();
        for s in self
            .0
            .vector(&format!("node_filesystem_avail_bytes{{{PSEUDO}}}"))
            .await?
        {
            let Some((h, mount)) = key(&s.metric) else {
                continue;
            };
            let Some(&total) = size.get(&(h.clone(), mount.clone())) else {
                continue;
            };
            let list = by.entry(h).or_default();
            if s.value.is_finite() && !list.iter().any(|f| f.mount == mount) {
                list.push(Filesystem {
                    mount,
                    avail: s.value,
                    size: total,
                });
            }
        }
        Ok(by)
    }

    /// The extremes across hosts (none with fewer than two hosts): least memory
    /// available (in bytes), busiest CPU, fullest filesystem.
    fn comparisons(
        &self,
        hosts: &[Fact],
        busy: &BTreeMap<String, f64>,
        fullest: &BTreeMap<String, (String, f64)>,
    ) -> Vec<Fact> {
        let mut out = Vec::new();
        let memory: Vec<(String, f64, Option<Quantity>)> = hosts
            .iter()
            .filter_map(|f| Some((f.entity.name.clone(), f.value?.value, f.limit)))
            .collect();
        if let Some(fact) = extreme(
            self.name(),
            memory,
            |a, b| a.total_cmp(b),
            "least memory available",
            Quantity::bytes,
            "node_memory_MemAvailable_bytes",
        ) {
            out.push(fact);
        }
        let cpu = busy.iter().map(|(h, v)| (h.clone(), *v, None)).collect();
        if let Some(fact) = extreme(
            self.name(),
            cpu,
            |a, b| b.total_cmp(a),
            "busiest CPU",
            Quantity::percent,
            BUSY,
        ) {
            out.push(fact);
        }
        let disks: Vec<(String, f64, Option<Quantity>)> = fullest
            .iter()
            .map(|(h, (_, u))| (h.clone(), *u, None))
            .collect();
        if let Some(mut fact) = extreme(
            self.name(),
            disks,
            |a, b| b.total_cmp(a),
            "fullest filesystem",
            Quantity::percent,
            "100 * (1 - node_filesystem_avail_bytes / node_filesystem_size_bytes)",
        ) {
            if let Some((m, _)) = fullest.get(&fact.entity.name) {
                fact.what = format!("fullest filesystem ({m})");
            }
            out.push(fact);
        }
        out
    }
}

/// The host first by `order` among `values` (host, value, limit) as a fact, with the
/// runners-up and the other end in its detail.
fn extreme(
    analyzer: &'static str,
    mut values: Vec<(String, f64, Option<Quantity>)>,
    order: impl Fn(&f64, &f64) -> std::cmp::Ordering,
    what: &str,
    quantity: impl Fn(f64) -> Quantity,
    query: &str,
) -> Option<Fact> {
    values.retain(|(_, v, _)| v.is_finite());
    if values.len() < 2 {
        return None;
    }
    values.sort_by(|a, b| order(&a.1, &b.1));
    let (host, value, limit) = values[0].clone();
    let others: Vec<String> = values[1..]
        .iter()
        .take(RUNNERS_UP)
        .map(|(h, v, _)| format!("{h} {}", quantity(*v)))
        .collect();
    let mut detail = format!("next: {}", others.join(", "));
    if let Some((h, v, _)) = values.last().filter(|_| values.len() > RUNNERS_UP + 1) {
        detail.push_str(&format!("; last: {h} {}", quantity(*v)));
    }
    let mut fact = Fact::new(
        FactClass::Context,
        analyzer,
        Entity::new("host", host.clone()).on_host(Some(host)),
        format!("{what} of {} hosts", values.len()),
        Severity::Info,
        Source::promql(query),
    )
    .value(quantity(value))
    .detail(detail);
    if let Some(l) = limit {
        fact = fact.limit(l);
    }
    Some(fact)
}
