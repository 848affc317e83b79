//! Failing blackbox probes (`probe_success == 0`) and why, from what blackbox_exporter
//! records of the failed probe: the HTTP status code and when it changed ("200 → 502"),
//! no address for the target (`probe_ip_protocol` 0 after the lookup: DNS), a body that
//! did not match (`probe_failed_due_to_regex`), or no answer at all (refused or timed out,
//! told apart by whether the connect phase completed). Since when comes from the history
//! of each failing probe only.

use std::collections::HashMap;

use async_trait::async_trait;

use super::history::last_transition;
use super::{Prom, by_identity, host, identity, labels_map, selector};
use crate::analyze::{
    AnalyzeError, Analyzer, Entity, Fact, FactClass, Quantity, Scope, Severity, Source, Unit,
    human_seconds,
};
use crate::integrations::prometheus::Labels;

/// The failing probes.
const FAILING: &str = "probe_success == 0";
/// What a probe failing on its HTTP status is.
const STATUS_FAILURE: &str = "failing with HTTP status";

pub struct ProbeFailures(pub Prom);

/// What blackbox_exporter recorded of the failing probes, by their labels.
struct Evidence {
    status: HashMap<Labels, f64>,
    ip_protocol: HashMap<Labels, f64>,
    regex: HashMap<Labels, f64>,
    duration: HashMap<Labels, f64>,
    dns: HashMap<Labels, f64>,
    connect: HashMap<Labels, f64>,
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
        let ev = self.evidence().await?;
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
            let failing_since = last_transition(history(0)).map(|(t, _)| t);
            let code = ev.status.get(&key).copied();
            let (what, detail) = ev.explain(&key);
            // The status is the figure only when it is what failed (not a body mismatch).
            let code = code.filter(|c| *c > 0.0 && what == STATUS_FAILURE);
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
                Source::promql(&queries[2 * i + usize::from(code.is_some())]),
            )
            .since(failing_since);
            let mut detail = detail;
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
    async fn evidence(&self) -> Result<Evidence, AnalyzeError> {
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
        let (status, ip, regex, duration, dns, connect) = tokio::join!(
            self.0.vector(&q[0]),
            self.0.vector(&q[1]),
            self.0.vector(&q[2]),
            self.0.vector(&q[3]),
            self.0.vector(&q[4]),
            self.0.vector(&q[5]),
        );
        Ok(Evidence {
            status: by_identity(status?),
            ip_protocol: by_identity(ip?),
            regex: by_identity(regex?),
            duration: by_identity(duration?),
            dns: by_identity(dns?),
            connect: by_identity(connect?),
        })
    }
}

impl Evidence {
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
            Some(_) => (
                "failing: connection failed".into(),
                format!("no connection (refused or unreachable) after {duration}"),
            ),
            None => ("failing".into(), format!("probe failed after {duration}")),
        }
    }
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
