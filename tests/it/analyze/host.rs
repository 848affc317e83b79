//! The host analyzers on captured real exporter output: the build machine as captured
//! (both CPUs busy compiling, no NTP) is reported for exactly that, and calm hosts made
//! of the same capture report nothing but their context.

use sre_agent::analyze::FactClass;

use super::world::{World, calm_hosts, lines, node_host, series, set};

#[tokio::test]
async fn the_captured_build_machine_reports_its_busy_cpus_naming_rustc_and_its_unsynced_clock() {
    let defs = node_host("vm");
    let Some(world) = World::build(&defs, 7200, 15).await else {
        return;
    };
    let (facts, notes) = world.sweep(Some(600)).await;
    assert!(notes.is_empty(), "{notes:?}");
    let all = lines(&facts);
    eprintln!("{all}");
    let problems: Vec<_> = facts
        .iter()
        .filter(|f| f.class != FactClass::Context)
        .collect();
    assert_eq!(problems.len(), 3, "{all}");
    let busy = problems.iter().find(|f| f.what == "CPU busy").expect(&all);
    assert_eq!(busy.entity.host.as_deref(), Some("vm"));
    // 30.12 CPU-seconds in 15 s, 0.08 of them idle: 99.7 % busy.
    let v = busy.value.unwrap().value;
    assert!((99.0..=100.0).contains(&v), "{all}");
    let top = problems
        .iter()
        .find(|f| f.entity.kind == "process")
        .expect(&all);
    assert_eq!(top.entity.name, "rustc", "{all}");
    // 29.44 CPU-seconds in 15 s of two CPUs: 98 % of the host.
    let share = top.value.unwrap().value;
    assert!((95.0..=100.0).contains(&share), "{all}");
    let clock = problems
        .iter()
        .find(|f| f.class == FactClass::Time)
        .expect(&all);
    assert_eq!(clock.what, "clock not synchronised", "{all}");
    assert_eq!(
        facts
            .iter()
            .filter(|f| f.class == FactClass::Context)
            .count(),
        1,
        "{all}"
    );
}

#[tokio::test]
async fn calm_hosts_report_only_their_context_the_one_shortest_of_memory_first() {
    let mut defs = calm_hosts(&["yew-1", "yew-2", "yew-3"]);
    // yew-2 has the least memory available: 6 GiB of 23.5 GiB, steady.
    set(
        &mut defs,
        "node_memory_MemAvailable_bytes",
        &[("instance", "yew-2:9100")],
        |_, _| Some(6.0 * 1024.0 * 1024.0 * 1024.0),
    );
    // ... and a data volume of 8 TiB with 4.4 TiB free, larger than its root filesystem.
    let tib = 1024.0_f64.powi(4);
    for (name, v) in [
        ("node_filesystem_size_bytes", 8.0 * tib),
        ("node_filesystem_avail_bytes", 4.4 * tib),
    ] {
        let labels = [
            ("instance", "yew-2:9100"),
            ("job", "node"),
            ("device", "/dev/sdb1"),
            ("fstype", "xfs"),
            ("mountpoint", "/srv/data"),
        ];
        defs.push(series(name, &labels, move |_| Some(v)));
    }
    let Some(world) = World::build(&defs, 7200, 15).await else {
        return;
    };
    let (facts, notes) = world.sweep(Some(600)).await;
    assert!(notes.is_empty(), "{notes:?}");
    let all = lines(&facts);
    eprintln!("{all}");
    assert!(facts.iter().all(|f| f.class == FactClass::Context), "{all}");
    // The comparisons come first, computed: least memory, busiest CPU, fullest filesystem.
    assert_eq!(facts.len(), 6, "{all}");
    assert_eq!(facts[0].what, "least memory available of 3 hosts", "{all}");
    assert_eq!(facts[0].entity.name, "yew-2", "{all}");
    let next = facts[0].detail.as_deref().unwrap_or("");
    assert!(next.starts_with("next: yew-"), "{all}");
    assert!(!next.contains("yew-2"), "{all}");
    assert!(facts[1].what.starts_with("busiest CPU of 3 hosts"), "{all}");
    assert!(facts[2].what.starts_with("fullest filesystem (/"), "{all}");
    // Then one fact per host, the one shortest of memory first.
    assert_eq!(facts[3].entity.name, "yew-2", "{all}");
    let detail = facts[3].detail.as_deref().unwrap_or("");
    assert!(detail.contains("CPU busy 7"), "{all}");
    // Its filesystems, the largest first, each with its free space.
    assert!(
        detail.contains("filesystems: /srv/data 45 % used, 4.4 TiB free of 8.0 TiB; / "),
        "{all}"
    );
}
