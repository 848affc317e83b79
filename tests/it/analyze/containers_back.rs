//! `containers_not_back` through the sweep against a real Prometheus: three captured hosts
//! (node_exporter, process-exporter) each running standalone Docker under cAdvisor, with
//! cAdvisor's series written for the test under its exact names and labels
//! (`container_start_time_seconds`, `container_last_seen`; `id`, `image`, `name`, and the
//! cgroup-hierarchy series without a `name`). docker-1 rebooted an hour ago: its three
//! `restart: always` containers started again within 40 s with their ids, `wiki` (restart
//! policy `no`) was last seen as the host went down and never since. docker-2 had a deploy
//! recreate its containers (new ids, no boot) and drop one; on docker-3 one container was
//! stopped by hand while the rest ran on. Only docker-1 is told.

use std::collections::BTreeMap;

use chrono::Utc;
use sre_agent::analyze::{FactClass, Focus, Severity, rank};

use super::world::{World, calm_hosts, lines, of, series, set, since_off};

const DAY: f64 = 86400.0;

/// One container of `host` as cAdvisor labels it: its start time while it runs and its
/// last seen (the sample's time) while it runs, `alive` telling when (by seconds ago).
fn container(
    defs: &mut Vec<super::world::SeriesDef>,
    host: &str,
    name: &str,
    id: &str,
    start: impl Fn(i64) -> f64 + Clone + 'static,
    alive: impl Fn(i64) -> bool + Clone + 'static,
) {
    let now = Utc::now().timestamp();
    let instance = format!("{host}:8080");
    let labels = [
        ("instance", instance.as_str()),
        ("job", "cadvisor"),
        ("id", id),
        ("image", "registry.lan/apps/app:1.8"),
        ("name", name),
    ];
    let (a, s) = (alive.clone(), start);
    defs.push(series(
        "container_start_time_seconds",
        &labels,
        move |ago| a(ago).then(|| s(ago)),
    ));
    defs.push(series("container_last_seen", &labels, move |ago| {
        alive(ago).then_some((now - ago) as f64)
    }));
}

/// cAdvisor's own cgroup series of `host` (no `name`): always there.
fn cgroups(defs: &mut Vec<super::world::SeriesDef>, host: &str) {
    let now = Utc::now().timestamp();
    let instance = format!("{host}:8080");
    for id in ["/", "/system.slice", "/system.slice/docker.service"] {
        let labels = [
            ("instance", instance.as_str()),
            ("job", "cadvisor"),
            ("id", id),
        ];
        defs.push(series("container_start_time_seconds", &labels, move |_| {
            Some(now as f64 - 40.0 * DAY)
        }));
        defs.push(series("container_last_seen", &labels, move |ago| {
            Some((now - ago) as f64)
        }));
    }
}

fn docker(hash: &str) -> String {
    format!("/system.slice/docker-{hash}.scope")
}

