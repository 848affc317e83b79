//! Configuration: loaded once (defaults → TOML file → `SRE_AGENT_*` env → `*_file`
//! secrets) with figment, validated at load with errors that name the key and the bad
//! value, and displayed with every secret as `***`. Nothing else reads the environment.

mod homelab;
mod sections;
mod values;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use figment::Figment;
use figment::providers::{Env, Format, Toml};
use serde::{Deserialize, Serialize};

pub use homelab::{
    HttpToolConfig, KubernetesConfig, PbsConfig, ProxmoxApiConfig, RESERVED_TOOL_NAMES,
    ToolsConfig, TruenasConfig, placeholders, validate_http_tools,
};
pub use sections::*;
pub use values::{
    CronSchedule, EmailAddress, HttpUrl, HumanDuration, Secret, TimeZone, parse_cron,
};

/// The whole validated configuration.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    pub server: ServerConfig,
    pub log: LogConfig,
    pub store: StoreConfig,
    pub llm: LlmConfig,
    pub prometheus: UpstreamConfig,
    pub loki: UpstreamConfig,
    pub grafana: GrafanaConfig,
    pub alertmanager: UpstreamConfig,
    pub webhook: WebhookConfig,
    pub alerts: AlertsConfig,
    pub runbooks: RunbooksConfig,
    pub report: ReportConfig,
    pub smtp: SmtpConfig,
    pub notify: NotifyConfig,
    pub slos: Vec<SloConfig>,
    pub schedules: Vec<ScheduleConfig>,
    pub kubernetes: KubernetesConfig,
    pub proxmox: ProxmoxApiConfig,
    pub pbs: PbsConfig,
    pub truenas: TruenasConfig,
    pub tools: ToolsConfig,
}

/// A configuration that cannot be used; the message names the key and the bad value.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("config file {path}: {reason}")]
    File { path: PathBuf, reason: String },
    #[error("{0}")]
    Invalid(String),
}

/// Where the configuration comes from.
#[derive(Clone, Debug, Default)]
pub struct ConfigSource {
    /// The TOML file, if any (`--config`, `SRE_AGENT_CONFIG`, or `./config.toml` when present).
    pub file: Option<PathBuf>,
}

impl Config {
    /// Loads and validates the configuration from `source`.
    pub fn load(source: &ConfigSource) -> Result<Self, ConfigError> {
        let mut figment = Figment::new();
        if let Some(path) = &source.file {
            let text = std::fs::read_to_string(path).map_err(|e| ConfigError::File {
                path: path.clone(),
                reason: e.to_string(),
            })?;
            figment = figment.merge(Toml::string(&text));
        }
        figment = figment.merge(env_provider());
        let mut config: Config = figment
            .extract()
            .map_err(|e| ConfigError::Invalid(describe(e)))?;
        config.resolve_secret_files()?;
        homelab::resolve_secret_files(&mut config)?;
        config.validate()?;
        homelab::validate(&config)?;
        Ok(config)
    }

    /// Replaces every `*_file` secret with the file's content.
    fn resolve_secret_files(&mut self) -> Result<(), ConfigError> {
        let pairs: [(&str, &Option<PathBuf>, &mut Option<Secret>); 7] = [
            (
                "server.api_token_file",
                &self.server.api_token_file,
                &mut self.server.api_token,
            ),
            (
                "server.metrics_token_file",
                &self.server.metrics_token_file,
                &mut self.server.metrics_token,
            ),
            (
                "llm.api_key_file",
                &self.llm.api_key_file,
                &mut self.llm.api_key,
            ),
            (
                "grafana.token_file",
                &self.grafana.token_file,
                &mut self.grafana.token,
            ),
            (
                "webhook.token_file",
                &self.webhook.token_file,
                &mut self.webhook.token,
            ),
            (
                "webhook.basic_password_file",
                &self.webhook.basic_password_file,
                &mut self.webhook.basic_password,
            ),
            (
                "smtp.password_file",
                &self.smtp.password_file,
                &mut self.smtp.password,
            ),
        ];
        for (key, file, secret) in pairs {
            if let Some(path) = file {
                *secret = Some(read_secret_file(key, path)?);
            }
        }
        if let Some(path) = &self.webhook.hmac_secret_file {
            self.webhook.hmac_secret = Some(read_secret_file("webhook.hmac_secret_file", path)?);
        }
        // An empty secret means "not set": a blank env var must not enable auth with "".
        for secret in [
            &mut self.server.api_token,
            &mut self.server.metrics_token,
            &mut self.llm.api_key,
            &mut self.grafana.token,
            &mut self.webhook.token,
            &mut self.webhook.basic_password,
            &mut self.webhook.hmac_secret,
            &mut self.smtp.password,
        ] {
            if secret.as_ref().is_some_and(Secret::is_empty) {
                *secret = None;
            }
        }
        Ok(())
    }

