//! Configuration: loaded once (defaults → TOML file → `SRE_AGENT_*` env → `*_file`
//! secrets) with figment, validated at load with errors that name the key and the bad
//! value, and displayed with every secret as `***`. Nothing else reads the environment.
//!
//! One module per section group: `sections` (server, alerts, report, mail…), `llm`, one per
//! optional integration (`kubernetes`, `proxmox`, `pbs`, `truenas`), `http_tools` for
//! `[[tools.http]]`, `mcp` for `[mcp]`; `values` and `matcher` hold the validated value
//! types, `limits` the upper bounds of numbers `serve` would overflow on, `secrets` the
//! `*_file` resolver.

mod http_tools;
mod kubernetes;
pub mod limits;
mod llm;
pub(crate) mod matcher;
mod mcp;
mod pbs;
mod pricing;
mod proxmox;
mod redacted;
mod secrets;
mod sections;
mod truenas;
mod values;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use figment::Figment;
use figment::providers::{Env, Format, Toml};
use serde::{Deserialize, Serialize};

pub use http_tools::{HttpToolConfig, ToolsConfig, placeholders, validate_http_tools};
pub use kubernetes::KubernetesConfig;
pub use llm::{LlmConfig, ModelPricing};
pub use matcher::LabelMatcher;
pub use mcp::{McpConfig, McpServerConfig, validate_mcp};
pub use pbs::PbsConfig;
pub use pricing::{
    BUILT_IN_PRICES_DATE, built_in_prices, price_for, unpriced_model_warning, validate_pricing,
};
pub use proxmox::ProxmoxApiConfig;
pub use sections::*;
pub use truenas::TruenasConfig;
pub use values::{
    CronSchedule, EmailAddress, HttpUrl, HumanDuration, MAX_DURATION, Secret, SecretUrl, TimeZone,
    parse_cron, redact_secret_url, redact_url, secure_eq,
};

use secrets::SecretFields;

