//! Configuration reloads in the window and reloads that failed, from the pair of series
//! Prometheus, Alertmanager, blackbox_exporter and the Kubernetes config reloaders export
//! (`<x>_last_reload_success_timestamp_seconds`, `<x>_last_reload_successful`). A process
//! loads its configuration when it starts, so a "reload" at the process' start time is
//! the start, which `process_restarts` reports.

use std::collections::HashMap;

use async_trait::async_trait;

use super::history::{last_transition, time_of};
use super::{Prom, host, labels_map, pick, selector};
use crate::analyze::{AnalyzeError, Analyzer, Entity, Fact, FactClass, Scope, Severity, Source};
use crate::integrations::prometheus::{Labels, Sample};

const SUCCESS_TIME: &str = "_last_reload_success_timestamp_seconds";
const SUCCESSFUL: &str = "_last_reload_successful";
/// A reload this close to the process' start is the start.
const START_SLACK_SECS: f64 = 120.0;

pub struct ConfigReloads(pub Prom);

#[async_trait]
impl Analyzer for ConfigReloads {
    fn name(&self) -> &'static str {
        "config_reloads"
    }

    async fn run(&self, scope: &Scope) -> Result<Vec<Fact>, AnalyzeError> {
        let ws = scope.window_start.timestamp();
        let times = format!("{{__name__=~\".+{SUCCESS_TIME}\"}}");
        let failed = format!("{{__name__=~\".+{SUCCESSFUL}\"}} == 0");
        let starts = format!(
            "process_start_time_seconds > {}",
            ws.saturating_sub(START_SLACK_SECS as i64)
        );
        let (times, failed, starts) = tokio::join!(
            self.0.vector(&times),
            self.0.vector(&failed),
            self.0.vector(&starts)
        );
        let (times, failed, starts) = (times?, failed?, starts?);
        let start_of: HashMap<(Option<&String>, Option<&String>), f64> = starts
            .iter()
            .map(|s| (target(&s.metric), s.value))
            .collect();
        let mut facts = Vec::new();
        for s in &times {
            let Some(when) = time_of(s.value).filter(|t| *t >= scope.window_start) else {
                continue;
            };
            let at_start = start_of
                .get(&target(&s.metric))
                .is_some_and(|st| (s.value - st).abs() < START_SLACK_SECS);
            if at_start || when > scope.now {
                continue;
            }
            let q = query(&s.metric);
            facts.push(
                fact(
                    self.name(),
                    &s.metric,
                    SUCCESS_TIME,
                    "config reloaded",
                    Severity::Info,
                    q,
                )
                .since(Some(when)),
            );
        }
        let queries: Vec<String> = failed.iter().map(|s| query(&s.metric)).collect();
        let histories = self.0.histories(&queries, scope).await?;
        for (i, s) in failed.iter().enumerate() {
            let since = histories
                .get(i)
                .and_then(|h| h.first())
                .and_then(|h| last_transition(&h.values))
                .map(|(t, _)| t);
            let last_ok = last_success(&times, s);
            let mut f = fact(
                self.name(),
                &s.metric,
                SUCCESSFUL,
                "config reload failed",
                Severity::Warning,
                queries[i].clone(),
            )
            .since(since);
            if let Some(t) = last_ok {
                f = f.detail(format!(
                    "running the configuration loaded at {}",
                    t.format("%Y-%m-%d %H:%M UTC")
                ));
            }
            facts.push(f);
        }
        Ok(facts)
    }
}

fn target(labels: &Labels) -> (Option<&String>, Option<&String>) {
    (labels.get("job"), labels.get("instance"))
}

/// The query showing `labels`' series.
fn query(labels: &Labels) -> String {
    let name = labels
        .get("__name__")
        .map(String::as_str)
        .unwrap_or_default();
    format!("{name}{}", selector(pick(labels, &["job", "instance"])))
}

/// The success time next to a failed-reload series (same prefix and target).
fn last_success(times: &[Sample], failed: &Sample) -> Option<chrono::DateTime<chrono::Utc>> {
    let name = failed.metric.get("__name__")?;
    let prefix = name.strip_suffix(SUCCESSFUL)?;
    times
        .iter()
        .find(|t| {
            t.metric
                .get("__name__")
                .and_then(|n| n.strip_suffix(SUCCESS_TIME))
                == Some(prefix)
                && target(&t.metric) == target(&failed.metric)
        })
        .and_then(|t| time_of(t.value))
}

/// A fact about the service whose series `labels` is (its name from the metric's prefix).
fn fact(
    analyzer: &str,
    labels: &Labels,
    suffix: &str,
    what: &str,
    severity: Severity,
    query: String,
) -> Fact {
    let metric = labels
        .get("__name__")
        .map(String::as_str)
        .unwrap_or_default();
    let prefix = metric.strip_suffix(suffix).unwrap_or(metric);
    let name = prefix.strip_suffix("_config").unwrap_or(prefix);
    Fact::new(
        FactClass::Change,
        analyzer,
        Entity::new("service", name)
            .on_host(host(labels))
            .with_labels(labels_map(labels)),
        what,
        severity,
        Source::promql(&query),
    )
}
