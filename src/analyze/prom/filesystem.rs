//! Filesystems running out of space or inodes (node_exporter `node_filesystem_*`, the
//! Windows exporter's `windows_logical_disk_*`): how full, how fast free space falls and
//! when it is gone. The fall rate is the steepest least-squares slope of the last 10
//! minutes, the last hour and the window (at least a day); a short span counts only when
//! its fall is material (at least 2 % of the size). A fall is a fill only when free space
//! is now below the lowest it was before the last hour: a level that swings (logs rotated,
//! caches filled and evicted) falls steeply half of the time without ever running out. A
//! disk that began filling minutes ago is seen at native resolution, a slow fill over days
//! is not lost, and a burst of writes that a healthy disk absorbs is not taken for a fill.

use async_trait::async_trait;
use chrono::TimeDelta;

use super::{Prom, by_identity, host, label, labels_map, pick, selector};
use crate::analyze::{
    AnalyzeError, Analyzer, Entity, Fact, FactClass, Quantity, Rate, Scope, Source, Unit,
};

/// Filesystems that are not disks.
pub(super) const PSEUDO: &str = r#"fstype!~"tmpfs|ramfs|devtmpfs|overlay|squashfs|nsfs|autofs|proc|sysfs|iso9660|fuse.lxcfs|fuse.snapfuse""#;

/// One exporter's spelling of free and total space (or inodes).
struct Variant {
    free: &'static str,
    size: &'static str,
    /// The label naming the filesystem.
    name_label: &'static str,
    /// What runs out ("space", "inodes").
    resource: &'static str,
    unit: Unit,
    filter: &'static str,
}

const VARIANTS: [Variant; 3] = [
    Variant {
        free: "node_filesystem_avail_bytes",
        size: "node_filesystem_size_bytes",
        name_label: "mountpoint",
        resource: "space",
        unit: Unit::Bytes,
        filter: PSEUDO,
    },
    Variant {
        free: "node_filesystem_files_free",
        size: "node_filesystem_files",
        name_label: "mountpoint",
        resource: "inodes",
        unit: Unit::Count,
        filter: PSEUDO,
    },
    Variant {
        free: "windows_logical_disk_free_bytes",
        size: "windows_logical_disk_size_bytes",
        name_label: "volume",
        resource: "space",
        unit: Unit::Bytes,
        filter: r#"volume!~"HarddiskVolume.*""#,
    },
];

/// Used share at which a filesystem is worth a look, and at which it is critical.
pub(crate) const WARN_PERCENT: f64 = 85.0;
pub(crate) const CRIT_PERCENT: f64 = 95.0;
/// Share of the size a fall must reach over its span to count as a fill.
const MATERIAL_SHARE: f64 = 0.02;
/// How far (a share of the size) free space must be below its earlier low to be falling.
const NEW_LOW_SHARE: f64 = 0.001;
/// Time to full under which a filesystem is worth a look, and critical: the horizons of
/// the published rules (node-mixin's `NodeFilesystemSpaceFillingUp` predicts 24 h and 4 h
/// ahead, awesome-prometheus-alerts' `HostDiskWillFillIn24Hours` 24 h). A disk a few days
/// from full at its present pace is no one's incident yet, and a level that wanders (caches,
/// rotated logs) would otherwise warn on every host.
pub(crate) const WARN_ETA: f64 = 86400.0;
pub(crate) const CRIT_ETA: f64 = 4.0 * 3600.0;

pub struct FilesystemSpace(pub Prom);

#[async_trait]
impl Analyzer for FilesystemSpace {
    fn name(&self) -> &'static str {
        "filesystem_space"
    }

    async fn run(&self, scope: &Scope) -> Result<Vec<Fact>, AnalyzeError> {
        let mut facts = Vec::new();
        for v in &VARIANTS {
            facts.extend(self.variant(v, scope).await?);
        }
        Ok(facts)
    }
}

impl FilesystemSpace {
    async fn variant(&self, v: &Variant, scope: &Scope) -> Result<Vec<Fact>, AnalyzeError> {
        let sel = format!("{{{}}}", v.filter);
        let free = self.0.vector(&format!("{}{sel}", v.free)).await?;
        if free.is_empty() {
            return Ok(Vec::new());
        }
        let size = by_identity(self.0.vector(&format!("{}{sel} > 0", v.size)).await?);
        let long = scope
            .window()
            .max(TimeDelta::days(1))
            .num_seconds()
            .max(3600);
        let mut slopes = Vec::new();
        for span in [600, 3600, long] {
            let d = self
                .0
                .vector(&format!("deriv({}{sel}[{span}s])", v.free))
                .await?;
            slopes.push((span as f64, by_identity(d)));
        }
        // The lowest free space before the last hour (absent for a series younger).
        let earlier_low = by_identity(
            self.0
                .vector(&format!(
                    "min_over_time({}{sel}[{}s] offset 1h)",
                    v.free,
                    long.saturating_sub(3600).max(600)
                ))
                .await?,
        );
        let mut facts = Vec::new();
        for s in free {
            let key = super::identity(&s.metric);
            let Some(&total) = size.get(&key) else {
                continue;
            };
            let avail = s.value;
            if !avail.is_finite() || total <= 0.0 {
                continue;
            }
            let used = 100.0 * (1.0 - avail / total);
            // The steepest material fall (a rising free space has no ETA).
            let slope = slopes
                .iter()
                .filter_map(|(span, by)| by.get(&key).map(|d| (*span, *d)))
                .filter(|(span, d)| {
                    d.is_finite() && (*span >= 86400.0 || -d * span >= MATERIAL_SHARE * total)
                })
                .map(|(_, d)| d)
                .fold(None, |acc: Option<f64>, d| {
                    Some(acc.map_or(d, |a| a.min(d)))
                });
            // A new low, or no history before the last hour to compare with.
            let new_low = earlier_low
                .get(&key)
                .is_none_or(|low| avail < low - NEW_LOW_SHARE * total);
            let slope = slope.filter(|_| new_low);
            let eta = slope.filter(|d| *d < 0.0).map(|d| avail / -d);
            let Some(severity) = super::space_severity(used, eta) else {
                continue;
            };
            let name = label(&s.metric, v.name_label);
            let ids = pick(&s.metric, &["instance", v.name_label]);
            let sel = selector(ids);
            let query = format!("100 * (1 - {}{sel} / {}{sel})", v.free, v.size);
            let free_q = Quantity::new(avail, v.unit);
            let what = match v.resource {
                "space" => "space used".to_string(),
                r => format!("{r} used"),
            };
            let mut fact = Fact::new(
                FactClass::Exhaustion,
                self.name(),
                Entity::new("filesystem", name)
                    .on_host(host(&s.metric))
                    .with_labels(labels_map(&s.metric)),
                what,
                severity,
                Source::promql(&query),
            )
            .value(Quantity::percent(used))
            .limit(Quantity::new(total, v.unit))
            .detail(format!("{free_q} {} free", v.resource));
            if let Some(d) = slope.filter(|d| *d < 0.0) {
                fact = fact.rate(Rate::from_per_second(d, v.unit));
            }
            if let Some(e) = eta {
                fact = fact.eta(e, "full");
            }
            facts.push(fact);
        }
        Ok(facts)
    }
}