    fn validate(&self) -> Result<(), ConfigError> {
        let bad = |key: &str, msg: String| Err(ConfigError::Invalid(format!("{key}: {msg}")));
        if self.server.listen.parse::<SocketAddr>().is_err() {
            return bad(
                "server.listen",
                format!(
                    "invalid address {:?} (expected IP:PORT such as \"127.0.0.1:8787\")",
                    self.server.listen
                ),
            );
        }
        if tracing_subscriber::EnvFilter::try_new(&self.log.level).is_err() {
            return bad(
                "log.level",
                format!("invalid log level {:?}", self.log.level),
            );
        }
        if self.llm.max_steps == 0 {
            return bad("llm.max_steps", "must be at least 1".into());
        }
        if self.llm.max_parallel_tools == 0 {
            return bad("llm.max_parallel_tools", "must be at least 1".into());
        }
        if self.llm.max_tool_output_chars < 200 {
            return bad("llm.max_tool_output_chars", "must be at least 200".into());
        }
        if self.llm.model.trim().is_empty() {
            return bad("llm.model", "must not be empty".into());
        }
        if self.alerts.concurrency == 0 {
            return bad("alerts.concurrency", "must be at least 1".into());
        }
        if self.alerts.group_by.is_empty() {
            return bad("alerts.group_by", "must name at least one label".into());
        }
        for (i, m) in self.alerts.ignore.iter().enumerate() {
            if let Err(why) = crate::alerts::LabelMatcher::parse(m) {
                return bad(&format!("alerts.ignore[{i}]"), why);
            }
        }
        if self.webhook.max_body_bytes < 1024 {
            return bad("webhook.max_body_bytes", "must be at least 1024".into());
        }
        if self.webhook.basic_user.is_some() != self.webhook.basic_password.is_some() {
            return bad(
                "webhook.basic_password",
                "basic_user and basic_password must be set together".into(),
            );
        }
        for (i, slo) in self.slos.iter().enumerate() {
            if !(slo.objective > 0.0 && slo.objective < 1.0) {
                return bad(
                    &format!("slos[{i}].objective"),
                    format!(
                        "invalid objective {} (expected a ratio such as 0.999)",
                        slo.objective
                    ),
                );
            }
            if slo.query.trim().is_empty() {
                return bad(&format!("slos[{i}].query"), "must not be empty".into());
            }
        }
        for (i, s) in self.schedules.iter().enumerate() {
            if s.prompt.trim().is_empty() {
                return bad(
                    &format!("schedules[{i}].prompt"),
                    "must not be empty".into(),
                );
            }
            if self.schedules[..i].iter().any(|o| o.name == s.name) {
                return bad(
                    &format!("schedules[{i}].name"),
                    format!("duplicate name {:?}", s.name),
                );
            }
        }
        if !self.notify.email_to.is_empty() && self.smtp.host.is_none() {
            return bad("notify.email_to", "needs [smtp] host to be set".into());
        }
        if let Some(ca) = &self.smtp.ca_file
            && !ca.is_file()
        {
            return bad(
                "smtp.ca_file",
                format!("cannot read {:?}", ca.display().to_string()),
            );
        }
        Ok(())
    }

    /// The address to listen on (validated at load).
    pub fn listen_addr(&self) -> SocketAddr {
        self.server.listen.parse().expect("validated at load")
    }

