//! `btrfs_allocation` on node_exporter's real btrfs output (node_exporter_btrfs*.prom: three
//! 512 MiB filesystems, `archive` filled with small files until its metadata chunks ran out
//! with nothing unallocated while its data chunks held 216 MiB free, `media` full of data,
//! `photos` calm) beside the captured hosts, and a two-device RAID1 pool written for the test
//! whose exporter does not report unused device bytes (its unallocated space is the devices
//! less the chunks) and whose metadata filled 30 minutes ago.

use sre_agent::analyze::{FactClass, Severity};

use super::captured::{When, target};
use super::world::{SeriesDef, World, calm_hosts, lines, of, series, since_off};

const GIB: f64 = 1024.0 * 1024.0 * 1024.0;

/// The btrfs capture of host `h`: the state before the small files until `switch` seconds
/// ago, after them since (never: `None`).
fn btrfs(h: &str, switch: Option<i64>) -> Vec<SeriesDef> {
    let instance = format!("{h}:9100");
    let mut phases: Vec<(When, &str)> = Vec::new();
    if let Some(at) = switch {
        phases.push((Box::new(move |ago| ago <= at), "node_exporter_btrfs.prom"));
    }
    phases.push((Box::new(|_| true), "node_exporter_btrfs.before.prom"));
    target(&[("instance", &instance), ("job", "node")], phases)
}

/// A RAID1 pool of two 100 GiB devices on `nas-c` (no `node_btrfs_device_unused_bytes`):
/// data 97.9 GiB allocated, 90 GiB used; metadata 2 GiB allocated, used 1.2 GiB until 30
/// minutes ago and 1.6 GiB since, with a 256 MiB global reserve.
fn pool() -> Vec<SeriesDef> {
    let uuid = "5d1c0b6e-3f4a-4c2b-9b7e-0a1b2c3d4e5f";
    let base = [("instance", "nas-c:9100"), ("job", "node"), ("uuid", uuid)];
    let with = |extra: &[(&'static str, &'static str)]| {
        let mut l: Vec<(&str, &str)> = base.to_vec();
        l.extend_from_slice(extra);
        l
    };
    let mut out = Vec::new();
    for (t, size, used) in [
        ("data", 97.9 * GIB, 90.0 * GIB),
        ("system", 0.03125 * GIB, 0.0001 * GIB),
    ] {
        let l = with(&[("block_group_type", t), ("mode", "raid1")]);
        out.push(series("node_btrfs_size_bytes", &l, move |_| Some(size)));
        out.push(series("node_btrfs_used_bytes", &l, move |_| Some(used)));
        out.push(series("node_btrfs_allocation_ratio", &l, |_| Some(2.0)));
    }
    let l = with(&[("block_group_type", "metadata"), ("mode", "raid1")]);
    out.push(series("node_btrfs_size_bytes", &l, |_| Some(2.0 * GIB)));
    out.push(series("node_btrfs_used_bytes", &l, |ago| {
        Some(if ago > 1800 { 1.2 * GIB } else { 1.6 * GIB })
    }));
    out.push(series("node_btrfs_allocation_ratio", &l, |_| Some(2.0)));
    out.push(series("node_btrfs_global_rsv_size_bytes", &base, |_| {
        Some(0.25 * GIB)
    }));
    out.push(series(
        "node_btrfs_info",
        &with(&[("label", "pool")]),
        |_| Some(1.0),
    ));
    for d in ["sdb", "sdc"] {
        out.push(series(
            "node_btrfs_device_size_bytes",
            &with(&[("device", d)]),
            |_| Some(100.0 * GIB),
        ));
    }
    out.push(series(
        "node_filesystem_size_bytes",
        &[
            ("instance", "nas-c:9100"),
            ("job", "node"),
            ("device", "/dev/sdb"),
            ("fstype", "btrfs"),
            ("mountpoint", "/srv/pool"),
        ],
        |_| Some(100.0 * GIB),
    ));
    out
}

