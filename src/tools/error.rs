//! The tools' two error boundaries: [`ToolError`], a call that failed (its text goes back
//! to the model so it can correct itself, and the call counts as `status="error"`), and
//! [`CatalogError`], a registry that cannot be built from the configuration.

use super::args::ArgError;
use crate::config::ConfigError;
use crate::integrations::UpstreamError;
use crate::integrations::kubernetes::KubeError;

/// A tool call that failed; rendered to the model as `error: {self}`.
#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    #[error("unknown tool \"{name}\"; available tools: {available}")]
    UnknownTool { name: String, available: String },
    /// The arguments do not match the tool's JSON schema.
    #[error("invalid arguments for {tool}: {reason}")]
    Schema { tool: String, reason: String },
    /// An argument the model can correct.
    #[error(transparent)]
    Argument(#[from] ArgError),
    #[error(transparent)]
    Upstream(#[from] UpstreamError),
    /// The upstream refused the credentials (401): names the permission the token needs.
    #[error("{source} — authentication failed: check the API token (needs {permission})")]
    Unauthorized {
        #[source]
        source: UpstreamError,
        permission: &'static str,
    },
    /// The upstream refused the request (403): names the permission the token lacks.
    #[error("{source} — permission denied: the API token needs {permission}")]
    Forbidden {
        #[source]
        source: UpstreamError,
        permission: &'static str,
    },
    #[error(transparent)]
    Kubernetes(#[from] KubeError),
    /// The upstream answered, but not with what the tool can use.
    #[error("{0}")]
    Answer(String),
}

impl ToolError {
    /// An upstream error that, on 401/403, names the `permission` the API token needs.
    pub fn upstream(e: UpstreamError, permission: &'static str) -> Self {
        match e.status() {
            Some(401) => Self::Unauthorized {
                source: e,
                permission,
            },
            Some(403) => Self::Forbidden {
                source: e,
                permission,
            },
            _ => Self::Upstream(e),
        }
    }
}

/// Why the tool registry cannot be built; fails the start and `check-config`.
#[derive(Debug, thiserror::Error)]
pub enum CatalogError {
    /// A `[[tools.http]]` entry that cannot become a tool (bad or clashing name…).
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// A `[[tools.http]]` client that cannot be set up; the error names the tool.
    #[error(transparent)]
    Upstream(#[from] UpstreamError),
}
