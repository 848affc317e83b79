//! Failing blackbox probes (`probe_success == 0`) and why, from what blackbox_exporter
//! records of the failed probe: the HTTP status code and when it changed ("200 → 502"),
//! no address for the target (`probe_ip_protocol` 0 after the lookup: DNS), a body that
//! did not match (`probe_failed_due_to_regex`), a TLS certificate that expired (blackbox
//! stops reporting `probe_ssl_earliest_cert_expiry` when the handshake fails: the last
//! certificate seen in the window expired before now), or no answer (connected but no
//! response, when the connect phase completed; else no HTTP response, which blackbox does
//! not tell apart from a refused connection). Since when comes from the history of each
//! failing probe only.

use std::collections::HashMap;

use async_trait::async_trait;

use super::history::{last_transition, time_of};
use super::{Prom, by_identity, host, identity, labels_map, selector};
use crate::analyze::{
    AnalyzeError, Analyzer, Entity, Fact, FactClass, Quantity, Scope, Severity, Source, Unit,
    human_seconds,
};
use crate::integrations::prometheus::{Labels, Sample};

/// The failing probes.
const FAILING: &str = "probe_success == 0";
/// What a probe failing on its HTTP status is.
const STATUS_FAILURE: &str = "failing with HTTP status";
/// What a probe whose last certificate expired is.
const EXPIRED: &str = "failing: TLS certificate expired";

pub struct ProbeFailures(pub Prom);

/// What blackbox_exporter recorded of the failing probes, by their labels.
struct Evidence {
    status: HashMap<Labels, f64>,
    ip_protocol: HashMap<Labels, f64>,
    regex: HashMap<Labels, f64>,
    duration: HashMap<Labels, f64>,
    dns: HashMap<Labels, f64>,
    connect: HashMap<Labels, f64>,
    /// The notAfter of the last certificate seen in the window, for probes that no longer
    /// report one.
    last_cert: HashMap<Labels, f64>,
}

#[async_trait]
impl Analyzer for ProbeFailures {
    fn name(&self) -> &'static str {
        "probe_failures"
    }

    async fn run(&self, scope: &Scope) -> Result<Vec<Fact>, AnalyzeError> {
        let mut failing = self.0.vector(FAILING).await?;
        if failing.is_empty() {
            return Ok(Vec::new());
        }
        failing.sort_by(|a, b| a.metric.cmp(&b.metric));
        let ev = self.evidence(scope).await?;
        let now = scope.now.timestamp_millis() as f64 / 1000.0;
        let expired: HashMap<Labels, f64> = ev
            .last_cert
            .iter()
            .filter(|(_, not_after)| **not_after <= now)
            .map(|(k, v)| (k.clone(), *v))
            .collect();
        let chains = match expired.is_empty() {
            true => Vec::new(),
            false => self.last_chains(scope).await,
        };
        let mut queries = Vec::new();
        for s in &failing {
            let sel = selector(id_pairs(&s.metric));
            queries.push(format!("probe_success{sel}"));
            queries.push(format!("probe_http_status_code{sel}"));
        }
        // Two lookups per probe: the first MAX_LOOKUPS / 2 probes get their history.
        let histories = self.0.histories(&queries, scope).await?;
        let mut facts = Vec::new();
        for (i, s) in failing.iter().enumerate() {
            let key = identity(&s.metric);
            let history = |j: usize| {
                histories
                    .get(2 * i + j)
                    .and_then(|h| h.first())
                    .map(|h| h.values.as_slice())
                    .unwrap_or_default()
            };
            let flaps = flapping(history(0));
            let failing_since = match &flaps {
                Some(f) => Some(f.since),
                None => last_transition(history(0)).map(|(t, _)| t),
            };
            let code = ev.status.get(&key).copied();
            let expiry = expired.get(&key).copied();
            let (what, detail) = match expiry {
                Some(not_after) if ev.tls_failed(&key) => (
                    EXPIRED.to_string(),
                    expired_detail(not_after, now, &key, &chains),
                ),
                _ => ev.explain(&key),
            };
            // The status is the figure only when it is what failed (not a body mismatch).
            let code = code.filter(|c| *c > 0.0 && what == STATUS_FAILURE);
            let query = match what == EXPIRED {
                true => format!(
                    "last_over_time(probe_ssl_earliest_cert_expiry{}{})",
                    selector(id_pairs(&s.metric)),
                    scope.promql_range()
                ),
                false => queries[2 * i + usize::from(code.is_some())].clone(),
            };
            let mut fact = Fact::new(
                FactClass::Availability,
                self.name(),
                Entity::new(
                    "probe",
                    s.metric.get("instance").cloned().unwrap_or_default(),
                )
                .on_host(host(&s.metric))
                .with_labels(labels_map(&s.metric)),
                what,
                Severity::Critical,
                Source::promql(&query),
            )
            .since(failing_since);
            let mut detail = detail;
            if let Some(f) = &flaps {
                detail = format!(
                    "failing on and off: {} failed spells, down in {:.0} % of the samples since {}; {detail}",
                    f.spells,
                    f.down_share * 100.0,
                    f.since.format("%H:%M UTC")
                );
            }
            // Two probes of one target differ by their module (a plain ping and a
            // large one with don't-fragment; HTTP and TLS).
            if let Some(m) = s.metric.get("module").filter(|m| !m.is_empty()) {
                detail = format!("module {m}; {detail}");
            }
            if let Some(c) = code {
                fact = fact.value(Quantity::new(c, Unit::Plain));
                if let Some((t, before)) = last_transition(history(1)) {
                    detail = format!(
                        "HTTP status {} → {} since {}; {detail}",
                        status_text(before),
                        status_text(c),
                        t.format("%Y-%m-%d %H:%M UTC")
                    );
                }
            }
            facts.push(fact.detail(detail));
        }
        Ok(facts)
    }
}

