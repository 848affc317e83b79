//! Saturation among calm hosts made of captured node_exporter and process-exporter output:
//! a host's CPUs busy (with the process that keeps them busy named as its own fact), a
//! host waiting on a busy disk (with the process doing its I/O), a VM whose CPU time its
//! hypervisor gives to others, an interface losing packets; decoys below the thresholds.

use sre_agent::analyze::Severity;

use super::world::{World, calm_hosts, lines, set};

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

/// Sets host `h`'s per-CPU mode rates from `since` seconds ago (calm before).
fn cpu_modes(defs: &mut [super::world::SeriesDef], h: &str, since: i64, rates: &[(&str, f64)]) {
    let calm = [("idle", 0.93), ("user", 0.05), ("system", 0.02)];
    let instance = format!("{h}:9100");
    for mode in [
        "idle", "iowait", "irq", "nice", "softirq", "steal", "system", "user",
    ] {
        let get = |l: &[(&str, f64)]| l.iter().find(|(m, _)| *m == mode).map_or(0.0, |x| x.1);
        let c = counter(get(&calm), get(rates), since);
        set(
            defs,
            "node_cpu_seconds_total",
            &[("instance", &instance), ("mode", mode)],
            move |_, ago| Some(c(ago)),
        );
    }
}

#[tokio::test]
async fn a_busy_host_names_its_top_process_and_a_disk_and_an_interface_in_trouble_are_found() {
    let mut defs = calm_hosts(&["ash-1", "ash-2", "ash-3"]);
    // ash-2: 96 % busy for the last 20 minutes, `cargo` using 1.8 of its 2 CPUs.
    cpu_modes(
        &mut defs,
        "ash-2",
        1200,
        &[("idle", 0.04), ("user", 0.9), ("system", 0.06)],
    );
    let c = counter(0.001, 0.9, 1200);
    set(
        &mut defs,
        "namedprocess_namegroup_cpu_seconds_total",
        &[("instance", "ash-2:9256"), ("groupname", "cargo")],
        move |_, ago| Some(c(ago)),
    );
    // Decoy: ash-3 at 70 % busy, `rustc` using 1.4 CPUs.
    cpu_modes(
        &mut defs,
        "ash-3",
        3000,
        &[("idle", 0.3), ("user", 0.68), ("system", 0.02)],
    );
    let c = counter(0.001, 0.7, 3000);
    set(
        &mut defs,
        "namedprocess_namegroup_cpu_seconds_total",
        &[("instance", "ash-3:9256"), ("groupname", "rustc")],
        move |_, ago| Some(c(ago)),
    );
    // ash-1: waiting on I/O 30 % of the time, its disk vda busy 97 %, for 20 minutes.
    cpu_modes(
        &mut defs,
        "ash-1",
        1200,
        &[("idle", 0.6), ("iowait", 0.3), ("user", 0.1)],
    );
    let c = counter(0.02, 0.97, 1200);
    set(
        &mut defs,
        "node_disk_io_time_seconds_total",
        &[("instance", "ash-1:9100"), ("device", "vda")],
        move |_, ago| Some(c(ago)),
    );
    // ... `rustc` writes 40 MiB/s and reads 10 MiB/s there; bash does 2 kB/s.
    for (group, metric, rate) in [
        ("rustc", "namedprocess_namegroup_write_bytes_total", 40.0),
        ("rustc", "namedprocess_namegroup_read_bytes_total", 10.0),
        ("bash", "namedprocess_namegroup_write_bytes_total", 0.002),
    ] {
        let c = counter(1000.0, rate * 1024.0 * 1024.0, 1200);
        set(
            &mut defs,
            metric,
            &[("instance", "ash-1:9256"), ("groupname", group)],
            move |_, ago| Some(c(ago)),
        );
    }
    // ash-3: eth0 receives 1000 packets a second and 50 errors; ash-1's eth0 drops 5 a
    // second of 100,000 (noise); ash-2's ifb0 drops one every two seconds.
    let net = |defs: &mut Vec<_>, h: &str, dev: &str, m: &str, rate: f64| {
        let c = counter(0.0, rate, 7000);
        set(
            defs,
            m,
            &[("instance", &format!("{h}:9100")), ("device", dev)],
            move |_, ago| Some(c(ago)),
        );
    };
    net(
        &mut defs,
        "ash-3",
        "eth0",
        "node_network_receive_packets_total",
        1000.0,
    );
    net(
        &mut defs,
        "ash-3",
        "eth0",
        "node_network_receive_errs_total",
        50.0,
    );
    net(
        &mut defs,
        "ash-1",
        "eth0",
        "node_network_receive_packets_total",
        100_000.0,
    );
    net(
        &mut defs,
        "ash-1",
        "eth0",
        "node_network_receive_drop_total",
        5.0,
    );
    net(
        &mut defs,
        "ash-2",
        "ifb0",
        "node_network_transmit_drop_total",
        0.5,
    );
    let Some(world) = World::build(&defs, 7200, 15).await else {
        return;
    };
    let (facts, notes) = world.sweep(Some(1200)).await;
    assert!(notes.is_empty(), "{notes:?}");
    let all = lines(&facts);
    eprintln!("{all}");
    let cpu: Vec<_> = facts.iter().filter(|f| f.analyzer == "cpu").collect();
    assert_eq!(cpu.len(), 3, "{all}");
    let busy = cpu.iter().find(|f| f.what == "CPU busy").expect(&all);
    assert_eq!(busy.entity.name, "ash-2", "{all}");
    assert_eq!(busy.severity, Severity::Warning, "{all}");
    let v = busy.value.unwrap().value;
    assert!((95.0..97.0).contains(&v), "{all}");
    let began = (chrono::Utc::now() - busy.since.expect("since")).num_seconds();
    assert!((850..1300).contains(&began), "{all}");
    assert!(busy.detail.as_deref().unwrap().contains("cargo"), "{all}");
    let top = cpu.iter().find(|f| f.entity.kind == "process").expect(&all);
    assert_eq!(top.entity.name, "cargo", "{all}");
    assert_eq!(top.entity.host.as_deref(), Some("ash-2"), "{all}");
    let share = top.value.unwrap().value;
    assert!((85.0..95.0).contains(&share), "{all}");
    let wait = cpu.iter().find(|f| f.what.contains("I/O")).expect(&all);
    assert_eq!(wait.entity.name, "ash-1", "{all}");
    let top_io = "top I/O: process rustc 50.0 MiB/s";
    assert!(wait.detail.as_deref().unwrap().starts_with(top_io), "{all}");
    let disk: Vec<_> = facts.iter().filter(|f| f.analyzer == "disk_io").collect();
    assert_eq!(
        disk.len(),
        2,
        "the disk and the process doing its I/O: {all}"
    );
    assert_eq!(disk[0].entity.name, "vda");
    assert_eq!(disk[0].entity.host.as_deref(), Some("ash-1"));
    assert!(disk[0].detail.as_deref().unwrap().contains(top_io), "{all}");
    assert!(
        !disk[0].detail.as_deref().unwrap().contains("bash"),
        "{all}"
    );
    assert_eq!(
        (disk[1].entity.kind.as_str(), disk[1].entity.name.as_str()),
        ("process", "rustc")
    );
    assert_eq!(disk[1].entity.host.as_deref(), Some("ash-1"));
    assert_eq!(disk[1].what, "I/O read and written, the most on its host");
    let net: Vec<_> = facts
        .iter()
        .filter(|f| f.analyzer == "network_errors")
        .collect();
    assert_eq!(net.len(), 1, "{all}");
    assert_eq!(net[0].entity.name, "eth0");
    assert_eq!(net[0].entity.host.as_deref(), Some("ash-3"));
    assert_eq!(net[0].what, "receive errors");
    let v = net[0].value.unwrap().value;
    assert!((45.0..55.0).contains(&v), "{all}");
}

