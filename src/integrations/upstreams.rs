//! The clients of the configured upstreams, built once from the config (at the daemon's
//! start, or once by a one-shot command) and shared by every part that reads an upstream:
//! the tools, the evidence planner, the health sweep, the weekly report, the health
//! checker and the Grafana annotations. A client holds its connection pool (and the
//! Kubernetes client its connection), so sharing one keeps one pool per upstream.

use std::sync::Arc;

use super::kubernetes::{KubeClient, KubeError};
use super::pbs::PbsClient;
use super::proxmox::ProxmoxClient;
use super::truenas::TruenasClient;
use super::{AlertmanagerClient, GrafanaClient, LokiClient, PrometheusClient, UpstreamError};
use crate::config::Config;

/// A client that could not be set up (unreadable CA file, bad kubeconfig…); the error
/// names the service.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    #[error(transparent)]
    Upstream(#[from] UpstreamError),
    #[error(transparent)]
    Kubernetes(#[from] KubeError),
}

/// One client per configured upstream; `None` where the config leaves it out.
#[derive(Clone, Default)]
pub struct Upstreams {
    pub prometheus: Option<Arc<PrometheusClient>>,
    pub loki: Option<Arc<LokiClient>>,
    pub grafana: Option<Arc<GrafanaClient>>,
    pub alertmanager: Option<Arc<AlertmanagerClient>>,
    pub kubernetes: Option<Arc<KubeClient>>,
    pub proxmox: Option<Arc<ProxmoxClient>>,
    pub pbs: Option<Arc<PbsClient>>,
    pub truenas: Option<Arc<TruenasClient>>,
}

impl Upstreams {
    /// The client of every upstream `config` configures. Warns once for each appliance
    /// that skips TLS verification.
    pub fn from_config(config: &Config) -> Result<Self, SetupError> {
        /// `build()` when `configured`, shared.
        fn client<T, E>(
            configured: bool,
            build: impl FnOnce() -> Result<T, E>,
        ) -> Result<Option<Arc<T>>, E> {
            configured.then(build).transpose().map(|c| c.map(Arc::new))
        }
        let insecure = [
            (
                "proxmox",
                config.proxmox.url.is_some(),
                config.proxmox.verify_tls,
            ),
            ("pbs", config.pbs.url.is_some(), config.pbs.verify_tls),
            (
                "truenas",
                config.truenas.url.is_some(),
                config.truenas.verify_tls,
            ),
        ];
        for (section, _, _) in insecure.iter().filter(|(_, on, verify)| *on && !verify) {
            tracing::warn!(
                integration = section,
                "{section}.verify_tls = false: TLS certificates are NOT verified; prefer {section}.ca_file"
            );
        }
        Ok(Self {
            prometheus: client(config.prometheus.url.is_some(), || {
                PrometheusClient::new(&config.prometheus)
            })?,
            loki: client(config.loki.url.is_some(), || LokiClient::new(&config.loki))?,
            grafana: client(config.grafana.url.is_some(), || {
                GrafanaClient::new(&config.grafana)
            })?,
            alertmanager: client(config.alertmanager.url.is_some(), || {
                AlertmanagerClient::new(&config.alertmanager)
            })?,
            kubernetes: client(config.kubernetes.enabled, || {
                KubeClient::new(&config.kubernetes)
            })?,
            proxmox: client(config.proxmox.url.is_some(), || {
                ProxmoxClient::new(&config.proxmox)
            })?,
            pbs: client(config.pbs.url.is_some(), || PbsClient::new(&config.pbs))?,
            truenas: client(config.truenas.url.is_some(), || {
                TruenasClient::new(&config.truenas)
            })?,
        })
    }
}

/// A config naming every integration this module builds a client for, at an address
/// nothing answers (tests).
#[cfg(test)]
pub(crate) fn every_integration_configured() -> Config {
    use crate::config::{HttpUrl, Secret};
    let url = || Some(HttpUrl(url::Url::parse("http://127.0.0.1:9").unwrap()));
    let mut config = Config::default();
    config.prometheus.url = url();
    config.loki.url = url();
    config.grafana.url = url();
    config.alertmanager.url = url();
    config.kubernetes.enabled = true;
    config.kubernetes.in_cluster = true;
    config.proxmox.url = url();
    config.proxmox.token_id = Some("a@pve!b".into());
    config.proxmox.token_secret = Some(Secret::new("s"));
    config.pbs.url = url();
    config.pbs.token_id = Some("a@pbs!b".into());
    config.pbs.token_secret = Some(Secret::new("s"));
    config.truenas.url = url();
    config.truenas.api_key = Some(Secret::new("k"));
    config
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{HttpUrl, Secret};

    /// The integrations `upstreams` has a client for, by config section.
    fn built(upstreams: &Upstreams) -> Vec<&'static str> {
        let Upstreams {
            prometheus,
            loki,
            grafana,
            alertmanager,
            kubernetes,
            proxmox,
            pbs,
            truenas,
        } = upstreams;
        [
            ("prometheus", prometheus.is_some()),
            ("loki", loki.is_some()),
            ("grafana", grafana.is_some()),
            ("alertmanager", alertmanager.is_some()),
            ("kubernetes", kubernetes.is_some()),
            ("proxmox", proxmox.is_some()),
            ("pbs", pbs.is_some()),
            ("truenas", truenas.is_some()),
        ]
        .into_iter()
        .filter_map(|(name, on)| on.then_some(name))
        .collect()
    }

    #[test]
    fn a_client_is_built_for_each_configured_integration_and_for_no_other() {
        crate::install_crypto_provider();
        let mut config = Config::default();
        assert!(built(&Upstreams::from_config(&config).unwrap()).is_empty());
        let url = || Some(HttpUrl(url::Url::parse("http://127.0.0.1:9").unwrap()));
        config.loki.url = url();
        config.pbs.url = url();
        config.pbs.token_id = Some("a@pbs!b".into());
        config.pbs.token_secret = Some(Secret::new("s"));
        assert_eq!(
            built(&Upstreams::from_config(&config).unwrap()),
            ["loki", "pbs"]
        );
        let config = every_integration_configured();
        let upstreams = Upstreams::from_config(&config).unwrap();
        assert_eq!(built(&upstreams), config.enabled_integrations());
    }
}
