//! Memory exhaustion among calm hosts made of captured node_exporter and process-exporter
//! output: a process leaking (named, with its rate and the time until its host runs out),
//! a host out of memory and swapping, a container near its limit; decoys that look big
//! but are not leaks.

use super::world::{Capture, World, calm_hosts, lines, series, set};

const MIB: f64 = 1024.0 * 1024.0;
const GIB: f64 = 1024.0 * MIB;

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
async fn a_leaking_process_is_named_with_its_rate_since_and_time_until_its_host_runs_out() {
    let mut defs = calm_hosts(&["elm-1", "elm-2", "elm-3"]);
    // On elm-3, `cargo` grows 200 MiB a minute for the last 30 minutes; the host's
    // available memory falls by as much.
    let leak = |ago: i64| 200.0 * MIB * ((1800 - ago).max(0) as f64) / 60.0;
    set(
        &mut defs,
        "namedprocess_namegroup_memory_bytes",
        &[
            ("instance", "elm-3:9256"),
            ("groupname", "cargo"),
            ("memtype", "resident"),
        ],
        move |_, ago| Some(220.0 * MIB + leak(ago)),
    );
    set(
        &mut defs,
        "node_memory_MemAvailable_bytes",
        &[("instance", "elm-3:9100")],
        move |_, ago| Some(21.0 * GIB - leak(ago)),
    );
    // Decoy: on elm-1, `rustc` is large and saws between 1.0 and 1.6 GiB.
    set(
        &mut defs,
        "namedprocess_namegroup_memory_bytes",
        &[
            ("instance", "elm-1:9256"),
            ("groupname", "rustc"),
            ("memtype", "resident"),
        ],
        |_, ago| Some(GIB + 0.6 * GIB * ((ago % 240) as f64 / 240.0)),
    );
    let Some(world) = World::build(&defs, 7200, 15).await else {
        return;
    };
    let (facts, notes) = world.sweep(Some(1800)).await;
    assert!(notes.is_empty(), "{notes:?}");
    let all = lines(&facts);
    eprintln!("{all}");
    let leaks: Vec<_> = facts
        .iter()
        .filter(|f| f.analyzer == "process_memory")
        .collect();
    assert_eq!(leaks.len(), 1, "{all}");
    let f = leaks[0];
    assert_eq!(f.entity.name, "cargo", "{all}");
    assert_eq!(f.entity.host.as_deref(), Some("elm-3"), "{all}");
    let per_minute = f.rate.unwrap().change.value / f.rate.unwrap().per_seconds * 60.0;
    assert!((180.0 * MIB..220.0 * MIB).contains(&per_minute), "{all}");
    // 15 GiB left at 200 MiB a minute: about 77 minutes.
    let eta = f.eta_seconds.expect("an ETA") / 60.0;
    assert!((60.0..95.0).contains(&eta), "{all}");
    let began = (chrono::Utc::now() - f.since.expect("since")).num_seconds();
    assert!((1500..2100).contains(&began), "{all}");
    let host = facts
        .iter()
        .find(|f| f.analyzer == "host_memory")
        .expect(&all);
    assert_eq!(host.entity.name, "elm-3", "{all}");
    assert!(host.eta_seconds.is_some(), "{all}");
    assert_eq!(
        facts.iter().filter(|f| f.analyzer == "host_memory").count(),
        1,
        "{all}"
    );
}

