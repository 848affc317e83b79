//! TLS certificates expiring or expired, with the time left: blackbox_exporter's
//! `probe_ssl_earliest_cert_expiry` (per probed target), x509-certificate-exporter's
//! `x509_cert_not_after` (files and Kubernetes secrets), ssl_exporter's `ssl_*cert_not_after`
//! and cert-manager's `certmanager_certificate_expiration_timestamp_seconds`. Every one is
//! a Unix time of the certificate's notAfter; a zero or pre-2000 value (the Go zero time
//! some exporters emit for a missing chain) is not a certificate.

use async_trait::async_trait;

use super::history::time_of;
use super::{Prom, host, labels_map, pick, selector};
use crate::analyze::{
    AnalyzeError, Analyzer, Entity, Fact, FactClass, Quantity, Scope, Severity, Source,
};
use crate::integrations::prometheus::Labels;

/// The metrics holding a certificate's notAfter as Unix seconds.
const EXPIRY_METRICS: &str = "probe_ssl_earliest_cert_expiry|x509_cert_not_after|ssl_cert_not_after|ssl_file_cert_not_after|ssl_kubernetes_cert_not_after|ssl_kubeconfig_cert_not_after|certmanager_certificate_expiration_timestamp_seconds";
/// Time left under which a certificate is worth a look (as awesome-prometheus-alerts'
/// `BlackboxSslCertificateWillExpireSoon`), and under which it is critical.
const WARN_LEFT: f64 = 20.0 * 86400.0;
const CRIT_LEFT: f64 = 3.0 * 86400.0;
/// 2000-01-01: anything earlier is a placeholder, not a notAfter.
const PLAUSIBLE_SINCE: f64 = 946_684_800.0;
/// Labels that name a certificate, by preference (exporters differ).
const NAME_LABELS: [&str; 7] = [
    "subject_CN",
    "cn",
    "secret_name",
    "secret",
    "name",
    "filepath",
    "file",
];
/// Labels that identify a certificate's series for the query a fact cites.
const ID_LABELS: [&str; 12] = [
    "instance",
    "job",
    "subject_CN",
    "cn",
    "serial_number",
    "serial_no",
    "secret_namespace",
    "secret_name",
    "namespace",
    "secret",
    "name",
    "filepath",
];

pub struct CertExpiry(pub Prom);

#[async_trait]
impl Analyzer for CertExpiry {
    fn name(&self) -> &'static str {
        "certificate_expiry"
    }

    async fn run(&self, scope: &Scope) -> Result<Vec<Fact>, AnalyzeError> {
        let all = format!("({{__name__=~\"{EXPIRY_METRICS}\"}} > {PLAUSIBLE_SINCE})");
        let expr = format!("{all} and ({all} - time() < {WARN_LEFT})");
        let now = scope.now.timestamp_millis() as f64 / 1000.0;
        // Every certificate, to find a renewed one beside one about to expire.
        let every = self.0.vector(&all).await.unwrap_or_default();
        let mut facts = Vec::new();
        for s in self.0.vector(&expr).await? {
            let Some(metric) = s.metric.get("__name__") else {
                continue;
            };
            let not_after = s.value;
            let left = not_after - now;
            let Some(when) = time_of(not_after) else {
                continue;
            };
            let severity = match left {
                l if l < CRIT_LEFT => Severity::Critical,
                _ => Severity::Warning,
            };
            let query = format!("{metric}{} - time()", selector(pick(&s.metric, &ID_LABELS)));
            let mut fact = Fact::new(
                FactClass::Availability,
                self.name(),
                Entity::new("certificate", name(&s.metric))
                    .on_host(host(&s.metric))
                    .with_labels(labels_map(&s.metric)),
                if left < 0.0 {
                    "expired for"
                } else {
                    "expiring"
                },
                severity,
                Source::promql(&query),
            );
            fact = match left < 0.0 {
                true => fact.value(Quantity::seconds(-left)),
                false => fact.eta(left, "expires"),
            };
            let mut detail = format!("not after {}", when.format("%Y-%m-%d %H:%M UTC"));
            if let Some(issuer) = ["issuer_CN", "issuer_cn", "issuer"]
                .iter()
                .find_map(|k| s.metric.get(*k))
            {
                detail.push_str(&format!(", issuer {issuer}"));
            }
            if let Some(newer) = renewed(&s.metric, not_after, &every) {
                // A file or secret with a newer one for its subject is an old copy; a
                // served certificate with a newer one on disk was renewed and not loaded.
                match STORED_LABELS.iter().any(|k| s.metric.contains_key(*k)) {
                    true => {
                        fact.severity = Severity::Info;
                        detail.push_str(&format!("; superseded by {newer}: an old copy"));
                    }
                    false => detail.push_str(&format!(
                        "; {newer}: renewed but not in use (not reloaded?)"
                    )),
                }
            }
            facts.push(fact.detail(detail));
        }
        facts.sort_by(|a, b| a.entity.name.cmp(&b.entity.name));
        Ok(facts)
    }
}

