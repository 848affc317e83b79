//! The catalog of tools, the one place that says which tools exist: `current_time` and
//! `runbook_search` always, the tools of each integration only when it is configured,
//! then the `[[tools.http]]` tools, then the allow-listed tools of `[[mcp.servers]]`. The
//! built-in names come from the same table, so a declared tool that would take one is
//! refused by [`validate`] at load and in `check-config`, before the daemon binds its port.

use std::collections::BTreeSet;
use std::sync::Arc;

use super::grafana::{AlertmanagerAlerts, GrafanaAlertRules, GrafanaAlerts, GrafanaAnnotations};
use super::http_declared::HttpTool;
use super::kubernetes::{K8sKind, K8sTool};
use super::loki::{LokiErrorSummary, LokiQuery};
use super::no_data::PromNoData;
use super::overview::PrometheusInstanceOverview;
use super::pbs::{PbsKind, PbsTool};
use super::prometheus::{
    PrometheusAlerts, PrometheusMetricNames, PrometheusQuery, PrometheusQueryRange,
    PrometheusTargets,
};
use super::proxmox::{PveKind, PveTool};
use super::runbooks::{RunbookIndex, RunbookSearch};
use super::truenas::{TruenasKind, TruenasTool};
use super::{CatalogError, CurrentTime, Tool, ToolRegistry, is_valid_tool_name};
use crate::config::{Config, ConfigError};
use crate::integrations::Upstreams;
use crate::telemetry::Metrics;

type Tools = Vec<Arc<dyn Tool>>;

/// The built-in tools of one integration (or of none).
struct Family {
    /// The names its tools register under, configured or not.
    names: fn() -> Vec<&'static str>,
    /// Its tools over the integration's shared client (none when it is not configured),
    /// each compacting its output to `max_chars` characters.
    build: fn(&Config, &Upstreams, usize) -> Tools,
}

/// The tools that need no integration: always registered, first.
const CORE: Family = Family {
    names: || vec![CurrentTime::NAME, RunbookSearch::NAME],
    build: |config, _, max_chars| {
        let index = RunbookIndex::load(&config.runbooks.dir);
        vec![
            Arc::new(CurrentTime),
            Arc::new(RunbookSearch { index, max_chars }),
        ]
    },
};

/// The integrations' tools, in registration order.
const INTEGRATIONS: [Family; 8] = [
    Family {
        names: || {
            vec![
                PrometheusQuery::NAME,
                PrometheusQueryRange::NAME,
                PrometheusAlerts::NAME,
                PrometheusTargets::NAME,
                PrometheusMetricNames::NAME,
                PrometheusInstanceOverview::NAME,
            ]
        },
        build: |_, upstreams, max_chars| {
            let Some(client) = upstreams.prometheus.clone() else {
                return Vec::new();
            };
            let hints = Arc::new(PromNoData::new(client.clone()));
            vec![
                Arc::new(PrometheusQuery {
                    client: client.clone(),
                    max_chars,
                    hints: hints.clone(),
                }),
                Arc::new(PrometheusQueryRange {
                    client: client.clone(),
                    max_chars,
                    hints,
                }),
                Arc::new(PrometheusAlerts {
                    client: client.clone(),
                    max_chars,
                }),
                Arc::new(PrometheusTargets {
                    client: client.clone(),
                    max_chars,
                }),
                Arc::new(PrometheusMetricNames {
                    client: client.clone(),
                    max_chars,
                }),
                Arc::new(PrometheusInstanceOverview { client, max_chars }),
            ]
        },
    },
    Family {
        names: || vec![LokiQuery::NAME, LokiErrorSummary::NAME],
        build: |_, upstreams, max_chars| {
            let Some(client) = upstreams.loki.clone() else {
                return Vec::new();
            };
            vec![
                Arc::new(LokiQuery {
                    client: client.clone(),
                    max_chars,
                }),
                Arc::new(LokiErrorSummary { client, max_chars }),
            ]
        },
    },
    Family {
        names: || {
            vec![
                GrafanaAlerts::NAME,
                GrafanaAlertRules::NAME,
                GrafanaAnnotations::NAME,
            ]
        },
        build: |_, upstreams, max_chars| {
            let Some(client) = upstreams.grafana.clone() else {
                return Vec::new();
            };
            vec![
                Arc::new(GrafanaAlerts {
                    client: client.clone(),
                    max_chars,
                }),
                Arc::new(GrafanaAlertRules {
                    client: client.clone(),
                    max_chars,
                }),
                Arc::new(GrafanaAnnotations { client, max_chars }),
            ]
        },
    },
    Family {
        names: || vec![AlertmanagerAlerts::NAME],
        build: |_, upstreams, max_chars| {
            let Some(client) = upstreams.alertmanager.clone() else {
                return Vec::new();
            };
            vec![Arc::new(AlertmanagerAlerts { client, max_chars })]
        },
    },
    Family {
        names: || K8sKind::ALL.map(K8sKind::name).to_vec(),
        build: |_, upstreams, max_chars| {
            let Some(client) = upstreams.kubernetes.clone() else {
                return Vec::new();
            };
            K8sKind::ALL
                .map(|kind| -> Arc<dyn Tool> {
                    Arc::new(K8sTool {
                        kind,
                        client: client.clone(),
                        max_chars,
                    })
                })
                .to_vec()
        },
    },
    Family {
        names: || PveKind::ALL.map(PveKind::name).to_vec(),
        build: |_, upstreams, _| {
            let Some(client) = upstreams.proxmox.clone() else {
                return Vec::new();
            };
            PveKind::ALL
                .map(|kind| -> Arc<dyn Tool> {
                    Arc::new(PveTool {
                        kind,
                        client: client.clone(),
                    })
                })
                .to_vec()
        },
    },
    Family {
        names: || PbsKind::ALL.map(PbsKind::name).to_vec(),
        build: |_, upstreams, _| {
            let Some(client) = upstreams.pbs.clone() else {
                return Vec::new();
            };
            PbsKind::ALL
                .map(|kind| -> Arc<dyn Tool> {
                    Arc::new(PbsTool {
                        kind,
                        client: client.clone(),
                    })
                })
                .to_vec()
        },
    },
    Family {
        names: || TruenasKind::ALL.map(TruenasKind::name).to_vec(),
        build: |_, upstreams, _| {
            let Some(client) = upstreams.truenas.clone() else {
                return Vec::new();
            };
            TruenasKind::ALL
                .map(|kind| -> Arc<dyn Tool> {
                    Arc::new(TruenasTool {
                        kind,
                        client: client.clone(),
                    })
                })
                .to_vec()
        },
    },
];

