use super::*;
use crate::analyze::prom::labels;

/// A minute apart, the last at `END`.
const END: f64 = 1_800_000_000.0;

/// A rate series of `n` points a minute apart ending at [`END`], from `f(minutes_ago)`.
fn points(n: usize, f: impl Fn(usize) -> f64) -> Vec<(f64, f64)> {
    (0..n)
        .map(|i| {
            let ago = n - 1 - i;
            (END - 60.0 * ago as f64, f(ago))
        })
        .collect()
}

fn series(instance: &str, device: &str, values: Vec<(f64, f64)>) -> Series {
    Series {
        metric: labels(&[("device", device), ("instance", instance), ("job", "node")]),
        values,
    }
}

/// A quiet segment's multicast (a few frames a second) until `at` minutes ago, then `to`.
fn stormed(at: usize, to: f64) -> Vec<(f64, f64)> {
    points(60, move |ago| {
        if ago < at {
            to + (ago % 3) as f64
        } else {
            4.0 + (ago % 2) as f64
        }
    })
}

const MULTICAST: &Signal = &SIGNALS[0];
const PACKETS: &Signal = &SIGNALS[1];

#[test]
fn a_rate_many_times_its_level_since_a_point_rose_there_and_a_spike_did_not() {
    let (onset, before, now) = rise(&stormed(20, 9000.0), MULTICAST).unwrap();
    assert_eq!(onset, END - 60.0 * 19.0);
    assert_eq!((before, now), (5.0, 9001.0));
    // One point read across a counter reset (a huge rate), at the end or in the middle.
    let spike_end = points(60, |ago| if ago == 0 { 1e9 } else { 5.0 });
    assert_eq!(rise(&spike_end, MULTICAST), None);
    let spike_mid = points(60, |ago| if ago == 30 { 1e9 } else { 5.0 });
    assert_eq!(rise(&spike_mid, MULTICAST), None);
    // High all along: no level before it in the window.
    assert_eq!(rise(&points(60, |_| 9000.0), MULTICAST), None);
    // A busy segment that doubled is not a storm; nor a rise of a few frames.
    assert_eq!(rise(&stormed(20, 9.0), MULTICAST), None);
    let doubled = points(60, |ago| if ago < 20 { 4000.0 } else { 2000.0 });
    assert_eq!(rise(&doubled, MULTICAST), None);
    // Too few points, bad values.
    assert_eq!(rise(&stormed(2, 9000.0)[..3], MULTICAST), None);
    let nan = points(60, |ago| if ago < 20 { f64::NAN } else { 5.0 });
    assert_eq!(rise(&nan, MULTICAST), None);
}

