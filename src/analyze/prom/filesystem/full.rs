//! A filesystem that is full now, whatever its type: a tmpfs a transcoder or a build writes
//! into, a small `/boot`, a container's writable overlay, a disk. Writes to it fail ("No
//! space left on device") whatever its size, so a full one that got there within the
//! look-back is critical and told as full, with since when and how fast it filled; one
//! full for the whole look-back is a standing state the use thresholds tell.
//!
//! Some filesystems are full by design and never told: node_exporter reports a squashfs
//! (a snap's or a live image's root), an iso9660 or erofs image and the lower layers of a
//! read-only overlay at 0 bytes available for ever, `/run/credentials/*` (systemd's
//! per-unit ramfs, sized to what it holds) likewise, and nsfs, autofs, proc and sysfs
//! have no space to speak of. node_exporter's default `fs-types-exclude` drops most of
//! them, but a host configured otherwise (or an older exporter) reports them; any
//! filesystem the exporter says is read-only (`node_filesystem_readonly` 1) cannot be
//! written, so its lack of space harms nothing.

use chrono::{DateTime, TimeDelta, Utc};

use super::super::{Prom, host, labels_map, selector};
use crate::analyze::{
    AnalyzeError, Entity, Fact, FactClass, Quantity, Rate, Scope, Severity, Source, Unit,
};

/// Types that are full by design or hold no data (see the module's text).
pub(super) const ALWAYS_FULL: &str = r#"fstype!~"squashfs|iso9660|erofs|nsfs|autofs|proc|sysfs|fuse.snapfuse|fuse.lxcfs|cgroup2?|devpts|mqueue|tracefs|debugfs|securityfs|pstore|bpf|configfs",mountpoint!~"/run/credentials/.*""#;
/// Available share under which a filesystem is full: ext4 keeps 5 % for root, so users'
/// writes fail at 0 available while the blocks are not all used; a few MiB of a disk left
/// are gone in seconds.
pub(super) const FULL_SHARE: f64 = 0.01;
/// Full filesystems read per sweep (each costs a range query).
const MAX_FULL: usize = 8;
/// Points a full filesystem's free space is read at over the look-back.
const POINTS: u32 = 240;
/// Points of the fine read of the hour before a filesystem became full.
const FINE_POINTS: u64 = 120;
/// The span before a filesystem became full its fill rate is read over, finely.
const FILL_SPAN: f64 = 3600.0;

/// A full filesystem's free space over the look-back, as read.
#[derive(Debug, PartialEq)]
pub(super) struct Filled {
    /// When it became full: the first point of the last run of full points.
    pub since: DateTime<Utc>,
    /// Its free space at the last point before, and when.
    pub before: (DateTime<Utc>, f64),
    /// How fast free space fell in the hour before (per second), when it fell.
    pub rate: Option<f64>,
}

/// How `values` (time, free) of a filesystem of `total` became full: `None` when it is
/// not full now, or when it was full at every point (a standing state, not news).
pub(super) fn filled(values: &[(f64, f64)], total: f64) -> Option<Filled> {
    let full = |v: f64| v <= FULL_SHARE * total;
    let (_, last) = *values.last()?;
    if !full(last) {
        return None;
    }
    let i = values.iter().rposition(|(_, v)| !full(*v))?;
    let (t_before, v_before) = values[i];
    let (t_since, _) = *values.get(i + 1)?;
    let at = |t: f64| DateTime::from_timestamp_millis((t * 1000.0) as i64);
    // The fill: the points before it became full over which free space fell at every
    // change (a read finer than the scrapes repeats values; a step from a level to nothing
    // has no rate to tell).
    let mut changes: Vec<(f64, f64)> = Vec::new();
    for &(t, v) in &values[..=i + 1] {
        if changes.last().is_none_or(|(_, w)| *w != v) {
            changes.push((t, v));
        }
    }
    let first = changes
        .windows(2)
        .rposition(|w| w[0].1 <= w[1].1)
        .map_or(0, |k| k + 1);
    let fill: Vec<(f64, f64)> = changes[first..]
        .iter()
        .filter(|(t, _)| *t >= t_since - FILL_SPAN)
        .copied()
        .collect();
    let rate = super::super::slope(&fill).filter(|d| *d < 0.0);
    Some(Filled {
        since: at(t_since)?,
        before: (at(t_before)?, v_before),
        rate,
    })
}

/// One exporter's spelling of a filesystem's free space, size and read-only flag.
pub(super) struct Names {
    pub free: &'static str,
    pub size: &'static str,
    pub readonly: Option<&'static str>,
    pub name_label: &'static str,
    pub resource: &'static str,
    pub unit: Unit,
    pub filter: &'static str,
}

