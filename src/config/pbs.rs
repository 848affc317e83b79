//! `[pbs]`: Proxmox Backup Server, plus how often each backup group is expected to get a
//! snapshot (for the weekly report's backups section).

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::ConfigError;
use super::proxmox::{ProxmoxApiConfig, yes};
use super::secrets::secret_fields;
use super::values::{HttpUrl, HumanDuration, Secret};

/// `[pbs]`: Proxmox Backup Server, plus how often each backup group is expected to get a
/// snapshot (for the weekly report's backups section).
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct PbsConfig {
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
    /// A group whose newest snapshot is older than this is reported as overdue.
    pub backup_interval: HumanDuration,
}

impl Default for PbsConfig {
    fn default() -> Self {
        Self {
            url: None,
            token_id: None,
            token_secret: None,
            token_secret_file: None,
            verify_tls: true,
            ca_file: None,
            timeout: HumanDuration::secs(15),
            backup_interval: HumanDuration::secs(26 * 3600),
        }
    }
}

secret_fields!(PbsConfig {
    token_secret: token_secret_file
});

impl PbsConfig {
    /// The API connection part.
    pub fn api(&self) -> ProxmoxApiConfig {
        ProxmoxApiConfig {
            url: self.url.clone(),
            token_id: self.token_id.clone(),
            token_secret: self.token_secret.clone(),
            token_secret_file: self.token_secret_file.clone(),
            verify_tls: self.verify_tls,
            ca_file: self.ca_file.clone(),
            timeout: self.timeout.clone(),
        }
    }

    /// Validates the section; errors name the key.
    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        self.api().validate("pbs")?;
        if self.backup_interval.get().is_zero() {
            return Err(ConfigError::Invalid(
                "pbs.backup_interval: must be more than 0s".into(),
            ));
        }
        Ok(())
    }
}