/// Declares [`Config`] from its sections, so the list of sections is written once: the
/// struct, the names `SRE_AGENT_*` variables may use ([`Config::SECTIONS`]) and the walk
/// over every section's `*_file` secrets all come from it.
macro_rules! config_sections {
    ($($(#[$doc:meta])* $name:ident: $ty:ty,)+) => {
        /// The whole validated configuration.
        #[derive(Clone, Debug, Default, Deserialize, Serialize)]
        #[serde(default, deny_unknown_fields)]
        pub struct Config {
            $($(#[$doc])* pub $name: $ty,)+
        }

        impl Config {
            /// The top-level sections, in file order.
            pub const SECTIONS: &'static [&'static str] = &[$(stringify!($name)),+];

            /// Every secret of every section with the file it may be read from.
            fn secret_fields(&mut self) -> Vec<secrets::SecretField<'_>> {
                let mut out = Vec::new();
                $(self.$name.secret_fields(stringify!($name), &mut out);)+
                out
            }
        }
    };
}

config_sections! {
    server: ServerConfig,
    log: LogConfig,
    store: StoreConfig,
    llm: LlmConfig,
    prometheus: UpstreamConfig,
    loki: UpstreamConfig,
    grafana: GrafanaConfig,
    alertmanager: UpstreamConfig,
    webhook: WebhookConfig,
    alerts: AlertsConfig,
    runbooks: RunbooksConfig,
    report: ReportConfig,
    smtp: SmtpConfig,
    notify: NotifyConfig,
    slos: Vec<SloConfig>,
    schedules: Vec<ScheduleConfig>,
    kubernetes: KubernetesConfig,
    proxmox: ProxmoxApiConfig,
    pbs: PbsConfig,
    truenas: TruenasConfig,
    tools: ToolsConfig,
    mcp: McpConfig,
}

/// Whether an integration is configured.
type IsConfigured = fn(&Config) -> bool;

/// The optional integrations, by component name. The daemon runs with none of them.
const INTEGRATIONS: [(&str, IsConfigured); 10] = [
    ("llm", |c| c.llm.base_url.is_some()),
    ("prometheus", |c| c.prometheus.url.is_some()),
    ("loki", |c| c.loki.url.is_some()),
    ("grafana", |c| c.grafana.url.is_some()),
    ("alertmanager", |c| c.alertmanager.url.is_some()),
    ("smtp", |c| c.smtp.host.is_some()),
    ("kubernetes", |c| c.kubernetes.enabled),
    ("proxmox", |c| c.proxmox.url.is_some()),
    ("pbs", |c| c.pbs.url.is_some()),
    ("truenas", |c| c.truenas.url.is_some()),
];

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
        secrets::resolve(config.secret_fields())?;
        config.validate()?;
        Ok(config)
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
        if self.server.max_connections == 0 {
            return bad("server.max_connections", "must be at least 1".into());
        }
        for (key, d) in [
            ("server.header_timeout", &self.server.header_timeout),
            ("server.request_timeout", &self.server.request_timeout),
        ] {
            if d.get().is_zero() {
                return bad(key, "must be longer than 0s".into());
            }
        }
        if tracing_subscriber::EnvFilter::try_new(&self.log.level).is_err() {
            return bad(
                "log.level",
                format!("invalid log level {:?}", self.log.level),
            );
        }
        if self.store.cache_mib == 0 {
            return bad("store.cache_mib", "must be at least 1".into());
        }
        if self.llm.max_steps == 0 {
            return bad("llm.max_steps", "must be at least 1".into());
        }
        if self.llm.max_parallel_tools == 0 {
            return bad("llm.max_parallel_tools", "must be at least 1".into());
        }
        if self.llm.context_tokens <= 1024 {
            return bad(
                "llm.context_tokens",
                format!(
                    "{} is too small (must be more than 1024; the prompt alone needs ~1000)",
                    self.llm.context_tokens
                ),
            );
        }
        if self.llm.max_tool_output_chars < 200 {
            return bad("llm.max_tool_output_chars", "must be at least 200".into());
        }
        if self.llm.model.trim().is_empty() {
            return bad("llm.model", "must not be empty".into());
        }
        validate_pricing(&self.llm).map_err(ConfigError::Invalid)?;
        if !(self.alerts.daily_cost_limit_usd.is_finite()
            && self.alerts.daily_cost_limit_usd >= 0.0)
        {
            return bad(
                "alerts.daily_cost_limit_usd",
                format!(
                    "{} must be 0 (no limit) or more",
                    self.alerts.daily_cost_limit_usd
                ),
            );
        }
        if self.alerts.concurrency == 0 {
            return bad("alerts.concurrency", "must be at least 1".into());
        }
        if self.alerts.group_by.is_empty() {
            return bad("alerts.group_by", "must name at least one label".into());
        }
        if self.alerts.storm_threshold == 1 {
            return bad(
                "alerts.storm_threshold",
                "must be at least 2 groups (0 turns storm coalescing off)".into(),
            );
        }
        if self.alerts.storm_threshold > 0 && self.alerts.storm_by.is_empty() {
            return bad(
                "alerts.storm_by",
                "must name at least one label (or set alerts.storm_threshold = 0)".into(),
            );
        }
        if self.alerts.storm_window.get().is_zero() {
            return bad("alerts.storm_window", "must be longer than 0s".into());
        }
        if self.alerts.storm_hold.get() > std::time::Duration::from_secs(300) {
            return bad("alerts.storm_hold", "must be at most 5m".into());
        }
        for (i, m) in self.alerts.ignore.iter().enumerate() {
            if let Err(why) = LabelMatcher::parse(m) {
                return bad(&format!("alerts.ignore[{i}]"), why);
            }
        }
        if self.webhook.max_body_bytes < 1024 {
            return bad("webhook.max_body_bytes", "must be at least 1024".into());
        }
        if self.webhook.max_inflight_bytes < 1024 {
            return bad("webhook.max_inflight_bytes", "must be at least 1024".into());
        }
        if self.webhook.basic_user.is_some() != self.webhook.basic_password.is_some() {
            return bad(
                "webhook.basic_password",
                "basic_user and basic_password must be set together".into(),
            );
        }
        if self.webhook.hmac_require_timestamp && self.webhook.hmac_secret.is_none() {
            return bad(
                "webhook.hmac_require_timestamp",
                "needs webhook.hmac_secret to be set".into(),
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
        if self.grafana.annotate {
            if self.grafana.url.is_none() {
                return bad("grafana.annotate", "needs grafana.url to be set".into());
            }
            if self.grafana.token.is_none() {
                return bad(
                    "grafana.annotate",
                    "needs grafana.token (a service-account token with the Editor role)".into(),
                );
            }
        }
        if let Some(ca) = &self.smtp.ca_file
            && !ca.is_file()
        {
            return bad(
                "smtp.ca_file",
                format!("cannot read {:?}", ca.display().to_string()),
            );
        }
        limits::validate(self)?;
        self.kubernetes.validate()?;
        self.proxmox.validate("proxmox")?;
        self.pbs.validate()?;
        self.truenas.validate()?;
        validate_http_tools(&self.tools.http)?;
        validate_mcp(&self.mcp)
    }

    /// The address to listen on (validated at load).
    pub fn listen_addr(&self) -> SocketAddr {
        self.server.listen.parse().expect("validated at load")
    }

    /// The integrations that are configured, by component name.
    pub fn enabled_integrations(&self) -> Vec<&'static str> {
        INTEGRATIONS
            .iter()
            .filter(|(_, configured)| configured(self))
            .map(|(name, _)| *name)
            .collect()
    }

    /// Every integration name, enabled or not.
    pub const INTEGRATIONS: [&'static str; INTEGRATIONS.len()] = {
        let mut names = [""; INTEGRATIONS.len()];
        let mut i = 0;
        while i < names.len() {
            names[i] = INTEGRATIONS[i].0;
            i += 1;
        }
        names
    };

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

/// Whether an env key (`llm.base_url`, or `llm__base_url` before figment splits it) is config.
fn is_config_key(key: &str) -> bool {
    // figment hands the filter the key in the variable's own case.
    let key = key.to_ascii_lowercase();
    let section = key.split(['.', '_']).next().unwrap_or_default();
    let rest = &key[section.len()..];
    // An `SRE_AGENT_*` variable naming no section (a script's own `SRE_AGENT_BIN`, say) is
    // not configuration: it is ignored, and `check-config` lists it. A bad key inside a
    // section (`SRE_AGENT_LLM__BASE_ULR`) is still an error.
    Config::SECTIONS.contains(&section)
        && (rest.is_empty() || rest.starts_with('.') || rest.starts_with("__"))
}

fn env_provider() -> Env {
    Env::prefixed("SRE_AGENT_")
        .split("__")
        .filter(|k| is_config_key(k.as_str()))
}

/// `SRE_AGENT_*` variables in the environment that are not configuration (see [`Config::SECTIONS`]).
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
