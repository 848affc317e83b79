//! `version_changes`, `process_restarts`, `config_reloads`, `setting_changes`: what changed
//! in the window and when, on the real `/metrics` of Prometheus, Alertmanager,
//! kube-state-metrics and node_exporter for several hosts, where most targets did not
//! change at all.

use sre_agent::analyze::{Fact, FactClass, Severity};

use super::captured::{When, target};
use super::world::{SeriesDef, World, lines, series};

const DAY: i64 = 86400;

fn now() -> f64 {
    chrono::Utc::now().timestamp() as f64
}

/// `defs` with the series named `name` answering `value` instead of the capture's.
fn set(defs: &mut [SeriesDef], name: &str, value: impl Fn(i64) -> Option<f64> + Clone + 'static) {
    for d in defs.iter_mut().filter(|d| d.name == name) {
        d.value = Box::new(value.clone());
    }
}

fn always() -> When {
    Box::new(|_| true)
}

/// A captured target started `started_ago` seconds ago (a restart: a later start time
/// from `restarted_ago` on).
fn service(
    file: &str,
    instance: &str,
    job: &str,
    started_ago: i64,
    restarted_ago: Option<i64>,
) -> Vec<SeriesDef> {
    let mut defs = target(
        &[("instance", instance), ("job", job)],
        vec![(always(), file)],
    );
    let t0 = now();
    set(&mut defs, "process_start_time_seconds", move |ago| {
        Some(match restarted_ago {
            Some(r) if ago < r => t0 - r as f64,
            _ => t0 - started_ago as f64,
        })
    });
    defs
}

fn of<'a>(facts: &'a [Fact], analyzer: &str) -> Vec<&'a Fact> {
    facts.iter().filter(|f| f.analyzer == analyzer).collect()
}

fn mins_ago(f: &Fact) -> f64 {
    (chrono::Utc::now() - f.since.expect("a since")).num_seconds() as f64 / 60.0
}

#[tokio::test]
async fn an_upgrade_and_its_restart_are_dated_while_unchanged_targets_stay_quiet() {
    let mut defs = Vec::new();
    // Prometheus on mon-1 upgraded 20 minutes ago: new version, new start time.
    let mut prom = service(
        "prometheus_self.prom",
        "mon-1:9090",
        "prometheus",
        3 * DAY,
        Some(1200),
    );
    let t0 = now();
    set(
        &mut prom,
        "prometheus_config_last_reload_success_timestamp_seconds",
        move |ago| {
            Some(if ago < 1200 {
                t0 - 1195.0
            } else {
                t0 - 3.0 * DAY as f64
            })
        },
    );
    set(&mut prom, "prometheus_build_info", |ago| {
        (ago < 1200).then_some(1.0)
    });
    prom.push(series(
        "prometheus_build_info",
        &[
            ("instance", "mon-1:9090"),
            ("job", "prometheus"),
            ("version", "2.41.0"),
            ("branch", "HEAD"),
        ],
        |ago| (ago >= 1200).then_some(1.0),
    ));
    defs.extend(prom);
    // Three node_exporters and an Alertmanager that have run for days.
    for host in ["ash-1", "ash-2", "ash-3"] {
        defs.extend(service(
            "node_exporter.prom",
            &format!("{host}:9100"),
            "node",
            5 * DAY,
            None,
        ));
    }
    let mut am = service(
        "alertmanager_self.prom",
        "mon-1:9093",
        "alertmanager",
        4 * DAY,
        None,
    );
    set(
        &mut am,
        "alertmanager_config_last_reload_success_timestamp_seconds",
        move |_| Some(t0 - 4.0 * DAY as f64),
    );
    defs.extend(am);
    // A node_exporter crash-looping: restarted 3 times in the last half hour.
    let mut flappy = service("node_exporter.prom", "ash-4:9100", "node", 5 * DAY, None);
    set(&mut flappy, "process_start_time_seconds", move |ago| {
        Some(
            t0 - [300, 900, 1500, 5 * DAY]
                .into_iter()
                .find(|s| ago < *s)
                .unwrap_or(5 * DAY) as f64,
        )
    });
    defs.extend(flappy);
    let Some(world) = World::build(&defs, 2 * 3600, 15).await else {
        return;
    };
    let (facts, notes) = world.sweep(Some(1200)).await;
    assert!(notes.is_empty(), "{notes:?}");
    let versions = of(&facts, "version_changes");
    assert_eq!(versions.len(), 1, "{}", lines(&facts));
    let v = versions[0];
    assert_eq!(v.class, FactClass::Change);
    assert_eq!(v.entity.name, "prometheus");
    assert_eq!(v.entity.host.as_deref(), Some("mon-1"));
    assert!(
        v.detail.as_deref().unwrap().contains("2.41.0 → 2.42.0+ds"),
        "{}",
        lines(&facts)
    );
    assert!((19.0..21.0).contains(&mins_ago(v)), "{}", lines(&facts));

    let restarts = of(&facts, "process_restarts");
    assert_eq!(restarts.len(), 2, "{}", lines(&facts));
    let mon = restarts
        .iter()
        .find(|f| f.entity.labels["job"] == "prometheus")
        .unwrap();
    assert!((19.5..20.5).contains(&mins_ago(mon)), "{}", lines(&facts));
    assert_eq!(mon.severity, Severity::Info);
    let ash = restarts
        .iter()
        .find(|f| f.entity.host.as_deref() == Some("ash-4"))
        .unwrap();
    assert_eq!(ash.value.unwrap().value, 3.0, "{}", lines(&facts));
    assert_eq!(ash.severity, Severity::Warning);
    assert!((4.5..5.5).contains(&mins_ago(ash)), "{}", lines(&facts));
    // Prometheus loaded its configuration when it started: not a reload.
    assert!(of(&facts, "config_reloads").is_empty(), "{}", lines(&facts));
}

