//! The step detector on captured real node_exporter and process-exporter output: of the
//! thousands of series of two calm hosts, the one that stepped on the alerting host is
//! reported (a filesystem remounted read-only, whatever the metric is called), and the
//! other host, where nothing changed, adds nothing.

use chrono::{TimeDelta, Utc};
use sre_agent::analyze::{Focus, Scope, Severity, Sweep};

use super::world::{World, calm_hosts, lines, series, set};

#[tokio::test]
async fn of_two_calm_captured_hosts_only_the_alerting_hosts_step_is_reported() {
    let mut defs = calm_hosts(&["oak-1", "oak-2"]);
    // oak-1's root filesystem went read-only 20 minutes ago.
    set(
        &mut defs,
        "node_filesystem_readonly",
        &[("instance", "oak-1:9100"), ("mountpoint", "/")],
        |_, ago| Some(if ago <= 1200 { 1.0 } else { 0.0 }),
    );
    let Some(world) = World::build(&defs, 4 * 3600, 60).await else {
        return;
    };
    let now = Utc::now();
    let started = now - TimeDelta::minutes(15);
    let labels = [("instance".to_string(), "oak-1:9100".to_string())]
        .into_iter()
        .collect();
    let scope = Scope::new(now, Some(started)).with_focus(Focus::alert(&labels, Some(started)));
    let sweep = Sweep::of(sre_agent::analyze::prom::analyzers(world.client()));
    let report = sweep.run(scope).await;
    assert!(report.notes.is_empty(), "{:?}", report.notes);
    let facts: Vec<_> = report
        .facts
        .into_iter()
        .filter(|f| f.analyzer == "steps")
        .collect();
    let all = lines(&facts);
    eprintln!("{all}");
    let readonly = facts
        .iter()
        .find(|f| f.entity.name == "node_filesystem_readonly")
        .expect(&all);
    assert_eq!(readonly.entity.host.as_deref(), Some("oak-1"), "{all}");
    assert_eq!(readonly.severity, Severity::Warning);
    assert!(readonly.line(now).contains("mountpoint=/"), "{all}");
    // The capture's steady counters and constant gauges are not steps, on either host.
    assert!(
        facts
            .iter()
            .all(|f| f.entity.name == "node_filesystem_readonly"),
        "{all}"
    );
}

#[tokio::test]
async fn a_disk_whose_error_count_climbs_while_its_peers_stay_at_zero_stands_out_among_captured_hosts()
 {
    let mut defs = calm_hosts(&["elm-1", "elm-2"]);
    // A SMART exporter on elm-2: four disks' reallocated sectors and hours powered on; sdb
    // has been climbing steadily (no step), the others are at zero; every disk's hours rise.
    for (disk, hours) in [
        ("sda", 9000.0),
        ("sdb", 21000.0),
        ("sdc", 400.0),
        ("sdd", 15000.0),
    ] {
        let labels = |id: &'static str, attribute: &'static str| {
            vec![
                ("instance", "elm-2:9633"),
                ("job", "smart"),
                ("device", disk),
                ("attribute_id", id),
                ("attribute_name", attribute),
            ]
        };
        defs.push(series(
            "smartctl_device_attribute",
            &labels("5", "Reallocated_Sector_Ct"),
            move |ago| {
                Some(if disk == "sdb" {
                    240.0 - ago as f64 / 120.0
                } else {
                    0.0
                })
            },
        ));
        defs.push(series(
            "smartctl_device_attribute",
            &labels("9", "Power_On_Hours"),
            move |ago| Some(hours - ago as f64 / 3600.0),
        ));
    }
    let Some(world) = World::build(&defs, 6 * 3600, 60).await else {
        return;
    };
    let now = Utc::now();
    // A question that names no host.
    let scope = Scope::new(now, Some(now - TimeDelta::hours(6)))
        .with_focus(Focus::question("is one of the drives dying?"));
    let sweep = Sweep::of(sre_agent::analyze::prom::analyzers(world.client()));
    let report = sweep.run(scope).await;
    let facts: Vec<_> = report
        .facts
        .into_iter()
        .filter(|f| f.analyzer == "steps")
        .collect();
    let all = lines(&facts);
    eprintln!("{all}");
    let sdb = facts
        .iter()
        .find(|f| f.what.starts_with("stands out") && f.what.contains("device=sdb"))
        .expect(&all);
    assert!(sdb.what.contains("Reallocated_Sector_Ct"), "{all}");
    assert_eq!(sdb.entity.host.as_deref(), Some("elm-2"));
    assert_eq!(
        sdb.severity,
        Severity::Warning,
        "a question naming no host: the answer"
    );
    assert!(
        sdb.detail
            .as_deref()
            .unwrap()
            .contains("(sda, sdc, sdd) stayed at 0"),
        "{all}"
    );
    // Nothing else of the captured hosts stands out, and hours powered on are no outlier.
    assert!(
        facts
            .iter()
            .filter(|f| f.what.starts_with("stands out"))
            .all(|f| f.what.contains("device=sdb")),
        "{all}"
    );
}

