//! `near_limit`, `systemd_failed_units` and `stale_jobs` on captured real exporter output:
//! node_exporter with its systemd, processes and textfile collectors over a real systemd
//! manager (node_exporter_systemd.prom: a failed oneshot, a service at 19 of its 20 tasks,
//! a textfile written two days before), node_exporter and process-exporter of the build
//! machine, and the kubelet's volume stats, with incidents written into a few series.

use sre_agent::analyze::{Fact, Severity};

use super::world::{Capture, SeriesDef, World, lines, node_host, series, set};

const MINE: [&str; 3] = ["near_limit", "systemd_failed_units", "stale_jobs"];

fn mine(facts: &[Fact]) -> Vec<&Fact> {
    facts
        .iter()
        .filter(|f| MINE.contains(&f.analyzer.as_str()))
        .collect()
}

/// A host as the systemd capture saw it (`host:9100`, job `node`), two scrapes 15 s apart.
fn systemd_host(host: &str) -> Vec<SeriesDef> {
    Capture::load_pair(
        "node_exporter_systemd.prom",
        "node_exporter_systemd.after15s.prom",
        15.0,
    )
    .series(&format!("{host}:9100"), "node")
}

#[tokio::test]
async fn the_captured_systemd_host_reports_its_failed_unit_its_unit_at_the_task_limit_and_its_stale_backup()
 {
    let mut defs = systemd_host("ash-1");
    defs.extend(systemd_host("ash-2"));
    // On ash-2 web-cache.service failed 20 minutes ago.
    let failed_ago = 1200;
    for (state, before, after) in [("failed", 0.0, 1.0), ("active", 1.0, 0.0)] {
        set(
            &mut defs,
            "node_systemd_unit_state",
            &[
                ("instance", "ash-2:9100"),
                ("name", "web-cache.service"),
                ("state", state),
            ],
            move |_, ago| Some(if ago > failed_ago { before } else { after }),
        );
    }
    // A mount unit whose name carries systemd's `\x2d` escape failed 5 minutes ago on
    // ash-1: its query must name it exactly.
    let escaped = r"mnt-backup\x2ddisk.mount";
    defs.push(series(
        "node_systemd_unit_state",
        &[
            ("instance", "ash-1:9100"),
            ("job", "node"),
            ("name", escaped),
            ("state", "failed"),
            ("type", ""),
        ],
        |ago| Some(if ago > 300 { 0.0 } else { 1.0 }),
    ));
    let Some(world) = World::build(&defs, 7200, 15).await else {
        return;
    };
    let (facts, notes) = world.sweep(Some(600)).await;
    assert!(notes.is_empty(), "{notes:?}");
    let all = lines(&facts);
    eprintln!("{all}");
    let facts = mine(&facts);
    // Every fact's query shows exactly its one series.
    let client = world.client();
    for f in &facts {
        let q = f.source.arguments["query"].as_str().unwrap();
        let v = client.query_vector(q, None).await.expect(q);
        assert_eq!(v.len(), 1, "{q}");
    }
    let find = |analyzer: &str, name: &str, host: &str| {
        facts
            .iter()
            .find(|f| {
                f.analyzer == analyzer
                    && f.entity.name == name
                    && f.entity.host.as_deref() == Some(host)
            })
            .unwrap_or_else(|| panic!("{analyzer} {name} on {host}:\n{all}"))
    };
    // queue-consumer.service runs 19 tasks of its TasksMax=20 on both hosts: 95 %.
    for host in ["ash-1", "ash-2"] {
        let f = find("near_limit", "queue-consumer.service", host);
        assert_eq!(f.entity.kind, "unit");
        assert_eq!(f.severity, Severity::Critical, "{all}");
        assert!((f.value.unwrap().value - 95.0).abs() < 0.01, "{all}");
        assert_eq!(f.limit.unwrap().value, 20.0);
        assert_eq!(f.what, "node_systemd_unit_tasks_current at");
        let q = f.source.arguments["query"].as_str().unwrap();
        assert!(
            q.starts_with("100 * node_systemd_unit_tasks_current{")
                && q.contains("name=\"queue-consumer.service\"")
                && q.contains("/ node_systemd_unit_tasks_max{"),
            "{q}"
        );
    }
    // Nothing else the capture holds is near a limit (threads, file descriptors, tasks of
    // the other units).
    assert_eq!(
        facts.iter().filter(|f| f.analyzer == "near_limit").count(),
        2,
        "{all}"
    );
    // backup-nightly.service failed before the window on both: a warning since its start.
    for host in ["ash-1", "ash-2"] {
        let f = find("systemd_failed_units", "backup-nightly.service", host);
        assert_eq!(f.severity, Severity::Warning, "{all}");
        assert!(f.since.is_some(), "{all}");
    }
    // web-cache.service failed within the window: critical, since 20 minutes.
    let fresh = find("systemd_failed_units", "web-cache.service", "ash-2");
    assert_eq!(fresh.severity, Severity::Critical, "{all}");
    let ago = (chrono::Utc::now() - fresh.since.unwrap()).num_seconds();
    assert!((1100..=1300).contains(&ago), "{ago} s: {all}");
    let mount = find("systemd_failed_units", escaped, "ash-1");
    assert_eq!(mount.severity, Severity::Critical, "{all}");
    assert_eq!(
        facts
            .iter()
            .filter(|f| f.analyzer == "systemd_failed_units")
            .count(),
        4,
        "{all}"
    );
    // The textfile's last backup is from two days before the capture, and never changed: a
    // daily job assumed, overdue. The textfile's own mtime is not judged without history,
    // and the timer, triggering every 5 s, is on time.
    let stale: Vec<_> = facts
        .iter()
        .filter(|f| f.analyzer == "stale_jobs")
        .collect();
    assert_eq!(stale.len(), 2, "{all}");
    for f in stale {
        assert_eq!(f.entity.name, "backup nas", "{all}");
        assert_eq!(f.what, "no success for");
        assert!(f.value.unwrap().value > 2.0 * 86400.0, "{all}");
        assert_eq!(f.limit.unwrap().value, 86400.0);
    }
}

