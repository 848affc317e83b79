//! The tool registry the dispatcher's runner uses, built from the config.

use std::sync::Arc;

use crate::config::Config;
use crate::telemetry::Metrics;
use crate::tools::ToolRegistry;

/// The tools the agent may call, as configured (see `tools::catalog`).
pub fn build_tools(
    config: &Config,
    metrics: Arc<Metrics>,
) -> Result<ToolRegistry, crate::tools::CatalogError> {
    crate::tools::catalog::build_registry(config, metrics)
}