impl Prom {
    /// The full filesystems of `n` that became full within the look-back (the scope's
    /// window, at least a day).
    pub(super) async fn full(
        &self,
        analyzer: &str,
        n: &Names,
        scope: &Scope,
    ) -> Result<Vec<Fact>, AnalyzeError> {
        let sel = format!("{{{}}}", n.filter);
        let mut expr = format!(
            "{free}{sel} <= {FULL_SHARE} * ({size}{sel} > 0)",
            free = n.free,
            size = n.size
        );
        if let Some(ro) = n.readonly {
            expr.push_str(&format!(" unless {ro}{sel} == 1"));
        }
        let mut candidates = self.vector(&expr).await?;
        candidates.truncate(MAX_FULL);
        if candidates.is_empty() {
            return Ok(Vec::new());
        }
        let sizes = super::super::by_identity(self.vector(&format!("{}{sel}", n.size)).await?);
        let back = scope.window().max(TimeDelta::days(1));
        let start = scope.now.checked_sub_signed(back).unwrap_or(scope.now);
        let step = std::time::Duration::from_secs(
            (back.num_seconds().max(60) as u64 / u64::from(POINTS)).max(15),
        );
        let mut facts = Vec::new();
        for c in candidates {
            let key = super::super::identity(&c.metric);
            let Some(&total) = sizes.get(&key) else {
                continue;
            };
            let one = selector(key.iter().map(|(k, v)| (k.as_str(), v.as_str())));
            let free_expr = format!("{}{one}", n.free);
            let Ok(series) = self
                .client
                .query_range(&free_expr, start, scope.now, step)
                .await
            else {
                continue;
            };
            let Some(s) = series.first() else { continue };
            let Some(mut f) = filled(&s.values, total) else {
                continue;
            };
            // Read the hour before it became full finely: when, and how fast.
            let from = f.before.0 - TimeDelta::seconds(FILL_SPAN as i64);
            let fine = std::time::Duration::from_secs(
                ((f.since - from).num_seconds().max(60) as u64 / FINE_POINTS).max(15),
            );
            let refined = self
                .client
                .query_range(&free_expr, from, f.since, fine)
                .await;
            if let Some(r) = refined.ok().and_then(|r| r.into_iter().next())
                && let Some(g) = filled(&r.values, total)
            {
                f = g;
            }
            let name = super::super::label(&c.metric, n.name_label);
            let fstype = c.metric.get("fstype").map(|t| format!(" ({t})"));
            let q = |v: f64| Quantity::new(v, n.unit);
            let mut detail = format!(
                "{} {} free of {}{}; {} free at {}",
                q(c.value.max(0.0)),
                n.resource,
                q(total),
                fstype.unwrap_or_default(),
                q(f.before.1),
                f.before.0.format("%H:%M UTC")
            );
            if let Some(d) = f.rate {
                let r = Rate::from_per_second(-d, n.unit);
                let per = if r.per_seconds >= 86400.0 {
                    "day"
                } else {
                    "hour"
                };
                detail.push_str(&format!("; filled at {} per {per}", r.change));
            }
            detail.push_str("; writes to it fail (no space left on device)");
            let what = match n.resource {
                "space" => "full".to_string(),
                r => format!("full ({r})"),
            };
            let fact = Fact::new(
                FactClass::Exhaustion,
                analyzer,
                Entity::new("filesystem", name)
                    .on_host(host(&c.metric))
                    .with_labels(labels_map(&c.metric)),
                what,
                Severity::Critical,
                Source::promql(&format!("100 * (1 - {}{one} / {}{one})", n.free, n.size)),
            )
            .value(Quantity::percent(100.0 * (1.0 - c.value / total)))
            .limit(q(total))
            .since(Some(f.since))
            .detail(detail);
            facts.push(fact);
        }
        Ok(facts)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    const MIB: f64 = 1024.0 * 1024.0;

    #[test]
    fn a_filesystem_that_filled_in_the_look_back_is_full_since_its_first_full_point() {
        // A 4 GiB tmpfs losing 100 MiB a minute until it is empty at 600 s.
        let total = 4096.0 * MIB;
        let v: Vec<(f64, f64)> = (0..=10)
            .map(|k| {
                let t = f64::from(k) * 60.0;
                (t, (1000.0 - 100.0 * f64::from(k)).max(0.0) * MIB)
            })
            .chain([(660.0, 0.0), (720.0, 0.0)])
            .collect();
        let f = filled(&v, total).expect("full");
        assert_eq!(f.since.timestamp(), 600);
        assert_eq!(f.before.0.timestamp(), 540);
        assert_eq!(f.before.1, 100.0 * MIB);
        let rate = f.rate.expect("a fill rate");
        assert!((rate + 100.0 * MIB / 60.0).abs() < MIB, "{rate}");
        // Read finer than it was scraped (each value twice), the rate is the same.
        let twice: Vec<(f64, f64)> = v
            .iter()
            .flat_map(|&(t, x)| [(t, x), (t + 30.0, x)])
            .collect();
        let g = filled(&twice, total).expect("full");
        assert!((g.rate.unwrap() + 100.0 * MIB / 60.0).abs() < MIB, "{g:?}");
        // A level that fell to nothing in one step has no fill rate.
        let step = [
            (0.0, 864.0 * MIB),
            (60.0, 864.0 * MIB),
            (120.0, 864.0 * MIB),
            (180.0, 0.0),
        ];
        let f = filled(&step, total).expect("full");
        assert_eq!((f.since.timestamp(), f.rate), (180, None));
        // Under 1 % available is full; 2 % is not.
        assert!(filled(&[(0.0, 900.0), (60.0, 9.0)], 1000.0).is_some());
        assert!(filled(&[(0.0, 900.0), (60.0, 20.0)], 1000.0).is_none());
    }

    #[test]
    fn a_filesystem_full_for_the_whole_look_back_is_not_news() {
        // A squashfs-like mount: 0 available at every point.
        assert_eq!(filled(&[(0.0, 0.0), (60.0, 0.0), (120.0, 0.0)], 1e9), None);
        assert_eq!(filled(&[], 1e9), None);
    }

    #[test]
    fn the_types_full_by_design_are_left_out_and_tmpfs_and_overlay_are_not() {
        // The fstype pattern, anchored as PromQL anchors it.
        let types = ALWAYS_FULL.split('"').nth(1).expect("a pattern of types");
        let re = regex_lite::Regex::new(&format!("^(?:{types})$")).unwrap();
        for t in [
            "squashfs",
            "iso9660",
            "nsfs",
            "fuse.snapfuse",
            "cgroup2",
            "erofs",
        ] {
            assert!(re.is_match(t), "{t}");
        }
        for t in ["tmpfs", "overlay", "ext4", "ramfs", "vfat", "xfs", "zfs"] {
            assert!(!re.is_match(t), "{t}");
        }
        assert!(ALWAYS_FULL.contains(r#"mountpoint!~"/run/credentials/.*""#));
    }

    /// The samples of `name` in a captured exposition, by mount point: its labels (a
    /// fixture's values hold no comma or quote) and value.
    fn read(text: &str, name: &str) -> Vec<(BTreeMap<String, String>, f64)> {
        text.lines()
            .filter_map(|l| l.strip_prefix(name)?.strip_prefix('{'))
            .filter_map(|l| l.split_once("} "))
            .map(|(labels, v)| {
                let labels = labels
                    .split(',')
                    .filter_map(|kv| kv.split_once('='))
                    .map(|(k, v)| (k.to_string(), v.trim_matches('"').to_string()))
                    .collect();
                (labels, v.trim().parse().unwrap_or(f64::NAN))
            })
            .collect()
    }

    #[test]
    fn on_a_real_node_exporter_only_the_writable_full_tmpfs_may_be_full() {
        // The query's filter, applied as Prometheus applies it: types and mount points
        // full by design out, sizes above 0, read-only out, under 1 % available.
        let path = format!(
            "{}/tests/fixtures/exporters/node_exporter_filesystems.prom",
            env!("CARGO_MANIFEST_DIR")
        );
        let text = std::fs::read_to_string(path).expect("fixture");
        let types = ALWAYS_FULL.split('"').nth(1).unwrap();
        let types = regex_lite::Regex::new(&format!("^(?:{types})$")).unwrap();
        let size = read(&text, "node_filesystem_size_bytes");
        let ro = read(&text, "node_filesystem_readonly");
        let avail = read(&text, "node_filesystem_avail_bytes");
        assert!(avail.len() >= 8, "{}", avail.len());
        let full: Vec<&str> = avail
            .iter()
            .filter(|(l, _)| !types.is_match(&l["fstype"]))
            .filter(|(l, _)| !l["mountpoint"].starts_with("/run/credentials/"))
            .filter(|(l, v)| {
                let total = size.iter().find(|(m, _)| m == l).map_or(0.0, |(_, s)| *s);
                let writable = ro.iter().any(|(m, r)| m == l && *r == 0.0);
                total > 0.0 && writable && *v <= FULL_SHARE * total
            })
            .map(|(l, _)| l["mountpoint"].as_str())
            .collect();
        assert_eq!(full, vec!["/mnt/transcode"]);
        // Read by value alone, proc, sysfs, devpts, the cgroups and the credentials' ramfs
        // are at 0 available too: their size is 0.
        let zero = avail.iter().filter(|(_, v)| *v == 0.0).count();
        assert!(zero >= 5, "{zero}");
        // The full tmpfs filled as its free space was last read: its history says since
        // when (`filled`), a history at 0 throughout says a standing state.
        let (_, v) = avail
            .iter()
            .find(|(l, _)| l["mountpoint"] == "/mnt/transcode")
            .unwrap();
        let total = 8.0 * MIB;
        let f = filled(
            &[(0.0, 0.5 * total), (60.0, 0.2 * total), (120.0, *v)],
            total,
        )
        .unwrap();
        assert_eq!(f.since.timestamp(), 120);
    }
}