#[tokio::test]
async fn metadata_out_of_chunks_with_free_data_and_a_full_filesystem_are_told_with_balance() {
    let mut defs = calm_hosts(&["nas-a", "nas-b", "nas-c"]);
    // nas-a: the small files filled archive's metadata 25 minutes ago; nas-b never.
    defs.extend(btrfs("nas-a", Some(1500)));
    defs.extend(btrfs("nas-b", None));
    defs.extend(pool());
    let Some(world) = World::build(&defs, 3 * 3600, 15).await else {
        return;
    };
    let (facts, notes) = world.sweep(Some(600)).await;
    assert!(notes.is_empty(), "{notes:?}");
    let all = lines(&facts);
    eprintln!("{all}");
    let found = of(&facts, "btrfs_allocation");
    let mut named: Vec<String> = found
        .iter()
        .map(|f| {
            let host = f.entity.host.as_deref().unwrap_or("?");
            format!("{host}{}", f.entity.name)
        })
        .collect();
    named.sort();
    assert_eq!(
        named,
        [
            "nas-a/srv/archive",
            "nas-a/srv/media",
            "nas-b/srv/media",
            "nas-c/srv/pool"
        ],
        "{all}"
    );

    // The captured metadata ENOSPC: 22.7 MiB used + 5.5 MiB reserve of 32 MiB, 216 MiB
    // free in data chunks, the device's only unused MiB its first.
    let f = found
        .iter()
        .find(|f| f.entity.host.as_deref() == Some("nas-a") && f.entity.name == "/srv/archive")
        .unwrap();
    assert_eq!(
        (f.class, f.severity),
        (FactClass::Exhaustion, Severity::Critical)
    );
    assert_eq!(
        f.what,
        "btrfs metadata full, no unallocated chunks left: used + global reserve"
    );
    assert_eq!(f.value.unwrap().value, 23805952.0 + 5767168.0);
    assert_eq!(f.limit.unwrap().value, 33554432.0);
    assert_eq!(f.entity.labels["label"], "archive");
    assert_eq!(f.entity.labels["device"], "loop0");
    let detail = f.detail.as_deref().unwrap();
    for part in [
        "88.1 % of metadata's chunks (DUP) with its 5.5 MiB global reserve",
        "0 B unallocated of 512.0 MiB (a metadata chunk needs 102.4 MiB)",
        "ENOSPC on new files, renames and snapshots",
        "data chunks hold 216.0 MiB free",
        "`btrfs balance start -dusage=50 /srv/archive`",
        "unallocated chunks",
    ] {
        assert!(detail.contains(part), "{part}: {detail}");
    }
    assert!(since_off(f, 1500) <= 60, "{all}");
    assert!(
        f.source.arguments["query"]
            .as_str()
            .unwrap()
            .contains("node_btrfs_global_rsv_size_bytes")
    );

    // Full of data, nothing unallocated: full, whatever the metadata holds.
    let f = found
        .iter()
        .find(|f| f.entity.host.as_deref() == Some("nas-b"))
        .unwrap();
    assert_eq!(f.severity, Severity::Critical, "{all}");
    assert!(f.what.starts_with("btrfs data full"), "{all}");
    assert_eq!(f.value.unwrap().value, 451936256.0);
    assert!(
        f.detail.as_deref().unwrap().contains("full for data"),
        "{all}"
    );

    // The pool without unused bytes: 200 GiB less 199.9 GiB of chunks; metadata at
    // (1.6 + 0.25) / 2 GiB since 30 minutes ago.
    let f = found
        .iter()
        .find(|f| f.entity.host.as_deref() == Some("nas-c"))
        .unwrap();
    assert_eq!(f.severity, Severity::Critical, "{all}");
    assert_eq!(f.entity.labels["label"], "pool");
    let detail = f.detail.as_deref().unwrap();
    assert!(
        detail.starts_with("92.5 % of metadata's chunks (RAID1)"),
        "{detail}"
    );
    assert!(
        detail.contains("a metadata chunk needs 2.0 GiB"),
        "{detail}"
    );
    assert!(detail.contains("-dusage=50 /srv/pool"), "{detail}");
    assert!(since_off(f, 1800) <= 60, "{all}");
}
