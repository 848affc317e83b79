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
use crate::integrations::kubernetes::KubeClient;
use crate::integrations::pbs::PbsClient;
use crate::integrations::proxmox::ProxmoxClient;
use crate::integrations::truenas::TruenasClient;
use crate::integrations::{AlertmanagerClient, GrafanaClient, LokiClient, PrometheusClient};
use crate::telemetry::Metrics;

type Tools = Vec<Arc<dyn Tool>>;

/// The built-in tools of one integration (or of none).
struct Family {
    /// Whether the integration is configured.
    enabled: fn(&Config) -> bool,
    /// The names its tools register under, configured or not.
    names: fn() -> Vec<&'static str>,
    /// Its tools, each compacting its output to `budget` characters.
    build: fn(&Config, usize) -> Result<Tools, CatalogError>,
}

/// The tools that need no integration: always registered, first.
const CORE: Family = Family {
    enabled: |_| true,
    names: || vec![CurrentTime::NAME, RunbookSearch::NAME],
    build: |config, budget| {
        let index = RunbookIndex::load(&config.runbooks.dir);
        Ok(vec![
            Arc::new(CurrentTime),
            Arc::new(RunbookSearch { index, budget }),
        ])
    },
};

/// The integrations' tools, in registration order.
const INTEGRATIONS: [Family; 8] = [
    Family {
        enabled: |c| c.prometheus.url.is_some(),
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
        build: |config, budget| {
            let client = Arc::new(PrometheusClient::new(&config.prometheus)?);
            let hints = Arc::new(PromNoData::new(client.clone()));
            Ok(vec![
                Arc::new(PrometheusQuery {
                    client: client.clone(),
                    budget,
                    hints: hints.clone(),
                }),
                Arc::new(PrometheusQueryRange {
                    client: client.clone(),
                    budget,
                    hints,
                }),
                Arc::new(PrometheusAlerts {
                    client: client.clone(),
                    budget,
                }),
                Arc::new(PrometheusTargets {
                    client: client.clone(),
                    budget,
                }),
                Arc::new(PrometheusMetricNames {
                    client: client.clone(),
                    budget,
                }),
                Arc::new(PrometheusInstanceOverview { client, budget }),
            ])
        },
    },
    Family {
        enabled: |c| c.loki.url.is_some(),
        names: || vec![LokiQuery::NAME, LokiErrorSummary::NAME],
        build: |config, budget| {
            let client = Arc::new(LokiClient::new(&config.loki)?);
            Ok(vec![
                Arc::new(LokiQuery {
                    client: client.clone(),
                    budget,
                }),
                Arc::new(LokiErrorSummary { client, budget }),
            ])
        },
    },
    Family {
        enabled: |c| c.grafana.url.is_some(),
        names: || {
            vec![
                GrafanaAlerts::NAME,
                GrafanaAlertRules::NAME,
                GrafanaAnnotations::NAME,
            ]
        },
        build: |config, budget| {
            let client = Arc::new(GrafanaClient::new(&config.grafana)?);
            Ok(vec![
                Arc::new(GrafanaAlerts {
                    client: client.clone(),
                    budget,
                }),
                Arc::new(GrafanaAlertRules {
                    client: client.clone(),
                    budget,
                }),
                Arc::new(GrafanaAnnotations { client, budget }),
            ])
        },
    },
    Family {
        enabled: |c| c.alertmanager.url.is_some(),
        names: || vec![AlertmanagerAlerts::NAME],
        build: |config, budget| {
            let client = Arc::new(AlertmanagerClient::new(&config.alertmanager)?);
            Ok(vec![Arc::new(AlertmanagerAlerts { client, budget })])
        },
    },
    Family {
        enabled: |c| c.kubernetes.enabled,
        names: || K8sKind::ALL.map(K8sKind::name).to_vec(),
        build: |config, max_chars| {
            let client = Arc::new(KubeClient::new(&config.kubernetes)?);
            Ok(K8sKind::ALL
                .map(|kind| -> Arc<dyn Tool> {
                    Arc::new(K8sTool {
                        kind,
                        client: client.clone(),
                        max_chars,
                    })
                })
                .to_vec())
        },
    },
    Family {
        enabled: |c| c.proxmox.url.is_some(),
        names: || PveKind::ALL.map(PveKind::name).to_vec(),
        build: |config, _| {
            warn_if_insecure("proxmox", config.proxmox.verify_tls);
            let client = Arc::new(ProxmoxClient::new(&config.proxmox)?);
            Ok(PveKind::ALL
                .map(|kind| -> Arc<dyn Tool> {
                    Arc::new(PveTool {
                        kind,
                        client: client.clone(),
                    })
                })
                .to_vec())
        },
    },
    Family {
        enabled: |c| c.pbs.url.is_some(),
        names: || PbsKind::ALL.map(PbsKind::name).to_vec(),
        build: |config, _| {
            warn_if_insecure("pbs", config.pbs.verify_tls);
            let client = Arc::new(PbsClient::new(&config.pbs)?);
            Ok(PbsKind::ALL
                .map(|kind| -> Arc<dyn Tool> {
                    Arc::new(PbsTool {
                        kind,
                        client: client.clone(),
                    })
                })
                .to_vec())
        },
    },
    Family {
        enabled: |c| c.truenas.url.is_some(),
        names: || TruenasKind::ALL.map(TruenasKind::name).to_vec(),
        build: |config, _| {
            warn_if_insecure("truenas", config.truenas.verify_tls);
            let client = Arc::new(TruenasClient::new(&config.truenas)?);
            Ok(TruenasKind::ALL
                .map(|kind| -> Arc<dyn Tool> {
                    Arc::new(TruenasTool {
                        kind,
                        client: client.clone(),
                    })
                })
                .to_vec())
        },
    },
];

/// Warns once per integration that skips TLS verification.
fn warn_if_insecure(section: &str, verify_tls: bool) {
    if !verify_tls {
        tracing::warn!(
            integration = section,
            "{section}.verify_tls = false: TLS certificates are NOT verified; prefer {section}.ca_file"
        );
    }
}

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

/// The registry of every configured tool, each compacting its output to
/// `llm.max_tool_output_chars`. The agent calls this once at start.
pub fn build_registry(
    config: &Config,
    metrics: Arc<Metrics>,
) -> Result<ToolRegistry, CatalogError> {
    let budget = config.llm.max_tool_output_chars;
    let mut registry = ToolRegistry::new(metrics, budget);
    for tool in (CORE.build)(config, budget)? {
        registry.register(tool);
    }
    register_integrations(&mut registry, config)?;
    Ok(registry)
}

/// Registers the tools of every configured integration, then the `[[tools.http]]` tools;
/// none when nothing is configured.
pub fn register_integrations(
    registry: &mut ToolRegistry,
    config: &Config,
) -> Result<(), CatalogError> {
    validate(config)?;
    let budget = config.llm.max_tool_output_chars;
    for family in INTEGRATIONS.iter().filter(|f| (f.enabled)(config)) {
        for tool in (family.build)(config, budget)? {
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
    use crate::config::{HttpUrl, Secret};

    #[test]
    fn the_built_in_names_are_exactly_the_tools_registered_with_every_integration_on() {
        crate::install_crypto_provider();
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
        let registry = build_registry(&config, Arc::new(Metrics::new("m"))).unwrap();
        assert_eq!(registry.names(), builtin_names());
    }
}
