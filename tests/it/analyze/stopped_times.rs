//! `stopped_times` on captured real exporter output with a realistic history of the times
//! they hold (clocks read every scrape, a Go runtime's garbage collections, a TSDB's head
//! compactions, timers, textfiles rewritten on their cadence, a worker that restarted every
//! ten minutes and then stopped restarting, a certificate's not-after), with two times
//! written into it that stopped advancing while their peers go on: a pushed job's last push
//! (sparse) and a node's lease (renewed every few seconds, read at fine resolution).

use std::collections::BTreeMap;

use sre_agent::analyze::Severity;

use super::world::{Capture, SeriesDef, World, calm_hosts, lines, series, set};

/// A time written every `every` seconds, `lag` seconds after the event it records, until
/// `stopped` seconds ago (`now` the world's Unix time), as a function of seconds ago.
fn tick(now: f64, every: f64, lag: f64, stopped: i64) -> impl Fn(i64) -> Option<f64> + Clone {
    move |ago| {
        let t = now - ago.max(stopped) as f64 - lag;
        Some(t - t.rem_euclid(every))
    }
}

/// [`tick`] for [`set`].
fn cadence(
    now: f64,
    every: f64,
    lag: f64,
    stopped: i64,
) -> impl Fn(&BTreeMap<String, String>, i64) -> Option<f64> + Clone + 'static {
    let f = tick(now, every, lag, stopped);
    move |_, ago| f(ago)
}

/// The series of the captured monitoring host: Prometheus and Alertmanager scraping
/// themselves (one scrape each: their gauges hold), and blackbox's TLS probe.
fn monitoring_host(now: f64) -> Vec<SeriesDef> {
    let mut defs = Capture::load("prometheus_self.prom").series("mon-1:9090", "prometheus");
    defs.extend(Capture::load("alertmanager_self.prom").series("mon-1:9093", "alertmanager"));
    defs.extend(
        Capture::load("blackbox_https_selfsigned.prom").series("https://mon-1/", "blackbox"),
    );
    // The head's newest sample follows the clock; its oldest moves on every two hours, an
    // hour behind (when the head is compacted); each Go runtime collects every 2 minutes.
    for name in [
        "prometheus_tsdb_head_max_time_seconds",
        "prometheus_remote_storage_highest_timestamp_in_seconds",
    ] {
        set(&mut defs, name, &[], cadence(now, 15.0, 0.0, 0));
    }
    set(
        &mut defs,
        "prometheus_tsdb_head_min_time_seconds",
        &[],
        cadence(now, 7200.0, 3600.0, 0),
    );
    set(
        &mut defs,
        "go_memstats_last_gc_time_seconds",
        &[],
        cadence(now, 120.0, 0.0, 0),
    );
    defs
}

/// A host as the systemd capture saw it: its timer triggers every 5 s (a clock at these
/// reads), its textfile is rewritten every 10 minutes, and its flaky worker restarted
/// every 10 minutes until three hours ago (then it stayed up: not a stopped time).
fn systemd_host(host: &str, now: f64) -> Vec<SeriesDef> {
    let mut defs = Capture::load_pair(
        "node_exporter_systemd.prom",
        "node_exporter_systemd.after15s.prom",
        15.0,
    )
    .series(&format!("{host}:9100"), "node");
    set(
        &mut defs,
        "node_textfile_mtime_seconds",
        &[],
        cadence(now, 600.0, 0.0, 0),
    );
    set(
        &mut defs,
        "backup_last_success_timestamp_seconds",
        &[],
        cadence(now, 600.0, 30.0, 0),
    );
    set(
        &mut defs,
        "node_systemd_unit_start_time_seconds",
        &[("name", "flaky-worker.service")],
        cadence(now, 600.0, 0.0, 3 * 3600),
    );
    set(
        &mut defs,
        "go_memstats_last_gc_time_seconds",
        &[],
        cadence(now, 120.0, 0.0, 0),
    );
    defs
}

