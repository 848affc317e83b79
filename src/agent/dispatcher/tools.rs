//! The tool registry the dispatcher's runner uses, built from the config.

use std::sync::Arc;

use crate::config::Config;
use crate::integrations::Upstreams;
use crate::telemetry::Metrics;
use crate::tools::ToolRegistry;

/// The tools the agent may call, as configured (see `tools::catalog`), over the shared
/// `upstreams` clients.
pub fn build_tools(
    config: &Config,
    upstreams: &Upstreams,
    metrics: Arc<Metrics>,
) -> Result<ToolRegistry, crate::tools::CatalogError> {
    crate::tools::catalog::build_registry(config, upstreams, metrics)
}