impl ProbeFailures {
    /// The series blackbox_exporter writes next to `probe_success`, for failing probes only.
    async fn evidence(&self, scope: &Scope) -> Result<Evidence, AnalyzeError> {
        let q: Vec<String> = [
            "probe_http_status_code",
            "probe_ip_protocol",
            "probe_failed_due_to_regex",
            "probe_duration_seconds",
            "probe_dns_lookup_time_seconds",
            "sum without (phase) (probe_http_duration_seconds{phase=\"connect\"})",
        ]
        .iter()
        .map(|m| format!("{m} and {FAILING}"))
        .collect();
        // The last certificate of each failing probe that reports none now (blackbox
        // drops the series when the TLS handshake fails); a failed read only loses it.
        let range = scope.promql_range();
        let last_cert = format!(
            "(last_over_time(probe_ssl_earliest_cert_expiry{range}) unless \
             probe_ssl_earliest_cert_expiry) and {FAILING}"
        );
        let (status, ip, regex, duration, dns, connect, cert) = tokio::join!(
            self.0.vector(&q[0]),
            self.0.vector(&q[1]),
            self.0.vector(&q[2]),
            self.0.vector(&q[3]),
            self.0.vector(&q[4]),
            self.0.vector(&q[5]),
            self.0.vector(&last_cert),
        );
        Ok(Evidence {
            status: by_identity(status?),
            ip_protocol: by_identity(ip?),
            regex: by_identity(regex?),
            duration: by_identity(duration?),
            dns: by_identity(dns?),
            connect: by_identity(connect?),
            last_cert: by_identity(cert.unwrap_or_default()),
        })
    }

    /// The last TLS chain each failing probe saw in the window (`probe_ssl_last_chain_info`,
    /// whose labels name the subject and issuer); none when the read fails.
    async fn last_chains(&self, scope: &Scope) -> Vec<Sample> {
        let q = format!(
            "last_over_time(probe_ssl_last_chain_info{}) and on(instance, job) ({FAILING})",
            scope.promql_range()
        );
        self.0.vector(&q).await.unwrap_or_default()
    }
}

/// "the last certificate the probe saw expired at … (2.0 days ago); no TLS session since;
/// subject CN=…, issuer CN=…" (subject and issuer when every chain seen agrees on them).
fn expired_detail(not_after: f64, now: f64, key: &Labels, chains: &[Sample]) -> String {
    let at = time_of(not_after).map_or_else(
        || "?".into(),
        |t| t.format("%Y-%m-%d %H:%M UTC").to_string(),
    );
    let mut d = format!(
        "the last certificate the probe saw expired at {at} ({} ago); no TLS session since",
        human_seconds((now - not_after).max(0.0))
    );
    let mut seen: Vec<(Option<&String>, Option<&String>)> = chains
        .iter()
        .filter(|c| key.iter().all(|(k, v)| c.metric.get(k) == Some(v)))
        .map(|c| (c.metric.get("subject"), c.metric.get("issuer")))
        .collect();
    seen.sort();
    seen.dedup();
    if let [(subject, issuer)] = seen.as_slice() {
        for (name, v) in [("subject", subject), ("issuer", issuer)] {
            if let Some(v) = v.filter(|v| !v.is_empty()) {
                d.push_str(&format!("; {name} {v}"));
            }
        }
    }
    d
}