#[tokio::test]
async fn a_pushed_time_and_a_lease_that_stopped_while_their_peers_advance_are_overdue_and_the_captured_exporters_times_are_not()
 {
    let now = chrono::Utc::now().timestamp() as f64;
    let mut defs = calm_hosts(&["fir-1", "fir-2"]);
    for h in ["fir-1", "fir-2"] {
        set(
            &mut defs,
            "go_memstats_last_gc_time_seconds",
            &[("instance", &format!("{h}:9256"))],
            cadence(now, 120.0, 0.0, 0),
        );
    }
    defs.extend(systemd_host("fir-3", now));
    defs.extend(monitoring_host(now));
    // A push gateway: three jobs push every 5 minutes; index-compact's last push was 90
    // minutes ago. None ever failed (0: no time).
    let gateway = |group: &'static str| {
        [
            ("instance", "gw-1:9091"),
            ("job", "pushgateway"),
            ("exported_job", group),
        ]
    };
    for (group, stopped) in [
        ("feed-sync", 0),
        ("index-compact", 5400),
        ("geo-refresh", 0),
    ] {
        defs.push(series(
            "push_time_seconds",
            &gateway(group),
            tick(now, 300.0, 2.0, stopped),
        ));
        defs.push(series("push_failure_time_seconds", &gateway(group), |_| {
            Some(0.0)
        }));
    }
    // kube-state-metrics: three nodes renew their lease every 10 s; kw-2 stopped 25
    // minutes ago. A CronJob scheduled hourly is on time; a suspended one stopped.
    for (node, stopped) in [("kw-1", 0), ("kw-2", 1500), ("kw-3", 0)] {
        defs.push(series(
            "kube_lease_renew_time",
            &[
                ("instance", "ksm:8080"),
                ("job", "kube-state-metrics"),
                ("namespace", "kube-node-lease"),
                ("lease", node),
                ("lease_holder", node),
                ("lease_owner_kind", "Node"),
                ("lease_owner_name", node),
            ],
            tick(now, 10.0, 0.0, stopped),
        ));
    }
    for (cronjob, stopped) in [("rollup", 0), ("purge", 4 * 3600)] {
        let labels = [
            ("instance", "ksm:8080"),
            ("job", "kube-state-metrics"),
            ("namespace", "stats"),
            ("cronjob", cronjob),
        ];
        defs.push(series(
            "kube_cronjob_status_last_schedule_time",
            &labels,
            tick(now, 1800.0, 0.0, stopped),
        ));
        let suspended = if stopped > 0 { 1.0 } else { 0.0 };
        defs.push(series("kube_cronjob_spec_suspend", &labels, move |_| {
            Some(suspended)
        }));
    }
    let Some(world) = World::build(&defs, 8 * 3600, 15).await else {
        return;
    };
    let (facts, notes) = world.sweep(Some(600)).await;
    assert!(notes.is_empty(), "{notes:?}");
    let all = lines(&facts);
    eprintln!("{all}");
    let stopped: Vec<_> = facts
        .iter()
        .filter(|f| f.analyzer == "stopped_times")
        .collect();
    assert_eq!(stopped.len(), 2, "{all}");
    // Each fact's query gives the seconds since the time it names.
    let client = world.client();
    for f in &stopped {
        let q = f.source.arguments["query"].as_str().unwrap();
        let v = client.query_vector(q, None).await.expect(q);
        assert_eq!(v.len(), 1, "{q}");
        assert!(
            (v[0].value - f.value.unwrap().value).abs() < 60.0,
            "{q}: {all}"
        );
        assert_eq!(f.what, "not advanced for");
        assert_eq!(f.entity.kind, "timestamp");
    }
    let find = |name: &str| {
        stopped
            .iter()
            .find(|f| f.entity.name == name)
            .unwrap_or_else(|| panic!("{name}:\n{all}"))
    };
    let push = find("push_time_seconds{exported_job=index-compact}");
    assert_eq!(push.entity.host.as_deref(), Some("gw-1"));
    // The last push at the 5 minutes before 90 minutes ago.
    let age = push.value.unwrap().value;
    assert!((5400.0..=5400.0 + 320.0).contains(&age), "{all}");
    let since = (chrono::Utc::now() - push.since.unwrap()).num_seconds() as f64;
    assert!((since - age).abs() < 60.0, "{all}");
    let detail = push.detail.as_deref().unwrap();
    assert!(detail.contains("usually advances every 5 min"), "{detail}");
    assert!(
        detail.contains("2 of 2 peers still advance")
            && detail.contains("exported_job=feed-sync")
            && detail.contains("exported_job=geo-refresh"),
        "{detail}"
    );
    assert_eq!(push.severity, Severity::Critical, "{all}");
    let lease = find("kube_lease_renew_time{lease=kw-2,lease_holder=kw-2,lease_owner_name=kw-2}");
    let age = lease.value.unwrap().value;
    assert!((1500.0..=1600.0).contains(&age), "{all}");
    // Renewed every 10 s, read every 15 s: the fine read tells seconds, not the coarse
    // step's minutes.
    let detail = lease.detail.as_deref().unwrap();
    let every: f64 = detail
        .strip_prefix("usually advances every ")
        .and_then(|d| d.split(" s").next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{detail}"));
    assert!((10.0..=30.0).contains(&every), "{detail}");
    assert!(detail.contains("2 of 2 peers still advance"), "{detail}");
    assert_eq!(lease.severity, Severity::Critical, "{all}");
}
