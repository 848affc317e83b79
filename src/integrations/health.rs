//! The background health checker: probes each configured upstream every
//! `server.health_interval` and records the result in `sre_agent_component_healthy`
//! and in the shared [`ComponentHealth`] map that `/readyz` reports.

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use serde::Serialize;
use tokio_util::sync::CancellationToken;

use super::{Auth, Upstream, UpstreamError, UpstreamOptions};
use crate::config::Config;
use crate::telemetry::Metrics;
use crate::telemetry::supervise::contained;

/// The last health check result of one component.
#[derive(Clone, Debug, Serialize)]
pub struct ComponentStatus {
    pub healthy: bool,
    pub url: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    pub checked_at: chrono::DateTime<chrono::Utc>,
}

/// Health of every configured component, shared with `/readyz`.
pub type ComponentHealth = Arc<RwLock<BTreeMap<String, ComponentStatus>>>;

/// One component to probe: its name, client and health path.
struct Probe {
    component: &'static str,
    upstream: Upstream,
    path: &'static str,
}

/// Probes the configured upstreams on an interval.
pub struct HealthChecker {
    probes: Vec<Probe>,
    interval: Duration,
    metrics: Arc<Metrics>,
    state: ComponentHealth,
}

impl HealthChecker {
    /// A checker of every configured upstream; fails only when a client cannot be set up.
    pub fn new(
        config: &Config,
        metrics: Arc<Metrics>,
        state: ComponentHealth,
    ) -> Result<Self, UpstreamError> {
        let bearer = |token: &Option<crate::config::Secret>| token.clone().map(Auth::Bearer);
        // (component, service, URL, timeout, auth, health path)
        let upstreams = [
            (
                "prometheus",
                "Prometheus",
                &config.prometheus.url,
                &config.prometheus.timeout,
                None,
                "-/ready",
            ),
            (
                "loki",
                "Loki",
                &config.loki.url,
                &config.loki.timeout,
                None,
                "ready",
            ),
            (
                "grafana",
                "Grafana",
                &config.grafana.url,
                &config.grafana.timeout,
                bearer(&config.grafana.token),
                "api/health",
            ),
            (
                "alertmanager",
                "Alertmanager",
                &config.alertmanager.url,
                &config.alertmanager.timeout,
                None,
                "-/ready",
            ),
            (
                "llm",
                "LLM",
                &config.llm.base_url,
                &config.llm.timeout,
                bearer(&config.llm.api_key),
                "models",
            ),
        ];
        let mut probes = Vec::new();
        for (component, service, url, timeout, auth, path) in upstreams {
            let Some(url) = url else { continue };
            let opts = UpstreamOptions {
                timeout: timeout.get().min(Duration::from_secs(10)),
                auth,
                ..Default::default()
            };
            probes.push(Probe {
                component,
                upstream: Upstream::new(service, &url.0, opts)?,
                path,
            });
        }
        Ok(Self {
            probes,
            interval: config.server.health_interval.get(),
            metrics,
            state,
        })
    }

    /// Probes every component once, concurrently.
    pub async fn tick_once(&self) {
        let results = futures::future::join_all(
            self.probes
                .iter()
                .map(|p| async move { (p, p.upstream.probe(p.path).await) }),
        )
        .await;
        for (probe, result) in results {
            let healthy = result.is_ok();
            let was_healthy = self
                .state
                .read()
                .ok()
                .and_then(|s| s.get(probe.component).map(|c| c.healthy));
            match (&result, was_healthy) {
                (Err(e), Some(true) | None) => {
                    tracing::warn!(component = probe.component, error = %e, "component unhealthy")
                }
                (Ok(()), Some(false)) => {
                    tracing::info!(component = probe.component, "component healthy again")
                }
                _ => {}
            }
            self.metrics
                .component_healthy
                .with_label_values(&[probe.component])
                .set(i64::from(healthy));
            let status = ComponentStatus {
                healthy,
                url: probe.upstream.base_display(),
                error: result.err().map(|e| e.to_string()),
                checked_at: chrono::Utc::now(),
            };
            if let Ok(mut s) = self.state.write() {
                s.insert(probe.component.to_string(), status);
            }
        }
    }

    /// Runs until `token` is cancelled.
    pub async fn run(self: Arc<Self>, token: CancellationToken) {
        if self.probes.is_empty() {
            return;
        }
        let mut ticker = tokio::time::interval(self.interval);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = token.cancelled() => return,
                // A probe that panics costs one tick, not the checker.
                _ = ticker.tick() => {
                    contained("health_checker", &self.metrics, self.tick_once()).await;
                }
            }
        }
    }
}