#[tokio::test]
async fn a_conntrack_table_filling_on_one_host_gets_its_rate_and_time_to_the_limit_among_decoys() {
    let mut defs = Vec::new();
    for h in ["elm-1", "elm-2", "elm-3"] {
        defs.extend(node_host(h));
    }
    // elm-2's conntrack table: 150 000 entries, then 3 000 more a minute for 30 minutes.
    set(
        &mut defs,
        "node_nf_conntrack_entries",
        &[("instance", "elm-2:9100")],
        |_, ago| {
            let rising = (1800 - ago).clamp(0, 1800) as f64;
            Some(150_000.0 + rising / 60.0 * 3000.0)
        },
    );
    // A decoy: process-exporter on elm-3 holds 17 000 of its 20 000 descriptors, steady.
    set(
        &mut defs,
        "process_open_fds",
        &[("instance", "elm-3:9256")],
        |_, _| Some(17_000.0),
    );
    // A PVC of the kubelet's capture, 96 % used and steady.
    let mut kubelet = Capture::load("kubelet_volume_stats.prom").series("elm-1:10250", "kubelet");
    let capacity = 1.0434699264e10;
    set(
        &mut kubelet,
        "kubelet_volume_stats_used_bytes",
        &[],
        move |_, _| Some(0.96 * capacity),
    );
    set(
        &mut kubelet,
        "kubelet_volume_stats_available_bytes",
        &[],
        move |_, _| Some(0.04 * capacity),
    );
    defs.extend(kubelet);
    // Odd data: no conntrack module on elm-3 (a limit of 0), a NaN on elm-1, a limit named
    // twice with two values (ambiguous: no share).
    set(
        &mut defs,
        "node_nf_conntrack_entries_limit",
        &[("instance", "elm-3:9100")],
        |_, _| Some(0.0),
    );
    set(
        &mut defs,
        "node_filefd_allocated",
        &[("instance", "elm-1:9100")],
        |_, _| Some(f64::NAN),
    );
    for (pool, limit) in [("a", 10.0), ("b", 12.0)] {
        defs.push(series(
            "worker_queue_max",
            &[("instance", "elm-1:9200"), ("job", "app"), ("pool", pool)],
            move |_| Some(limit),
        ));
    }
    defs.push(series(
        "worker_queue_length",
        &[("instance", "elm-1:9200"), ("job", "app")],
        |_| Some(11.0),
    ));
    // A pair by names whose "limit" is not one (900 against a maximum of 30 of something
    // else): thirty times a limit is no share of it.
    for (name, value) in [
        ("pool_connections_active", 900.0),
        ("pool_connections_max", 30.0),
    ] {
        defs.push(series(
            name,
            &[("instance", "elm-1:9200"), ("job", "app")],
            move |_| Some(value),
        ));
    }
    let Some(world) = World::build(&defs, 7200, 15).await else {
        return;
    };
    let (facts, notes) = world.sweep(Some(600)).await;
    assert!(notes.is_empty(), "{notes:?}");
    let all = lines(&facts);
    eprintln!("{all}");
    let near: Vec<_> = mine(&facts)
        .into_iter()
        .filter(|f| f.analyzer == "near_limit")
        .collect();
    assert_eq!(near.len(), 3, "{all}");
    // Each fact's query gives its share.
    let client = world.client();
    for f in &near {
        let q = f.source.arguments["query"].as_str().unwrap();
        let v = client.query_vector(q, None).await.expect(q);
        assert_eq!(v.len(), 1, "{q}");
        assert!(
            (v[0].value - f.value.unwrap().value).abs() < 1.0,
            "{q}: {all}"
        );
    }
    let conntrack = near
        .iter()
        .find(|f| f.what == "node_nf_conntrack_entries at")
        .expect(&all);
    assert_eq!(conntrack.entity.kind, "host");
    assert_eq!(conntrack.entity.name, "elm-2");
    // 240 000 of 262 144: 91.6 %, rising 3 000 a minute, full in about 7 minutes.
    assert!(
        (conntrack.value.unwrap().value - 91.55).abs() < 0.2,
        "{all}"
    );
    assert_eq!(conntrack.limit.unwrap().value, 262_144.0);
    assert_eq!(conntrack.severity, Severity::Critical, "{all}");
    let per_hour = conntrack.rate.unwrap().change.value;
    assert!((150_000.0..=210_000.0).contains(&per_hour), "{all}");
    let eta = conntrack.eta_seconds.expect("an ETA");
    assert!((300.0..=600.0).contains(&eta), "{eta}: {all}");
    // The share crossed 80 % about 10 minutes ago.
    let since = (chrono::Utc::now() - conntrack.since.expect("since")).num_seconds();
    assert!((420..=840).contains(&since), "{since}: {all}");
    let fds = near
        .iter()
        .find(|f| f.what == "process_open_fds at")
        .expect(&all);
    assert_eq!(
        (fds.entity.kind.as_str(), fds.entity.name.as_str()),
        ("process", "elm-3:9256")
    );
    assert_eq!(fds.entity.host.as_deref(), Some("elm-3"));
    assert_eq!(fds.severity, Severity::Warning);
    assert!(fds.rate.is_none() && fds.eta_seconds.is_none(), "{all}");
    let pvc = near.iter().find(|f| f.entity.kind == "pvc").expect(&all);
    assert_eq!(pvc.entity.name, "testns/testpvc");
    assert_eq!(pvc.what, "kubelet_volume_stats_used_bytes at");
    assert!((pvc.value.unwrap().value - 96.0).abs() < 0.01, "{all}");
    assert_eq!(pvc.severity, Severity::Critical);
}

