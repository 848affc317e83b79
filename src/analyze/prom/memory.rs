//! A host running out of memory (node_exporter `node_memory_MemAvailable_bytes` against
//! `node_memory_MemTotal_bytes`, the Windows exporter's physical memory) and swap
//! (`node_memory_SwapFree_bytes` against `node_memory_SwapTotal_bytes`, and pages swapped
//! in and out from `node_vmstat_pswpin`/`pswpout`). How full, how fast available memory
//! falls (the steepest material fall over ten minutes, an hour, the window, while the last
//! ten minutes still fall) and when it is gone; since when it has been short.

mod zfs_arc;

use std::collections::HashMap;

use async_trait::async_trait;

use super::{Prom, by_identity, host, identity, labels_map, long_span, pick, selector, steepest};
use crate::analyze::{
    AnalyzeError, Analyzer, Entity, Fact, FactClass, Quantity, Rate, Scope, Severity, Source, Unit,
};
use crate::integrations::prometheus::Labels;

/// One exporter's spelling of available and total memory.
struct Variant {
    available: &'static str,
    total: &'static str,
}

const VARIANTS: [Variant; 2] = [
    Variant {
        available: "node_memory_MemAvailable_bytes",
        total: "node_memory_MemTotal_bytes",
    },
    Variant {
        available: "windows_os_physical_memory_free_bytes",
        total: "windows_cs_physical_memory_bytes",
    },
];

/// Used share of memory worth a look (node-mixin's `NodeMemoryHighUtilization` is 90 %),
/// and critical.
const WARN_PERCENT: f64 = 90.0;
const CRIT_PERCENT: f64 = 97.0;
/// Time until available memory is gone under which it is worth a look, and critical.
const WARN_ETA: f64 = 6.0 * 3600.0;
const CRIT_ETA: f64 = 3600.0;
/// Share of total memory a fall must reach over its span to count as a trend (caches and
/// batch jobs move memory by a few percent all the time).
const MATERIAL_SHARE: f64 = 0.05;

pub struct HostMemory(pub Prom);

#[async_trait]
impl Analyzer for HostMemory {
    fn name(&self) -> &'static str {
        "host_memory"
    }

    async fn run(&self, scope: &Scope) -> Result<Vec<Fact>, AnalyzeError> {
        let mut facts = Vec::new();
        for v in &VARIANTS {
            let f = exhaustion(
                &self.0,
                scope,
                self.name(),
                v.available,
                v.total,
                MEMORY,
                ("memory", "memory used", "out of memory"),
            )
            .await?;
            facts.extend(f);
        }
        if !facts.is_empty() {
            let arcs = zfs_arc::read(&self.0).await;
            zfs_arc::with_arc(&mut facts, &arcs, &MEMORY);
            let span = long_span(scope);
            let shmem =
                |q: String| async move { by_identity(self.0.vector(&q).await.unwrap_or_default()) };
            let now = shmem(SHMEM.to_string()).await;
            let low = shmem(format!("min_over_time({SHMEM}[{span}s])")).await;
            with_shmem(&mut facts, &now, &low);
        }
        Ok(facts)
    }
}

/// Memory in tmpfs files and shared memory (node_exporter's `Shmem` of /proc/meminfo): no
/// process's resident memory shows it.
const SHMEM: &str = "node_memory_Shmem_bytes";
/// Share of a host's memory `Shmem` must hold, or have grown by, to be told.
const SHMEM_SHARE: f64 = 0.2;

/// Tells, on the memory facts of hosts whose `Shmem` holds or grew by a fifth of their
/// memory, how much of it is there: files written to a tmpfs (`/tmp` on recent Debian,
/// `/dev/shm`, a transcode directory) hold memory no process owns, and no process is seen
/// to grow.
fn with_shmem(facts: &mut [Fact], now: &HashMap<Labels, f64>, low: &HashMap<Labels, f64>) {
    for f in facts.iter_mut() {
        let (Some(size), Some(&held)) = (f.limit.map(|q| q.value), now.get(&f.entity.labels))
        else {
            continue;
        };
        let was = low.get(&f.entity.labels).copied().unwrap_or(held).min(held);
        if held < SHMEM_SHARE * size && held - was < SHMEM_SHARE * size {
            continue;
        }
        let told = format!(
            "of the memory used, {} is Shmem (files in a tmpfs, a RAM-backed filesystem, \
             or shared memory; no process owns it), {} at its lowest in the look-back",
            Quantity::bytes(held),
            Quantity::bytes(was)
        );
        f.detail = Some(match f.detail.take() {
            Some(d) => format!("{d}; {told}"),
            None => told,
        });
    }
}

