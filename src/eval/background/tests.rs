//! The background's parser, relabelling, motions and calm hosts.

use super::*;

fn spec(exporter: &str, instances: &[&str]) -> BackgroundSpec {
    BackgroundSpec {
        exporter: exporter.into(),
        instances: instances.iter().map(|s| s.to_string()).collect(),
        job: None,
        noise: 0.0,
    }
}

#[test]
fn every_exporter_of_the_manifest_has_its_files_and_parses_to_many_series() {
    for (name, e) in manifest() {
        let text = file(&e.file).unwrap_or_else(|| panic!("{name}: {} missing", e.file));
        assert!(parse(text).0.len() >= 10, "{name}: few samples");
        if let Some(n) = &e.next {
            assert!(file(n).is_some(), "{name}: {n} missing");
        }
    }
}

#[test]
fn the_text_format_parser_reads_escapes_types_and_timestamps() {
    let text = "# TYPE a_total counter\na_total{x=\"q\\\"z\",y=\"1\"} 3.5e+02 1704815762740\n\
                # HELP b b\nb NaN\nc{le=\"+Inf\"} 7\n";
    let (samples, types) = parse(text);
    assert_eq!(types["a_total"], "counter");
    assert_eq!(samples.len(), 2);
    assert_eq!(samples[0].labels["x"], "q\"z");
    assert_eq!(samples[0].value, 350.0);
    assert_eq!(samples[1].labels["le"], "+Inf");
}

#[test]
fn node_background_relabels_every_series_and_counters_grow_at_their_captured_rate() {
    let bg = series(&spec("node", &["cedar-07", "nas:9100"])).unwrap();
    let (captured, _) = parse(file("node_exporter.prom").unwrap());
    assert_eq!(bg.len(), 2 * (captured.len() + 1));
    assert!(bg.iter().all(|s| s.labels["job"] == "node"));
    assert!(bg.iter().any(|s| s.labels["instance"] == "cedar-07:9100"));
    let uname = bg
        .iter()
        .find(|s| s.name == "node_uname_info" && s.labels["instance"] == "nas:9100")
        .unwrap();
    assert_eq!(uname.labels["nodename"], "nas");
    let cpu = bg
        .iter()
        .find(|s| s.name == "node_cpu_seconds_total" && s.labels["mode"] == "idle")
        .unwrap();
    let Motion::Counter { rate } = cpu.motion else {
        panic!("{:?}", cpu.motion)
    };
    // An idle CPU counts at most one second per second.
    assert!(rate > 0.0 && rate <= 1.05, "{rate}");
    let clock = bg.iter().find(|s| s.name == "node_time_seconds").unwrap();
    let v = clock.value_at(2_000_000_000, 1_999_990_000, 2_000_000_000);
    assert!((v - 2_000_000_000.0).abs() < 5.0, "{v}");
}

#[test]
fn a_background_host_is_calm_synchronised_and_up_since_before_the_window_whatever_the_capture_did()
{
    let bg = series(&spec("node", &["cedar-07"])).unwrap();
    // Per CPU, the busy modes share what idle leaves of one second per second.
    let mut per_cpu: BTreeMap<String, (f64, f64)> = BTreeMap::new();
    for s in bg.iter().filter(|s| s.name == "node_cpu_seconds_total") {
        let Motion::Counter { rate } = s.motion else {
            panic!("{:?}", s.motion)
        };
        let e = per_cpu.entry(s.labels["cpu"].clone()).or_default();
        if s.labels["mode"] == "idle" {
            e.0 += rate;
        } else {
            e.1 += rate;
        }
    }
    assert!(!per_cpu.is_empty());
    for (cpu, (idle, busy)) in per_cpu {
        assert!(busy <= 0.1, "cpu {cpu}: busy {busy}");
        assert!(
            (idle + busy - 1.0).abs() < 1e-6,
            "cpu {cpu}: {idle} + {busy}"
        );
    }
    // Its clock is synchronised, with an error of milliseconds.
    let value = |name: &str| bg.iter().find(|s| s.name == name).unwrap().value;
    assert_eq!(value("node_timex_sync_status"), 1.0);
    assert!(value("node_timex_maxerror_seconds") < 0.1);
    let (start, now) = (1_999_990_000, 2_000_000_000);
    for name in ["node_boot_time_seconds", "process_start_time_seconds"] {
        let s = bg.iter().find(|s| s.name == name).unwrap();
        assert!(
            s.value_at(now, start, now) <= (start - 86_400) as f64,
            "{name}"
        );
    }
}

#[test]
fn a_probe_keeps_its_target_as_instance_and_its_certificate_expiry_relative_to_now() {
    let bg = series(&spec("blackbox-tls", &["https://photos.lan"])).unwrap();
    let expiry = bg
        .iter()
        .find(|s| s.name == "probe_ssl_earliest_cert_expiry")
        .unwrap();
    assert_eq!(expiry.labels["instance"], "https://photos.lan");
    let now = 1_900_000_000;
    let left = expiry.value_at(now, now - 3600, now) - now as f64;
    let Motion::Timestamp { captured, .. } = expiry.motion else {
        panic!()
    };
    assert!((left - (expiry.value - captured as f64)).abs() < 1.0);
}

#[test]
fn noise_stays_within_its_fraction_and_an_unknown_exporter_is_refused() {
    let mut s = spec("process", &["db1"]);
    s.noise = 0.02;
    let bg = series(&s).unwrap();
    let g = bg
        .iter()
        .find(|x| matches!(x.motion, Motion::Gauge { .. }) && x.value > 1000.0)
        .unwrap();
    for t in (0..86_400).step_by(600) {
        let v = g.value_at(t, 0, 86_400);
        assert!((v / g.value - 1.0).abs() <= 0.02 + 1e-9);
    }
    assert!(
        series(&spec("snmp", &["a"]))
            .unwrap_err()
            .contains("not one of")
    );
    assert!(series(&spec("node", &[])).is_err());
}

#[test]
fn only_gauges_that_vary_wander_a_size_or_a_state_stays_put() {
    let mut s = spec("node", &["db1"]);
    s.noise = 0.05;
    let bg = series(&s).unwrap();
    let moves = |name: &str| {
        let g = bg.iter().find(|x| x.name == name).unwrap();
        (0..86_400)
            .step_by(600)
            .any(|t| g.value_at(t, 0, 86_400) != g.value)
    };
    // Changed between the two captured scrapes.
    assert!(moves("node_memory_MemFree_bytes"));
    assert!(moves("node_load1"));
    // A size, a link's speed, a 0/1 state: the same in both scrapes.
    assert!(!moves("node_memory_MemTotal_bytes"));
    assert!(!moves("node_network_speed_bytes"));
    assert!(!moves("node_network_up"));
}
