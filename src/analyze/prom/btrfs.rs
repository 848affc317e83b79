//! `btrfs_allocation`: btrfs filesystems that cannot get the space they need although `df`
//! may say plenty is free. btrfs hands its devices out in chunks (block groups) of one type,
//! data, metadata or system; once every byte of the devices is allocated to chunks, a type
//! whose chunks are full cannot grow, whatever the others hold free. Metadata full of its
//! chunks with nothing unallocated fails new files, renames and snapshots with ENOSPC ("No
//! space left on device") while data chunks hold free space, and `btrfs balance` compacts
//! half-empty chunks to return them as unallocated chunks. Data full of its chunks with
//! nothing unallocated is a filesystem full for data.
//!
//! Read from node_exporter's btrfs collector, by filesystem (`uuid`) and instance:
//! `node_btrfs_used_bytes` and `node_btrfs_size_bytes` (used and allocated by
//! `block_group_type` and profile `mode`, logical bytes), `node_btrfs_allocation_ratio` (disk
//! bytes per logical byte of a profile: 2 for DUP and RAID1), `node_btrfs_global_rsv_size_bytes`
//! (metadata kept back for the transactions that free space), `node_btrfs_device_size_bytes`
//! and `node_btrfs_device_unused_bytes` (a device's bytes not allocated to any chunk, exported
//! when the exporter could ask the mounted filesystem; without it, the devices' size less the
//! allocated chunks), `node_btrfs_info{label}`. The mount point comes from
//! `node_filesystem_size_bytes{fstype="btrfs"}` whose device is one of the filesystem's.

use std::collections::BTreeMap;

use async_trait::async_trait;

use super::{Prom, host, label, pick, selector};
use crate::analyze::{
    AnalyzeError, Analyzer, Entity, Fact, FactClass, Quantity, Scope, Severity, Source, human_bytes,
};
use crate::integrations::prometheus::Labels;

const NAME: &str = "btrfs_allocation";
const USED: &str = "node_btrfs_used_bytes";
const SIZE: &str = "node_btrfs_size_bytes";
const RATIO: &str = "node_btrfs_allocation_ratio";
const RESERVE: &str = "node_btrfs_global_rsv_size_bytes";
const DEVICE_SIZE: &str = "node_btrfs_device_size_bytes";
const DEVICE_UNUSED: &str = "node_btrfs_device_unused_bytes";
const INFO: &str = "node_btrfs_info";
const MOUNTS: &str = r#"node_filesystem_size_bytes{fstype="btrfs"}"#;

/// The first MiB of every device, which btrfs never allocates (it is left to boot loaders):
/// a device with nothing else unallocated reports it unused.
const RESERVED_PER_DEVICE: f64 = 1024.0 * 1024.0;
const GIB: f64 = 1024.0 * 1024.0 * 1024.0;
const MIB: f64 = 1024.0 * 1024.0;

/// Metadata (with its global reserve) or system share of its chunks that is a warning and
/// critical when no chunk can be added: the kernel reserves metadata for transactions in
/// flight beyond the global reserve, so ENOSPC comes before 100 % (a filesystem filled with
/// small files until ENOSPC on this project's build machine stopped at 88 %,
/// tests/fixtures/exporters/btrfs_capture).
const META_WARN: f64 = 75.0;
const META_CRIT: f64 = 85.0;
/// Data share of its chunks that is a warning and critical when no chunk can be added.
const DATA_WARN: f64 = 95.0;
const DATA_CRIT: f64 = 98.0;
/// Most filesystems reported per run.
const MAX_FACTS: usize = 10;

pub struct BtrfsAllocation(pub Prom);

/// One block group type of a filesystem, every profile summed.
#[derive(Default)]
struct Group {
    used: f64,
    size: f64,
    /// Disk bytes of its chunks (each profile's size by its ratio).
    disk: f64,
    /// The largest ratio of its profiles (a new chunk takes that many times its size).
    ratio: f64,
    modes: Vec<String>,
}

impl Group {
    fn percent(&self, extra: f64) -> Option<f64> {
        (self.size > 0.0).then(|| 100.0 * (self.used + extra) / self.size)
    }
}

/// One btrfs filesystem as one instance's exporter sees it.
#[derive(Default)]
struct Filesystem {
    /// The labels of its first series (instance, job, uuid).
    labels: Labels,
    label: String,
    groups: BTreeMap<String, Group>,
    reserve: f64,
    devices: Vec<String>,
    device_size: f64,
    unused: Option<f64>,
    mounts: Vec<String>,
}