#[tokio::test]
async fn a_node_kept_busy_by_a_container_names_the_container_from_the_kubelets_capture() {
    let mut defs = calm_hosts(&["kind-worker", "kind-worker2"]);
    let kubelet = super::world::Capture::load("kubelet_metrics_resource.prom");
    defs.extend(kubelet.series("kind-worker:10250", "kubelet"));
    // kind-worker: 95 % busy for the last 15 minutes, awx-web using 1.7 of its 2 CPUs.
    cpu_modes(
        &mut defs,
        "kind-worker",
        900,
        &[("idle", 0.05), ("user", 0.9), ("system", 0.05)],
    );
    let c = counter(0.01, 1.7, 900);
    set(
        &mut defs,
        "container_cpu_usage_seconds_total",
        &[("container", "awx-web")],
        move |_, ago| Some(c(ago)),
    );
    let Some(world) = World::build(&defs, 7200, 15).await else {
        return;
    };
    let (facts, notes) = world.sweep(Some(900)).await;
    assert!(notes.is_empty(), "{notes:?}");
    let all = lines(&facts);
    eprintln!("{all}");
    let cpu: Vec<_> = facts.iter().filter(|f| f.analyzer == "cpu").collect();
    assert_eq!(cpu.len(), 2, "{all}");
    assert_eq!(cpu[0].entity.name, "kind-worker", "{all}");
    let top = cpu[1];
    assert_eq!(top.entity.kind, "container", "{all}");
    assert_eq!(
        top.entity.name, "awx/awx-web-5d5d7ccf85-7jjgm/awx-web",
        "{all}"
    );
    assert_eq!(top.entity.host.as_deref(), Some("kind-worker"), "{all}");
    let share = top.value.unwrap().value;
    assert!((80.0..90.0).contains(&share), "{all}");
}

