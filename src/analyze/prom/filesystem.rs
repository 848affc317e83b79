//! Filesystems running out of space or inodes (node_exporter `node_filesystem_*`, the
//! Windows exporter's `windows_logical_disk_*`): how full, how fast free space falls and
//! when it is gone. The fall rate is the steepest least-squares slope of the last 10
//! minutes, the last hour and the window (at least a day); a short span counts only when
//! its fall is material (at least 2 % of the size). A fall is a fill only when free space
//! is now below the lowest it was before the last hour: a level that swings (logs rotated,
//! caches filled and evicted) falls steeply half of the time without ever running out. A
//! disk that began filling minutes ago is seen at native resolution, a slow fill over days
//! is not lost, and a burst of writes that a healthy disk absorbs is not taken for a fill.
//! A filesystem that does not fill says how its free space moved over the long span (flat,
//! rising, swinging), so a high use is not read as a fill. When any filesystem fills, one
//! more fact compares them all by time to full: which fills first, the next, and how the
//! fullest moves.

use async_trait::async_trait;
use chrono::TimeDelta;

use super::{Prom, by_identity, host, label, labels_map, pick, selector};
use crate::analyze::{
    AnalyzeError, Analyzer, Entity, Fact, FactClass, Quantity, Rate, Scope, Severity, Source, Unit,
    human_seconds,
};

mod full;
mod vanished;

pub use vanished::FilesystemVanished;

/// Filesystems that are not disks (their use is not news; a full one is, `full.rs`).
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
    /// The exporter's read-only flag, and the filter of the filesystems that may be full
    /// (`full.rs`: every type but those full by design).
    readonly: Option<&'static str>,
    full_filter: &'static str,
}

const VARIANTS: [Variant; 3] = [
    Variant {
        free: "node_filesystem_avail_bytes",
        size: "node_filesystem_size_bytes",
        name_label: "mountpoint",
        resource: "space",
        unit: Unit::Bytes,
        filter: PSEUDO,
        readonly: Some("node_filesystem_readonly"),
        full_filter: full::ALWAYS_FULL,
    },
    Variant {
        free: "node_filesystem_files_free",
        size: "node_filesystem_files",
        name_label: "mountpoint",
        resource: "inodes",
        unit: Unit::Count,
        filter: PSEUDO,
        readonly: Some("node_filesystem_readonly"),
        full_filter: full::ALWAYS_FULL,
    },
    Variant {
        free: "windows_logical_disk_free_bytes",
        size: "windows_logical_disk_size_bytes",
        name_label: "volume",
        resource: "space",
        unit: Unit::Bytes,
        filter: r#"volume!~"HarddiskVolume.*""#,
        readonly: None,
        full_filter: r#"volume!~"HarddiskVolume.*""#,
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
        let mut space = Vec::new();
        for v in &VARIANTS {
            let (mut f, read) = self.variant(v, scope).await?;
            // A filesystem that became full is told as full, once, whatever its type.
            let full = self.0.full(self.name(), &v.names(), scope).await?;
            f.retain(|x| !full.iter().any(|y| y.entity == x.entity));
            facts.extend(f);
            facts.extend(full);
            if v.resource == "space" {
                space.extend(read);
            }
        }
        facts.extend(fills_first(self.name(), &space));
        Ok(facts)
    }
}

impl Variant {
    fn names(&self) -> full::Names {
        full::Names {
            free: self.free,
            size: self.size,
            readonly: self.readonly,
            name_label: self.name_label,
            resource: self.resource,
            unit: self.unit,
            filter: self.full_filter,
        }
    }
}

