//! A filesystem that vanished: a disk that did not mount after a reboot (a changed device
//! name, a failed fsck, a `nofail` mount whose disk is gone), an NFS share that was not
//! remounted, a volume unmounted by hand and forgotten. Nothing alerts on a mount that is
//! not there: its directory is still there, empty, so a backup reads nothing, a service
//! starts on an empty data directory, and writes meant for the disk fill the filesystem
//! beneath it.
//!
//! Read from node_exporter's `node_filesystem_size_bytes`: a writable filesystem of a real
//! type (the pseudo types of `filesystem.rs` left out, size above 0) seen within the
//! look-back, absent now while the host's exporter still reports its other filesystems,
//! and no other filesystem mounted at its mount point. A mount that comes and goes (a
//! nightly snapshot, a removable disk, a pod's volume) is not one that vanished: it is
//! told only when it stood at every point its host reported, from the host's first point
//! in the look-back, for an hour at least, until it stopped. The look-back is read at a
//! coarse step (a subquery: one point per few minutes of a few days), the end of the
//! mount's last run finely (its samples' own times). When the host's boot time
//! (`node_boot_time_seconds`) moved between the mount's last point and the host's next,
//! the host rebooted then and the mount did not come back.

use async_trait::async_trait;
use chrono::{DateTime, TimeDelta, Utc};

use super::super::history::time_of;
use super::super::{Prom, by_host, host, label, labels_map, pick, selector};
use super::PSEUDO;
use crate::analyze::{
    AnalyzeError, Analyzer, Entity, Fact, FactClass, Quantity, Scope, Severity, Source,
};
use crate::integrations::prometheus::Series;

/// The look-back: the scope's window within two and three days (a disk that did not mount
/// at a weekend reboot is found by the backup failing the next night; a longer read of
/// every filesystem series costs too many samples).
const MIN_LOOKBACK: TimeDelta = TimeDelta::days(2);
const MAX_LOOKBACK: TimeDelta = TimeDelta::days(3);
/// Points of the subquery and of the range reads over the look-back.
const POINTS: i64 = 576;
const RANGE_POINTS: i64 = 240;
/// Points of the fine read of the mount's last step.
const FINE_POINTS: i64 = 120;
/// How long a mount must have stood before it vanished.
const MIN_PRESENT: f64 = 3600.0;
/// Points of its host's reports the mount may miss and still have stood (a scrape that
/// straddles a read's step).
const MAX_MISSED: usize = 1;
/// A boot time that moves by less than this is the same boot.
const JITTER_SECS: f64 = 60.0;
/// Vanished filesystems read per sweep (each costs a few range reads).
const MAX_READ: usize = 6;

pub struct FilesystemVanished(pub Prom);

/// When a mount, read at the same points as its host, stood from its host's first point
/// until its last and then stopped while the host reported on: its last point and the
/// host's next (`None`: it came and went, stood under [`MIN_PRESENT`], or its host
/// reported nothing after it).
fn stood_until(host: &[f64], mount: &[f64]) -> Option<(f64, f64)> {
    let (&first, &last) = (mount.first()?, mount.last()?);
    let next = *host.iter().find(|t| **t > last + 0.5)?;
    let at = |t: f64| (t * 1000.0).round() as i64;
    let seen: std::collections::HashSet<i64> = mount.iter().map(|t| at(*t)).collect();
    let missed = host
        .iter()
        .filter(|t| **t <= last + 0.5 && !seen.contains(&at(**t)))
        .count();
    (missed <= MAX_MISSED && last - first >= MIN_PRESENT).then_some((last, next))
}

/// The boot time that followed `last` when it differs from the boot time at `last`: the
/// host rebooted between (`None`: same boot, or unknown).
fn rebooted(boot: &[(f64, f64)], last: f64) -> Option<f64> {
    let (_, before) = *boot.iter().rev().find(|(t, _)| *t <= last + 0.5)?;
    let (_, after) = *boot.iter().find(|(t, _)| *t > last + 0.5)?;
    (after - before > JITTER_SECS).then_some(after)
}

/// The times of a range series (the first of `series`).
fn times(series: &[Series]) -> Vec<f64> {
    series
        .first()
        .map(|s| s.values.iter().map(|(t, _)| *t).collect())
        .unwrap_or_default()
}

