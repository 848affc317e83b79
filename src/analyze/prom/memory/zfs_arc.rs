//! The ZFS ARC on a Linux host's memory facts. The kernel's `MemAvailable` (node_exporter's
//! `node_memory_MemAvailable_bytes`) does not count the ARC, which is not page cache, yet
//! the ARC gives memory back on demand down to its floor `c_min`: a host whose ARC holds
//! gigabytes above that floor looks short of memory and is not. node_exporter's zfs
//! collector reads the ARC's size and bounds from `arcstats` (`node_zfs_arc_size`,
//! `node_zfs_arc_c_min`, `node_zfs_arc_c_max`); node-mixin's `NodeMemoryHighUtilization`
//! adds `clamp_min(node_zfs_arc_size - node_zfs_arc_c_min, 0)` to the available memory the
//! same way. A fact whose host's releasable ARC is small is left as it is.

use std::collections::HashMap;

use super::{Prom, Thresholds, by_identity};
use crate::analyze::{Fact, Quantity, Severity};
use crate::integrations::prometheus::Labels;

/// Share of a host's memory the releasable ARC must reach to be told (less does not
/// change what its memory fact says).
const TOLD_SHARE: f64 = 0.05;

/// A host's ARC, in bytes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct ZfsArc {
    pub size: f64,
    pub c_min: f64,
    pub c_max: Option<f64>,
}

impl ZfsArc {
    /// What the ARC would give back on demand: its size above its floor.
    fn releasable(&self) -> f64 {
        (self.size - self.c_min).max(0.0)
    }
}

/// The ARC of each host that reports one, by its series' labels; none when it cannot be
/// read (the fact stands without it).
pub(super) async fn read(prom: &Prom) -> HashMap<Labels, ZfsArc> {
    let v = |q: &'static str| async move { prom.vector(q).await.unwrap_or_default() };
    let (size, c_min, c_max) = tokio::join!(
        v("node_zfs_arc_size"),
        v("node_zfs_arc_c_min"),
        v("node_zfs_arc_c_max")
    );
    join(by_identity(size), by_identity(c_min), by_identity(c_max))
}

/// The ARC of each host with both a size and a floor.
pub(super) fn join(
    size: HashMap<Labels, f64>,
    c_min: HashMap<Labels, f64>,
    c_max: HashMap<Labels, f64>,
) -> HashMap<Labels, ZfsArc> {
    size.into_iter()
        .filter(|(_, s)| *s >= 0.0)
        .filter_map(|(k, size)| {
            let c_min = c_min.get(&k).copied().filter(|m| *m >= 0.0)?;
            let c_max = c_max.get(&k).copied().filter(|m| *m > 0.0);
            Some((k, ZfsArc { size, c_min, c_max }))
        })
        .collect()
}

/// Tells, on the memory facts of hosts whose ARC holds at least [`TOLD_SHARE`] of their
/// memory above its floor, what is effectively available with it released, and judges
/// the fact again by that (not a shortage at all: `Info`).
pub(super) fn with_arc(facts: &mut [Fact], arcs: &HashMap<Labels, ZfsArc>, t: &Thresholds) {
    for f in facts.iter_mut() {
        let Some(arc) = arcs.get(&f.entity.labels) else {
            continue;
        };
        let (Some(total), Some(avail)) = (
            f.limit.map(|q| q.value),
            f.figures.get("available").map(|q| q.value),
        ) else {
            continue;
        };
        let releasable = arc.releasable();
        if total.is_nan() || total <= 0.0 || releasable < TOLD_SHARE * total {
            continue;
        }
        let effective = (avail.max(0.0) + releasable).min(total);
        let used = 100.0 * (1.0 - effective / total);
        // Used memory growing (per second), as the fact's rate tells it, when still ongoing.
        let growth = f
            .rate
            .filter(|_| f.eta_seconds.is_some())
            .map(|r| r.change.value / r.per_seconds)
            .filter(|d| d.is_finite() && *d > 0.0);
        let eta = growth.map(|d| effective / d);
        let judged = t.severity(used, eta);
        let verdict = match judged {
            None => "not a real shortage",
            Some(_) => "still short",
        };
        f.severity = judged.unwrap_or(Severity::Info);
        f.what = "memory used (the ZFS ARC counted as used)".into();
        f.eta_seconds = None;
        f.eta_what = None;
        let detail = format!(
            "available {} of {}, but the ZFS ARC holds {} of which {} can be released on \
             demand (down to c_min {}): effectively ≈{} available ({:.1} % used) — {verdict}",
            Quantity::bytes(avail),
            Quantity::bytes(total),
            Quantity::bytes(arc.size),
            Quantity::bytes(releasable),
            Quantity::bytes(arc.c_min),
            Quantity::bytes(effective),
            used
        );
        let mut told = f
            .clone()
            .detail(detail)
            .figure("zfs_arc_size", Quantity::bytes(arc.size))
            .figure("zfs_arc_c_min", Quantity::bytes(arc.c_min))
            .figure("zfs_arc_releasable", Quantity::bytes(releasable))
            .figure("available_with_arc_released", Quantity::bytes(effective))
            .figure("used_with_arc_released", Quantity::percent(used));
        if let Some(e) = eta {
            told = told.eta(e, "out of memory");
        }
        if let Some(m) = arc.c_max {
            told = told.figure("zfs_arc_c_max", Quantity::bytes(m));
        }
        *f = told;
    }
}

#[cfg(test)]
mod tests;
