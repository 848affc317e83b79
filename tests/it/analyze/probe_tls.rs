//! `probe_failures` when a served TLS certificate expires: blackbox_exporter's real output
//! of a verifying probe against an expired certificate (tests/fixtures/exporters/
//! blackbox_https_expired.prom: status 0, no connect phase, no `probe_ssl_*` series, the
//! same figures as a refused connection) after hours of healthy TLS probes. The probe
//! whose last certificate expired says so; a probe failing the same way whose last
//! certificate is still valid, and one that never spoke TLS, say only that no HTTP
//! response came, never that the connection was refused.

use sre_agent::analyze::Fact;

use super::captured::{When, target};
use super::world::{SeriesDef, World, lines};

fn since_mins(ago_min: i64) -> When {
    Box::new(move |ago| ago < ago_min * 60)
}

fn always() -> When {
    Box::new(|_| true)
}

/// A TLS probe of `url`: healthy with a certificate whose notAfter is `not_after` until
/// `failed_mins` ago, then failing its handshake.
fn tls_probe(url: &str, not_after: f64, failed_mins: Option<i64>) -> Vec<SeriesDef> {
    let mut phases = Vec::new();
    if let Some(m) = failed_mins {
        phases.push((since_mins(m), "blackbox_https_expired.prom"));
    }
    phases.push((always(), "blackbox_https_selfsigned.prom"));
    target(&[("instance", url), ("job", "blackbox-tls")], phases)
        .into_iter()
        .map(|mut d| {
            if d.name == "probe_ssl_earliest_cert_expiry" {
                let old = std::mem::replace(&mut d.value, Box::new(|_| None));
                d.value = Box::new(move |ago| old(ago).map(|_| not_after));
            }
            d
        })
        .collect()
}

fn probe<'a>(facts: &'a [Fact], part: &str) -> &'a Fact {
    facts
        .iter()
        .find(|f| f.analyzer == "probe_failures" && f.entity.name.contains(part))
        .unwrap_or_else(|| panic!("{part}:\n{}", lines(facts)))
}

#[tokio::test]
async fn a_probe_whose_certificate_expired_says_so_and_other_handshake_or_connection_failures_do_not()
 {
    let now = chrono::Utc::now().timestamp() as f64;
    let mut defs = Vec::new();
    // Expired 25 minutes ago; the probes have failed since.
    defs.extend(tls_probe(
        "https://billing.corp.example/",
        now - 1500.0,
        Some(25),
    ));
    // Failing its handshake for 10 minutes with a certificate valid for 40 more days (a
    // CA or name problem, not an expiry).
    defs.extend(tls_probe(
        "https://intranet.corp.example/",
        now + 40.0 * 86400.0,
        Some(10),
    ));
    // Healthy.
    defs.extend(tls_probe(
        "https://status.corp.example/",
        now + 60.0 * 86400.0,
        None,
    ));
    // Plain HTTP, refused all along.
    defs.extend(target(
        &[("instance", "http://10.9.8.7:8080/"), ("job", "blackbox")],
        vec![(always(), "blackbox_http_refused.prom")],
    ));
    let Some(world) = World::build(&defs, 3 * 3600, 15).await else {
        return;
    };
    let (facts, notes) = world.sweep(Some(1500)).await;
    assert!(notes.is_empty(), "{notes:?}");
    let all = lines(&facts);
    let failing: Vec<&Fact> = facts
        .iter()
        .filter(|f| f.analyzer == "probe_failures")
        .collect();
    assert_eq!(failing.len(), 3, "{all}");

    let billing = probe(&facts, "billing");
    assert_eq!(billing.what, "failing: TLS certificate expired", "{all}");
    let detail = billing.detail.as_deref().unwrap();
    assert!(
        detail.starts_with("the last certificate the probe saw expired at ")
            && detail.contains("(25 min ago); no TLS session since"),
        "{detail}"
    );
    assert!(
        detail.ends_with(
            "; subject CN=localhost,O=sre-agent tests; issuer CN=sre-agent test CA,O=sre-agent tests"
        ),
        "{detail}"
    );
    let mins = (chrono::Utc::now() - billing.since.expect("a since")).num_seconds() / 60;
    assert!((24..=26).contains(&mins), "{all}");
    let query = billing.source.arguments["query"].as_str().unwrap();
    assert!(
        query.starts_with("last_over_time(probe_ssl_earliest_cert_expiry{")
            && query.contains("billing.corp.example"),
        "{query}"
    );

    for part in ["intranet", "10.9.8.7"] {
        let f = probe(&facts, part);
        assert_eq!(f.what, "failing: no HTTP response", "{all}");
        let d = f.detail.as_deref().unwrap();
        assert!(!d.contains("refused") && !d.contains("expired"), "{all}");
    }
    // The expired certificate is not also reported live by certificate_expiry (blackbox
    // no longer reports it); the valid ones are far from expiry.
    assert!(
        facts.iter().all(|f| f.analyzer != "certificate_expiry"),
        "{all}"
    );
}
