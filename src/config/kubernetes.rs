//! `[kubernetes]`: read-only access through a kubeconfig or the in-cluster service
//! account; off until `enabled = true`.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::ConfigError;
use super::secrets::secret_fields;
use super::values::HumanDuration;

/// `[kubernetes]`: read-only access through a kubeconfig or the in-cluster service account.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct KubernetesConfig {
    pub enabled: bool,
    /// Kubeconfig file; the default (`$KUBECONFIG` / `~/.kube/config`) when unset.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kubeconfig: Option<PathBuf>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context: Option<String>,
    pub in_cluster: bool,
    /// Namespaces the tools may look at; empty means all.
    pub namespaces: Vec<String>,
    pub timeout: HumanDuration,
}

impl Default for KubernetesConfig {
    fn default() -> Self {
        Self {
            enabled: false,
            kubeconfig: None,
            context: None,
            in_cluster: false,
            namespaces: Vec::new(),
            timeout: HumanDuration::secs(15),
        }
    }
}

secret_fields!(KubernetesConfig);

impl KubernetesConfig {
    /// Whether `namespace` is in the allow-list (an empty list allows all).
    pub fn allows(&self, namespace: &str) -> bool {
        self.namespaces.is_empty() || self.namespaces.iter().any(|n| n == namespace)
    }

    /// Validates the section; errors name the key.
    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        if self.enabled && self.in_cluster && self.kubeconfig.is_some() {
            return Err(ConfigError::Invalid(
                "kubernetes.in_cluster: set either in_cluster = true or kubeconfig, not both"
                    .into(),
            ));
        }
        Ok(())
    }
}
