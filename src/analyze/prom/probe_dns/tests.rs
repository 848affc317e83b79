use super::*;
use crate::analyze::prom::captures::captured;
use crate::analyze::prom::labels;
use std::collections::HashMap;

const T0: f64 = 1_800_000_000.0;
/// A minute between points.
const STEP: f64 = 60.0;

fn probe(instance: &str, job: &str) -> Labels {
    labels(&[("instance", instance), ("job", job), ("module", "http_2xx")])
}

/// A lookup-time history: `before` seconds for `fast` points, then `after` for `slow` points.
fn history(l: &Labels, before: f64, fast: usize, after: f64, slow: usize) -> Series {
    let values = (0..fast + slow)
        .map(|i| {
            let v = if i < fast { before } else { after };
            (T0 + STEP * i as f64, v)
        })
        .collect();
    Series {
        metric: l.clone(),
        values,
    }
}

#[test]
fn many_probes_of_one_prober_slowed_together_to_a_resolver_timeout_are_its_resolver() {
    let series = vec![
        history(&probe("https://shop.example/", "bb"), 0.003, 50, 5.01, 10),
        history(&probe("https://wiki.example/", "bb"), 0.004, 50, 5.02, 10),
        history(&probe("https://mail.example/", "bb"), 0.002, 51, 5.0, 9),
        // An IP target needs no lookup: fast throughout.
        history(&probe("http://10.0.0.9/", "bb"), 0.000_01, 60, 0.000_01, 0),
    ];
    let g = groups(&series);
    assert_eq!(g.len(), 1, "{g:?}");
    assert_eq!((g[0].probes.len(), g[0].of), (3, 4));
    let unresolved = HashSet::from([identity(&probe("https://mail.example/", "bb"))]);
    let f = fact(&g[0], &unresolved, &[]);
    assert_eq!(f.entity.name, "job bb");
    assert_eq!(f.severity, Severity::Critical);
    let d = f.detail.unwrap_or_default();
    assert!(
        d.starts_with(
            "DNS lookups on 3 of 4 probes of job bb went from 3 ms to 5.0 s at 2027-01-15 \
             08:50 UTC; about one resolver timeout of 5 s: the resolver the prober uses first \
             is not answering (a resolver timeout, then the next one)"
        ),
        "{d}"
    );
    assert!(d.contains("1 of them now resolve no address"), "{d}");
    assert_eq!(f.figures["probes_slow"].value, 3.0);
    assert_eq!(
        f.since.map(|t| t.timestamp()),
        Some((T0 + 50.0 * STEP) as i64)
    );
    // Two timeouts (two dead nameservers, or a retry) are told as such.
    assert_eq!(
        timeouts(10.02).as_deref(),
        Some("about 2 resolver timeouts of 5 s")
    );
    assert_eq!(timeouts(2.5), None);
    assert_eq!(timeouts(0.2), None);
}

#[test]
fn one_slow_probe_a_blip_a_probe_slow_all_along_or_onsets_apart_are_not_the_resolver() {
    let one = vec![
        history(&probe("a", "bb"), 0.003, 50, 5.0, 10),
        history(&probe("b", "bb"), 0.003, 60, 0.003, 0),
    ];
    assert!(groups(&one).is_empty());
    // A single slow point at the end of each.
    let blips = vec![
        history(&probe("a", "bb"), 0.003, 59, 5.0, 1),
        history(&probe("b", "bb"), 0.003, 59, 5.0, 1),
    ];
    assert!(groups(&blips).is_empty());
    // Slow from the start: no change to tell.
    let always = vec![
        history(&probe("a", "bb"), 5.0, 0, 5.0, 60),
        history(&probe("b", "bb"), 5.0, 0, 5.0, 60),
    ];
    assert!(groups(&always).is_empty());
    // Slowed hours apart: two targets' own domains.
    let apart = vec![
        history(&probe("a", "bb"), 0.003, 10, 5.0, 200),
        history(&probe("b", "bb"), 0.003, 190, 5.0, 20),
    ];
    assert!(groups(&apart).is_empty());
    // Slow probes of two probers are two probers with one slow probe each.
    let two = vec![
        history(&probe("a", "bb-east"), 0.003, 50, 5.0, 10),
        history(&probe("a", "bb-west"), 0.003, 50, 5.0, 10),
    ];
    assert!(groups(&two).is_empty());
    // From 0.3 s to 0.45 s is not slow.
    let mild = vec![
        history(&probe("a", "bb"), 0.3, 50, 0.45, 10),
        history(&probe("b", "bb"), 0.3, 50, 0.45, 10),
    ];
    assert!(groups(&mild).is_empty());
    assert!(slowed(&probe("a", "bb"), &[(T0, f64::NAN), (T0 + STEP, 5.0)]).is_none());
}