impl Filesystem {
    /// Bytes of the devices btrfs can still allocate to new chunks.
    fn unallocated(&self) -> f64 {
        let kept = RESERVED_PER_DEVICE * self.devices.len().max(1) as f64;
        let raw = match self.unused {
            Some(u) => u,
            None => self.device_size - self.groups.values().map(|g| g.disk).sum::<f64>(),
        };
        (raw - kept).max(0.0)
    }

    /// Disk bytes one new chunk of `kind` takes (the kernel's regular sizes: data 1 GiB,
    /// metadata 1 GiB above 50 GiB of devices and 256 MiB below, system 32 MiB, each at most
    /// a tenth of the devices, times the profile's copies).
    fn chunk(&self, kind: &str) -> f64 {
        let total = self.device_size;
        let max = match kind {
            "data" => GIB,
            "metadata" if total > 50.0 * GIB => GIB,
            "metadata" => 256.0 * MIB,
            _ => 32.0 * MIB,
        };
        let ratio = self.groups.get(kind).map_or(1.0, |g| g.ratio.max(1.0));
        max.min(total / 10.0).max(MIB) * ratio
    }

    /// The name people know it by: its mount point, else its label, else its UUID.
    fn name(&self) -> String {
        self.mounts
            .first()
            .cloned()
            .or_else(|| Some(self.label.clone()).filter(|l| !l.is_empty()))
            .unwrap_or_else(|| label(&self.labels, "uuid"))
    }
}

#[async_trait]
impl Analyzer for BtrfsAllocation {
    fn name(&self) -> &'static str {
        NAME
    }

    async fn run(&self, scope: &Scope) -> Result<Vec<Fact>, AnalyzeError> {
        let names = self.0.metric_names(scope).await?;
        if !names.iter().any(|n| n == SIZE) {
            return Ok(Vec::new());
        }
        let filesystems = self.read().await?;
        let left = super::Lookups::default();
        let mut facts = Vec::new();
        for fs in filesystems.values() {
            for kind in ["metadata", "system", "data"] {
                if let Some(f) = self.judge(fs, kind, scope, &left).await {
                    facts.push(f);
                }
            }
        }
        facts.sort_by_key(|f| std::cmp::Reverse(f.severity));
        facts.truncate(MAX_FACTS);
        Ok(facts)
    }
}

/// A filesystem's key: its exporter's instance and its UUID.
fn key(labels: &Labels) -> (String, String) {
    (label(labels, "instance"), label(labels, "uuid"))
}

impl BtrfsAllocation {
    /// Every btrfs filesystem the exporters report, by instance and UUID.
    async fn read(&self) -> Result<BTreeMap<(String, String), Filesystem>, AnalyzeError> {
        let mut by: BTreeMap<(String, String), Filesystem> = BTreeMap::new();
        let mut ratios: BTreeMap<(String, String, String, String), f64> = BTreeMap::new();
        for s in self.0.vector(RATIO).await? {
            let (i, u) = key(&s.metric);
            let (t, m) = (
                label(&s.metric, "block_group_type"),
                label(&s.metric, "mode"),
            );
            ratios.insert((i, u, t, m), s.value);
        }
        for (metric, is_used) in [(SIZE, false), (USED, true)] {
            for s in self.0.vector(metric).await? {
                if !s.value.is_finite() {
                    continue;
                }
                let k = key(&s.metric);
                let fs = by.entry(k.clone()).or_default();
                if fs.labels.is_empty() {
                    fs.labels = super::identity(&s.metric);
                    fs.labels.remove("block_group_type");
                    fs.labels.remove("mode");
                }
                let (t, m) = (
                    label(&s.metric, "block_group_type"),
                    label(&s.metric, "mode"),
                );
                let ratio = ratios
                    .get(&(k.0, k.1, t.clone(), m.clone()))
                    .copied()
                    .filter(|r| r.is_finite() && *r > 0.0)
                    .unwrap_or(1.0);
                let g = fs.groups.entry(t).or_default();
                match is_used {
                    true => g.used += s.value,
                    false => {
                        g.size += s.value;
                        g.disk += s.value * ratio;
                        g.ratio = g.ratio.max(ratio);
                        g.modes.push(m);
                    }
                }
            }
        }
        for s in self.0.vector(RESERVE).await? {
            if let Some(fs) = by.get_mut(&key(&s.metric)) {
                fs.reserve = s.value;
            }
        }
        for s in self.0.vector(DEVICE_SIZE).await? {
            if let Some(fs) = by.get_mut(&key(&s.metric)) {
                fs.device_size += s.value;
                fs.devices.push(label(&s.metric, "device"));
            }
        }
        for s in self.0.vector(DEVICE_UNUSED).await? {
            if let Some(fs) = by.get_mut(&key(&s.metric)) {
                *fs.unused.get_or_insert(0.0) += s.value;
            }
        }
        for s in self.0.vector(INFO).await? {
            if let Some(fs) = by.get_mut(&key(&s.metric)) {
                fs.label = label(&s.metric, "label");
            }
        }
        // Mount points: a filesystem mounts by one of its devices (`/dev/sdb1`), which the
        // btrfs collector names by its base name (`sdb1`). A failed read only loses them.
        if let Ok(mounts) = self.0.vector(MOUNTS).await {
            for fs in by.values_mut() {
                let instance = label(&fs.labels, "instance");
                let mut found: Vec<String> = mounts
                    .iter()
                    .filter(|m| label(&m.metric, "instance") == instance)
                    .filter(|m| {
                        let dev = label(&m.metric, "device");
                        let base = dev.rsplit('/').next().unwrap_or(&dev);
                        fs.devices.iter().any(|d| d == base)
                    })
                    .map(|m| label(&m.metric, "mountpoint"))
                    .collect();
                found.sort_by_key(|m| (m.len(), m.clone()));
                found.dedup();
                fs.mounts = found;
            }
        }
        Ok(by)
    }

