//! The upstreams a report reads from: the shared `integrations` clients, one per
//! configured service (each says which service and URL failed, and how).

use crate::config::Config;
use crate::integrations::{GrafanaClient, LokiClient, PrometheusClient, UpstreamError};

/// The configured upstreams a report reads from.
#[derive(Clone, Debug, Default)]
pub struct Sources {
    pub prometheus: Option<PrometheusClient>,
    pub loki: Option<LokiClient>,
    pub grafana: Option<GrafanaClient>,
}

impl Sources {
    pub fn from_config(config: &Config) -> Result<Self, UpstreamError> {
        Ok(Self {
            prometheus: config
                .prometheus
                .url
                .as_ref()
                .map(|_| PrometheusClient::new(&config.prometheus))
                .transpose()?,
            loki: config
                .loki
                .url
                .as_ref()
                .map(|_| LokiClient::new(&config.loki))
                .transpose()?,
            grafana: config
                .grafana
                .url
                .as_ref()
                .map(|_| GrafanaClient::new(&config.grafana))
                .transpose()?,
        })
    }
}