/// Least later a renewed certificate's notAfter is than the one in use.
const RENEWED_LATER: f64 = 86400.0;

/// What a certificate is for: its subject, else the host of the probed target.
fn subject(labels: &Labels) -> Option<String> {
    ["subject_CN", "cn"]
        .iter()
        .find_map(|k| labels.get(*k).filter(|v| !v.is_empty()).cloned())
        .or_else(|| labels.get("instance").map(|i| crate::analyze::host_of(i)))
        .map(|s| s.to_lowercase())
}

/// Labels of a certificate read from a file or a secret (not served by a probed server).
const STORED_LABELS: [&str; 5] = ["filepath", "file", "secret_name", "secret", "kubeconfig"];

/// "a newer certificate for shop.example (not after …) in /etc/ssl/… on web1": another
/// certificate for the same subject that lasts longer than `not_after` (a renewal on disk
/// the server never loaded, a secret renewed that the pod still mounts the old copy of).
fn renewed(
    labels: &Labels,
    not_after: f64,
    every: &[crate::integrations::prometheus::Sample],
) -> Option<String> {
    let own = subject(labels)?;
    let newer = every
        .iter()
        .filter(|o| {
            o.value > not_after + RENEWED_LATER && subject(&o.metric).as_ref() == Some(&own)
        })
        .max_by(|a, b| a.value.total_cmp(&b.value))?;
    let when = time_of(newer.value)?;
    let place = ["filepath", "file", "secret_name", "name"]
        .iter()
        .find_map(|k| newer.metric.get(*k))
        .map(|p| format!(" in {p}"))
        .unwrap_or_default();
    let on = host(&newer.metric)
        .map(|h| format!(" on {h}"))
        .unwrap_or_default();
    Some(format!(
        "a newer certificate for {own} (not after {}){place}{on}",
        when.format("%Y-%m-%d")
    ))
}

/// The certificate's name: its subject, secret or file, else the probed target.
fn name(labels: &Labels) -> String {
    let base = NAME_LABELS
        .iter()
        .find_map(|k| labels.get(*k).filter(|v| !v.is_empty()))
        .or_else(|| labels.get("instance"))
        .cloned()
        .unwrap_or_else(|| "?".into());
    match labels
        .get("secret_namespace")
        .or(labels.get("namespace"))
        .filter(|_| !labels.contains_key("subject_CN") && !labels.contains_key("cn"))
    {
        Some(ns) => format!("{ns}/{base}"),
        None => base,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::prom::labels;

    #[test]
    fn a_certificate_is_named_by_subject_secret_or_target() {
        assert_eq!(
            name(&labels(&[
                ("subject_CN", "shop.example"),
                ("filepath", "/x.pem")
            ])),
            "shop.example"
        );
        assert_eq!(
            name(&labels(&[
                ("secret_namespace", "web"),
                ("secret_name", "tls")
            ])),
            "web/tls"
        );
        assert_eq!(
            name(&labels(&[("namespace", "web"), ("name", "shop-cert")])),
            "web/shop-cert"
        );
        assert_eq!(
            name(&labels(&[("instance", "https://shop.example/")])),
            "https://shop.example/"
        );
    }

    #[test]
    fn a_served_certificate_about_to_expire_beside_a_renewed_file_says_it_was_not_reloaded() {
        let sample = |pairs: &[(&str, &str)], value: f64| crate::integrations::prometheus::Sample {
            metric: labels(pairs),
            value,
            ts: 0.0,
        };
        let served = labels(&[
            ("__name__", "probe_ssl_earliest_cert_expiry"),
            ("instance", "https://Shop.example.org"),
        ]);
        let not_after = 1_800_000_000.0;
        let every = [
            sample(
                &[
                    ("__name__", "x509_cert_not_after"),
                    ("instance", "web7:9793"),
                    ("subject_CN", "shop.example.org"),
                    ("filepath", "/etc/ssl/shop/fullchain.pem"),
                ],
                not_after + 80.0 * 86400.0,
            ),
            // Another site's certificate, later still, is no renewal of this one.
            sample(
                &[
                    ("__name__", "x509_cert_not_after"),
                    ("instance", "web7:9793"),
                    ("subject_CN", "wiki.example.org"),
                ],
                not_after + 200.0 * 86400.0,
            ),
        ];
        let said = renewed(&served, not_after, &every).unwrap();
        assert!(
            said.contains("newer certificate for shop.example.org"),
            "{said}"
        );
        assert!(
            said.contains("in /etc/ssl/shop/fullchain.pem on web7"),
            "{said}"
        );
        // Only itself (or an older copy): nothing to say.
        assert_eq!(renewed(&served, not_after + 100.0 * 86400.0, &every), None);
    }
}
