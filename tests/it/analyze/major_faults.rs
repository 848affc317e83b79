//! `major_faults` among calm captured hosts (node_exporter's `node_vmstat_pgmajfault` and
//! process-exporter's `namedprocess_namegroup_major_page_faults_total` as captured, a few
//! faults a second at most) with cAdvisor series written for the test: on one host, for the
//! last 20 minutes, a Docker container and the process group inside it fault 1,500 pages a
//! second while memory available fell to 3 %; a host faulting 30 a second all along is
//! left alone, and cAdvisor's cgroup-hierarchy and root series are not read as containers.

use sre_agent::analyze::{FactClass, Severity, Unit};

use super::world::{World, calm_hosts, lines, of, series, set, since_off};

/// A counter that counted `before` per second until `since` seconds ago and `after` since.
fn counter(before: f64, after: f64, since: i64) -> impl Fn(i64) -> f64 + Clone {
    move |ago| {
        let base = 1000.0 + before * (8.0 * 86400.0);
        match ago > since {
            true => base - before * ago as f64,
            false => base - before * since as f64 + after * (since - ago) as f64,
        }
    }
}

#[tokio::test]
async fn a_host_paging_names_the_container_and_process_faulting_and_since_when() {
    let mut defs = calm_hosts(&["pi-1", "pi-2"]);
    let host = counter(0.2, 3000.0, 1200);
    set(
        &mut defs,
        "node_vmstat_pgmajfault",
        &[("instance", "pi-1:9100")],
        move |_, ago| Some(host(ago)),
    );
    let steady = counter(30.0, 30.0, 0);
    set(
        &mut defs,
        "node_vmstat_pgmajfault",
        &[("instance", "pi-2:9100")],
        move |_, ago| Some(steady(ago)),
    );
    set(
        &mut defs,
        "node_memory_MemAvailable_bytes",
        &[("instance", "pi-1:9100")],
        |_, ago| Some(if ago > 1200 { 2.0e10 } else { 7.6e8 }),
    );
    let process = counter(0.01, 1500.0, 1200);
    defs.push(series(
        "namedprocess_namegroup_major_page_faults_total",
        &[
            ("instance", "pi-1:9256"),
            ("job", "process"),
            ("groupname", "ml-worker"),
        ],
        move |ago| Some(process(ago)),
    ));
    let cadvisor = |name: &str, id: &str, scope: &str| {
        [
            ("instance", "pi-1:8080".to_string()),
            ("job", "cadvisor".to_string()),
            ("id", id.to_string()),
            ("name", name.to_string()),
            (
                "image",
                if name.is_empty() { "" } else { "ml:1.4" }.to_string(),
            ),
            ("failure_type", "pgmajfault".to_string()),
            ("scope", scope.to_string()),
        ]
    };
    for (name, id, scope, before, after) in [
        ("ml-worker", "/docker/4f1c", "container", 0.01, 1550.0),
        ("ml-worker", "/docker/4f1c", "hierarchy", 0.01, 1550.0),
        ("", "/", "container", 0.2, 3000.0),
        ("web", "/docker/9a2e", "container", 0.05, 0.05),
    ] {
        let labels = cadvisor(name, id, scope);
        let pairs: Vec<(&str, &str)> = labels.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let c = counter(before, after, 1200);
        defs.push(series(
            "container_memory_failures_total",
            &pairs,
            move |ago| Some(c(ago)),
        ));
    }
    let Some(world) = World::build(&defs, 3 * 3600, 15).await else {
        return;
    };
    let (facts, notes) = world.sweep(Some(900)).await;
    assert!(notes.is_empty(), "{notes:?}");
    let all = lines(&facts);
    eprintln!("{all}");
    let found = of(&facts, "major_faults");
    assert_eq!(found.len(), 2, "{all}");

    let f = &found[0];
    assert_eq!(
        (
            f.class,
            f.severity,
            f.entity.kind.as_str(),
            f.entity.name.as_str()
        ),
        (FactClass::Saturation, Severity::Warning, "host", "pi-1"),
        "{all}"
    );
    let v = f.value.unwrap();
    assert_eq!(v.unit, Unit::PerSecond);
    assert!((2700.0..3300.0).contains(&v.value), "{all}");
    assert!(since_off(f, 1200) <= 90, "{all}");
    let detail = f.detail.as_deref().unwrap();
    for part in [
        "was 0.2/s before",
        "top: container ml-worker 1",
        "process ml-worker 1",
        "memory available ",
        "no swap-ins: file-backed pages",
    ] {
        assert!(detail.contains(part), "{part}: {detail}");
    }
    assert!(!detail.contains("web"), "{detail}");
    assert_eq!(
        f.source.arguments["query"],
        r#"rate(node_vmstat_pgmajfault{instance="pi-1:9100",job="node"}[5m])"#
    );

    let c = &found[1];
    assert_eq!(
        (c.entity.kind.as_str(), c.entity.name.as_str()),
        ("container", "ml-worker"),
        "{all}"
    );
    assert_eq!(c.entity.host.as_deref(), Some("pi-1"));
    assert_eq!(c.what, "major page faults, the most on its host");
    let d = c.detail.as_deref().unwrap();
    assert!(d.contains("of the host's") && d.contains("was "), "{d}");
    let q = c.source.arguments["query"].as_str().unwrap();
    assert!(
        q.contains("container_memory_failures_total{") && q.contains(r#"name="ml-worker""#),
        "{q}"
    );
}