#[tokio::test]
async fn a_job_that_stopped_succeeding_is_overdue_by_its_own_learned_interval_and_others_are_not() {
    let mut defs = node_host("oak-1");
    defs.extend(node_host("oak-2"));
    let now = chrono::Utc::now().timestamp();
    // The last success at the last full hour `ago` seconds back, ran hourly until
    // `stopped` seconds ago.
    let hourly = move |stopped: i64| {
        move |ago: i64| {
            let t = now - ago.max(stopped);
            Some((t - t.rem_euclid(3600)) as f64)
        }
    };
    let backup = [
        ("instance", "oak-1:9100"),
        ("job", "node"),
        ("target", "nas"),
    ];
    defs.push(series(
        "backup_last_success_timestamp_seconds",
        &backup,
        hourly(5 * 3600),
    ));
    defs.push(series(
        "backup_last_success_timestamp_seconds",
        &[
            ("instance", "oak-2:9100"),
            ("job", "node"),
            ("target", "nas"),
        ],
        hourly(0),
    ));
    // A CronJob every 30 minutes, last 40 minutes ago: on time.
    let ksm = [
        ("instance", "ksm:8080"),
        ("job", "kube-state-metrics"),
        ("namespace", "shop"),
    ];
    let mut report = ksm.to_vec();
    report.push(("cronjob", "report"));
    defs.push(series(
        "kube_cronjob_status_last_successful_time",
        &report,
        move |ago| {
            let t = now - ago - 600;
            Some((t - t.rem_euclid(1800)) as f64)
        },
    ));
    // A suspended CronJob whose last success is ten days old.
    let mut old = ksm.to_vec();
    old.push(("cronjob", "old-export"));
    defs.push(series(
        "kube_cronjob_status_last_successful_time",
        &old,
        move |_| Some((now - 10 * 86400) as f64),
    ));
    defs.push(series("kube_cronjob_spec_suspend", &old, |_| Some(1.0)));
    // Not runs: a reload time, a duration, a textfile written once.
    defs.push(series(
        "prometheus_config_last_reload_success_timestamp_seconds",
        &[("instance", "prom:9090"), ("job", "prometheus")],
        move |_| Some((now - 5 * 86400) as f64),
    ));
    defs.push(series(
        "etl_last_run_duration_seconds",
        &[("instance", "oak-2:9100"), ("job", "node")],
        |_| Some(35.0),
    ));
    defs.push(series(
        "node_textfile_mtime_seconds",
        &[
            ("instance", "oak-2:9100"),
            ("job", "node"),
            ("file", "/var/lib/prometheus/node-exporter/role.prom"),
        ],
        move |_| Some((now - 10 * 86400) as f64),
    ));
    let Some(world) = World::build(&defs, 8 * 3600, 60).await else {
        return;
    };
    let (facts, notes) = world.sweep(Some(600)).await;
    assert!(notes.is_empty(), "{notes:?}");
    let all = lines(&facts);
    eprintln!("{all}");
    let stale: Vec<_> = facts
        .iter()
        .filter(|f| f.analyzer == "stale_jobs")
        .collect();
    assert_eq!(stale.len(), 1, "{all}");
    let f = stale[0];
    assert_eq!(
        (f.entity.kind.as_str(), f.entity.name.as_str()),
        ("job", "backup nas")
    );
    assert_eq!(f.entity.host.as_deref(), Some("oak-1"));
    assert_eq!(f.limit.unwrap().value, 3600.0, "learned hourly: {all}");
    // Last success at the hour before 5 h ago: 5 to 6 hours old, beyond 3 intervals.
    let age = f.value.unwrap().value;
    assert!((5.0 * 3600.0..=6.0 * 3600.0 + 60.0).contains(&age), "{all}");
    assert_eq!(f.severity, Severity::Critical);
    let due = (chrono::Utc::now() - f.since.unwrap()).num_seconds() as f64;
    assert!(
        (age - 3600.0 - due).abs() < 120.0,
        "due an interval after the last run: {all}"
    );
    let q = f.source.arguments["query"].as_str().unwrap();
    assert_eq!(
        q,
        "time() - backup_last_success_timestamp_seconds{instance=\"oak-1:9100\",job=\"node\",target=\"nas\"}"
    );
}