#[tokio::test]
async fn a_vm_whose_hypervisor_gives_its_cpu_time_to_others_is_told_apart_from_a_busy_one() {
    let mut defs = calm_hosts(&["elm-vm", "elm-bare"]);
    // elm-vm: for the last 30 minutes 35 % of its CPU time stolen, its own work unchanged
    // (a neighbour on its hypervisor node); elm-bare busy with its own work at 60 %, no
    // steal, and a trace of steal on neither before.
    cpu_modes(
        &mut defs,
        "elm-vm",
        1800,
        &[
            ("idle", 0.58),
            ("steal", 0.35),
            ("user", 0.05),
            ("system", 0.02),
        ],
    );
    cpu_modes(
        &mut defs,
        "elm-bare",
        1800,
        &[("idle", 0.4), ("user", 0.55), ("system", 0.05)],
    );
    let Some(world) = World::build(&defs, 7200, 15).await else {
        return;
    };
    let (facts, notes) = world.sweep(Some(1500)).await;
    assert!(notes.is_empty(), "{notes:?}");
    let all = lines(&facts);
    eprintln!("{all}");
    let cpu: Vec<_> = facts.iter().filter(|f| f.analyzer == "cpu").collect();
    assert_eq!(cpu.len(), 1, "{all}");
    let steal = cpu[0];
    assert_eq!(steal.what, "CPU time stolen by the hypervisor", "{all}");
    assert_eq!(steal.entity.name, "elm-vm", "{all}");
    let v = steal.value.unwrap().value;
    assert!((33.0..37.0).contains(&v), "{all}");
    let began = (chrono::Utc::now() - steal.since.expect("since")).num_seconds();
    assert!((1500..2100).contains(&began), "{all}");
    let detail = steal.detail.as_deref().unwrap();
    assert!(detail.starts_with("the guest's own work 7"), "{all}");
}

#[tokio::test]
async fn a_load_its_cpus_do_not_show_as_busy_names_the_docker_container_burning_them() {
    let mut defs = calm_hosts(&["oak-1", "oak-2"]);
    // oak-1 (2 CPUs, Docker, no Kubernetes): for the last 20 minutes 80 % busy, below the
    // busy threshold, with a load of 3.4 (1.7 per CPU); cAdvisor's `transcoder` container
    // uses 1.5 CPUs. oak-2 keeps the captured load (2.44 on 2 CPUs).
    cpu_modes(
        &mut defs,
        "oak-1",
        1200,
        &[("idle", 0.2), ("user", 0.75), ("system", 0.05)],
    );
    set(
        &mut defs,
        "node_load1",
        &[("instance", "oak-1:9100")],
        |_, ago| Some(if ago > 1200 { 0.3 } else { 3.4 }),
    );
    for (name, id, before, after) in [
        ("transcoder", "/docker/7c1e", 0.01, 1.5),
        ("proxy", "/docker/21ab", 0.02, 0.02),
        ("", "/", 0.14, 1.6),
    ] {
        let c = counter(before, after, 1200);
        defs.push(super::world::series(
            "container_cpu_usage_seconds_total",
            &[
                ("instance", "oak-1:8080"),
                ("job", "cadvisor"),
                ("id", id),
                ("name", name),
                ("image", if name.is_empty() { "" } else { "img:1" }),
            ],
            move |ago| Some(c(ago)),
        ));
    }
    let Some(world) = World::build(&defs, 7200, 15).await else {
        return;
    };
    let (facts, notes) = world.sweep(Some(900)).await;
    assert!(notes.is_empty(), "{notes:?}");
    let all = lines(&facts);
    eprintln!("{all}");
    let cpu: Vec<_> = facts.iter().filter(|f| f.analyzer == "cpu").collect();
    assert_eq!(cpu.len(), 2, "{all}");
    let load = cpu[0];
    assert_eq!(
        (load.entity.name.as_str(), load.what.as_str(), load.severity),
        ("oak-1", "load per CPU", Severity::Warning),
        "{all}"
    );
    assert_eq!(load.value.unwrap().value, 1.7, "{all}");
    let detail = load.detail.as_deref().unwrap();
    assert!(
        detail.starts_with("load1 3.4 on 2 CPUs; CPUs busy 8"),
        "{detail}"
    );
    assert!(
        detail.contains("top: container transcoder 1.5 CPUs (75 % of the host)"),
        "{detail}"
    );
    assert!(!detail.contains("proxy"), "{detail}");
    let began = (chrono::Utc::now() - load.since.expect("since")).num_seconds();
    assert!((1100..1400).contains(&began), "{all}");
    let top = cpu[1];
    assert_eq!(
        (top.entity.kind.as_str(), top.entity.name.as_str()),
        ("container", "transcoder"),
        "{all}"
    );
    assert_eq!(top.entity.host.as_deref(), Some("oak-1"));
}