    /// The fact of `kind`'s chunks on `fs` when they are nearly full and no new chunk fits.
    async fn judge(
        &self,
        fs: &Filesystem,
        kind: &str,
        scope: &Scope,
        left: &super::Lookups,
    ) -> Option<Fact> {
        // Without its devices' size nothing says what is left to allocate.
        if fs.device_size <= 0.0 {
            return None;
        }
        let g = fs.groups.get(kind)?;
        let reserve = if kind == "metadata" { fs.reserve } else { 0.0 };
        let percent = g.percent(reserve)?;
        let (warn, crit) = match kind {
            "data" => (DATA_WARN, DATA_CRIT),
            _ => (META_WARN, META_CRIT),
        };
        let unallocated = fs.unallocated();
        let chunk = fs.chunk(kind);
        if percent < warn || unallocated >= chunk {
            return None;
        }
        let severity = match percent >= crit {
            true => Severity::Critical,
            false => Severity::Warning,
        };
        let query = fill_query(fs, kind);
        let since = self.0.since(left, &query, scope, |v| v >= warn).await;
        let mount = fs
            .mounts
            .first()
            .cloned()
            .unwrap_or_else(|| "<mount>".into());
        let modes = g.modes.join("+").to_uppercase();
        let space = format!(
            "{} unallocated of {} (a {kind} chunk needs {})",
            human_bytes(unallocated),
            human_bytes(fs.device_size),
            human_bytes(chunk)
        );
        let (what, value, detail) = match kind {
            "data" => {
                let meta_free = fs
                    .groups
                    .get("metadata")
                    .map_or(0.0, |m| (m.size - m.used - fs.reserve).max(0.0));
                let mut d = format!(
                    "{} of data's chunks ({modes}) used, {space}: the filesystem is full for data",
                    Quantity::percent(percent)
                );
                if meta_free >= fs.chunk("data") {
                    d.push_str(&format!(
                        "; metadata chunks hold {} free: `btrfs balance start -musage=30 {mount}` returns the emptiest as unallocated chunks",
                        human_bytes(meta_free)
                    ));
                } else {
                    d.push_str("; free data (and the snapshots holding it) or add a device");
                }
                (
                    "btrfs data full, no unallocated chunks left: used",
                    g.used,
                    d,
                )
            }
            _ => {
                let data_free = fs
                    .groups
                    .get("data")
                    .map_or(0.0, |d| (d.size - d.used).max(0.0));
                let mut d = format!(
                    "{} of {kind}'s chunks ({modes}){}, {space}: ENOSPC on new files, renames and snapshots",
                    Quantity::percent(percent),
                    match kind {
                        "metadata" =>
                            format!(" with its {} global reserve", human_bytes(fs.reserve)),
                        _ => String::new(),
                    }
                );
                if data_free >= chunk {
                    d.push_str(&format!(
                        " while data chunks hold {} free (df counts it free); `btrfs balance start -dusage=50 {mount}` compacts half-empty data chunks and frees them as unallocated chunks",
                        human_bytes(data_free)
                    ));
                } else {
                    d.push_str(&format!(
                        "; data chunks hold only {} free: free data or add a device",
                        human_bytes(data_free)
                    ));
                }
                let what = match kind {
                    "metadata" => {
                        "btrfs metadata full, no unallocated chunks left: used + global reserve"
                    }
                    _ => "btrfs system chunks full, no unallocated chunks left: used",
                };
                (what, g.used + reserve, d)
            }
        };
        let mut labels: BTreeMap<String, String> = pick(&fs.labels, &["instance", "job", "uuid"])
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        if !fs.label.is_empty() {
            labels.insert("label".into(), fs.label.clone());
        }
        if let Some(m) = fs.mounts.first() {
            labels.insert("mountpoint".into(), m.clone());
        }
        if let Some(d) = fs.devices.first() {
            labels.insert("device".into(), d.clone());
        }
        Some(
            Fact::new(
                FactClass::Exhaustion,
                NAME,
                Entity::new("filesystem", fs.name())
                    .on_host(host(&fs.labels))
                    .with_labels(labels),
                what,
                severity,
                Source::promql(&query),
            )
            .value(Quantity::bytes(value))
            .limit(Quantity::bytes(g.size))
            .since(since)
            .detail(detail),
        )
    }
}

