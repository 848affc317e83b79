use super::super::MEMORY as MEMORY_FOR_TESTS;
use super::*;
use crate::analyze::prom::{host, labels, labels_map};
use crate::analyze::{Entity, FactClass, Rate, Source, Unit};

const GIB: f64 = 1024.0 * 1024.0 * 1024.0;

fn key(instance: &str) -> Labels {
    labels(&[("instance", instance), ("job", "node")])
}

/// A memory fact as `exhaustion` makes it: `avail` of `total` bytes, used memory growing
/// `growth` bytes a second (with an ETA when it does).
fn memory_fact(instance: &str, avail: f64, total: f64, growth: Option<f64>) -> Fact {
    let l = key(instance);
    let used = 100.0 * (1.0 - avail / total);
    let mut f = Fact::new(
        FactClass::Exhaustion,
        "host_memory",
        Entity::new("memory", host(&l).unwrap_or_default()).with_labels(labels_map(&l)),
        "memory used",
        MEMORY_FOR_TESTS
            .severity(used, None)
            .unwrap_or(Severity::Info),
        Source::promql("x"),
    )
    .value(Quantity::percent(used))
    .limit(Quantity::bytes(total))
    .figure("available", Quantity::bytes(avail))
    .detail(format!("{} available", Quantity::bytes(avail)));
    if let Some(d) = growth {
        f = f
            .rate(Rate::from_per_second(d, Unit::Bytes))
            .eta(avail / d, "out of memory");
    }
    f
}

fn arc(size_gib: f64, c_min_gib: f64) -> ZfsArc {
    ZfsArc {
        size: size_gib * GIB,
        c_min: c_min_gib * GIB,
        c_max: Some(31.0 * GIB),
    }
}

#[test]
fn a_large_arc_above_its_floor_is_counted_available_and_the_shortage_is_lifted() {
    let mut facts = vec![memory_fact("nas:9100", 0.9 * GIB, 32.0 * GIB, None)];
    assert_eq!(facts[0].severity, Severity::Critical);
    let arcs = HashMap::from([(key("nas:9100"), arc(18.0, 1.0))]);
    with_arc(&mut facts, &arcs, &MEMORY_FOR_TESTS);
    let f = &facts[0];
    assert_eq!(f.severity, Severity::Info);
    let d = f.detail.as_deref().unwrap_or_default();
    assert_eq!(
        d,
        "available 921.6 MiB of 32.0 GiB, but the ZFS ARC holds 18.0 GiB of which 17.0 GiB \
         can be released on demand (down to c_min 1.0 GiB): effectively ≈17.9 GiB available \
         (44.1 % used) — not a real shortage"
    );
    assert_eq!(f.figures["zfs_arc_size"], Quantity::bytes(18.0 * GIB));
    assert_eq!(f.figures["zfs_arc_releasable"], Quantity::bytes(17.0 * GIB));
    assert_eq!(f.figures["zfs_arc_c_max"], Quantity::bytes(31.0 * GIB));
    let effective = f.figures["available_with_arc_released"].value;
    assert!((effective - 17.9 * GIB).abs() < 1.0, "{effective}");
    assert!(f.what.contains("ZFS ARC"), "{}", f.what);
}

#[test]
fn an_arc_too_small_to_matter_or_at_its_floor_leaves_the_fact_as_it_was() {
    let before = memory_fact("db:9100", 0.9 * GIB, 32.0 * GIB, None);
    for a in [arc(1.2, 0.1), arc(6.0, 6.0), arc(0.5, 2.0)] {
        let mut facts = vec![before.clone()];
        with_arc(
            &mut facts,
            &HashMap::from([(key("db:9100"), a)]),
            &MEMORY_FOR_TESTS,
        );
        assert_eq!(facts[0], before, "{a:?}");
    }
    // Another host's ARC is not this one's.
    let mut facts = vec![before.clone()];
    let arcs = HashMap::from([(key("nas:9100"), arc(18.0, 1.0))]);
    with_arc(&mut facts, &arcs, &MEMORY_FOR_TESTS);
    assert_eq!(facts[0], before);
}

