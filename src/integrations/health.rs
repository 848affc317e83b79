//! The background health checker: probes each configured upstream every
//! `server.health_interval` and records the result in `sre_agent_component_healthy`
//! and in the shared [`ComponentHealth`] map that `/readyz` reports.

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use serde::Serialize;
use tokio_util::sync::CancellationToken;

use super::{Auth, Upstream, UpstreamError, UpstreamOptions, Upstreams};
use crate::config::Config;
use crate::telemetry::supervise::contained;
use crate::telemetry::{Metrics, Task};

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

/// The longest a probe waits for an answer.
const PROBE_TIMEOUT: Duration = Duration::from_secs(10);

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
    /// A checker of every configured upstream: Prometheus, Loki, Grafana and Alertmanager
    /// through their shared `upstreams` clients, the LLM through a client of its own (the
    /// agent's LLM client lives above this layer); fails only when that one cannot be set
    /// up.
    pub fn new(
        config: &Config,
        upstreams: &Upstreams,
        metrics: Arc<Metrics>,
        state: ComponentHealth,
    ) -> Result<Self, UpstreamError> {
        // (component, client, health path)
        let shared = [
            (
                "prometheus",
                upstreams.prometheus.as_ref().map(|c| c.upstream()),
                "-/ready",
            ),
            (
                "loki",
                upstreams.loki.as_ref().map(|c| c.upstream()),
                "ready",
            ),
            (
                "grafana",
                upstreams.grafana.as_ref().map(|c| c.upstream()),
                "api/health",
            ),
            (
                "alertmanager",
                upstreams.alertmanager.as_ref().map(|c| c.upstream()),
                "-/ready",
            ),
        ];
        let mut probes: Vec<Probe> = shared
            .into_iter()
            .filter_map(|(component, upstream, path)| {
                upstream.map(|u| Probe {
                    component,
                    upstream: u.clone(),
                    path,
                })
            })
            .collect();
        if let Some(url) = &config.llm.base_url {
            let opts = UpstreamOptions {
                timeout: config.llm.timeout.get(),
                auth: config.llm.api_key.clone().map(Auth::Bearer),
                ..Default::default()
            };
            probes.push(Probe {
                component: "llm",
                upstream: Upstream::new("LLM", &url.0, opts)?,
                path: "models",
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
                .map(|p| async move { (p, p.upstream.probe(p.path, PROBE_TIMEOUT).await) }),
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
                    contained(Task::HealthChecker, &self.metrics, self.tick_once()).await;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // The clock is paused: the probe's limit passes at once, and exactly.
    #[tokio::test(start_paused = true)]
    async fn a_probe_gives_up_at_its_own_limit_while_the_shared_client_would_wait_longer() {
        crate::install_crypto_provider();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        // Accepts connections and never answers.
        tokio::spawn(async move {
            let mut open = Vec::new();
            while let Ok((socket, _)) = listener.accept().await {
                open.push(socket);
            }
        });
        let base = url::Url::parse(&format!("http://{addr}")).unwrap();
        let opts = UpstreamOptions {
            timeout: Duration::from_secs(60),
            ..Default::default()
        };
        let upstream = Upstream::new("Prometheus", &base, opts).unwrap();
        let start = tokio::time::Instant::now();
        let limit = Duration::from_millis(200);
        let err = upstream.probe("-/ready", limit).await.unwrap_err();
        assert_eq!(start.elapsed(), limit, "{err}");
        assert!(
            matches!(err, UpstreamError::Timeout { timeout, .. } if timeout == limit),
            "{err}"
        );
    }
}
