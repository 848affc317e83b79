//! Homelab sections: `[kubernetes]`, `[proxmox]`, `[pbs]`, `[truenas]` and the declarative
//! `[[tools.http]]` tools. Every one is off until configured; secrets accept `*_file`.

use std::collections::BTreeSet;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::values::{HttpUrl, HumanDuration, Secret};
use super::{Config, ConfigError};

fn default_timeout() -> HumanDuration {
    HumanDuration::secs(15)
}

fn yes() -> bool {
    true
}

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
            timeout: default_timeout(),
        }
    }
}

impl KubernetesConfig {
    /// Whether `namespace` is in the allow-list (an empty list allows all).
    pub fn allows(&self, namespace: &str) -> bool {
        self.namespaces.is_empty() || self.namespaces.iter().any(|n| n == namespace)
    }
}

/// `[proxmox]` and `[pbs]`: a Proxmox API reached with an API token.
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

impl Default for ProxmoxApiConfig {
    fn default() -> Self {
        Self {
            url: None,
            token_id: None,
            token_secret: None,
            token_secret_file: None,
            verify_tls: true,
            ca_file: None,
            timeout: default_timeout(),
        }
    }
}

/// `[pbs]`: Proxmox Backup Server, plus how often each backup group is expected to get a
/// snapshot (for the weekly report's backup health).
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
            timeout: default_timeout(),
            backup_interval: HumanDuration::secs(26 * 3600),
        }
    }
}

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
}

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
    #[serde(default = "yes")]
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
            timeout: default_timeout(),
        }
    }
}

/// `[tools]`: tools defined in configuration.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct ToolsConfig {
    pub http: Vec<HttpToolConfig>,
}

/// One `[[tools.http]]` entry: a GET request that becomes a tool.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct HttpToolConfig {
    pub name: String,
    pub description: String,
    /// URL template; `{param}` placeholders are replaced by URL-encoded arguments.
    pub url: String,
    /// JSON Schema of the arguments (`{type = "object", properties = {…}}`).
    #[serde(default = "empty_schema")]
    pub parameters: serde_json::Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub header_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub header_value: Option<Secret>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub header_value_file: Option<PathBuf>,
    /// Dotted path into the JSON answer (`data.items[0].name` or `data.items.0.name`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub json_path: Option<String>,
    #[serde(default = "default_max_bytes")]
    pub max_bytes: usize,
    #[serde(default = "default_timeout")]
    pub timeout: HumanDuration,
}

fn empty_schema() -> serde_json::Value {
    serde_json::json!({"type": "object", "properties": {}})
}

fn default_max_bytes() -> usize {
    64 * 1024
}

/// Names of the built-in tools a declarative tool must not take.
pub const RESERVED_TOOL_NAMES: &[&str] = &[
    "current_time",
    "runbook_search",
    "prometheus_query",
    "prometheus_query_range",
    "prometheus_alerts",
    "prometheus_targets",
    "prometheus_metric_names",
    "loki_query",
    "loki_error_summary",
    "grafana_alerts",
    "grafana_alert_rules",
    "grafana_annotations",
    "alertmanager_alerts",
    "k8s_list_pods",
    "k8s_describe_pod",
    "k8s_pod_logs",
    "k8s_events",
    "k8s_nodes",
    "k8s_workloads",
    "proxmox_nodes",
    "proxmox_guests",
    "proxmox_storage",
    "proxmox_tasks",
    "pbs_datastores",
    "pbs_backups",
    "pbs_tasks",
    "truenas_pools",
    "truenas_alerts",
    "truenas_disks",
];

impl HttpToolConfig {
    /// The `{param}` placeholders in the URL template, in order.
    pub fn placeholders(&self) -> Vec<String> {
        placeholders(&self.url)
    }
}

/// The `{name}` placeholders in `template`.
pub fn placeholders(template: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = template;
    while let Some(start) = rest.find('{') {
        let Some(len) = rest[start..].find('}') else {
            break;
        };
        out.push(rest[start + 1..start + len].to_string());
        rest = &rest[start + len + 1..];
    }
    out
}

fn read_file(key: &str, path: &std::path::Path) -> Result<Secret, ConfigError> {
    std::fs::read_to_string(path)
        .map(|s| Secret::new(s.trim_end_matches(['\n', '\r'])))
        .map_err(|e| {
            ConfigError::Invalid(format!(
                "{key}: cannot read {:?}: {e}",
                path.display().to_string()
            ))
        })
}

fn resolve(
    key: &str,
    file: &Option<PathBuf>,
    secret: &mut Option<Secret>,
) -> Result<(), ConfigError> {
    if let Some(path) = file {
        *secret = Some(read_file(key, path)?);
    }
    if secret.as_ref().is_some_and(Secret::is_empty) {
        *secret = None;
    }
    Ok(())
}