/// The PromQL of the share of `kind`'s chunks used on `fs` (metadata with its global
/// reserve), in percent.
fn fill_query(fs: &Filesystem, kind: &str) -> String {
    let base = pick(&fs.labels, &["instance", "job", "uuid"]);
    let typed = selector(base.iter().copied().chain([("block_group_type", kind)]));
    let sel = selector(base.iter().copied());
    let by = "sum by (instance, uuid)";
    match kind {
        "metadata" => {
            format!("100 * ({by} ({USED}{typed}) + {by} ({RESERVE}{sel})) / {by} ({SIZE}{typed})")
        }
        _ => format!("100 * {by} ({USED}{typed}) / {by} ({SIZE}{typed})"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fs(device_gib: f64, unused: Option<f64>) -> Filesystem {
        let mut f = Filesystem {
            device_size: device_gib * GIB,
            unused,
            devices: vec!["sda2".into()],
            ..Default::default()
        };
        f.groups.insert(
            "metadata".into(),
            Group {
                used: 0.0,
                size: GIB,
                disk: 2.0 * GIB,
                ratio: 2.0,
                modes: vec!["dup".into()],
            },
        );
        f.groups.insert(
            "data".into(),
            Group {
                size: device_gib * GIB - 3.0 * GIB,
                disk: device_gib * GIB - 3.0 * GIB,
                ratio: 1.0,
                ..Default::default()
            },
        );
        f
    }

    #[test]
    fn unallocated_leaves_out_the_first_mib_and_falls_back_to_size_less_chunks() {
        assert_eq!(fs(100.0, Some(MIB)).unallocated(), 0.0);
        assert_eq!(fs(100.0, Some(5.0 * MIB)).unallocated(), 4.0 * MIB);
        // 100 GiB less 97 GiB of data and 2 GiB of DUP metadata on disk, less the first MiB.
        assert_eq!(fs(100.0, None).unallocated(), GIB - MIB);
    }

    #[test]
    fn the_fill_query_adds_the_global_reserve_to_metadata_only() {
        let mut f = fs(100.0, None);
        f.labels = crate::analyze::prom::labels(&[("instance", "nas:9100"), ("uuid", "u-1")]);
        assert_eq!(
            fill_query(&f, "metadata"),
            "100 * (sum by (instance, uuid) (node_btrfs_used_bytes{instance=\"nas:9100\",uuid=\"u-1\",block_group_type=\"metadata\"}) + sum by (instance, uuid) (node_btrfs_global_rsv_size_bytes{instance=\"nas:9100\",uuid=\"u-1\"})) / sum by (instance, uuid) (node_btrfs_size_bytes{instance=\"nas:9100\",uuid=\"u-1\",block_group_type=\"metadata\"})"
        );
        assert!(!fill_query(&f, "data").contains("rsv"));
    }

    #[test]
    fn a_chunk_is_the_kernels_size_capped_at_a_tenth_of_the_devices_times_its_copies() {
        let big = fs(100.0, None);
        assert_eq!(big.chunk("metadata"), 2.0 * GIB);
        assert_eq!(big.chunk("data"), GIB);
        let small = fs(20.0, None);
        assert_eq!(small.chunk("metadata"), 512.0 * MIB);
        let tiny = fs(0.5, None);
        assert_eq!(tiny.chunk("data"), 0.05 * GIB);
        assert_eq!(tiny.chunk("system"), 32.0 * MIB);
    }
}
