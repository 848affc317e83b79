//! Three failure classes on a real Prometheus: a filesystem that became full whatever
//! its type (a tmpfs render cache at 0 bytes, beside a disk flat at 97 % and mounts that
//! are full by design), a scrape target whose series exploded (and the head of the
//! Prometheus scraping it with it), and an age that keeps growing (a transaction left
//! idle in transaction, as postgres_exporter reports it, beside a nightly sawtooth and an
//! age older than the look-back).

use sre_agent::analyze::{Fact, Focus, Severity, rank};

use super::world::{SeriesDef, World, lines, of, series, since_off};

const GIB: f64 = 1024.0 * 1024.0 * 1024.0;
const MIB: f64 = 1024.0 * 1024.0;

fn mount(
    mountpoint: &str,
    fstype: &str,
    size: f64,
    readonly: f64,
    avail: impl Fn(i64) -> Option<f64> + 'static,
) -> Vec<SeriesDef> {
    let labels = [
        ("instance", "loom-3:9100"),
        ("job", "node"),
        ("mountpoint", mountpoint),
        ("fstype", fstype),
        ("device", fstype),
    ];
    vec![
        series("node_filesystem_size_bytes", &labels, move |_| Some(size)),
        series("node_filesystem_readonly", &labels, move |_| Some(readonly)),
        series("node_filesystem_avail_bytes", &labels, avail),
    ]
}

#[tokio::test]
async fn a_tmpfs_that_filled_is_full_and_leads_a_flat_disk_while_mounts_full_by_design_are_not() {
    let mut defs = Vec::new();
    // A 2 GiB tmpfs: 1.5 GiB free until 50 min ago, falling 50 MiB a minute since, empty
    // from 20 min ago.
    defs.extend(mount("/var/cache/render", "tmpfs", 2.0 * GIB, 0.0, |ago| {
        let falling = (3000 - ago).max(0) as f64 / 60.0 * 50.0 * MIB;
        Some((1.5 * GIB - falling).max(0.0))
    }));
    // A disk 97 % used, flat for the day.
    defs.extend(mount("/data", "ext4", 4000.0 * GIB, 0.0, |_| {
        Some(120.0 * GIB)
    }));
    // Full by design: a snap's squashfs, a read-only overlay, a credentials ramfs.
    defs.extend(mount(
        "/snap/core22/1380",
        "squashfs",
        77.0 * MIB,
        1.0,
        |_| Some(0.0),
    ));
    defs.extend(mount("/mnt/lower", "overlay", 10.0 * GIB, 1.0, |ago| {
        Some(if ago > 3600 { 2.0 * GIB } else { 0.0 })
    }));
    defs.extend(mount(
        "/run/credentials/getty@tty1.service",
        "ramfs",
        MIB,
        0.0,
        |ago| Some(if ago > 3600 { MIB } else { 0.0 }),
    ));
    // A tmpfs full all day: a standing state, not news.
    defs.extend(mount("/dev/shm", "tmpfs", 64.0 * MIB, 0.0, |_| Some(0.0)));
    let Some(world) = World::build(&defs, 86400 + 3600, 60).await else {
        return;
    };
    let (facts, _) = world.sweep(None).await;
    let all = lines(&facts);
    let full: Vec<Fact> = of(&facts, "filesystem_space")
        .into_iter()
        .filter(|f| f.what.starts_with("full"))
        .collect();
    assert_eq!(full.len(), 1, "{all}");
    let f = &full[0];
    assert_eq!(f.entity.name, "/var/cache/render", "{all}");
    assert_eq!(f.severity, Severity::Critical);
    assert!(since_off(f, 1200) <= 120, "{all}");
    let detail = f.detail.as_deref().unwrap_or_default();
    assert!(
        detail.contains("0 B space free of 2.0 GiB (tmpfs)"),
        "{all}"
    );
    // 50 MiB a minute.
    assert!(detail.contains("filled at 2.9 GiB per hour"), "{all}");
    // One fact for it: not the use thresholds' too.
    let render: Vec<&Fact> = facts
        .iter()
        .filter(|x| x.analyzer == "filesystem_space" && x.entity.name == "/var/cache/render")
        .collect();
    assert_eq!(render.len(), 1, "{all}");
    // The flat disk is still told, and ranks below the full tmpfs.
    let question = Focus::question("renders on loom-3 fail since this afternoon");
    let ranked = rank(of(&facts, "filesystem_space"), &question);
    let order: Vec<&str> = ranked.iter().map(|r| r.fact.entity.name.as_str()).collect();
    let pos = |n: &str| order.iter().position(|x| *x == n);
    assert!(pos("/data").is_some(), "{all}");
    assert!(pos("/var/cache/render") < pos("/data"), "{order:?}");
}