/// The captured probes (tests/fixtures/exporters, README): `file`'s samples as one probe.
fn capture(file: &str, instance: &str, module: &str) -> HashMap<String, Vec<Sample>> {
    let text = match file {
        "http_200" => include_str!("../../../../tests/fixtures/exporters/blackbox_http_200.prom"),
        "http_502" => include_str!("../../../../tests/fixtures/exporters/blackbox_http_502.prom"),
        "dead_first" => include_str!(
            "../../../../tests/fixtures/exporters/blackbox_http_first_nameserver_dead.prom"
        ),
        "resolver_dead" => {
            include_str!("../../../../tests/fixtures/exporters/blackbox_dns_resolver_dead.prom")
        }
        "resolver_ok" => {
            include_str!("../../../../tests/fixtures/exporters/blackbox_dns_resolver_ok.prom")
        }
        other => panic!("{other}"),
    };
    captured(
        text,
        &[("instance", instance), ("job", "bb"), ("module", module)],
        T0,
    )
}

fn lookup(c: &HashMap<String, Vec<Sample>>) -> f64 {
    c.get(LOOKUP)
        .and_then(|v| v.first())
        .map(|s| s.value)
        .expect("a lookup time")
}

/// What `probe_success == 0 and probe_dns_answer_rrs` returns of `c`.
fn failing_dns_module(c: &HashMap<String, Vec<Sample>>) -> Vec<Sample> {
    match c.contains_key("probe_dns_answer_rrs") {
        true => c
            .get("probe_success")
            .map(|v| v.iter().filter(|s| s.value == 0.0).cloned().collect())
            .unwrap_or_default(),
        false => Vec::new(),
    }
}

#[test]
fn real_probes_slowed_by_a_hung_first_nameserver_name_the_resolver_a_dns_module_finds_dead() {
    let after = lookup(&capture("dead_first", "x", "http_2xx"));
    assert!((5.0..5.1).contains(&after), "{after}");
    let series: Vec<Series> = [
        ("http_200", "https://shop.example/"),
        ("http_502", "https://wiki.example/"),
    ]
    .iter()
    .map(|(file, instance)| {
        let before = lookup(&capture(file, instance, "http_2xx"));
        history(&probe(instance, "bb"), before, 40, after, 8)
    })
    .collect();
    let g = groups(&series);
    assert_eq!(g.len(), 1, "{g:?}");
    let dead = failing_dns_module(&capture("resolver_dead", "127.0.0.2", "dns_udp"));
    assert_eq!(dead.len(), 1);
    assert!(failing_dns_module(&capture("resolver_ok", "127.0.0.1", "dns_udp")).is_empty());
    let f = fact(&g[0], &HashSet::new(), &dead);
    let d = f.detail.unwrap_or_default();
    assert!(d.contains("to 5.0 s at"), "{d}");
    assert!(d.contains("about one resolver timeout of 5 s"), "{d}");
    assert!(
        d.contains(
            "the resolver 127.0.0.2 probed directly (module dns_udp) fails (probe_success 0)"
        ),
        "{d}"
    );
    assert_eq!(f.related[0].name, "127.0.0.2");
    assert_eq!(f.severity, Severity::Critical);
}

#[test]
fn real_probes_at_their_captured_lookup_times_are_quiet() {
    let series: Vec<Series> = [
        ("http_200", "a"),
        ("http_502", "b"),
        ("resolver_ok", "127.0.0.1"),
        ("resolver_dead", "127.0.0.2"),
    ]
    .iter()
    .map(|(file, instance)| {
        let v = lookup(&capture(file, instance, "m"));
        history(&probe(instance, "bb"), v, 60, v, 0)
    })
    .collect();
    assert!(groups(&series).is_empty());
}