/// When a free/total pair is worth a look.
struct Thresholds {
    warn: f64,
    crit: f64,
    warn_eta: f64,
    crit_eta: f64,
}

/// A host's memory's thresholds.
const MEMORY: Thresholds = Thresholds {
    warn: WARN_PERCENT,
    crit: CRIT_PERCENT,
    warn_eta: WARN_ETA,
    crit_eta: CRIT_ETA,
};

impl Thresholds {
    /// How bad `used` percent is with `eta` seconds left; `None` when it is fine.
    fn severity(&self, used: f64, eta: Option<f64>) -> Option<Severity> {
        match (used, eta) {
            (u, _) if u >= self.crit => Some(Severity::Critical),
            (_, Some(e)) if e < self.crit_eta => Some(Severity::Critical),
            (u, _) if u >= self.warn => Some(Severity::Warning),
            (_, Some(e)) if e < self.warn_eta => Some(Severity::Warning),
            _ => None,
        }
    }
}

/// The facts of a free/total pair of byte gauges per host: used share, fall rate, time
/// until the free part is gone, since when it has been above the warning share. `words`:
/// the entity kind, what is used, what happens at the ETA.
async fn exhaustion(
    prom: &Prom,
    scope: &Scope,
    analyzer: &str,
    free_metric: &str,
    total_metric: &str,
    t: Thresholds,
    words: (&str, &str, &str),
) -> Result<Vec<Fact>, AnalyzeError> {
    let left = super::Lookups::default();
    let free = prom.vector(free_metric).await?;
    if free.is_empty() {
        return Ok(Vec::new());
    }
    let total = by_identity(prom.vector(&format!("{total_metric} > 0")).await?);
    let slopes = prom
        .slopes(free_metric, &[600, 3600, long_span(scope)])
        .await?;
    let mut facts = Vec::new();
    for s in free {
        let key = identity(&s.metric);
        let (Some(&size), avail) = (total.get(&key), s.value) else {
            continue;
        };
        if !avail.is_finite() || size <= 0.0 {
            continue;
        }
        let used = 100.0 * (1.0 - avail / size);
        // A fall that has stopped (a job that took its memory and holds it) has no ETA:
        // the last ten minutes must still be falling.
        let ongoing = slopes
            .first()
            .and_then(|(_, by)| by.get(&key))
            .is_some_and(|d| *d < 0.0);
        let slope = steepest(&slopes, &key, MATERIAL_SHARE * size, true).filter(|_| ongoing);
        let eta = slope.map(|d| avail.max(0.0) / -d);
        let Some(severity) = t.severity(used, eta) else {
            continue;
        };
        let sel = selector(pick(&s.metric, &["instance", "job"]));
        let query = format!("100 * (1 - {free_metric}{sel} / {total_metric}{sel})");
        let since = match used >= t.warn {
            true => prom.since(&left, &query, scope, |v| v >= t.warn).await,
            false => None,
        };
        let name = host(&s.metric).unwrap_or_else(|| "?".into());
        let mut fact = Fact::new(
            FactClass::Exhaustion,
            analyzer,
            Entity::new(words.0, name.clone())
                .on_host(Some(name))
                .with_labels(labels_map(&s.metric)),
            words.1,
            severity,
            Source::promql(&query),
        )
        .value(Quantity::percent(used))
        .limit(Quantity::bytes(size))
        .since(since)
        .figure("available", Quantity::bytes(avail))
        .detail(format!("{} available", Quantity::bytes(avail)));
        if let Some(d) = slope {
            // The value is the used share: told as used memory growing.
            fact = fact.rate(Rate::from_per_second(-d, Unit::Bytes));
        }
        if let Some(e) = eta {
            fact = fact.eta(e, words.2);
        }
        facts.push(fact);
    }
    Ok(facts)
}

/// Used share of swap worth a look, and critical.
const SWAP_WARN_PERCENT: f64 = 80.0;
const SWAP_CRIT_PERCENT: f64 = 95.0;
/// Pages swapped in and out per second (over 5 minutes) worth a look: about 1.6 MiB/s of
/// 4 KiB pages, beyond the trickle of a host that parks idle pages.
const SWAPPING_PAGES_PER_SECOND: f64 = 400.0;