#[tokio::test]
async fn a_question_naming_a_service_reads_the_host_it_runs_on_as_the_one_asked_about() {
    let mut defs = calm_hosts(&["ash-1", "ash-2"]);
    // The media server runs on ash-2 (its own exporter says so); ash-1 runs something else.
    defs.push(series(
        "mediaserver_sessions",
        &[("instance", "ash-2:8096"), ("job", "streamyard")],
        |_| Some(3.0),
    ));
    defs.push(series(
        "wiki_pages",
        &[("instance", "ash-1:3000"), ("job", "notebook")],
        |_| Some(120.0),
    ));
    // Both hosts' root filesystems went read-only 30 minutes ago.
    for h in ["ash-1", "ash-2"] {
        set(
            &mut defs,
            "node_filesystem_readonly",
            &[("instance", &format!("{h}:9100")), ("mountpoint", "/")],
            |_, ago| Some(if ago <= 1800 { 1.0 } else { 0.0 }),
        );
    }
    let Some(world) = World::build(&defs, 6 * 3600, 60).await else {
        return;
    };
    let now = Utc::now();
    let scope = Scope::new(now, Some(now - TimeDelta::hours(6)))
        .with_focus(Focus::question("Streamyard keeps freezing, why?"));
    let resolver = sre_agent::analyze::Resolver {
        prometheus: Some(world.client()),
        loki: None,
    };
    let sweep =
        Sweep::of(sre_agent::analyze::prom::analyzers(world.client())).with_resolver(resolver);
    let report = sweep.run(scope).await;
    let focus = report.focus.clone().expect("a focus");
    assert!(focus.names_host("ash-2"));
    assert!(!focus.names_host("ash-1"));
    let facts: Vec<_> = report
        .facts
        .into_iter()
        .filter(|f| f.analyzer == "steps")
        .collect();
    let all = lines(&facts);
    let on = |h: &str| {
        facts
            .iter()
            .find(|f| f.entity.host.as_deref() == Some(h))
            .expect(&all)
    };
    assert_eq!(on("ash-2").severity, Severity::Warning, "{all}");
    // Told as what happened to the series it names.
    let ash2 = on("ash-2");
    assert!(ash2.what.starts_with(&ash2.entity.name), "{all}");
    assert_eq!(on("ash-1").severity, Severity::Info, "{all}");
    assert!(on("ash-1").what.starts_with("at the same time"), "{all}");
}

/// The sweep of an alert on `instance` that fired `ago` seconds ago.
async fn alert_sweep(world: &World, instance: &str, ago: i64) -> Vec<sre_agent::analyze::Fact> {
    let now = Utc::now();
    let started = now - TimeDelta::seconds(ago);
    let labels = [("instance".to_string(), instance.to_string())]
        .into_iter()
        .collect();
    let scope = Scope::new(now, Some(started)).with_focus(Focus::alert(&labels, Some(started)));
    let sweep = Sweep::of(sre_agent::analyze::prom::analyzers(world.client()));
    let report = sweep.run(scope).await;
    assert!(report.notes.is_empty(), "{:?}", report.notes);
    report
        .facts
        .into_iter()
        .filter(|f| f.analyzer == "steps")
        .collect()
}

