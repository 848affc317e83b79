//! `[proxmox]`: a Proxmox VE API reached with an API token; also the API part of `[pbs]`
//! (same token scheme) and the CA-file check every TLS integration shares.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::ConfigError;
use super::secrets::secret_fields;
use super::values::{HttpUrl, HumanDuration, Secret};

/// `[proxmox]` and the API part of `[pbs]`: a Proxmox API reached with an API token.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct ProxmoxApiConfig {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<HttpUrl>,
    /// `USER@REALM!TOKENID`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token_secret: Option<Secret>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token_secret_file: Option<PathBuf>,
    #[serde(default = "yes")]
    pub verify_tls: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ca_file: Option<PathBuf>,
    pub timeout: HumanDuration,
}

pub(super) fn yes() -> bool {
    true
}

impl Default for ProxmoxApiConfig {
    fn default() -> Self {
        Self {
            url: None,
            token_id: None,
            token_secret: None,
            token_secret_file: None,
            verify_tls: true,
            ca_file: None,
            timeout: HumanDuration::secs(15),
        }
    }
}

secret_fields!(ProxmoxApiConfig {
    token_secret: token_secret_file
});

impl ProxmoxApiConfig {
    /// Validates the connection of `[section]` when its URL is set; errors name the key.
    pub(super) fn validate(&self, section: &str) -> Result<(), ConfigError> {
        if self.url.is_none() {
            return Ok(());
        }
        let bad = |field: &str, msg: String| {
            Err(ConfigError::Invalid(format!("{section}.{field}: {msg}")))
        };
        match &self.token_id {
            Some(id) if id.contains('@') && id.contains('!') => {}
            Some(id) => {
                return bad(
                    "token_id",
                    format!("invalid token id {id:?} (expected USER@REALM!TOKENID)"),
                );
            }
            None => return bad("token_id", "is required with url".into()),
        }
        if self.token_secret.is_none() {
            return bad(
                "token_secret",
                "is required with url (or token_secret_file)".into(),
            );
        }
        check_ca(&format!("{section}.ca_file"), &self.ca_file)
    }
}

/// An extra CA certificate file must exist.
pub(super) fn check_ca(key: &str, ca: &Option<PathBuf>) -> Result<(), ConfigError> {
    match ca {
        Some(path) if !path.is_file() => Err(ConfigError::Invalid(format!(
            "{key}: cannot read {:?}",
            path.display().to_string()
        ))),
        _ => Ok(()),
    }
}