#[tokio::test]
async fn a_host_out_of_memory_and_swapping_is_critical_since_the_drop() {
    let mut defs = calm_hosts(&["elm-1", "elm-2"]);
    // elm-2: 2 % available for the last 20 minutes (40 % before), swap 4 GiB nearly full
    // and 900 pages a second moving; elm-1 has a quiet, part-used swap.
    set(
        &mut defs,
        "node_memory_MemAvailable_bytes",
        &[("instance", "elm-2:9100")],
        |_, ago| Some(if ago > 1200 { 10.0 * GIB } else { 0.5 * GIB }),
    );
    for (h, before, now) in [("elm-1:9100", 2.8, 2.8), ("elm-2:9100", 3.5, 0.1)] {
        set(
            &mut defs,
            "node_memory_SwapTotal_bytes",
            &[("instance", h)],
            |_, _| Some(4.0 * GIB),
        );
        set(
            &mut defs,
            "node_memory_SwapFree_bytes",
            &[("instance", h)],
            move |_, ago| Some(if ago > 1200 { before } else { now } * GIB),
        );
    }
    for m in ["node_vmstat_pswpin", "node_vmstat_pswpout"] {
        let c = counter(0.0, 450.0, 1200);
        set(
            &mut defs,
            m,
            &[("instance", "elm-2:9100")],
            move |_, ago| Some(c(ago)),
        );
    }
    let Some(world) = World::build(&defs, 7200, 15).await else {
        return;
    };
    let (facts, notes) = world.sweep(Some(1200)).await;
    assert!(notes.is_empty(), "{notes:?}");
    let all = lines(&facts);
    eprintln!("{all}");
    let mem = facts
        .iter()
        .find(|f| f.analyzer == "host_memory")
        .expect(&all);
    assert_eq!(mem.entity.name, "elm-2");
    assert_eq!(
        mem.severity,
        sre_agent::analyze::Severity::Critical,
        "{all}"
    );
    assert!(mem.value.unwrap().value > 97.0, "{all}");
    let began = (chrono::Utc::now() - mem.since.expect("since")).num_seconds();
    assert!((1100..1400).contains(&began), "{all}");
    // Memory fell 20 minutes ago and has held since: no rate, no time to exhaustion.
    assert_eq!(mem.eta_seconds, None, "{all}");
    let swap: Vec<_> = facts.iter().filter(|f| f.analyzer == "swap").collect();
    assert!(swap.iter().all(|f| f.eta_seconds.is_none()), "{all}");
    assert_eq!(swap.len(), 2, "{all}");
    assert!(swap.iter().all(|f| f.entity.name == "elm-2"), "{all}");
    let moving = swap
        .iter()
        .find(|f| f.what == "pages swapped in and out")
        .expect(&all);
    let v = moving.value.unwrap().value;
    assert!((800.0..1000.0).contains(&v), "{all}");
    assert_eq!(
        facts
            .iter()
            .filter(|f| f.analyzer == "process_memory")
            .count(),
        0,
        "{all}"
    );
}

#[tokio::test]
async fn a_container_growing_toward_its_limit_gets_its_time_to_the_oom_kill() {
    let mut defs = calm_hosts(&["kind-worker"]);
    let kubelet = Capture::load("kubelet_metrics_resource.prom");
    defs.extend(kubelet.series("kind-worker:10250", "kubelet"));
    // kube-state-metrics' limits: awx-web 1 GiB, postgres 96 MiB; rsyslog has no limit in
    // kube-state-metrics and cAdvisor's 0 means unlimited.
    let limit = |ns: &str, pod: &str, container: &str, v: f64| {
        series(
            "kube_pod_container_resource_limits",
            &[
                ("namespace", ns),
                ("pod", pod),
                ("container", container),
                ("node", "kind-worker"),
                ("resource", "memory"),
                ("unit", "byte"),
                ("instance", "ksm:8080"),
                ("job", "kube-state-metrics"),
            ],
            move |_| Some(v),
        )
    };
    defs.push(limit("awx", "awx-web-5d5d7ccf85-7jjgm", "awx-web", GIB));
    defs.push(limit("awx", "awx-postgres-13-0", "postgres", 96.0 * MIB));
    defs.push(series(
        "container_spec_memory_limit_bytes",
        &[
            ("namespace", "awx"),
            ("pod", "awx-web-5d5d7ccf85-7jjgm"),
            ("container", "awx-rsyslog"),
            ("instance", "kind-worker:10250"),
        ],
        |_| Some(0.0),
    ));
    // awx-web: 600 MiB until 30 minutes ago, then 12 MiB more a minute (960 MiB now).
    set(
        &mut defs,
        "container_memory_working_set_bytes",
        &[("container", "awx-web")],
        |_, ago| Some(600.0 * MIB + 12.0 * MIB * ((1800 - ago).max(0) as f64) / 60.0),
    );
    let Some(world) = World::build(&defs, 7200, 15).await else {
        return;
    };
    let (facts, notes) = world.sweep(Some(1800)).await;
    assert!(notes.is_empty(), "{notes:?}");
    let all = lines(&facts);
    eprintln!("{all}");
    let c: Vec<_> = facts
        .iter()
        .filter(|f| f.analyzer == "container_memory")
        .collect();
    assert_eq!(c.len(), 1, "{all}");
    let f = c[0];
    assert_eq!(
        f.entity.name, "awx/awx-web-5d5d7ccf85-7jjgm/awx-web",
        "{all}"
    );
    assert_eq!(f.entity.host.as_deref(), Some("kind-worker"), "{all}");
    assert_eq!(f.severity, sre_agent::analyze::Severity::Critical, "{all}");
    let used = f.value.unwrap().value;
    assert!((92.0..96.0).contains(&used), "{all}");
    // 64 MiB left at 12 MiB a minute: about 5 minutes.
    let eta = f.eta_seconds.expect("an ETA");
    assert!((200.0..480.0).contains(&eta), "{all}");
}
