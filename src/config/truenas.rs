//! `[truenas]`: the TrueNAS REST API v2.0 with an API key.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::ConfigError;
use super::proxmox::check_ca;
use super::secrets::secret_fields;
use super::values::{HttpUrl, HumanDuration, Secret};

/// `[truenas]`: the TrueNAS REST API v2.0 with an API key.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct TruenasConfig {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<HttpUrl>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api_key: Option<Secret>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api_key_file: Option<PathBuf>,
    pub verify_tls: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ca_file: Option<PathBuf>,
    pub timeout: HumanDuration,
}

impl Default for TruenasConfig {
    fn default() -> Self {
        Self {
            url: None,
            api_key: None,
            api_key_file: None,
            verify_tls: true,
            ca_file: None,
            timeout: HumanDuration::secs(15),
        }
    }
}

secret_fields!(TruenasConfig {
    api_key: api_key_file
});

impl TruenasConfig {
    /// Validates the section when its URL is set; errors name the key.
    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        if self.url.is_none() {
            return Ok(());
        }
        if self.api_key.is_none() {
            return Err(ConfigError::Invalid(
                "truenas.api_key: is required with url (or api_key_file)".into(),
            ));
        }
        check_ca("truenas.ca_file", &self.ca_file)
    }
}