#[test]
fn an_arc_that_cannot_cover_the_shortage_keeps_it_with_the_time_left_counted_from_both() {
    // 0.2 GiB available of 16 GiB, 1.0 GiB releasable, used memory growing 1 MiB/s.
    let mib = 1024.0 * 1024.0;
    let mut facts = vec![memory_fact("app:9100", 0.2 * GIB, 16.0 * GIB, Some(mib))];
    let arcs = HashMap::from([(key("app:9100"), arc(1.5, 0.5))]);
    with_arc(&mut facts, &arcs, &MEMORY_FOR_TESTS);
    let f = &facts[0];
    assert_eq!(f.severity, Severity::Critical);
    let d = f.detail.as_deref().unwrap_or_default();
    assert!(d.ends_with("(92.5 % used) — still short"), "{d}");
    let eta = f.eta_seconds.unwrap_or_default();
    assert!((eta - 1.2 * 1024.0).abs() < 1.0, "{eta}");
}

/// The series of a captured exposition, with the `instance` and `job` Prometheus adds.
fn captured(text: &str, instance: &str) -> HashMap<String, HashMap<Labels, f64>> {
    let (samples, _) = crate::eval::background::parse(text);
    let mut out: HashMap<String, HashMap<Labels, f64>> = HashMap::new();
    for s in samples {
        let mut l = s.labels.clone();
        l.insert("instance".into(), instance.into());
        l.insert("job".into(), "node".into());
        out.entry(s.name).or_default().insert(l, s.value);
    }
    out
}

#[test]
fn node_exporters_own_zfs_output_is_read_and_a_calm_host_without_zfs_gets_nothing() {
    // node_exporter's end-to-end test output over its arcstats fixture (README).
    let text = include_str!("../../../../../tests/fixtures/exporters/node_exporter_zfs_e2e.prom");
    let m = captured(text, "nas:9100");
    let get = |n: &str| m.get(n).cloned().unwrap_or_default();
    let arcs = join(
        get("node_zfs_arc_size"),
        get("node_zfs_arc_c_min"),
        get("node_zfs_arc_c_max"),
    );
    let a = arcs
        .get(&key("nas:9100"))
        .copied()
        .expect("the fixture's ARC");
    assert_eq!(a.size, 1_603_939_792.0);
    assert_eq!(a.c_min, 33_554_432.0);
    assert_eq!(a.c_max, Some(8_367_976_448.0));
    let total = get("node_memory_MemTotal_bytes")
        .get(&key("nas:9100"))
        .copied()
        .expect("MemTotal");
    // The capture has no MemAvailable: a host of its size with 2 % of it available (a
    // hand-written figure) has 1.5 GiB of ARC to give back.
    let mut facts = vec![memory_fact("nas:9100", 0.02 * total, total, None)];
    with_arc(&mut facts, &arcs, &MEMORY_FOR_TESTS);
    assert_eq!(facts[0].severity, Severity::Info);
    let d = facts[0].detail.as_deref().unwrap_or_default();
    assert!(d.contains("of which 1.5 GiB can be released"), "{d}");
    // The build machine's capture has no zfs series (its collector failed): nothing read.
    let calm = captured(
        include_str!("../../../../../tests/fixtures/exporters/node_exporter.prom"),
        "kiln:9100",
    );
    assert!(!calm.contains_key("node_zfs_arc_size"));
    let none = join(HashMap::new(), HashMap::new(), HashMap::new());
    let before = memory_fact("kiln:9100", 0.5 * GIB, 16.0 * GIB, None);
    let mut facts = vec![before.clone()];
    with_arc(&mut facts, &none, &MEMORY_FOR_TESTS);
    assert_eq!(facts[0], before);
}
