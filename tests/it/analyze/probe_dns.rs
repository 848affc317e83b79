//! `probe_dns` when the first nameserver of a prober's resolver hangs: blackbox_exporter's
//! real output of an HTTP probe whose lookup waited the resolver's 5 s timeout before the
//! second nameserver answered (tests/fixtures/exporters/
//! blackbox_http_first_nameserver_dead.prom), on several probes of one prober from 20
//! minutes ago, after hours of healthy probes; the DNS module probing that nameserver
//! directly fails (blackbox_dns_resolver_dead.prom). Another prober's probes stay healthy
//! and are not told.

use super::captured::{When, target};
use super::world::{SeriesDef, World, lines};

fn since_mins(ago_min: i64) -> When {
    Box::new(move |ago| ago < ago_min * 60)
}

fn always() -> When {
    Box::new(|_| true)
}

/// An HTTP probe of `url` by prober `job`, its lookups slow from `slow_mins` ago.
fn http_probe(url: &str, job: &str, slow_mins: Option<i64>) -> Vec<SeriesDef> {
    let mut phases = Vec::new();
    if let Some(m) = slow_mins {
        phases.push((since_mins(m), "blackbox_http_first_nameserver_dead.prom"));
    }
    phases.push((always(), "blackbox_http_200.prom"));
    target(&[("instance", url), ("job", job)], phases)
}

#[tokio::test]
async fn probes_slowed_together_by_a_hung_first_nameserver_are_told_as_the_probers_resolver() {
    let mut defs = Vec::new();
    for url in [
        "http://shop.corp.example/",
        "http://wiki.corp.example/",
        "http://git.corp.example/",
    ] {
        defs.extend(http_probe(url, "blackbox", Some(20)));
    }
    defs.extend(http_probe("http://10.1.2.3/", "blackbox", None));
    for url in ["http://a.example/", "http://b.example/"] {
        defs.extend(http_probe(url, "blackbox-remote", None));
    }
    defs.extend(target(
        &[
            ("instance", "10.0.0.53"),
            ("job", "blackbox-dns"),
            ("module", "dns_udp"),
        ],
        vec![
            (since_mins(20), "blackbox_dns_resolver_dead.prom"),
            (always(), "blackbox_dns_resolver_ok.prom"),
        ],
    ));
    let Some(world) = World::build(&defs, 3 * 3600, 15).await else {
        return;
    };
    let (facts, notes) = world.sweep(Some(1200)).await;
    assert!(notes.is_empty(), "{notes:?}");
    let all = lines(&facts);
    let dns: Vec<_> = facts.iter().filter(|f| f.analyzer == "probe_dns").collect();
    assert_eq!(dns.len(), 1, "{all}");
    let f = dns[0];
    assert_eq!(f.entity.name, "job blackbox", "{all}");
    let d = f.detail.as_deref().unwrap_or_default();
    assert!(
        d.starts_with(
            "DNS lookups on 3 of 4 probes of job blackbox went from 0.0161 ms to 5.0 s at "
        ),
        "{d}"
    );
    assert!(
        d.contains("the resolver the prober uses first is not answering"),
        "{d}"
    );
    assert!(
        d.contains("the resolver 10.0.0.53 probed directly (module dns_udp) fails"),
        "{d}"
    );
    let mins = (chrono::Utc::now() - f.since.expect("a since")).num_seconds() / 60;
    assert!((18..=21).contains(&mins), "{all}");
}
