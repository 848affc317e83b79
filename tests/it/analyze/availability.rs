//! `targets_down`, `probe_failures`, `certificate_expiry`: what is not answering, since
//! when and why, among healthy targets, probes and certificates of several hosts, with
//! blackbox_exporter's real output for each kind of failure.

use std::time::{Duration, Instant};

use sre_agent::analyze::Fact;

use super::captured::{When, target};
use super::world::{SeriesDef, World, lines, series};

fn up(instance: &str, job: &str, value: impl Fn(i64) -> Option<f64> + 'static) -> SeriesDef {
    series("up", &[("instance", instance), ("job", job)], value)
}

fn only<'a>(facts: &'a [Fact], analyzer: &str) -> Vec<&'a Fact> {
    facts.iter().filter(|f| f.analyzer == analyzer).collect()
}

#[tokio::test]
async fn a_target_down_is_reported_with_since_when_and_the_scrape_error_prometheus_gives() {
    // Live samples must land after the backfilled blocks: history stops 45 s ago.
    let hist = |v: f64| move |ago: i64| (ago >= 45).then_some(v);
    let mut defs = vec![
        up("oak-1:9100", "node", hist(1.0)),
        up("oak-2:9100", "node", hist(1.0)),
        up("oak-3:9256", "process", hist(1.0)),
        // Down 50 to 30 minutes ago, up since: not reported.
        up("oak-2:9256", "process", |ago| {
            (ago >= 45).then_some(if (1800..3000).contains(&ago) {
                0.0
            } else {
                1.0
            })
        }),
        // Down for the last 12 minutes; Prometheus scrapes it live below (refused).
        up("fir-3:9100", "node", |ago| {
            (ago >= 45).then_some(if ago < 720 { 0.0 } else { 1.0 })
        }),
    ];
    // Down since long before the window: reported without a since.
    defs.push(up("elm-9:9100", "node", hist(0.0)));
    let scrape = r#"
  - job_name: node
    static_configs:
      - targets: ['127.0.0.1:1']
    relabel_configs:
      - target_label: instance
        replacement: fir-3:9100
"#;
    let Some(world) = World::build_scraping(&defs, 6 * 3600, 15, scrape).await else {
        return;
    };
    // Wait for Prometheus' first scrape of the refused target.
    let client = world.client();
    let deadline = Instant::now() + Duration::from_secs(40);
    loop {
        let t = client.targets(Some("active")).await.unwrap();
        if t.active_targets.iter().any(|t| !t.last_error.is_empty()) {
            break;
        }
        assert!(Instant::now() < deadline, "no scrape within 40 s");
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let (facts, notes) = world.sweep(Some(600)).await;
    assert!(notes.is_empty(), "{notes:?}");
    let down = only(&facts, "targets_down");
    assert_eq!(down.len(), 2, "{}", lines(&facts));
    let elm = down.iter().find(|f| f.entity.name == "elm-9:9100").unwrap();
    assert_eq!(elm.since, None, "{}", lines(&facts));
    let fir = down.iter().find(|f| f.entity.name == "fir-3:9100").unwrap();
    assert_eq!(fir.entity.host.as_deref(), Some("fir-3"));
    assert_eq!(fir.entity.labels["job"], "node");
    assert_eq!(fir.what, "scrape target of job node down");
    let ago = (chrono::Utc::now() - fir.since.expect("a since")).num_seconds();
    assert!((690..780).contains(&ago), "{ago} s: {}", lines(&facts));
    let detail = fir.detail.as_deref().unwrap_or_default();
    assert!(detail.contains("connection refused"), "{}", lines(&facts));
    assert!(
        fir.source.arguments["query"]
            .as_str()
            .unwrap()
            .contains("fir-3:9100")
    );
}

fn since_mins(ago_min: i64) -> When {
    Box::new(move |ago| ago < ago_min * 60)
}

fn always() -> When {
    Box::new(|_| true)
}

fn probe(url: &str, phases: Vec<(When, &str)>) -> Vec<SeriesDef> {
    target(&[("instance", url), ("job", "blackbox")], phases)
}

#[tokio::test]
async fn failing_probes_say_the_status_change_dns_failure_or_no_http_response_from_real_blackbox_output()
 {
    let mut defs = Vec::new();
    // The incident: 200 until 9 minutes ago, 502 since.
    defs.extend(probe(
        "https://shop.example.net/health",
        vec![
            (since_mins(9), "blackbox_http_502.prom"),
            (always(), "blackbox_http_200.prom"),
        ],
    ));
    // A name that stopped resolving 25 minutes ago.
    defs.extend(probe(
        "http://wiki.home.arpa/",
        vec![
            (since_mins(25), "blackbox_http_dns_failure.prom"),
            (always(), "blackbox_http_200.prom"),
        ],
    ));
    // A service refusing connections for the last 3 minutes.
    defs.extend(probe(
        "http://10.20.0.7:8080/",
        vec![
            (since_mins(3), "blackbox_http_refused.prom"),
            (always(), "blackbox_http_200.prom"),
        ],
    ));
    // Healthy probes, and one that failed 40 to 20 minutes ago and recovered.
    for url in [
        "https://grafana.example.net/",
        "http://nas.home.arpa:5000/",
        "https://git.example.net/",
    ] {
        defs.extend(probe(url, vec![(always(), "blackbox_http_200.prom")]));
    }
    defs.extend(probe(
        "http://printer.home.arpa/",
        vec![
            (since_mins(20), "blackbox_http_200.prom"),
            (since_mins(40), "blackbox_http_timeout.prom"),
            (always(), "blackbox_http_200.prom"),
        ],
    ));
    let Some(world) = World::build(&defs, 6 * 3600, 15).await else {
        return;
    };
    let (facts, notes) = world.sweep(Some(540)).await;
    assert!(notes.is_empty(), "{notes:?}");
    let probes = only(&facts, "probe_failures");
    assert_eq!(probes.len(), 3, "{}", lines(&facts));
    let now = chrono::Utc::now();
    let mins = |f: &Fact| (now - f.since.expect("a since")).num_seconds() as f64 / 60.0;

    let shop = probes
        .iter()
        .find(|f| f.entity.name.contains("shop"))
        .unwrap();
    assert_eq!(shop.entity.host.as_deref(), Some("shop.example.net"));
    assert_eq!(
        shop.value.map(|v| v.value),
        Some(502.0),
        "{}",
        lines(&facts)
    );
    assert!((8.5..10.0).contains(&mins(shop)), "{}", lines(&facts));
    let detail = shop.detail.as_deref().unwrap();
    assert!(detail.contains("HTTP status 200 → 502 since"), "{detail}");
    assert!(
        shop.source.arguments["query"]
            .as_str()
            .unwrap()
            .starts_with("probe_http_status_code{")
    );

    let wiki = probes
        .iter()
        .find(|f| f.entity.name.contains("wiki"))
        .unwrap();
    assert!(wiki.what.contains("DNS"), "{}", lines(&facts));
    assert!((24.5..26.0).contains(&mins(wiki)), "{}", lines(&facts));

    let refused = probes
        .iter()
        .find(|f| f.entity.name.contains("10.20.0.7"))
        .unwrap();
    // Blackbox records a refusal like a failed TLS handshake: no claim of which.
    assert_eq!(
        refused.what,
        "failing: no HTTP response",
        "{}",
        lines(&facts)
    );
    assert!(
        !refused.detail.as_deref().unwrap().contains("refused"),
        "{}",
        lines(&facts)
    );
    assert!((2.5..4.0).contains(&mins(refused)), "{}", lines(&facts));
}

#[tokio::test]
async fn a_probe_whose_body_no_longer_matches_or_that_times_out_says_so() {
    let mut defs = Vec::new();
    defs.extend(probe(
        "https://status.example.org/",
        vec![
            (since_mins(6), "blackbox_http_regex_mismatch.prom"),
            (always(), "blackbox_http_200.prom"),
        ],
    ));
    defs.extend(probe(
        "http://slow.example.org/",
        vec![(always(), "blackbox_http_timeout.prom")],
    ));
    // A TCP probe (no HTTP series at all) refused.
    defs.extend(probe(
        "smtp.example.org:25",
        vec![(always(), "blackbox_tcp_refused.prom")],
    ));
    defs.extend(probe(
        "https://ok.example.org/",
        vec![(always(), "blackbox_http_200.prom")],
    ));
    let Some(world) = World::build(&defs, 3 * 3600, 15).await else {
        return;
    };
    let (facts, _) = world.sweep(None).await;
    let probes = only(&facts, "probe_failures");
    assert_eq!(probes.len(), 3, "{}", lines(&facts));
    let smtp = probes
        .iter()
        .find(|f| f.entity.name.contains("smtp"))
        .unwrap();
    assert_eq!(smtp.what, "failing", "{}", lines(&facts));
    assert_eq!(smtp.entity.host.as_deref(), Some("smtp.example.org"));
    assert_eq!(smtp.value, None, "{}", lines(&facts));
    let status = probes
        .iter()
        .find(|f| f.entity.name.contains("status"))
        .unwrap();
    assert!(status.what.contains("did not match"), "{}", lines(&facts));
    assert_eq!(status.value, None, "the status is not what failed");
    assert!(status.since.is_some(), "{}", lines(&facts));
    let slow = probes
        .iter()
        .find(|f| f.entity.name.contains("slow"))
        .unwrap();
    assert!(slow.what.contains("no answer"), "{}", lines(&facts));
    assert!(
        slow.detail.as_deref().unwrap().contains("5 s"),
        "{}",
        lines(&facts)
    );
    assert_eq!(slow.since, None, "failing the whole window");
}

#[tokio::test]
async fn certificates_expiring_soon_get_their_time_left_across_exporter_variants() {
    let now = chrono::Utc::now().timestamp() as f64;
    let day = 86400.0;
    let mut defs = Vec::new();
    // blackbox's real TLS probe output with the expiry moved to 5.1 days from now.
    for (url, left) in [
        ("https://vault.example.net/", 5.1 * day),
        ("https://ok.example.net/", 80.0 * day),
    ] {
        for mut d in probe(url, vec![(always(), "blackbox_https_selfsigned.prom")]) {
            if d.name == "probe_ssl_earliest_cert_expiry" {
                d.value = Box::new(move |_| Some(now + left));
            }
            defs.push(d);
        }
    }
    // x509-certificate-exporter: a secret's certificate expired two days ago, one fine.
    for (secret, cn, left) in [
        ("ingress-tls", "www.example.net", -2.0 * day),
        ("api-tls", "api.example.net", 200.0 * day),
    ] {
        defs.push(series(
            "x509_cert_not_after",
            &[
                ("instance", "10.42.0.12:9793"),
                ("job", "x509-certificate-exporter"),
                ("secret_namespace", "web"),
                ("secret_name", secret),
                ("secret_key", "tls.crt"),
                ("subject_CN", cn),
                ("issuer_CN", "R11"),
            ],
            move |_| Some(now + left),
        ));
    }
    // The vault's renewal is on disk but the server still serves the old certificate; an
    // old copy of api's certificate lies in an archive beside the renewed secret.
    for (path, cn, left) in [
        ("/etc/vault/tls/vault.crt", "vault.example.net", 85.0 * day),
        (
            "/etc/ssl/archive/api-1.pem",
            "api.example.net",
            -100.0 * day,
        ),
    ] {
        defs.push(series(
            "x509_cert_not_after",
            &[
                ("instance", "vault1:9793"),
                ("job", "x509-certificate-exporter"),
                ("filepath", path),
                ("subject_CN", cn),
            ],
            move |_| Some(now + left),
        ));
    }
    // ssl_exporter: 2.5 days left; a missing chain's zero time is not a certificate.
    defs.push(series(
        "ssl_cert_not_after",
        &[
            ("instance", "mail.example.net:993"),
            ("job", "ssl"),
            ("cn", "mail.example.net"),
            ("issuer_cn", "R10"),
        ],
        move |_| Some(now + 2.5 * day),
    ));
    defs.push(series(
        "ssl_cert_not_after",
        &[
            ("instance", "mail.example.net:993"),
            ("job", "ssl"),
            ("cn", "broken-chain"),
        ],
        |_| Some(0.0),
    ));
    let Some(world) = World::build(&defs, 3 * 3600, 60).await else {
        return;
    };
    let (facts, notes) = world.sweep(None).await;
    assert!(notes.is_empty(), "{notes:?}");
    let certs = only(&facts, "certificate_expiry");
    assert_eq!(certs.len(), 4, "{}", lines(&facts));
    let old_copy = certs
        .iter()
        .find(|f| {
            f.entity.labels.get("filepath").map(String::as_str)
                == Some("/etc/ssl/archive/api-1.pem")
        })
        .unwrap();
    assert_eq!(old_copy.severity, sre_agent::analyze::Severity::Info);
    assert!(
        old_copy
            .detail
            .as_deref()
            .unwrap()
            .ends_with(": an old copy"),
        "{}",
        lines(&facts)
    );
    let days = |f: &Fact| f.eta_seconds.expect("an ETA") / day;
    let vault = certs
        .iter()
        .find(|f| f.entity.name.contains("vault"))
        .unwrap();
    assert!((5.0..5.2).contains(&days(vault)), "{}", lines(&facts));
    assert!(
        vault
            .line(chrono::Utc::now())
            .contains("expires in 5.1 days")
    );
    let renewal = vault.detail.as_deref().unwrap();
    assert!(
        renewal.contains("a newer certificate for vault.example.net")
            && renewal.contains("in /etc/vault/tls/vault.crt on vault1")
            && renewal.ends_with("renewed but not in use (not reloaded?)"),
        "{renewal}"
    );
    let www = certs
        .iter()
        .find(|f| f.entity.name == "www.example.net")
        .unwrap();
    assert_eq!(www.what, "expired for");
    assert!(
        (1.9..2.1).contains(&(www.value.unwrap().value / day)),
        "{}",
        lines(&facts)
    );
    assert!(www.detail.as_deref().unwrap().contains("issuer R11"));
    let mail = certs
        .iter()
        .find(|f| f.entity.name == "mail.example.net")
        .unwrap();
    assert!((2.4..2.6).contains(&days(mail)), "{}", lines(&facts));
    assert_eq!(mail.severity, sre_agent::analyze::Severity::Critical);
    assert_eq!(vault.severity, sre_agent::analyze::Severity::Warning);
}
