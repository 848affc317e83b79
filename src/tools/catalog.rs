//! The catalog of tools: `build_registry` registers `current_time` and `runbook_search`
//! always, and the tools of each integration only when its URL is configured.

use std::sync::Arc;

use anyhow::Context;

use super::grafana::{AlertmanagerAlerts, GrafanaAlertRules, GrafanaAlerts, GrafanaAnnotations};
use super::loki::{LokiErrorSummary, LokiQuery};
use super::prometheus::{
    PrometheusAlerts, PrometheusMetricNames, PrometheusQuery, PrometheusQueryRange,
    PrometheusTargets,
};
use super::runbooks::{RunbookIndex, RunbookSearch};
use super::{CurrentTime, ToolRegistry};
use crate::config::Config;
use crate::integrations::{AlertmanagerClient, GrafanaClient, LokiClient, PrometheusClient};
use crate::telemetry::Metrics;

/// The registry of every configured tool, each compacting its output to
/// `llm.max_tool_output_chars`. The agent calls this once at start.
pub fn build_registry(config: &Config, metrics: Arc<Metrics>) -> anyhow::Result<ToolRegistry> {
    let budget = config.llm.max_tool_output_chars;
    let mut registry = ToolRegistry::new(metrics, budget);
    registry.register(Arc::new(CurrentTime));
    registry.register(Arc::new(RunbookSearch {
        index: RunbookIndex::load(&config.runbooks.dir),
        budget,
    }));
    if config.prometheus.url.is_some() {
        let client = Arc::new(
            PrometheusClient::new(&config.prometheus).context("building the Prometheus client")?,
        );
        registry.register(Arc::new(PrometheusQuery {
            client: client.clone(),
            budget,
        }));
        registry.register(Arc::new(PrometheusQueryRange {
            client: client.clone(),
            budget,
        }));
        registry.register(Arc::new(PrometheusAlerts {
            client: client.clone(),
            budget,
        }));
        registry.register(Arc::new(PrometheusTargets {
            client: client.clone(),
            budget,
        }));
        registry.register(Arc::new(PrometheusMetricNames { client, budget }));
    }
    if config.loki.url.is_some() {
        let client = Arc::new(LokiClient::new(&config.loki).context("building the Loki client")?);
        registry.register(Arc::new(LokiQuery {
            client: client.clone(),
            budget,
        }));
        registry.register(Arc::new(LokiErrorSummary { client, budget }));
    }
    if config.grafana.url.is_some() {
        let client =
            Arc::new(GrafanaClient::new(&config.grafana).context("building the Grafana client")?);
        registry.register(Arc::new(GrafanaAlerts {
            client: client.clone(),
            budget,
        }));
        registry.register(Arc::new(GrafanaAlertRules {
            client: client.clone(),
            budget,
        }));
        registry.register(Arc::new(GrafanaAnnotations { client, budget }));
    }
    if config.alertmanager.url.is_some() {
        let client = Arc::new(
            AlertmanagerClient::new(&config.alertmanager)
                .context("building the Alertmanager client")?,
        );
        registry.register(Arc::new(AlertmanagerAlerts { client, budget }));
    }
    super::homelab::register_homelab_tools(&mut registry, config)?;
    Ok(registry)
}
