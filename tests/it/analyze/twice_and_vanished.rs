//! Two failure classes on a real Prometheus: a target scraped by a second job (its series
//! twice, the rules joining on its instance failing), beside two blackbox modules rightly
//! probing one URL; and a filesystem that vanished (a disk that did not mount after a
//! reboot) beside mounts that come and go, a pseudo filesystem, a read-only image, and a
//! host whose exporter stopped.

use chrono::Utc;
use sre_agent::analyze::Severity;

use super::captured::target;
use super::world::{Capture, SeriesDef, World, lines, of, series, set, since_off};

const GIB: f64 = 1024.0 * 1024.0 * 1024.0;

fn up(instance: &str, job: &str, value: impl Fn(i64) -> Option<f64> + 'static) -> SeriesDef {
    series("up", &[("instance", instance), ("job", job)], value)
}

/// The captured node_exporter as `instance` scraped by `job`, its samples only while
/// `scraped(seconds ago)`.
fn node(instance: &str, job: &str, scraped: fn(i64) -> bool) -> Vec<SeriesDef> {
    let capture = Capture::load_pair("node_exporter.prom", "node_exporter.after15s.prom", 15.0);
    let mut defs = capture.series(instance, job);
    only_while(&mut defs, scraped);
    defs
}

/// Every series of `defs` without samples when `scraped(seconds ago)` is false.
fn only_while(defs: &mut [SeriesDef], scraped: fn(i64) -> bool) {
    for d in defs {
        let f = std::mem::replace(&mut d.value, Box::new(|_| None));
        d.value = Box::new(move |ago| if scraped(ago) { f(ago) } else { None });
    }
}