impl Evidence {
    /// Whether the probe may have failed in its TLS handshake: it resolved an address
    /// and got no HTTP response (a status code above 0 means TLS worked).
    fn tls_failed(&self, key: &Labels) -> bool {
        self.ip_protocol.get(key) != Some(&0.0) && self.status.get(key).is_none_or(|c| *c <= 0.0)
    }

    /// What failed ("failing: DNS lookup failed") and the figures that show it.
    fn explain(&self, key: &Labels) -> (String, String) {
        let took = |m: &HashMap<Labels, f64>| m.get(key).map(|d| human_seconds(*d));
        let duration = took(&self.duration).unwrap_or_else(|| "?".into());
        let code = self.status.get(key).copied();
        if self.regex.get(key).is_some_and(|r| *r > 0.0) {
            let status = code.map_or(String::new(), |c| format!(" (HTTP {})", status_text(c)));
            return (
                "failing: response body did not match".into(),
                format!("probe_failed_due_to_regex 1{status}"),
            );
        }
        if self.ip_protocol.get(key) == Some(&0.0) {
            let lookup = took(&self.dns).unwrap_or_else(|| "?".into());
            return (
                "failing: DNS lookup failed".into(),
                format!("no address resolved (probe_ip_protocol 0) after a {lookup} lookup"),
            );
        }
        match code {
            Some(c) if c > 0.0 => (STATUS_FAILURE.into(), format!("probe took {duration}")),
            _ if self.connect.get(key).is_some_and(|c| *c > 0.0) => (
                "failing: connected but no answer".into(),
                format!("no HTTP response; probe gave up after {duration}"),
            ),
            // Blackbox records the same figures for a refused connection, a failed TLS
            // handshake and a reset: which one is not in the data.
            Some(_) => (
                "failing: no HTTP response".into(),
                format!(
                    "no status code and no connect phase recorded; probe failed after {duration}"
                ),
            ),
            None if duration == "?" => ("failing".into(), "probe failed".into()),
            None => ("failing".into(), format!("probe failed after {duration}")),
        }
    }
}

/// A probe that failed on and off over the window rather than once.
struct Flapping {
    /// The first failed sample of its first spell.
    since: chrono::DateTime<chrono::Utc>,
    /// Runs of failed samples.
    spells: usize,
    /// The share of samples failed since then.
    down_share: f64,
}

/// Fewest failed spells that make a probe's history flapping.
const MIN_SPELLS: usize = 3;

/// Whether `values` (a `probe_success` history) failed in [`MIN_SPELLS`] or more separate
/// spells: a link that drops and recovers, a host that hangs and resets. Its start is then
/// the first failure, not the latest one.
fn flapping(values: &[(f64, f64)]) -> Option<Flapping> {
    let first = values.iter().position(|(_, v)| *v == 0.0)?;
    let since = time_of(values[first].0)?;
    let tail = &values[first..];
    let spells = tail
        .windows(2)
        .filter(|w| w[0].1 != 0.0 && w[1].1 == 0.0)
        .count()
        + 1;
    if spells < MIN_SPELLS {
        return None;
    }
    let down = tail.iter().filter(|(_, v)| *v == 0.0).count();
    Some(Flapping {
        since,
        spells,
        down_share: down as f64 / tail.len() as f64,
    })
}

/// The labels identifying one probe's series (all of them but the name).
fn id_pairs(labels: &Labels) -> Vec<(&str, &str)> {
    labels
        .iter()
        .filter(|(k, _)| k.as_str() != "__name__")
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect()
}