#[async_trait]
impl Analyzer for FilesystemVanished {
    fn name(&self) -> &'static str {
        "filesystem_vanished"
    }

    async fn run(&self, scope: &Scope) -> Result<Vec<Fact>, AnalyzeError> {
        let back = scope.window().clamp(MIN_LOOKBACK, MAX_LOOKBACK);
        let span = back.num_seconds();
        let res = (span / POINTS).max(60);
        let size = "node_filesystem_size_bytes";
        let expr = format!(
            "(last_over_time({size}{{{PSEUDO}}}[{span}s:{res}s]) > 0) \
             unless on(instance, job, mountpoint) {size} \
             and on(instance, job) {size}"
        );
        let mut gone = self.0.vector(&expr).await?;
        if gone.is_empty() {
            return Ok(Vec::new());
        }
        gone.sort_by_key(|s| !scope.is_about(&entity(&s.metric)));
        gone.truncate(MAX_READ);
        let largest_now = by_host(
            &self
                .0
                .vector(&format!("max by (instance) ({size}{{{PSEUDO}}})"))
                .await?,
        );
        let start = scope.now.checked_sub_signed(back).unwrap_or(scope.now);
        let step = std::time::Duration::from_secs((span / RANGE_POINTS).max(15) as u64);
        let range = |e: String| {
            let client = self.0.client.clone();
            async move { client.query_range(&e, start, scope.now, step).await }
        };
        let mut facts = Vec::new();
        for g in gone {
            let one = selector(pick(&g.metric, &["instance", "job", "mountpoint"]));
            let host_sel = selector(pick(&g.metric, &["instance", "job"]));
            // Written to by nothing when read-only (a mounted image, a snapshot).
            let ro = self
                .0
                .vector(&format!(
                    "last_over_time(node_filesystem_readonly{one}[{span}s]) == 1"
                ))
                .await
                .unwrap_or_default();
            if !ro.is_empty() {
                continue;
            }
            let (Ok(h), Ok(m)) = (
                range(format!("count({size}{host_sel})")).await,
                range(format!("count({size}{one})")).await,
            ) else {
                continue;
            };
            let Some((last, next)) = stood_until(&times(&h), &times(&m)) else {
                continue;
            };
            let last_seen = self.last_sample(&one, last, next).await.unwrap_or(last);
            let boot = range(format!("node_boot_time_seconds{host_sel}"))
                .await
                .ok()
                .and_then(|b| b.into_iter().next())
                .and_then(|b| rebooted(&b.values, last))
                .and_then(time_of);
            let Some(since) = time_of(last_seen) else {
                continue;
            };
            let largest = largest_now.get(&host_key(&g));
            facts.push(self.fact(&g, (since, scope.now), boot, largest));
        }
        Ok(facts)
    }
}

impl FilesystemVanished {
    /// The time of the mount's last sample between the coarse points `last` (seen) and
    /// `next` (gone), read finely.
    async fn last_sample(&self, one: &str, last: f64, next: f64) -> Option<f64> {
        let (from, to) = (time_of(last)?, time_of(next)?);
        let secs = ((next - last) as i64 / FINE_POINTS).max(15);
        let fine = self
            .0
            .client
            .query_range(
                &format!("max(timestamp(node_filesystem_size_bytes{one}))"),
                from,
                to,
                std::time::Duration::from_secs(secs as u64),
            )
            .await
            .ok()?;
        fine.first()?
            .values
            .iter()
            .map(|(_, v)| *v)
            .filter(|v| v.is_finite())
            .reduce(f64::max)
    }

    fn fact(
        &self,
        g: &crate::integrations::prometheus::Sample,
        (since, now): (DateTime<Utc>, DateTime<Utc>),
        boot: Option<DateTime<Utc>>,
        largest_now: Option<&f64>,
    ) -> Fact {
        let size = Quantity::bytes(g.value);
        let mut detail = format!(
            "{} ({}, {size}) last seen at {}",
            label(&g.metric, "device"),
            label(&g.metric, "fstype"),
            since.format("%H:%M UTC"),
        );
        if let Some(b) = boot {
            detail.push_str(&format!(
                "; the host rebooted at {} and it did not come back",
                b.format("%Y-%m-%d %H:%M UTC")
            ));
        }
        // The host's data lived there when it was larger than all it has now.
        let largest = largest_now.is_none_or(|l| g.value > *l);
        if largest {
            detail.push_str("; larger than every filesystem the host has now");
        }
        detail.push_str(
            "; the exporter still reports the host's other filesystems: reads of the mount \
             point find the directory beneath (empty), writes fill the filesystem beneath",
        );
        let one = selector(pick(&g.metric, &["instance", "mountpoint"]));
        let span = (now - since).num_seconds().max(0) + 3600;
        Fact::new(
            FactClass::Availability,
            self.name(),
            entity(&g.metric),
            "not mounted any more",
            if largest {
                Severity::Critical
            } else {
                Severity::Warning
            },
            Source::promql(&format!(
                "last_over_time(node_filesystem_size_bytes{one}[{span}s]) unless \
                 node_filesystem_size_bytes{one}"
            )),
        )
        .limit(size)
        .since(Some(since))
        .detail(detail)
    }
}