/// The tools that need no integration (`current_time`, `runbook_search`).
pub fn core_names() -> Vec<&'static str> {
    (CORE.names)()
}

/// Every built-in tool name, configured or not, in registration order.
pub fn builtin_names() -> Vec<&'static str> {
    std::iter::once(&CORE)
        .chain(&INTEGRATIONS)
        .flat_map(|f| (f.names)())
        .collect()
}

/// Checks the `[[tools.http]]` names: valid tool names that no built-in tool takes.
/// Run after `Config::load` wherever a configuration is accepted (`check-config`, the
/// daemon's start, the CLI); errors name the key like every other config error.
pub fn validate(config: &Config) -> Result<(), ConfigError> {
    let builtin: BTreeSet<&str> = builtin_names().into_iter().collect();
    for (i, t) in config.tools.http.iter().enumerate() {
        let bad = |msg: String| Err(ConfigError::Invalid(format!("tools.http[{i}].name: {msg}")));
        if !is_valid_tool_name(&t.name) {
            return bad(format!(
                "invalid name {:?} (expected ^[a-zA-Z0-9_-]{{1,64}}$)",
                t.name
            ));
        }
        if builtin.contains(t.name.as_str()) {
            return bad(format!("{:?} clashes with a built-in tool", t.name));
        }
    }
    for (i, s) in config.mcp.servers.iter().enumerate() {
        for (j, tool) in s.tools.iter().enumerate() {
            let name = s.tool_name(tool);
            if builtin.contains(name.as_str()) || config.tools.http.iter().any(|t| t.name == name) {
                return Err(ConfigError::Invalid(format!(
                    "mcp.servers[{i}].tools[{j}]: {name:?} clashes with another tool"
                )));
            }
        }
    }
    Ok(())
}

/// The registry of every configured tool over the shared `upstreams` clients, each
/// compacting its output to `llm.max_tool_output_chars`. The agent calls this once at
/// start.
pub fn build_registry(
    config: &Config,
    upstreams: &Upstreams,
    metrics: Arc<Metrics>,
) -> Result<ToolRegistry, CatalogError> {
    let max_chars = config.llm.max_tool_output_chars;
    let mut registry = ToolRegistry::new(metrics, max_chars);
    for tool in (CORE.build)(config, upstreams, max_chars) {
        registry.register(tool);
    }
    register_integrations(&mut registry, config, upstreams)?;
    Ok(registry)
}

/// Registers the tools of every integration `upstreams` has a client for, then the
/// `[[tools.http]]` tools; none when nothing is configured.
pub fn register_integrations(
    registry: &mut ToolRegistry,
    config: &Config,
    upstreams: &Upstreams,
) -> Result<(), CatalogError> {
    validate(config)?;
    let max_chars = config.llm.max_tool_output_chars;
    for family in &INTEGRATIONS {
        for tool in (family.build)(config, upstreams, max_chars) {
            registry.register(tool);
        }
    }
    for (i, spec) in config.tools.http.iter().enumerate() {
        let key = format!("tools.http[{i}]");
        if registry.get(&spec.name).is_some() {
            return Err(ConfigError::Invalid(format!(
                "{key}.name: {:?} clashes with another tool",
                spec.name
            ))
            .into());
        }
        registry.register(Arc::new(HttpTool::new(&key, spec)?));
    }
    let (servers, tools) = super::mcp::build(config, registry.metrics());
    for tool in tools {
        if registry.get(tool.name()).is_some() {
            return Err(ConfigError::Invalid(format!(
                "mcp.servers: the tool name {:?} clashes with another tool",
                tool.name()
            ))
            .into());
        }
        registry.register(Arc::new(tool));
    }
    registry.add_mcp_servers(servers);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::integrations::every_integration_configured;

    #[test]
    fn the_built_in_names_are_exactly_the_tools_registered_with_every_integration_on() {
        crate::install_crypto_provider();
        let config = every_integration_configured();
        let upstreams = Upstreams::from_config(&config).unwrap();
        let registry = build_registry(&config, &upstreams, Arc::new(Metrics::new("m"))).unwrap();
        assert_eq!(registry.names(), builtin_names());
    }
}