pub struct Swap(pub Prom);

#[async_trait]
impl Analyzer for Swap {
    fn name(&self) -> &'static str {
        "swap"
    }

    async fn run(&self, scope: &Scope) -> Result<Vec<Fact>, AnalyzeError> {
        let mut facts = exhaustion(
            &self.0,
            scope,
            self.name(),
            "node_memory_SwapFree_bytes",
            "node_memory_SwapTotal_bytes",
            Thresholds {
                warn: SWAP_WARN_PERCENT,
                crit: SWAP_CRIT_PERCENT,
                warn_eta: WARN_ETA,
                crit_eta: CRIT_ETA,
            },
            ("swap", "swap used", "full"),
        )
        .await?;
        facts.extend(self.swapping(scope).await?);
        Ok(facts)
    }
}

impl Swap {
    /// Hosts moving pages in and out of swap fast (thrashing), whatever their swap's size.
    async fn swapping(&self, scope: &Scope) -> Result<Vec<Fact>, AnalyzeError> {
        let left = super::Lookups::default();
        let pages_in = by_identity(self.0.vector("rate(node_vmstat_pswpin[5m])").await?);
        let pages_out = by_identity(self.0.vector("rate(node_vmstat_pswpout[5m])").await?);
        let mut facts = Vec::new();
        for (labels, out) in &pages_out {
            let inn = pages_in.get(labels).copied().unwrap_or(0.0);
            let both = inn + out;
            if both.is_nan() || both < SWAPPING_PAGES_PER_SECOND {
                continue;
            }
            let sel = selector(pick(labels, &["instance", "job"]));
            let query =
                format!("rate(node_vmstat_pswpin{sel}[5m]) + rate(node_vmstat_pswpout{sel}[5m])");
            let since = self
                .0
                .since(&left, &query, scope, |v| v >= SWAPPING_PAGES_PER_SECOND)
                .await;
            let name = host(labels).unwrap_or_else(|| "?".into());
            facts.push(
                Fact::new(
                    FactClass::Saturation,
                    self.name(),
                    Entity::new("swap", name.clone())
                        .on_host(Some(name))
                        .with_labels(labels_map(labels)),
                    "pages swapped in and out",
                    Severity::Warning,
                    Source::promql(&query),
                )
                .value(Quantity::new(both, Unit::PerSecond))
                .since(since)
                .detail(format!(
                    "{}/s in, {}/s out",
                    crate::analyze::round_sig(inn),
                    crate::analyze::round_sig(*out)
                )),
            );
        }
        Ok(facts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::prom::labels;

    fn memory_fact(instance: &str, size_gib: f64) -> Fact {
        let l = labels(&[("instance", instance), ("job", "node")]);
        Fact::new(
            FactClass::Exhaustion,
            "host_memory",
            Entity::new("memory", host(&l).unwrap()).with_labels(labels_map(&l)),
            "memory used",
            Severity::Critical,
            Source::promql("x"),
        )
        .limit(Quantity::bytes(size_gib * GIB))
        .detail("0.5 GiB available")
    }

    const GIB: f64 = 1024.0 * 1024.0 * 1024.0;

    #[test]
    fn memory_held_in_tmpfs_files_is_told_on_the_hosts_memory_fact() {
        let key = |i: &str| labels(&[("instance", i), ("job", "node")]);
        let mut facts = vec![
            memory_fact("seed4:9100", 16.0),
            memory_fact("kiln:9100", 16.0),
        ];
        let now = HashMap::from([
            (key("seed4:9100"), 7.7 * GIB),
            (key("kiln:9100"), 0.3 * GIB),
        ]);
        let low = HashMap::from([
            (key("seed4:9100"), 0.2 * GIB),
            (key("kiln:9100"), 0.2 * GIB),
        ]);
        with_shmem(&mut facts, &now, &low);
        let d = facts[0].detail.as_deref().unwrap();
        assert!(
            d.starts_with("0.5 GiB available; of the memory used, 7.7 GiB is Shmem"),
            "{d}"
        );
        assert!(
            d.ends_with("204.8 MiB at its lowest in the look-back"),
            "{d}"
        );
        assert_eq!(facts[1].detail.as_deref(), Some("0.5 GiB available"));
    }
}