#[tokio::test]
async fn a_target_whose_samples_exploded_is_told_with_the_head_that_grew_with_it() {
    let target = |job: &'static str, instance: &'static str, before: f64, after: f64| {
        series(
            "scrape_samples_scraped",
            &[("job", job), ("instance", instance)],
            move |ago| Some(if ago > 3 * 3600 { before } else { after }),
        )
    };
    let defs = vec![
        // An application that began labelling by user id 3 h ago.
        target("orders-api", "shop-2:8080", 2100.0, 480_000.0),
        // node_exporter, steady; a tiny target that tripled.
        target("node", "shop-2:9100", 1300.0, 1310.0),
        target("pushgw", "mon-1:9091", 900.0, 2800.0),
        series(
            "prometheus_tsdb_head_series",
            &[("job", "prometheus"), ("instance", "mon-1:9090")],
            |ago| {
                Some(if ago > 3 * 3600 - 300 {
                    300_000.0
                } else {
                    2_100_000.0
                })
            },
        ),
    ];
    let Some(world) = World::build(&defs, 86400, 60).await else {
        return;
    };
    let (facts, _) = world.sweep(Some(3600)).await;
    let all = lines(&facts);
    let found = of(&facts, "scrape_series");
    assert_eq!(found.len(), 1, "{all}");
    let f = &found[0];
    assert_eq!(f.entity.name, "shop-2:8080");
    assert_eq!(f.entity.host.as_deref(), Some("shop-2"));
    assert_eq!(f.severity, Severity::Critical);
    assert!(since_off(f, 3 * 3600) <= 300, "{all}");
    let detail = f.detail.as_deref().unwrap_or_default();
    assert!(
        detail.contains("from 2100 to 480000 samples per scrape (job orders-api)"),
        "{all}"
    );
    assert!(
        detail.contains("prometheus_tsdb_head_series of mon-1:9090 rose from 300000 to 2100000"),
        "{all}"
    );
}

#[tokio::test]
async fn a_transaction_left_open_is_told_from_when_it_began_and_a_sawtooth_is_not() {
    let mut defs = Vec::new();
    let began = 26 * 3600;
    // postgres_exporter: every database × state, 0 where no transaction is open.
    for db in ["ledgerdb", "postgres"] {
        for state in ["active", "idle", "idle in transaction"] {
            let open = db == "ledgerdb" && state == "idle in transaction";
            let labels = [
                ("instance", "vault-db:9187"),
                ("job", "postgres"),
                ("datname", db),
                ("state", state),
            ];
            defs.push(series(
                "pg_stat_activity_max_tx_duration",
                &labels,
                move |ago| {
                    Some(if open && ago <= began {
                        (began - ago) as f64
                    } else {
                        0.0
                    })
                },
            ));
        }
    }
    // A nightly backup's time since success: resets every day, now 20 h.
    defs.push(series(
        "backup_time_since_last_success_seconds",
        &[("instance", "vault-db:9100"), ("job", "node")],
        |ago| Some(((86400 * 4 + 20 * 3600 - ago) % 86400) as f64),
    ));
    // An age older than the look-back: climbing all along.
    defs.push(series(
        "app_connection_age_seconds",
        &[("instance", "vault-db:9300"), ("job", "app")],
        |ago| Some(5.0e6 - ago as f64),
    ));
    let Some(world) = World::build(&defs, 3 * 86400, 300).await else {
        return;
    };
    let (facts, _) = world.sweep(Some(3600)).await;
    let all = lines(&facts);
    let ages = of(&facts, "ages");
    assert_eq!(ages.len(), 1, "{all}");
    let f = &ages[0];
    assert_eq!(f.entity.name, "pg_stat_activity_max_tx_duration");
    assert_eq!(f.entity.host.as_deref(), Some("vault-db"));
    assert_eq!(f.entity.labels["state"], "idle in transaction");
    assert_eq!(f.entity.labels["datname"], "ledgerdb");
    assert!(since_off(f, began) <= 600, "{all}");
    let age = f.value.expect("an age").value;
    assert!((age - began as f64).abs() <= 600.0, "{all}");
    assert!(
        f.detail
            .as_deref()
            .is_some_and(|d| d.contains("datname=ledgerdb,state=idle in transaction")),
        "{all}"
    );
}