impl FilesystemSpace {
    /// The facts of variant `v`, and every filesystem it read.
    async fn variant(
        &self,
        v: &Variant,
        scope: &Scope,
    ) -> Result<(Vec<Fact>, Vec<Reading>), AnalyzeError> {
        let sel = format!("{{{}}}", v.filter);
        let free = self.0.vector(&format!("{}{sel}", v.free)).await?;
        if free.is_empty() {
            return Ok(Default::default());
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
        let mut read = Vec::new();
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
            let name = label(&s.metric, v.name_label);
            let sel = selector(pick(&s.metric, &["instance", v.name_label]));
            let long_change = slopes
                .last()
                .and_then(|(span, by)| by.get(&key).map(|d| d * span));
            let r = Reading {
                entity: Entity::new("filesystem", name)
                    .on_host(host(&s.metric))
                    .with_labels(labels_map(&s.metric)),
                query: format!("100 * (1 - {}{sel} / {}{sel})", v.free, v.size),
                used,
                total,
                slope: slope.filter(|d| *d < 0.0),
                eta,
                trend: match eta {
                    Some(_) => Trend::Filling,
                    None => Trend::of(long_change, total, long as f64),
                },
            };
            if let Some(severity) = super::space_severity(used, eta) {
                facts.push(r.fact(self.name(), v, avail, severity));
            }
            read.push(r);
        }
        Ok((facts, read))
    }
}

/// How free space moved over the long span, when it did not fall to a new low.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Trend {
    Filling,
    /// Changed less than [`MATERIAL_SHARE`] of the size over the span (seconds).
    Flat(f64),
    /// Free space rose materially.
    Freeing(f64),
    /// Fell materially but not below its earlier low: it swings.
    Swinging(f64),
}

impl Trend {
    /// The trend of a filesystem of `total` whose free space changed by `change` over
    /// `span` seconds (`None`: unknown, read as flat).
    pub fn of(change: Option<f64>, total: f64, span: f64) -> Self {
        match change.filter(|c| c.is_finite()).unwrap_or(0.0) {
            c if c.abs() < MATERIAL_SHARE * total => Self::Flat(span),
            c if c > 0.0 => Self::Freeing(span),
            _ => Self::Swinging(span),
        }
    }

    /// "flat over the last 1.0 days" (`None` for a fill: its rate says it).
    pub fn describe(self) -> Option<String> {
        let (word, span) = match self {
            Self::Filling => return None,
            Self::Flat(s) => ("flat", s),
            Self::Freeing(s) => ("free space rising", s),
            Self::Swinging(s) => ("swinging, no new low", s),
        };
        Some(format!("{word} over the last {}", human_seconds(span)))
    }
}

/// A filesystem as read.
struct Reading {
    entity: Entity,
    /// The query of its used share.
    query: String,
    used: f64,
    total: f64,
    /// Free space's fall per second, when it fills.
    slope: Option<f64>,
    eta: Option<f64>,
    trend: Trend,
}

impl Reading {
    fn fact(&self, analyzer: &str, v: &Variant, avail: f64, severity: Severity) -> Fact {
        let free_q = Quantity::new(avail, v.unit);
        let what = match v.resource {
            "space" => "space used".to_string(),
            r => format!("{r} used"),
        };
        let mut detail = format!("{free_q} {} free", v.resource);
        if let Some(t) = self.trend.describe() {
            detail.push_str(&format!("; {t}"));
        }
        let mut fact = Fact::new(
            FactClass::Exhaustion,
            analyzer,
            self.entity.clone(),
            what,
            severity,
            Source::promql(&self.query),
        )
        .value(Quantity::percent(self.used))
        .limit(Quantity::new(self.total, v.unit))
        .detail(detail);
        // The value is the used share: told as used space growing (the slope is of free).
        if let Some(d) = self.slope {
            fact = fact.rate(Rate::from_per_second(-d, v.unit));
        }
        if let Some(e) = self.eta {
            fact = fact.eta(e, "full");
        }
        fact
    }
}

/// Filesystems with a time to full named after the soonest.
const RUNNERS_UP: usize = 2;