#[tokio::test]
async fn a_config_reload_and_a_failed_one_are_told_apart_on_real_prometheus_and_alertmanager_output()
 {
    let t0 = now();
    let mut defs = Vec::new();
    // Prometheus reloaded its configuration 15 minutes ago (started two days ago).
    let mut prom = service(
        "prometheus_self.prom",
        "mon-2:9090",
        "prometheus",
        2 * DAY,
        None,
    );
    set(
        &mut prom,
        "prometheus_config_last_reload_success_timestamp_seconds",
        move |ago| {
            Some(if ago < 900 {
                t0 - 900.0
            } else {
                t0 - 2.0 * DAY as f64
            })
        },
    );
    defs.extend(prom);
    // Alertmanager: a broken configuration was reloaded 7 minutes ago (real output of it).
    let phases: Vec<(When, &str)> = vec![
        (
            Box::new(|ago| ago < 420),
            "alertmanager_self_failed_reload.prom",
        ),
        (always(), "alertmanager_self.prom"),
    ];
    let mut am = target(
        &[("instance", "mon-2:9093"), ("job", "alertmanager")],
        phases,
    );
    set(&mut am, "process_start_time_seconds", move |_| {
        Some(t0 - 2.0 * DAY as f64)
    });
    set(
        &mut am,
        "alertmanager_config_last_reload_success_timestamp_seconds",
        move |_| Some(t0 - 2.0 * DAY as f64),
    );
    defs.extend(am);
    let Some(world) = World::build(&defs, 2 * 3600, 15).await else {
        return;
    };
    let (facts, notes) = world.sweep(Some(420)).await;
    assert!(notes.is_empty(), "{notes:?}");
    let reloads = of(&facts, "config_reloads");
    assert_eq!(reloads.len(), 2, "{}", lines(&facts));
    let failed = reloads.iter().find(|f| f.what.contains("failed")).unwrap();
    assert_eq!(failed.entity.name, "alertmanager");
    assert_eq!(failed.severity, Severity::Warning);
    assert!((6.5..7.5).contains(&mins_ago(failed)), "{}", lines(&facts));
    assert!(
        failed.detail.as_deref().unwrap().contains("loaded at"),
        "{}",
        lines(&facts)
    );
    let ok = reloads
        .iter()
        .find(|f| f.what == "config reloaded")
        .unwrap();
    assert_eq!(ok.entity.name, "prometheus");
    assert_eq!(ok.severity, Severity::Info);
    assert!((14.5..15.5).contains(&mins_ago(ok)), "{}", lines(&facts));
    assert!(
        of(&facts, "process_restarts").is_empty(),
        "{}",
        lines(&facts)
    );
}

