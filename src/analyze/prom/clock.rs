//! Clocks out of step (node_exporter's timex collector: `node_timex_offset_seconds` from
//! the kernel's NTP state, `node_timex_sync_status` and `node_timex_maxerror_seconds`; and
//! `node_time_seconds` against the time Prometheus scraped it, which catches a clock that
//! the kernel believes in but is wrong): the offset, since when, and whether the clock is
//! synchronising at all.

use async_trait::async_trait;

use super::{Prom, by_identity, host, identity, labels_map, pick, selector};
use crate::analyze::{
    AnalyzeError, Analyzer, Entity, Fact, FactClass, Quantity, Scope, Severity, Source,
};

/// Offset from the reference clock worth a look (node-mixin's `NodeClockSkewDetected`
/// uses 50 ms), and critical (TLS, tokens and logs disagree at seconds).
const OFFSET_WARN: f64 = 0.05;
const OFFSET_CRIT: f64 = 1.0;
/// Difference between the host's clock and Prometheus' scrape time worth a look: beyond
/// scrape latency.
const SKEW_WARN: f64 = 1.0;
const SKEW_CRIT: f64 = 30.0;
/// The kernel's maximum error when it has given up on synchronisation (node-mixin's
/// `NodeClockNotSynchronising`: status 0 and max error ≥ 16 s).
const UNSYNCED_MAXERROR: f64 = 16.0;

const SKEW: &str = "node_time_seconds - timestamp(node_time_seconds)";

pub struct Clock(pub Prom);

#[async_trait]
impl Analyzer for Clock {
    fn name(&self) -> &'static str {
        "clock"
    }

    async fn run(&self, scope: &Scope) -> Result<Vec<Fact>, AnalyzeError> {
        let left = super::Lookups::default();
        let mut facts = Vec::new();
        let offsets = [
            (
                "node_timex_offset_seconds",
                "clock offset from its time source",
                OFFSET_WARN,
                OFFSET_CRIT,
            ),
            (
                SKEW,
                "clock ahead of Prometheus' time",
                SKEW_WARN,
                SKEW_CRIT,
            ),
        ];
        for (expr, what, warn, crit) in offsets {
            for s in self.0.vector(&format!("abs({expr}) >= {warn}")).await? {
                let sel = selector(pick(&s.metric, &["instance", "job"]));
                let query = match expr == SKEW {
                    true => format!("node_time_seconds{sel} - timestamp(node_time_seconds{sel})"),
                    false => format!("{expr}{sel}"),
                };
                // The signed offset: a clock behind reads negative.
                let signed = self
                    .0
                    .vector(&query)
                    .await?
                    .first()
                    .map_or(s.value, |v| v.value);
                let since = self
                    .0
                    .since(&left, &query, scope, |v| v.abs() >= warn)
                    .await;
                let severity = match s.value >= crit {
                    true => Severity::Critical,
                    false => Severity::Warning,
                };
                let what = match (expr == SKEW, signed < 0.0) {
                    (true, true) => "clock behind Prometheus' time",
                    _ => what,
                };
                facts.push(
                    self.fact(&s.metric, what, severity, &query)
                        .value(Quantity::seconds(signed))
                        .since(since),
                );
            }
        }
        let maxerror = by_identity(self.0.vector("node_timex_maxerror_seconds").await?);
        for s in self
            .0
            .vector("max_over_time(node_timex_sync_status[5m]) == 0")
            .await?
        {
            let Some(&err) = maxerror.get(&identity(&s.metric)) else {
                continue;
            };
            if err < UNSYNCED_MAXERROR {
                continue;
            }
            let sel = selector(pick(&s.metric, &["instance", "job"]));
            let query = format!("node_timex_sync_status{sel}");
            let since = self.0.since(&left, &query, scope, |v| v == 0.0).await;
            facts.push(
                self.fact(
                    &s.metric,
                    "clock not synchronised",
                    Severity::Warning,
                    &query,
                )
                .since(since)
                .detail(format!("kernel's maximum error {}", Quantity::seconds(err))),
            );
        }
        Ok(facts)
    }
}

impl Clock {
    fn fact(
        &self,
        labels: &crate::integrations::prometheus::Labels,
        what: &str,
        severity: Severity,
        query: &str,
    ) -> Fact {
        let name = host(labels).unwrap_or_else(|| "?".into());
        Fact::new(
            FactClass::Time,
            self.name(),
            Entity::new("host", name.clone())
                .on_host(Some(name))
                .with_labels(labels_map(labels)),
            what,
            severity,
            Source::promql(query),
        )
    }
}