#[test]
fn the_same_jump_on_several_hosts_at_once_is_a_storm_and_one_hosts_is_not() {
    let all = vec![
        series("elm-1:9100", "eth0", stormed(20, 9000.0)),
        // A bridge and its port see the same flood: one rise per host, the larger.
        series("elm-2:9100", "vmbr0", stormed(19, 8000.0)),
        series("elm-2:9100", "eno1", stormed(19, 8500.0)),
        series("elm-3:9100", "ens18", stormed(18, 7000.0)),
        series("elm-4:9100", "eth0", stormed(60, 5.0)),
    ];
    let group = together(rises(&all, MULTICAST), MULTICAST.min_hosts);
    let found: Vec<(&str, &str)> = group
        .iter()
        .map(|r| (r.host.as_str(), r.labels["device"].as_str()))
        .collect();
    assert_eq!(
        found,
        [("elm-1", "eth0"), ("elm-2", "eno1"), ("elm-3", "ens18")]
    );
    let fact = storm_fact(
        "network_storm",
        MULTICAST,
        &group,
        &["interrupts rose".into()],
        "5m",
    );
    assert_eq!(fact.severity, Severity::Critical);
    assert_eq!(fact.entity.name, "elm-1, elm-2, elm-3");
    assert_eq!(fact.since.unwrap().timestamp() as f64, END - 60.0 * 19.0);
    let line = fact.line(time_of(END).unwrap());
    assert!(
        line.starts_with(
            "network elm-1, elm-2, elm-3: multicast/broadcast frames received rose on 3 hosts \
             at once (1700-fold), from 5/s to 8501/s"
        ),
        "{line}"
    );
    assert!(line.contains("layer-2 loop"), "{line}");
    assert!(line.contains("interrupts rose"), "{line}");
    assert!(line.contains("elm-2 eno1 5/s → 8501/s"), "{line}");
    assert_eq!(
        fact.source.arguments["query"],
        r#"rate(node_network_receive_multicast_total{instance=~"elm-1:9100|elm-2:9100|elm-3:9100"}[5m])"#
    );
    let hosts: Vec<Option<&str>> = fact.related.iter().map(|e| e.host.as_deref()).collect();
    assert_eq!(hosts, [Some("elm-1"), Some("elm-2"), Some("elm-3")]);
    assert_eq!(fact.related[0].labels["instance"], "elm-1:9100");

    // One host alone: its own traffic, not the network's.
    let one = vec![
        series("elm-1:9100", "eth0", stormed(20, 9000.0)),
        series("elm-2:9100", "eth0", stormed(60, 5.0)),
    ];
    assert!(together(rises(&one, MULTICAST), MULTICAST.min_hosts).is_empty());
    // Two hosts whose rises began hours apart: two events.
    let apart = vec![
        series("elm-1:9100", "eth0", stormed(5, 9000.0)),
        series("elm-2:9100", "eth0", stormed(50, 9000.0)),
    ];
    assert!(together(rises(&apart, MULTICAST), MULTICAST.min_hosts).is_empty());
    // Received packets need more hosts: two hosts exchanging a backup are not a flood.
    let backup = vec![
        series("elm-1:9100", "eth0", stormed(20, 90_000.0)),
        series("elm-2:9100", "eth0", stormed(20, 90_000.0)),
    ];
    assert!(together(rises(&backup, PACKETS), PACKETS.min_hosts).is_empty());
}

#[test]
fn a_small_storm_is_a_warning_and_the_hosts_named_are_bounded() {
    let group: Vec<Rise> = (0..9)
        .map(|i| Rise {
            labels: labels(&[("device", "eth0"), ("instance", &format!("h{i}:9100"))]),
            host: format!("h{i}"),
            before: 40.0,
            now: 400.0,
            onset: END,
        })
        .collect();
    let fact = storm_fact("network_storm", MULTICAST, &group, &[], "5m");
    assert_eq!(fact.severity, Severity::Warning);
    assert_eq!(fact.entity.name, "h0, h1, h2, h3, h4, h5 and 3 more");
    assert_eq!(fact.related.len(), 9);
}

/// Every counter of the captured node_exporter (two real scrapes 15 s apart) as rates:
/// `(name, labels, per second)`.
fn captured_rates() -> Vec<(String, Labels, f64)> {
    let read = |file: &str| {
        let path = format!(
            "{}/tests/fixtures/exporters/{file}",
            env!("CARGO_MANIFEST_DIR")
        );
        let text = std::fs::read_to_string(path).expect("fixture");
        let mut out = HashMap::new();
        for line in text.lines().filter(|l| !l.starts_with('#')) {
            let Some((key, value)) = line.rsplit_once(' ') else {
                continue;
            };
            let Ok(v) = value.parse::<f64>() else {
                continue;
            };
            out.insert(key.to_string(), v);
        }
        out
    };
    let (first, second) = (
        read("node_exporter.prom"),
        read("node_exporter.after15s.prom"),
    );
    let mut out = Vec::new();
    for (key, v) in &first {
        let (name, labels) = key.split_once('{').unwrap_or((key.as_str(), ""));
        if !name.ends_with("_total") {
            continue;
        }
        if let Some(w) = second.get(key) {
            let pairs = labels
                .trim_end_matches('}')
                .split("\",")
                .filter_map(|kv| kv.split_once("=\""))
                .map(|(k, v)| (k.to_string(), v.trim_end_matches('"').to_string()));
            out.push((name.to_string(), pairs.collect(), (w - v) / 15.0));
        }
    }
    assert!(out.len() > 100, "{}", out.len());
    out
}