    /// The integrations that are configured, by component name.
    pub fn enabled_integrations(&self) -> Vec<&'static str> {
        let mut on = Vec::new();
        if self.llm.base_url.is_some() {
            on.push("llm");
        }
        if self.prometheus.url.is_some() {
            on.push("prometheus");
        }
        if self.loki.url.is_some() {
            on.push("loki");
        }
        if self.grafana.url.is_some() {
            on.push("grafana");
        }
        if self.alertmanager.url.is_some() {
            on.push("alertmanager");
        }
        if self.smtp.host.is_some() {
            on.push("smtp");
        }
        if self.kubernetes.enabled {
            on.push("kubernetes");
        }
        if self.proxmox.url.is_some() {
            on.push("proxmox");
        }
        if self.pbs.url.is_some() {
            on.push("pbs");
        }
        if self.truenas.url.is_some() {
            on.push("truenas");
        }
        on
    }

    /// Every integration name, enabled or not.
    pub const INTEGRATIONS: [&'static str; 10] = [
        "llm",
        "prometheus",
        "loki",
        "grafana",
        "alertmanager",
        "smtp",
        "kubernetes",
        "proxmox",
        "pbs",
        "truenas",
    ];

    /// The effective configuration as TOML, every secret shown as `***`.
    pub fn redacted_toml(&self) -> String {
        toml::to_string_pretty(self).unwrap_or_else(|e| format!("# cannot render config: {e}\n"))
    }
}

impl ConfigSource {
    /// The file to load: explicit path, else `./config.toml` when it exists, else none.
    pub fn discover(explicit: Option<PathBuf>) -> Self {
        let file = explicit.or_else(|| {
            let local = Path::new("config.toml");
            local.is_file().then(|| local.to_path_buf())
        });
        Self { file }
    }
}

/// The top-level sections. An `SRE_AGENT_*` variable naming anything else (a script's own
/// `SRE_AGENT_BIN`, say) is not configuration: it is ignored, and `check-config` lists it.
/// A bad key inside a section (`SRE_AGENT_LLM__BASE_ULR`) is still an error.
const SECTIONS: &[&str] = &[
    "server",
    "log",
    "store",
    "llm",
    "prometheus",
    "loki",
    "grafana",
    "alertmanager",
    "webhook",
    "alerts",
    "runbooks",
    "report",
    "smtp",
    "notify",
    "slos",
    "schedules",
    "kubernetes",
    "proxmox",
    "pbs",
    "truenas",
    "tools",
];

/// Whether an env key (`llm.base_url`, or `llm__base_url` before figment splits it) is config.
fn is_config_key(key: &str) -> bool {
    // figment hands the filter the key in the variable's own case.
    let key = key.to_ascii_lowercase();
    let section = key.split(['.', '_']).next().unwrap_or_default();
    let rest = &key[section.len()..];
    SECTIONS.contains(&section)
        && (rest.is_empty() || rest.starts_with('.') || rest.starts_with("__"))
}

fn env_provider() -> Env {
    Env::prefixed("SRE_AGENT_")
        .split("__")
        .filter(|k| is_config_key(k.as_str()))
}

/// `SRE_AGENT_*` variables in the environment that are not configuration (see [`SECTIONS`]).
pub fn ignored_env_vars() -> Vec<String> {
    std::env::vars()
        .map(|(k, _)| k)
        .filter_map(|k| {
            let key = k
                .strip_prefix("SRE_AGENT_")?
                .to_ascii_lowercase()
                .replace("__", ".");
            (key != "config" && !is_config_key(&key)).then_some(k)
        })
        .collect()
}

fn read_secret_file(key: &str, path: &Path) -> Result<Secret, ConfigError> {
    match std::fs::read_to_string(path) {
        Ok(s) => Ok(Secret::new(s.trim_end_matches(['\n', '\r']))),
        Err(e) => Err(ConfigError::Invalid(format!(
            "{key}: cannot read {:?}: {e}",
            path.display().to_string()
        ))),
    }
}

/// Turns figment's errors into `key: message` lines.
fn describe(err: figment::Error) -> String {
    err.into_iter()
        .map(|e| {
            let key = e.path.join(".");
            let msg = match &e.kind {
                figment::error::Kind::UnknownField(field, expected) => {
                    let full = if key.ends_with(field.as_str()) {
                        key.clone()
                    } else {
                        format!("{key}.{field}")
                    };
                    return format!(
                        "{full}: unknown key (expected one of: {})",
                        expected.join(", ")
                    );
                }
                kind => kind.to_string(),
            };
            if key.is_empty() {
                msg
            } else {
                format!("{key}: {msg}")
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}