/// An HTTP status as a person writes it (`0` when no response came).
fn status_text(code: f64) -> String {
    match code {
        c if c.is_finite() && c >= 0.0 && c.fract() == 0.0 => format!("{c:.0}"),
        c => format!("{c}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::prom::labels;

    /// What blackbox recorded of one failing probe `key`: `(metric, value)` pairs.
    fn evidence(key: &Labels, figures: &[(&str, f64)]) -> Evidence {
        let mut ev = Evidence {
            status: HashMap::new(),
            ip_protocol: HashMap::new(),
            regex: HashMap::new(),
            duration: HashMap::new(),
            dns: HashMap::new(),
            connect: HashMap::new(),
            last_cert: HashMap::new(),
        };
        for (name, v) in figures {
            let map = match *name {
                "status" => &mut ev.status,
                "ip_protocol" => &mut ev.ip_protocol,
                "regex" => &mut ev.regex,
                "duration" => &mut ev.duration,
                "connect" => &mut ev.connect,
                other => panic!("{other}"),
            };
            map.insert(key.clone(), *v);
        }
        ev
    }

    #[test]
    fn no_status_code_and_no_connect_phase_is_no_http_response_not_a_refused_connection() {
        let key = labels(&[("instance", "https://pay.internal/"), ("job", "bb")]);
        let ev = evidence(
            &key,
            &[
                ("status", 0.0),
                ("ip_protocol", 4.0),
                ("duration", 0.008),
                ("connect", 0.0),
            ],
        );
        let (what, detail) = ev.explain(&key);
        assert_eq!(what, "failing: no HTTP response");
        assert!(
            !detail.contains("refused") && !detail.contains("unreachable"),
            "{detail}"
        );
        assert!(detail.ends_with("probe failed after 8 ms"), "{detail}");
        assert!(ev.tls_failed(&key));
        // Connected, then nothing: still told apart.
        let ev = evidence(
            &key,
            &[("status", 0.0), ("duration", 5.0), ("connect", 0.002)],
        );
        assert_eq!(ev.explain(&key).0, "failing: connected but no answer");
    }

    #[test]
    fn a_probe_that_got_a_status_or_resolved_no_address_did_not_fail_in_tls() {
        let key = labels(&[("instance", "https://pay.internal/")]);
        assert!(!evidence(&key, &[("status", 503.0)]).tls_failed(&key));
        assert!(!evidence(&key, &[("status", 0.0), ("ip_protocol", 0.0)]).tls_failed(&key));
        assert!(evidence(&key, &[]).tls_failed(&key));
    }

    #[test]
    fn an_expired_certificate_says_when_it_expired_and_the_subject_and_issuer_its_chains_agree_on()
    {
        let key = labels(&[("instance", "https://pay.internal/"), ("job", "bb")]);
        let not_after = 1_795_600_000.0; // 2026-11-25 09:46:40 UTC
        let now = not_after + 2.0 * 86400.0;
        let chain = |fp: &str, subject: &str, instance: &str| Sample {
            metric: labels(&[
                ("instance", instance),
                ("job", "bb"),
                ("fingerprint_sha256", fp),
                ("subject", subject),
                ("issuer", "CN=Corp Issuing CA 2,O=Corp"),
            ]),
            value: 1.0,
            ts: now,
        };
        // Two chains of the same subject (a renewal earlier in the window), and another
        // probe's.
        let chains = [
            chain("aa11", "CN=pay.internal", "https://pay.internal/"),
            chain("bb22", "CN=pay.internal", "https://pay.internal/"),
            chain("cc33", "CN=wiki.internal", "https://wiki.internal/"),
        ];
        assert_eq!(
            expired_detail(not_after, now, &key, &chains),
            "the last certificate the probe saw expired at 2026-11-25 09:46 UTC (48.0 h \
             ago); no TLS session since; subject CN=pay.internal; issuer CN=Corp Issuing CA \
             2,O=Corp"
        );
        // Chains that disagree name nothing; none at all neither.
        let other = chain("dd44", "CN=old.pay.internal", "https://pay.internal/");
        let mixed = [chains[0].clone(), other];
        let plain = "the last certificate the probe saw expired at 2026-11-25 09:46 UTC (48.0 h \
                     ago); no TLS session since";
        assert_eq!(expired_detail(not_after, now, &key, &mixed), plain);
        assert_eq!(expired_detail(not_after, now, &key, &[]), plain);
        assert!(expired_detail(f64::NAN, now, &key, &[]).contains("expired at ?"));
    }

    #[test]
    fn a_probe_failing_on_and_off_is_flapping_since_its_first_failure() {
        let t0 = 1_800_000_000.0;
        let run = |pattern: &str| -> Vec<(f64, f64)> {
            pattern
                .chars()
                .enumerate()
                .map(|(i, c)| (t0 + 60.0 * i as f64, if c == '1' { 1.0 } else { 0.0 }))
                .collect()
        };
        let f = flapping(&run("1111110011000110100")).unwrap();
        assert_eq!(f.spells, 4);
        assert_eq!(f.since, time_of(t0 + 360.0).unwrap());
        assert!((f.down_share - 8.0 / 13.0).abs() < 1e-9, "{}", f.down_share);
        // Once down (still), or down and back once: not flapping.
        assert!(flapping(&run("1111100000")).is_none());
        assert!(flapping(&run("1110011100")).is_none());
        assert!(flapping(&run("1111")).is_none());
    }
}
