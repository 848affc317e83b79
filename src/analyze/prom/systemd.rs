//! Failed systemd units: node_exporter's systemd collector (`node_systemd_unit_state`) and
//! systemd_exporter (`systemd_unit_state`) hold one series per unit and state, `1` for the
//! unit's state now; a unit whose `state="failed"` series is `1` has failed. Since when
//! comes from that series' history over the window (a unit failed before the window is
//! reported as failed since the window's start at least, and is a warning: a fresh failure
//! is more likely the incident, and critical).

use async_trait::async_trait;

use super::{Prom, host, label, labels_map, pick, selector};
use crate::analyze::{
    AnalyzeError, Analyzer, Entity, Fact, FactClass, Quantity, Scope, Severity, Source,
};

/// The unit-state metrics of the exporters that read systemd.
const STATE_METRICS: &str = "node_systemd_unit_state|systemd_unit_state";
/// Labels that identify one unit's failed-state series.
const ID_LABELS: [&str; 4] = ["instance", "job", "name", "state"];
/// Failed units reported per run, the first by labels (a fleet-wide failure is one cause).
const MAX_UNITS: usize = 20;

pub struct FailedUnits(pub Prom);

#[async_trait]
impl Analyzer for FailedUnits {
    fn name(&self) -> &'static str {
        "systemd_failed_units"
    }

    async fn run(&self, scope: &Scope) -> Result<Vec<Fact>, AnalyzeError> {
        let expr = format!("{{__name__=~\"{STATE_METRICS}\",state=\"failed\"}} == 1");
        let mut failed = self.0.vector(&expr).await?;
        failed.sort_by(|a, b| a.metric.cmp(&b.metric));
        let left = super::Lookups::default();
        let mut facts = Vec::new();
        for s in failed.iter().take(MAX_UNITS) {
            let Some(metric) = s.metric.get("__name__") else {
                continue;
            };
            let unit = label(&s.metric, "name");
            let query = format!("{metric}{}", selector(pick(&s.metric, &ID_LABELS)));
            let since = self.0.since(&left, &query, scope, |v| v == 1.0).await;
            // Failed at the window's first point: it may have failed long before.
            let fresh =
                since.is_some_and(|t| t > scope.window_start + chrono::TimeDelta::minutes(1));
            let severity = match fresh {
                true => Severity::Critical,
                false => Severity::Warning,
            };
            let mut fact = Fact::new(
                FactClass::Availability,
                self.name(),
                Entity::new("unit", unit)
                    .on_host(host(&s.metric))
                    .with_labels(labels_map(&s.metric)),
                "failed",
                severity,
                Source::promql(&query),
            )
            .since(since);
            if let Some(t) = since {
                let failed_for = (scope.now - t).num_seconds().max(0) as f64;
                fact = fact.value(Quantity::seconds(failed_for));
            }
            let mut detail = Vec::new();
            if let Some(t) = s.metric.get("type").filter(|t| !t.is_empty()) {
                detail.push(format!("service type {t}"));
            }
            if !fresh && since.is_some() {
                detail.push("failed since before the window".to_string());
            }
            facts.push(fact.detail(detail.join(", ")));
        }
        Ok(facts)
    }
}