/// Replaces every homelab `*_file` secret with the file's content.
pub(super) fn resolve_secret_files(config: &mut Config) -> Result<(), ConfigError> {
    resolve(
        "proxmox.token_secret_file",
        &config.proxmox.token_secret_file,
        &mut config.proxmox.token_secret,
    )?;
    resolve(
        "pbs.token_secret_file",
        &config.pbs.token_secret_file,
        &mut config.pbs.token_secret,
    )?;
    resolve(
        "truenas.api_key_file",
        &config.truenas.api_key_file,
        &mut config.truenas.api_key,
    )?;
    for (i, tool) in config.tools.http.iter_mut().enumerate() {
        resolve(
            &format!("tools.http[{i}].header_value_file"),
            &tool.header_value_file,
            &mut tool.header_value,
        )?;
    }
    Ok(())
}

/// Validates the homelab sections; errors name the key.
pub(super) fn validate(config: &Config) -> Result<(), ConfigError> {
    let bad = |key: &str, msg: String| Err(ConfigError::Invalid(format!("{key}: {msg}")));
    let k = &config.kubernetes;
    if k.enabled && k.in_cluster && k.kubeconfig.is_some() {
        return bad(
            "kubernetes.in_cluster",
            "set either in_cluster = true or kubeconfig, not both".into(),
        );
    }
    let pbs = config.pbs.api();
    for (section, api) in [("proxmox", &config.proxmox), ("pbs", &pbs)] {
        if api.url.is_none() {
            continue;
        }
        match &api.token_id {
            Some(id) if id.contains('@') && id.contains('!') => {}
            Some(id) => {
                return bad(
                    &format!("{section}.token_id"),
                    format!("invalid token id {id:?} (expected USER@REALM!TOKENID)"),
                );
            }
            None => {
                return bad(
                    &format!("{section}.token_id"),
                    "is required with url".into(),
                );
            }
        }
        if api.token_secret.is_none() {
            return bad(
                &format!("{section}.token_secret"),
                "is required with url (or token_secret_file)".into(),
            );
        }
        check_ca(&format!("{section}.ca_file"), &api.ca_file)?;
    }
    if config.truenas.url.is_some() {
        if config.truenas.api_key.is_none() {
            return bad(
                "truenas.api_key",
                "is required with url (or api_key_file)".into(),
            );
        }
        check_ca("truenas.ca_file", &config.truenas.ca_file)?;
    }
    if config.pbs.backup_interval.get().is_zero() {
        return bad("pbs.backup_interval", "must be more than 0s".into());
    }
    validate_http_tools(&config.tools.http)
}

fn check_ca(key: &str, ca: &Option<PathBuf>) -> Result<(), ConfigError> {
    match ca {
        Some(path) if !path.is_file() => Err(ConfigError::Invalid(format!(
            "{key}: cannot read {:?}",
            path.display().to_string()
        ))),
        _ => Ok(()),
    }
}

/// Validates `[[tools.http]]`: names, templates, schemas, headers.
pub fn validate_http_tools(tools: &[HttpToolConfig]) -> Result<(), ConfigError> {
    let mut seen = BTreeSet::new();
    for (i, t) in tools.iter().enumerate() {
        let key = |field: &str| format!("tools.http[{i}].{field}");
        let bad =
            |field: &str, msg: String| Err(ConfigError::Invalid(format!("{}: {msg}", key(field))));
        if !crate::tools::is_valid_tool_name(&t.name) {
            return bad(
                "name",
                format!(
                    "invalid name {:?} (expected ^[a-zA-Z0-9_-]{{1,64}}$)",
                    t.name
                ),
            );
        }
        if RESERVED_TOOL_NAMES.contains(&t.name.as_str()) {
            return bad("name", format!("{:?} clashes with a built-in tool", t.name));
        }
        if !seen.insert(t.name.clone()) {
            return bad("name", format!("duplicate name {:?}", t.name));
        }
        if t.description.trim().is_empty() {
            return bad("description", "must not be empty".into());
        }
        let schema = &t.parameters;
        if schema.get("type").and_then(|v| v.as_str()) != Some("object") {
            return bad("parameters", "must have type = \"object\"".into());
        }
        let props = schema.get("properties").and_then(|p| p.as_object());
        for p in t.placeholders() {
            if !props.is_some_and(|props| props.contains_key(&p)) {
                return bad(
                    "url",
                    format!("placeholder {{{p}}} is not declared in parameters.properties"),
                );
            }
        }
        let origin = |fill: &str| {
            let mut s = t.url.clone();
            for p in t.placeholders() {
                s = s.replace(&format!("{{{p}}}"), fill);
            }
            url::Url::parse(&s).map(|u| u.origin())
        };
        match (origin("a"), origin("b")) {
            (Ok(a), Ok(b)) if a == b && a.is_tuple() && t.url.starts_with("http") => {}
            (Ok(_), Ok(_)) => {
                return bad(
                    "url",
                    format!(
                        "{:?} must be an http(s) URL with placeholders only in the path or query",
                        t.url
                    ),
                );
            }
            _ => return bad("url", format!("invalid URL template {:?}", t.url)),
        }
        if t.header_name.is_some() != t.header_value.is_some() {
            return bad(
                "header_value",
                "header_name and header_value must be set together".into(),
            );
        }
        if let Some(h) = &t.header_name
            && reqwest::header::HeaderName::from_bytes(h.as_bytes()).is_err()
        {
            return bad("header_name", format!("invalid header name {h:?}"));
        }
        if t.max_bytes == 0 {
            return bad("max_bytes", "must be at least 1".into());
        }
    }
    Ok(())
}