#[test]
fn the_captured_exporters_counters_on_several_hosts_are_no_storm_until_one_is_written_in() {
    let rates = captured_rates();
    let mut all = Vec::new();
    for h in ["oak-1", "oak-2", "oak-3", "oak-4"] {
        for (i, (name, l, r)) in rates.iter().enumerate() {
            // Each real counter at its captured pace, wandering by a tenth.
            let values = points(60, |ago| r * (1.0 + 0.1 * ((ago + i) % 3) as f64 / 2.0));
            let mut metric = l.clone();
            metric.insert("__name__".into(), name.clone());
            metric.insert("instance".into(), format!("{h}:9100"));
            all.push(Series { metric, values });
        }
    }
    for signal in &SIGNALS {
        assert!(together(rises(&all, signal), signal.min_hosts).is_empty());
    }
    // The real multicast counters of two of them, flooded from 15 minutes ago.
    for s in all.iter_mut().filter(|s| {
        s.metric["__name__"] == "node_network_receive_multicast_total"
            && s.metric.get("device").map(String::as_str) == Some("eth0")
            && ["oak-2:9100", "oak-4:9100"].contains(&s.metric["instance"].as_str())
    }) {
        s.values = stormed(15, 30_000.0);
    }
    let group = together(rises(&all, MULTICAST), MULTICAST.min_hosts);
    let hosts: Vec<&str> = group.iter().map(|r| r.host.as_str()).collect();
    assert_eq!(hosts, ["oak-2", "oak-4"]);
}

#[test]
fn the_storm_ranks_above_the_alerting_hosts_own_series_of_it() {
    use crate::analyze::{Focus, rank};
    let group = together(
        rises(
            &[
                series("elm-1:9100", "eth0", stormed(20, 900.0)),
                series("elm-2:9100", "eno1", stormed(19, 800.0)),
            ],
            MULTICAST,
        ),
        MULTICAST.min_hosts,
    );
    let storm = storm_fact("network_storm", MULTICAST, &group, &[], "5m");
    assert_eq!(storm.severity, Severity::Warning, "the weaker case");
    let onset = storm.since.unwrap();
    // What the per-host analyzers say of the alerting host: its own counter stepped,
    // its interrupts too, at the same time and as warnings.
    let own = |name: &str| {
        Fact::new(
            FactClass::Change,
            "steps",
            Entity::new("series", name)
                .on_host(Some("elm-2".into()))
                .with_labels(labels_map(&labels(&[
                    ("__name__", name),
                    ("device", "eno1"),
                    ("instance", "elm-2:9100"),
                    ("job", "node"),
                ]))),
            "counting 5/s before, now",
            Severity::Warning,
            Source::promql(name),
        )
        .since(Some(onset))
    };
    let alert = labels(&[
        ("alertname", "HostUnusualNetworkThroughputIn"),
        ("device", "eno1"),
        ("instance", "elm-2:9100"),
        ("job", "node"),
    ]);
    let focus = Focus::alert(&alert, Some(onset + TimeDelta::minutes(3)));
    for facts in [
        vec![
            own("node_network_receive_multicast_total"),
            own("node_intr_total"),
            storm.clone(),
        ],
        vec![storm.clone(), own("node_network_receive_packets_total")],
    ] {
        let ranked = rank(facts, &focus);
        assert_eq!(ranked[0].fact.analyzer, "network_storm", "{ranked:?}");
        assert!(ranked[0].about_trigger);
    }
}
