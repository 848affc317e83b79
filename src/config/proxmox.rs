//! `[proxmox]`: a Proxmox VE API reached with an API token; the sections that are one
//! (`[proxmox]`, `[pbs]`) declared from one list of keys; and the CA-file check every TLS
//! integration shares.

use std::path::PathBuf;

use super::ConfigError;

/// Declares a section that is a Proxmox API reached with an API token, followed by the
/// section's own keys with their defaults: the struct, its `Default`, its secret and
/// [`api`](ProxmoxApiConfig::api). `[pbs]` is one too (the same token scheme, plus how
/// often a backup is expected). A macro rather than `#[serde(flatten)]` of one struct into
/// the other: serde cannot name the keys of a flattened struct, so an unknown key in the
/// section would be refused without the keys it may be (`describe` in `config/mod.rs`),
/// and the deploy key list (`tests/it/config_keys.rs`) could not see them.
macro_rules! proxmox_api_section {
    (
        $(#[$doc:meta])*
        $name:ident { $($(#[$field_doc:meta])* $field:ident: $ty:ty = $default:expr,)* }
    ) => {
        $(#[$doc])*
        #[derive(Clone, Debug, serde::Deserialize, serde::Serialize)]
        #[serde(default, deny_unknown_fields)]
        pub struct $name {
            #[serde(skip_serializing_if = "Option::is_none")]
            pub url: Option<$crate::config::HttpUrl>,
            /// `USER@REALM!TOKENID`.
            #[serde(skip_serializing_if = "Option::is_none")]
            pub token_id: Option<String>,
            #[serde(skip_serializing_if = "Option::is_none")]
            pub token_secret: Option<$crate::config::Secret>,
            #[serde(skip_serializing_if = "Option::is_none")]
            pub token_secret_file: Option<std::path::PathBuf>,
            pub verify_tls: bool,
            #[serde(skip_serializing_if = "Option::is_none")]
            pub ca_file: Option<std::path::PathBuf>,
            pub timeout: $crate::config::HumanDuration,
            $($(#[$field_doc])* pub $field: $ty,)*
        }

        impl Default for $name {
            fn default() -> Self {
                Self {
                    url: None,
                    token_id: None,
                    token_secret: None,
                    token_secret_file: None,
                    verify_tls: true,
                    ca_file: None,
                    timeout: $crate::config::HumanDuration::secs(15),
                    $($field: $default,)*
                }
            }
        }

        $crate::config::secrets::secret_fields!($name {
            token_secret: token_secret_file
        });

        impl $name {
            /// The API connection part: what the client is built from.
            pub fn api(&self) -> $crate::config::ProxmoxApiConfig {
                $crate::config::ProxmoxApiConfig {
                    url: self.url.clone(),
                    token_id: self.token_id.clone(),
                    token_secret: self.token_secret.clone(),
                    token_secret_file: self.token_secret_file.clone(),
                    verify_tls: self.verify_tls,
                    ca_file: self.ca_file.clone(),
                    timeout: self.timeout.clone(),
                }
            }
        }
    };
}
pub(super) use proxmox_api_section;

proxmox_api_section!(
    /// `[proxmox]`: a Proxmox VE API reached with an API token.
    ProxmoxApiConfig {}
);

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