#[tokio::test]
async fn the_client_that_took_the_connections_before_the_alert_is_named_with_its_share() {
    let mut defs = calm_hosts(&["fir-db", "fir-app"]);
    // A database's sessions by user: `wiki` went from 4 to 121 seventy minutes ago and
    // kept them; refusals began thirty minutes later; the alert fired 38 minutes ago.
    let db = [("instance", "fir-db:9187"), ("job", "db")];
    for (user, before, after) in [
        ("wiki", 4.0, 121.0),
        ("tasks", 14.0, 14.0),
        ("ci", 9.0, 9.0),
        ("grafana", 2.0, 2.0),
    ] {
        let mut labels = db.to_vec();
        labels.push(("user", user));
        defs.push(series("db_sessions_by_user", &labels, move |ago| {
            Some(if ago <= 4200 { after } else { before })
        }));
    }
    defs.push(series("db_sessions", &db, |ago| {
        Some(if ago <= 4200 { 146.0 } else { 29.0 })
    }));
    defs.push(series("db_sessions_refused_total", &db, |ago| {
        Some(0.35 * (2460 - ago).max(0) as f64)
    }));
    let Some(world) = World::build(&defs, 8 * 3600, 60).await else {
        return;
    };
    let facts = alert_sweep(&world, "fir-db:9187", 38 * 60).await;
    let all = lines(&facts);
    eprintln!("{all}");
    let riser = facts
        .iter()
        .find(|f| f.what.starts_with("most of the rise"))
        .expect(&all);
    assert!(riser.what.contains("user wiki"), "{all}");
    assert_eq!(riser.entity.host.as_deref(), Some("fir-db"));
    let detail = riser.detail.as_deref().unwrap();
    assert!(detail.contains("of the rise of all 4 users"), "{all}");
    // The instance's fact tells the early change beside the refusals the alert is about.
    let step = facts
        .iter()
        .find(|f| f.what == "db_sessions_refused_total counting 0/s before, now")
        .expect(&all);
    let detail = step.detail.as_deref().unwrap();
    assert!(
        detail.contains("db_sessions rose from 29 to 146 before"),
        "{all}"
    );
    // Nothing of the captured hosts stands out or rose.
    assert!(
        facts
            .iter()
            .all(|f| f.entity.host.as_deref() == Some("fir-db")
                && f.entity.name.starts_with("db_")),
        "{all}"
    );
}

#[tokio::test]
async fn a_step_is_found_when_the_store_holds_less_than_the_earliest_read() {
    let mut defs = calm_hosts(&["yew-nas", "yew-gw"]);
    // A bond lost one of its two links 3 h 10 min ago; the alert fired 3 h ago; the store
    // holds eight hours (the earliest read, ten hours back, finds nothing).
    let bond = [
        ("instance", "yew-nas:9100"),
        ("job", "node"),
        ("master", "bond0"),
    ];
    defs.push(series("node_bonding_active", &bond, |ago| {
        Some(if ago <= 11_400 { 1.0 } else { 2.0 })
    }));
    defs.push(series("node_bonding_slaves", &bond, |_| Some(2.0)));
    let Some(world) = World::build(&defs, 8 * 3600, 60).await else {
        return;
    };
    let facts = alert_sweep(&world, "yew-nas:9100", 3 * 3600).await;
    let all = lines(&facts);
    eprintln!("{all}");
    let bond = facts
        .iter()
        .find(|f| f.entity.name == "node_bonding_active")
        .expect(&all);
    assert_eq!(bond.entity.host.as_deref(), Some("yew-nas"));
    assert_eq!(bond.value.map(|q| q.value), Some(1.0), "{all}");
    let began = (Utc::now() - bond.since.expect("since")).num_seconds();
    assert!((11_000..11_800).contains(&began), "{all}");
    // The captured hosts' steady series, first seen after the earliest read too, are not
    // steps.
    assert_eq!(facts.len(), 1, "{all}");
}