#[tokio::test]
async fn a_target_scraped_by_a_second_job_is_told_with_both_jobs_and_since_the_second_began() {
    let mut defs = Vec::new();
    // db-7's node_exporter: scraped by job node all along, and by a second scrape config
    // (job node_exporter) for the last two hours.
    defs.extend(node("db-7:9100", "node", |_| true));
    defs.extend(node("db-7:9100", "node_exporter", |ago| ago <= 7200));
    defs.push(up("db-7:9100", "node", |_| Some(1.0)));
    defs.push(up("db-7:9100", "node_exporter", |ago| {
        (ago <= 7200).then_some(1.0)
    }));
    // Another host, scraped once.
    defs.extend(node("db-8:9100", "node", |_| true));
    defs.push(up("db-8:9100", "node", |_| Some(1.0)));
    // One URL probed by two blackbox modules: two jobs, one instance, different series.
    let url = "https://shop.example.net/health";
    defs.extend(target(
        &[("instance", url), ("job", "blackbox_http")],
        vec![(Box::new(|_| true), "blackbox_http_200.prom")],
    ));
    defs.extend(target(
        &[("instance", url), ("job", "blackbox_tcp")],
        vec![(Box::new(|_| true), "blackbox_tcp_refused.prom")],
    ));
    defs.push(up(url, "blackbox_http", |_| Some(1.0)));
    defs.push(up(url, "blackbox_tcp", |_| Some(1.0)));
    // A job renamed five hours ago: the old one's target stopped as the new one began.
    defs.push(up("mon-1:9090", "prom", |ago| {
        (ago > 5 * 3600).then_some(1.0)
    }));
    defs.push(up("mon-1:9090", "prometheus", |ago| {
        (ago <= 5 * 3600).then_some(1.0)
    }));
    // The rule joining on instance fails each evaluation since the second job began.
    defs.push(series(
        "prometheus_rule_evaluation_failures_total",
        &[
            ("instance", "mon-1:9090"),
            ("job", "prometheus"),
            (
                "rule_group",
                "/etc/prometheus/rules/node.yml;node-recording",
            ),
        ],
        |ago| Some((7200 - ago).max(0) as f64 / 15.0),
    ));
    let Some(world) = World::build(&defs, 6 * 3600, 60).await else {
        return;
    };
    let (facts, notes) = world.sweep(Some(1800)).await;
    let all = lines(&facts);
    assert!(notes.is_empty(), "{notes:?}");
    let twice = of(&facts, "scraped_twice");
    assert_eq!(twice.len(), 1, "{all}");
    let f = &twice[0];
    assert_eq!(f.entity.name, "db-7:9100");
    assert_eq!(f.entity.host.as_deref(), Some("db-7"));
    assert_eq!(f.what, "scraped by 2 jobs at once: node, node_exporter");
    assert_eq!(f.severity, Severity::Warning);
    assert!(since_off(f, 7200) <= 120, "{all}");
    let detail = f.detail.as_deref().unwrap_or_default();
    assert!(
        detail.contains("job node_exporter began scraping it at"),
        "{all}"
    );
    assert!(detail.contains("many-to-many"), "{all}");
    assert!(
        detail.contains("rule evaluations failed") && detail.contains("node-recording"),
        "{all}"
    );
    let query = f.source.arguments["query"].as_str().unwrap_or_default();
    assert_eq!(query, r#"count by (job) (up{instance="db-7:9100"})"#);
}

/// A filesystem of `instance` (job node) present while `present(seconds ago)`.
fn mount(
    instance: &str,
    (mountpoint, device, fstype): (&str, &str, &str),
    size: f64,
    readonly: f64,
    present: fn(i64) -> bool,
) -> Vec<SeriesDef> {
    let labels = [
        ("instance", instance),
        ("job", "node"),
        ("mountpoint", mountpoint),
        ("device", device),
        ("fstype", fstype),
    ];
    let at = move |v: f64| move |ago: i64| present(ago).then_some(v);
    vec![
        series("node_filesystem_size_bytes", &labels, at(size)),
        series("node_filesystem_avail_bytes", &labels, at(size / 3.0)),
        series("node_filesystem_readonly", &labels, at(readonly)),
    ]
}

/// When vault-2 went down for its reboot, and came back (seconds ago).
const DOWN: i64 = 3 * 3600;
const BACK: i64 = DOWN - 180;

#[tokio::test]
async fn a_disk_that_did_not_mount_after_a_reboot_vanished_and_mounts_that_come_and_go_did_not() {
    let mut defs = node("vault-2:9100", "node", |_| true);
    let booted = Utc::now().timestamp() - BACK + 40;
    set(
        &mut defs,
        "node_boot_time_seconds",
        &[("instance", "vault-2:9100")],
        move |_, ago| Some(if ago > DOWN { 1.79e9 } else { booted as f64 }),
    );
    // The backup disk, mounted until the reboot.
    let v2 = "vault-2:9100";
    defs.extend(mount(
        v2,
        ("/srv/backup", "/dev/sdb1", "ext4"),
        3.6 * 1024.0 * GIB,
        0.0,
        |ago| ago > DOWN,
    ));
    // A snapshot mounted for an hour every four, now unmounted: it comes and goes.
    defs.extend(mount(
        v2,
        ("/mnt/snap", "/dev/mapper/vg-snap", "xfs"),
        50.0 * GIB,
        0.0,
        |ago| ago > 1800 && ago % 14_400 < 3600,
    ));
    // A user's runtime tmpfs and a read-only image, gone with the reboot: not disks.
    defs.extend(mount(
        v2,
        ("/run/user/1000", "tmpfs", "tmpfs"),
        GIB,
        0.0,
        |ago| ago > DOWN,
    ));
    defs.extend(mount(
        v2,
        ("/mnt/image", "/dev/loop3", "ext4"),
        2.0 * GIB,
        1.0,
        |ago| ago > DOWN,
    ));
    // The whole host down for the reboot.
    only_while(&mut defs, |ago| !(BACK..=DOWN).contains(&ago));
    // A host whose exporter stopped an hour ago: everything gone, nothing vanished.
    for m in [("/", "/dev/sda1", "ext4"), ("/data", "/dev/sdb1", "xfs")] {
        defs.extend(mount("vault-3:9100", m, 100.0 * GIB, 0.0, |ago| ago > 3600));
    }
    // A smaller disk unmounted by hand five hours ago, the host up throughout.
    defs.extend(mount(
        "vault-4:9100",
        ("/", "/dev/sda1", "ext4"),
        100.0 * GIB,
        0.0,
        |_| true,
    ));
    defs.extend(mount(
        "vault-4:9100",
        ("/data2", "/dev/sdc1", "ext4"),
        10.0 * GIB,
        0.0,
        |ago| ago > 5 * 3600,
    ));
    let Some(world) = World::build(&defs, 8 * 3600, 60).await else {
        return;
    };
    let (facts, notes) = world.sweep(Some(1800)).await;
    let all = lines(&facts);
    assert!(notes.is_empty(), "{notes:?}");
    let gone = of(&facts, "filesystem_vanished");
    let names: Vec<(&str, Option<&str>)> = gone
        .iter()
        .map(|f| (f.entity.name.as_str(), f.entity.host.as_deref()))
        .collect();
    assert_eq!(names.len(), 2, "{all}");
    let backup = gone
        .iter()
        .find(|f| f.entity.name == "/srv/backup")
        .expect(&all);
    assert_eq!(backup.entity.host.as_deref(), Some("vault-2"));
    assert_eq!(backup.what, "not mounted any more");
    // Larger than every filesystem the host has now.
    assert_eq!(backup.severity, Severity::Critical);
    assert!(since_off(backup, DOWN) <= 120, "{all}");
    let detail = backup.detail.as_deref().unwrap_or_default();
    assert!(detail.contains("/dev/sdb1 (ext4, 3.6 TiB)"), "{all}");
    let boot = chrono::DateTime::from_timestamp(booted, 0).unwrap();
    assert!(
        detail.contains(&format!(
            "the host rebooted at {} and it did not come back",
            boot.format("%Y-%m-%d %H:%M UTC")
        )),
        "{all}"
    );
    let data2 = gone.iter().find(|f| f.entity.name == "/data2").expect(&all);
    assert_eq!(data2.entity.host.as_deref(), Some("vault-4"));
    assert_eq!(data2.severity, Severity::Warning);
    assert!(since_off(data2, 5 * 3600) <= 120, "{all}");
    let detail = data2.detail.as_deref().unwrap_or_default();
    assert!(!detail.contains("rebooted"), "{all}");
    let query = data2.source.arguments["query"].as_str().unwrap_or_default();
    assert!(
        query.contains(r#"{instance="vault-4:9100",mountpoint="/data2"}"#),
        "{query}"
    );
}