#[tokio::test]
async fn containers_left_down_by_a_reboot_are_told_and_a_redeploy_or_a_stopped_one_is_not() {
    let now = Utc::now().timestamp();
    let at = move |ago: i64| (now - ago) as f64;
    let mut defs = calm_hosts(&["docker-1", "docker-2", "docker-3"]);
    // docker-1: down from 3700 s ago, booted 3650 s ago, containers up from 3600 s ago.
    set(
        &mut defs,
        "node_boot_time_seconds",
        &[("instance", "docker-1:9100")],
        move |_, ago| Some(if ago > 3650 { at(40 * 86400) } else { at(3650) }),
    );
    for host in ["docker-1", "docker-2", "docker-3"] {
        cgroups(&mut defs, host);
    }
    let up = |ago: i64| !(3600..3700).contains(&ago);
    for (name, hash, back_at) in [
        ("web", "a1", 3600),
        ("api", "b2", 3590),
        ("worker", "c3", 3560),
    ] {
        let start = move |ago: i64| {
            if ago >= back_at {
                at(20 * 86400)
            } else {
                at(back_at)
            }
        };
        let alive = move |ago: i64| up(ago) && (ago >= 3700 || ago < back_at);
        container(&mut defs, "docker-1", name, &docker(hash), start, alive);
    }
    container(
        &mut defs,
        "docker-1",
        "wiki",
        &docker("d4"),
        move |_| at(20 * 86400),
        |ago| ago >= 3700,
    );

    // docker-2: a deploy at 2400 s ago recreates web and api (new ids) and drops legacy.
    for (name, old, new) in [("web", "0a", "1a"), ("api", "0b", "1b")] {
        container(
            &mut defs,
            "docker-2",
            name,
            &docker(old),
            move |_| at(9 * 86400),
            |ago| ago > 2410,
        );
        container(
            &mut defs,
            "docker-2",
            name,
            &docker(new),
            move |_| at(2400),
            |ago| ago <= 2400,
        );
    }
    container(
        &mut defs,
        "docker-2",
        "legacy",
        &docker("0c"),
        move |_| at(9 * 86400),
        |ago| ago > 2410,
    );

    // docker-3: batch stopped by hand 30 minutes ago; the rest run on.
    for (name, hash) in [("web", "e1"), ("db", "e2")] {
        container(
            &mut defs,
            "docker-3",
            name,
            &docker(hash),
            move |_| at(10 * 86400),
            |_| true,
        );
    }
    container(
        &mut defs,
        "docker-3",
        "batch",
        &docker("e3"),
        move |_| at(10 * 86400),
        |ago| ago > 1800,
    );

    let Some(world) = World::build(&defs, 3 * 3600, 15).await else {
        return;
    };
    let (facts, notes) = world.sweep(Some(900)).await;
    assert!(
        notes.iter().all(|n| !n.contains("containers_not_back")),
        "{notes:?}"
    );
    let all = lines(&facts);
    let found = of(&facts, "containers_not_back");
    assert_eq!(found.len(), 1, "{all}");
    let f = &found[0];
    assert_eq!(
        (
            f.class,
            f.severity,
            f.entity.kind.as_str(),
            f.entity.name.as_str()
        ),
        (
            FactClass::Availability,
            Severity::Warning,
            "host",
            "docker-1"
        ),
        "{all}"
    );
    assert_eq!(f.what, "containers did not come back after a restart");
    assert_eq!(f.value.unwrap().value, 1.0);
    // Since the containers went down (their last scrape before the reboot).
    assert!(since_off(f, 3700) <= 30, "{all}");
    let d = f.detail.as_deref().unwrap();
    for part in [
        "3 containers came back at ",
        " (web, api, worker); 1 did not: wiki (last seen ",
        "; the host booted at ",
        "restart policy is `no`",
    ] {
        assert!(d.contains(part), "{part}: {d}");
    }
    let wiki = f
        .related
        .iter()
        .find(|e| e.name == "wiki")
        .expect("wiki named");
    assert_eq!(
        (
            wiki.kind.as_str(),
            wiki.host.as_deref(),
            wiki.labels["name"].as_str()
        ),
        ("container", Some("docker-1"), "wiki")
    );
    // An alert that the wiki is down finds the fact first.
    let labels = BTreeMap::from([
        ("alertname".to_string(), "WikiDown".to_string()),
        ("name".to_string(), "wiki".to_string()),
        ("instance".to_string(), "docker-1:8080".to_string()),
    ]);
    let ranked = rank(facts.clone(), &Focus::alert(&labels, Some(Utc::now())));
    assert_eq!(ranked[0].fact.analyzer, "containers_not_back", "{all}");
    let q = f.source.arguments["query"].as_str().unwrap();
    assert!(
        q.starts_with(
            r#"last_over_time(container_last_seen{instance="docker-1:8080",job="cadvisor"}["#
        ),
        "{q}"
    );
}