#[tokio::test]
async fn a_rollout_its_new_image_and_a_stuck_rollout_are_dated_on_kube_state_metrics_series() {
    let ksm = [
        ("instance", "10.42.0.5:8080"),
        ("job", "kube-state-metrics"),
    ];
    let with = |extra: &[(&'static str, &'static str)]| {
        let mut l = ksm.to_vec();
        l.extend_from_slice(extra);
        l
    };
    // The published kube-state-metrics scrape as background.
    let mut defs = target(&ksm, vec![(always(), "kube_state_metrics.prom")]);
    let step = |at: i64, before: f64, after: f64| {
        move |ago: i64| Some(if ago < at { after } else { before })
    };
    for (ns, name, generation) in [
        ("shop", "api", step(720, 7.0, 8.0)),
        ("shop", "web", step(0, 3.0, 3.0)),
        ("shop", "worker", step(1800, 2.0, 3.0)),
        ("monitoring", "grafana", step(3 * 3600, 4.0, 5.0)),
    ] {
        let l = with(&[("namespace", ns), ("deployment", name)]);
        defs.push(series(
            "kube_deployment_metadata_generation",
            &l,
            generation,
        ));
        defs.push(series("kube_deployment_spec_replicas", &l, |_| Some(3.0)));
        let updated = if name == "api" {
            step(720, 3.0, 2.0)
        } else {
            step(0, 3.0, 3.0)
        };
        defs.push(series(
            "kube_deployment_status_replicas_updated",
            &l,
            updated,
        ));
        for status in ["true", "false", "unknown"] {
            let l = [
                l.clone(),
                vec![("condition", "Progressing"), ("status", status)],
            ]
            .concat();
            let stuck = name == "worker";
            defs.push(series("kube_deployment_status_condition", &l, move |ago| {
                let failing = stuck && ago < 1200;
                Some(f64::from(u8::from(
                    (status == "false") == failing && status != "unknown",
                )))
            }));
        }
    }
    defs.push(series(
        "kube_statefulset_metadata_generation",
        &with(&[("namespace", "monitoring"), ("statefulset", "loki")]),
        |_| Some(2.0),
    ));
    let pods: [(&str, &str, i64, i64); 6] = [
        (
            "api-6d5-a",
            "registry.example.net/shop/api:1.4.2",
            720,
            i64::MAX,
        ),
        (
            "api-6d5-b",
            "registry.example.net/shop/api:1.4.2",
            720,
            i64::MAX,
        ),
        (
            "api-6d5-c",
            "registry.example.net/shop/api:1.4.2",
            0,
            i64::MAX,
        ),
        ("api-7f9-x", "registry.example.net/shop/api:1.5.0", 0, 720),
        ("api-7f9-y", "registry.example.net/shop/api:1.5.0", 0, 700),
        ("web-55c-q", "docker.io/library/nginx:1.25", 0, i64::MAX),
    ];
    for (pod, image, gone_before, since) in pods {
        let container = if pod.starts_with("api") {
            "api"
        } else {
            "nginx"
        };
        defs.push(series(
            "kube_pod_container_info",
            &with(&[
                ("namespace", "shop"),
                ("pod", pod),
                ("container", container),
                ("image", image),
            ]),
            move |ago| (ago >= gone_before && ago < since).then_some(1.0),
        ));
    }
    let Some(world) = World::build(&defs, 6 * 3600, 30).await else {
        return;
    };
    let (facts, notes) = world.sweep(Some(720)).await;
    assert!(notes.is_empty(), "{notes:?}");
    let rollouts = of(&facts, "rollouts");
    assert_eq!(rollouts.len(), 3, "{}", lines(&facts));
    let api = rollouts
        .iter()
        .find(|f| f.entity.name == "shop/api" && f.entity.kind == "deployment")
        .unwrap();
    assert_eq!(api.severity, Severity::Info);
    assert!((11.0..13.0).contains(&mins_ago(api)), "{}", lines(&facts));
    let detail = api.detail.as_deref().unwrap();
    assert!(
        detail.contains("generation 7 → 8; 2 of 3 replicas updated"),
        "{detail}"
    );
    let worker = rollouts
        .iter()
        .find(|f| f.entity.name == "shop/worker")
        .unwrap();
    assert_eq!(worker.what, "rollout failed");
    assert_eq!(worker.severity, Severity::Warning);
    assert!(
        (29.0..31.0).contains(&mins_ago(worker)),
        "{}",
        lines(&facts)
    );
    let image = rollouts
        .iter()
        .find(|f| f.entity.kind == "container")
        .unwrap();
    assert_eq!(image.entity.name, "shop/api");
    assert!((11.0..13.0).contains(&mins_ago(image)), "{}", lines(&facts));
    assert_eq!(
        image.detail.as_deref(),
        Some("image registry.example.net/shop/api:1.4.2 → registry.example.net/shop/api:1.5.0")
    );
}