/// Which of `read` fills first, when any has a time to full: the soonest full with its
/// use, rate and time to full, the next ones, and how the fullest moves (a comparison by
/// time to full, which a comparison by use alone gets wrong when the fullest is flat).
fn fills_first(analyzer: &str, read: &[Reading]) -> Option<Fact> {
    let mut filling: Vec<&Reading> = read.iter().filter(|r| r.eta.is_some()).collect();
    filling.sort_by(|a, b| {
        a.eta
            .unwrap_or(f64::MAX)
            .total_cmp(&b.eta.unwrap_or(f64::MAX))
    });
    let first = *filling.first()?;
    let fullest = read.iter().max_by(|a, b| a.used.total_cmp(&b.used))?;
    let mut detail = Vec::new();
    let next: Vec<String> = filling[1..]
        .iter()
        .take(RUNNERS_UP)
        .map(|r| {
            format!(
                "{} in {}",
                r.entity.describe(),
                human_seconds(r.eta.unwrap_or(0.0))
            )
        })
        .collect();
    if !next.is_empty() {
        detail.push(format!("next: {}", next.join(", ")));
    }
    if std::ptr::eq(fullest, first) {
        detail.push("it is also the fullest".to_string());
    } else {
        let state = match (fullest.eta, fullest.trend.describe()) {
            (Some(e), _) => format!("full in {}", human_seconds(e)),
            (None, Some(t)) => t,
            (None, None) => "not filling".to_string(),
        };
        detail.push(format!(
            "the fullest, {} ({} used), is {state}",
            fullest.entity.describe(),
            Quantity::percent(fullest.used)
        ));
    }
    let mut fact = Fact::new(
        FactClass::Context,
        analyzer,
        first.entity.clone(),
        format!("fills first of {} filesystems: space used", read.len()),
        Severity::Info,
        Source::promql(&first.query),
    )
    .value(Quantity::percent(first.used))
    .limit(Quantity::bytes(first.total))
    .detail(detail.join("; "));
    if let Some(d) = first.slope {
        fact = fact.rate(Rate::from_per_second(-d, Unit::Bytes));
    }
    if let Some(e) = first.eta {
        fact = fact.eta(e, "full");
    }
    Some(fact)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reading(name: &str, used: f64, eta: Option<f64>, trend: Trend) -> Reading {
        Reading {
            entity: Entity::new("filesystem", name).on_host(Some("h".into())),
            query: format!("q {name}"),
            used,
            total: 100.0 * 1024.0 * 1024.0 * 1024.0,
            slope: eta.map(|e| -1.0e6 * 3600.0 / e),
            eta,
            trend,
        }
    }

    #[test]
    fn the_soonest_full_is_compared_with_the_next_and_with_the_fullest_that_is_flat() {
        let day = 86400.0;
        let read = [
            reading("/srv", 97.0, None, Trend::Flat(day)),
            reading("/data", 93.0, Some(16.0 * 3600.0), Trend::Filling),
            reading("/var", 40.0, Some(5.0 * day), Trend::Filling),
            reading("/", 20.0, None, Trend::Flat(day)),
        ];
        let f = fills_first("filesystem_space", &read).expect("a comparison");
        assert_eq!(f.entity.name, "/data");
        assert_eq!(f.what, "fills first of 4 filesystems: space used");
        assert_eq!(f.eta_seconds, Some(16.0 * 3600.0));
        assert_eq!(f.severity, Severity::Info);
        assert_eq!(
            f.detail.as_deref(),
            Some(
                "next: filesystem /var on h in 5.0 days; the fullest, filesystem /srv on h \
                 (97 % used), is flat over the last 24.0 h"
            )
        );
        // None fills: no comparison by time to full.
        assert!(fills_first("x", &read[..1]).is_none());
        // The fullest fills first.
        let f = fills_first("x", &[reading("/a", 90.0, Some(60.0), Trend::Filling)]).unwrap();
        assert_eq!(f.detail.as_deref(), Some("it is also the fullest"));
    }

    #[test]
    fn a_trend_is_flat_within_the_material_share_else_rising_or_swinging() {
        let t = 1000.0;
        assert_eq!(Trend::of(Some(-10.0), t, 60.0), Trend::Flat(60.0));
        assert_eq!(Trend::of(None, t, 60.0), Trend::Flat(60.0));
        assert_eq!(Trend::of(Some(50.0), t, 60.0), Trend::Freeing(60.0));
        assert_eq!(Trend::of(Some(-50.0), t, 60.0), Trend::Swinging(60.0));
        assert_eq!(
            Trend::Flat(86400.0).describe().as_deref(),
            Some("flat over the last 24.0 h")
        );
        assert_eq!(Trend::Filling.describe(), None);
    }
}