fn entity(l: &crate::integrations::prometheus::Labels) -> Entity {
    Entity::new("filesystem", label(l, "mountpoint"))
        .on_host(host(l))
        .with_labels(labels_map(l))
}

/// The key [`by_host`] files a series' host under.
fn host_key(g: &crate::integrations::prometheus::Sample) -> String {
    host(&g.metric).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(from: i64, to: i64) -> Vec<f64> {
        (from..=to).map(|k| (k * 600) as f64).collect()
    }

    #[test]
    fn a_mount_that_stood_until_it_stopped_vanished_and_one_that_came_and_went_did_not() {
        // The host reported at every point; the mount from its first until point 20.
        let host = at(0, 40);
        assert_eq!(stood_until(&host, &at(0, 20)), Some((12_000.0, 12_600.0)));
        // Missing once (a read straddling a scrape) it still stood.
        let mut once: Vec<f64> = at(0, 20);
        once.remove(7);
        assert!(stood_until(&host, &once).is_some());
        // Mounted at point 10 after the host reported without it: it comes and goes.
        assert_eq!(stood_until(&host, &at(10, 20)), None);
        // Mounted for half an hour only.
        assert_eq!(stood_until(&host[..4], &at(0, 2)), None);
        // The host reported nothing after it: the exporter stopped, not the mount.
        assert_eq!(stood_until(&at(0, 20), &at(0, 20)), None);
        assert_eq!(stood_until(&host, &[]), None);
        // A host down for a reboot across the mount's end: its next report is later.
        let mut rebooted_host = at(0, 20);
        rebooted_host.extend(at(23, 40));
        assert_eq!(
            stood_until(&rebooted_host, &at(0, 20)),
            Some((12_000.0, 13_800.0))
        );
    }

    #[test]
    fn a_boot_time_that_moved_across_the_mounts_end_is_the_reboot_it_did_not_survive() {
        let boot = [
            (0.0, 100.0),
            (600.0, 100.5),
            (1800.0, 1700.0),
            (2400.0, 1700.0),
        ];
        assert_eq!(rebooted(&boot, 600.0), Some(1700.0));
        // The same boot either side (wobbling by under a minute).
        assert_eq!(rebooted(&boot, 0.0), None);
        assert_eq!(rebooted(&boot, 1800.0), None);
        assert_eq!(rebooted(&[], 600.0), None);
    }

    #[test]
    fn on_a_real_node_exporter_only_a_disk_may_vanish_not_tmpfs_proc_or_the_cgroups() {
        // The look-back query's filter as Prometheus applies it: the pseudo types out,
        // sizes above 0.
        let path = format!(
            "{}/tests/fixtures/exporters/node_exporter_filesystems.prom",
            env!("CARGO_MANIFEST_DIR")
        );
        let text = std::fs::read_to_string(path).expect("fixture");
        let types = PSEUDO.split('"').nth(1).expect("a pattern of types");
        let types = regex_lite::Regex::new(&format!("^(?:{types})$")).unwrap();
        let mut kept = Vec::new();
        let mut all = 0;
        for l in text.lines() {
            let Some(rest) = l.strip_prefix("node_filesystem_size_bytes{") else {
                continue;
            };
            let Some((labels, v)) = rest.split_once("} ") else {
                continue;
            };
            all += 1;
            let get = |k: &str| {
                labels
                    .split(',')
                    .filter_map(|kv| kv.split_once('='))
                    .find(|(key, _)| *key == k)
                    .map(|(_, v)| v.trim_matches('"').to_string())
                    .unwrap_or_default()
            };
            let size: f64 = v.trim().parse().unwrap_or(0.0);
            if !types.is_match(&get("fstype")) && size > 0.0 {
                kept.push((get("mountpoint"), get("device"), get("fstype")));
            }
        }
        assert!(all >= 15, "{all}");
        assert_eq!(
            kept,
            vec![("/".to_string(), "/dev/vda".to_string(), "ext4".to_string())]
        );
    }
}