#[tokio::test]
async fn a_lowered_setting_is_one_dated_fact_per_target_and_measurements_named_like_settings_are_not()
 {
    // Calm captured hosts (node_exporter, process-exporter), a Prometheus and a
    // kube-state-metrics: every setting-like name they hold (`…_limit`, `…_max_…`,
    // `node_filefd_maximum`, resource limits) held still.
    let mut defs = super::world::calm_hosts(&["oak-1", "oak-2"]);
    defs.extend(service(
        "prometheus_self.prom",
        "mon-3:9090",
        "prometheus",
        3 * DAY,
        None,
    ));
    defs.extend(target(
        &[("instance", "mon-3:8080"), ("job", "kube-state-metrics")],
        vec![(always(), "kube_state_metrics.prom")],
    ));
    // A database whose connection limit was lowered 200 → 50 and its buffers raised
    // 35 minutes ago (postgres_exporter's names), and one whose settings did not change.
    let pg = [
        ("instance", "db-7:9187"),
        ("job", "postgres"),
        ("server", "db-7:5432"),
    ];
    defs.push(series("pg_settings_max_connections", &pg, |ago| {
        Some(if ago < 2100 { 50.0 } else { 200.0 })
    }));
    defs.push(series("pg_settings_shared_buffers_bytes", &pg, |ago| {
        Some(if ago < 2100 {
            2.0 * 1024.0 * 1024.0 * 1024.0
        } else {
            128.0 * 1024.0 * 1024.0
        })
    }));
    let other = [
        ("instance", "db-8:9187"),
        ("job", "postgres"),
        ("server", "db-8:5432"),
    ];
    defs.push(series("pg_settings_max_connections", &other, |_| {
        Some(100.0)
    }));
    // A measurement whose name carries a setting word: the longest transaction moves all
    // the time.
    defs.push(series("pg_stat_activity_max_tx_duration", &pg, |ago| {
        Some((ago % 600) as f64)
    }));
    let Some(world) = World::build(&defs, 3 * 3600, 60).await else {
        return;
    };
    let (facts, notes) = world.sweep(Some(1200)).await;
    assert!(notes.is_empty(), "{notes:?}");
    let settings = of(&facts, "setting_changes");
    assert_eq!(settings.len(), 1, "{}", lines(&facts));
    let f = settings[0];
    assert_eq!(f.class, FactClass::Change);
    assert_eq!(f.entity.name, "postgres");
    assert_eq!(f.entity.host.as_deref(), Some("db-7"));
    assert_eq!(f.what, "2 settings changed");
    let detail = f.detail.as_deref().unwrap();
    assert!(
        detail.contains("pg_settings_max_connections{server=db-7:5432} 200 → 50 at"),
        "{detail}"
    );
    assert!(detail.contains("128.0 MiB → 2.0 GiB"), "{detail}");
    assert!((33.0..37.0).contains(&mins_ago(f)), "{}", lines(&facts));
}
