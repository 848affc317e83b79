//! The configuration sections. Every struct denies unknown keys so a typo is an error
//! that names the key, and every field has a default so an empty file is valid.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::secrets::secret_fields;
use super::values::{
    CronSchedule, EmailAddress, HttpUrl, HumanDuration, Secret, SecretUrl, TimeZone,
};

pub(super) fn secs(n: u64) -> HumanDuration {
    HumanDuration::secs(n)
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct ServerConfig {
    pub listen: String,
    pub data_dir: PathBuf,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api_token: Option<Secret>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api_token_file: Option<PathBuf>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metrics_token: Option<Secret>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metrics_token_file: Option<PathBuf>,
    pub shutdown_timeout: HumanDuration,
    pub health_interval: HumanDuration,
    /// A connection must send a complete request head within this: a new one from its
    /// accept, a kept-alive one from the first byte of its next request (an idle one is
    /// closed after 120 s, `http::watch`).
    pub header_timeout: HumanDuration,
    /// A request must be answered within this (slow bodies included); report generation
    /// gets the time its collectors, LLM and SMTP need when that is longer.
    pub request_timeout: HumanDuration,
    /// Connections served at once; more wait to be accepted.
    pub max_connections: usize,
    /// The address people reach this daemon at (`https://sre-agent.example.com`); when set,
    /// notifications and Grafana annotations link to the investigation's console page
    /// (`<public_url>/investigations/<id>`), and notifications say how to give feedback.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub public_url: Option<HttpUrl>,
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            listen: "127.0.0.1:8787".into(),
            data_dir: PathBuf::from("./data"),
            api_token: None,
            api_token_file: None,
            metrics_token: None,
            metrics_token_file: None,
            shutdown_timeout: secs(10),
            health_interval: secs(30),
            header_timeout: secs(10),
            request_timeout: secs(60),
            max_connections: 512,
            public_url: None,
        }
    }
}

secret_fields!(ServerConfig {
    api_token: api_token_file,
    metrics_token: metrics_token_file
});

#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    #[default]
    Text,
    Json,
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct LogConfig {
    pub level: String,
    pub format: LogFormat,
}

impl Default for LogConfig {
    fn default() -> Self {
        Self {
            level: "info".into(),
            format: LogFormat::Text,
        }
    }
}

secret_fields!(LogConfig);

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct StoreConfig {
    pub retention_days: u32,
    /// MiB the store keeps in memory of what is on disk: sled's page cache and the decoded
    /// alert groups. Less costs more reads (from the OS cache) per alert, never data.
    pub cache_mib: u32,
}

impl Default for StoreConfig {
    fn default() -> Self {
        Self {
            retention_days: 30,
            cache_mib: 8,
        }
    }
}

impl StoreConfig {
    /// `cache_mib` in bytes.
    pub fn cache_bytes(&self) -> u64 {
        u64::from(self.cache_mib) << 20
    }
}

secret_fields!(StoreConfig);

/// An upstream reached by URL only (Prometheus, Loki, Alertmanager).
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct UpstreamConfig {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<HttpUrl>,
    pub timeout: HumanDuration,
}

impl Default for UpstreamConfig {
    fn default() -> Self {
        Self {
            url: None,
            timeout: secs(15),
        }
    }
}

secret_fields!(UpstreamConfig);

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct GrafanaConfig {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<HttpUrl>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token: Option<Secret>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token_file: Option<PathBuf>,
    pub timeout: HumanDuration,
    /// Write each finding back as an annotation on the alert's dashboard panel (needs a
    /// token with the Editor role).
    pub annotate: bool,
}

impl Default for GrafanaConfig {
    fn default() -> Self {
        Self {
            url: None,
            token: None,
            token_file: None,
            timeout: secs(15),
            annotate: false,
        }
    }
}

secret_fields!(GrafanaConfig { token: token_file });

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct WebhookConfig {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token: Option<Secret>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token_file: Option<PathBuf>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub basic_user: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub basic_password: Option<Secret>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub basic_password_file: Option<PathBuf>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hmac_secret: Option<Secret>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hmac_secret_file: Option<PathBuf>,
    pub hmac_max_skew: HumanDuration,
    /// Refuse a signed webhook without `X-Grafana-Alerting-Timestamp` (replays of an
    /// untimed signature can only be caught within one `hmac_max_skew` window).
    pub hmac_require_timestamp: bool,
    pub max_body_bytes: usize,
    /// Bytes of webhook bodies read and parsed at once (each counted by its
    /// `Content-Length`, or `max_body_bytes` without one; a larger one is read alone); a
    /// webhook finding no room waits briefly, then gets 503 with `Retry-After`.
    pub max_inflight_bytes: usize,
}

impl Default for WebhookConfig {
    fn default() -> Self {
        Self {
            token: None,
            token_file: None,
            basic_user: None,
            basic_password: None,
            basic_password_file: None,
            hmac_secret: None,
            hmac_secret_file: None,
            hmac_max_skew: secs(300),
            hmac_require_timestamp: false,
            max_body_bytes: 1024 * 1024,
            max_inflight_bytes: 4 * 1024 * 1024,
        }
    }
}

secret_fields!(WebhookConfig {
    token: token_file,
    basic_password: basic_password_file,
    hmac_secret: hmac_secret_file,
});

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct AlertsConfig {
    pub group_by: Vec<String>,
    pub cooldown: HumanDuration,
    pub concurrency: usize,
    pub max_investigations_per_day: u32,
    pub daily_cost_limit_usd: f64,
    /// Restarts of an investigation the daemon was stopped in the middle of (killed,
    /// crashed); one interrupted again after these is failed with the reason.
    pub max_interrupted_retries: u32,
    /// Label matchers such as `severity="info"`; matching alerts are stored, not investigated.
    pub ignore: Vec<String>,
    /// Labels that make groups one alert for storm coalescing (`alertname`).
    pub storm_by: Vec<String>,
    /// Groups of one alert starting within this window count towards a storm.
    pub storm_window: HumanDuration,
    /// This many groups within `storm_window` form a storm (0 turns coalescing off).
    pub storm_threshold: u32,
    /// How long a new investigation waits while other groups of its alert are arriving
    /// (and a storm's, so the groups that follow are named in it).
    pub storm_hold: HumanDuration,
}

impl Default for AlertsConfig {
    fn default() -> Self {
        Self {
            group_by: [
                "alertname",
                "instance",
                "job",
                "namespace",
                "pod",
                "host",
                "node",
            ]
            .map(String::from)
            .to_vec(),
            cooldown: secs(3600),
            concurrency: 2,
            max_investigations_per_day: 50,
            daily_cost_limit_usd: 2.0,
            max_interrupted_retries: 2,
            ignore: Vec::new(),
            storm_by: vec!["alertname".to_string()],
            storm_window: secs(120),
            storm_threshold: 5,
            storm_hold: secs(10),
        }
    }
}

secret_fields!(AlertsConfig);

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct RunbooksConfig {
    pub dir: PathBuf,
}

impl Default for RunbooksConfig {
    fn default() -> Self {
        Self {
            dir: PathBuf::from("runbooks"),
        }
    }
}

secret_fields!(RunbooksConfig);

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct ReportConfig {
    pub schedule: CronSchedule,
    pub timezone: TimeZone,
    pub lookback: HumanDuration,
    pub collector_timeout: HumanDuration,
    pub recipients: Vec<EmailAddress>,
}

impl Default for ReportConfig {
    fn default() -> Self {
        Self {
            schedule: CronSchedule("0 0 8 * * Mon".into()),
            timezone: TimeZone::default(),
            lookback: secs(7 * 86_400),
            collector_timeout: secs(30),
            recipients: Vec::new(),
        }
    }
}

secret_fields!(ReportConfig);

#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum SmtpSecurity {
    #[default]
    Starttls,
    Tls,
    None,
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct SmtpConfig {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    pub port: u16,
    pub security: SmtpSecurity,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub username: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub password: Option<Secret>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub password_file: Option<PathBuf>,
    pub from: EmailAddress,
    pub timeout: HumanDuration,
    /// Extra CA certificate (PEM) to trust, for self-signed mail servers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ca_file: Option<PathBuf>,
}

impl Default for SmtpConfig {
    fn default() -> Self {
        Self {
            host: None,
            port: 587,
            security: SmtpSecurity::Starttls,
            username: None,
            password: None,
            password_file: None,
            from: "sre-agent <sre-agent@localhost>"
                .parse()
                .expect("valid default sender"),
            timeout: secs(30),
            ca_file: None,
        }
    }
}

secret_fields!(SmtpConfig {
    password: password_file
});

#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum WebhookFormat {
    #[default]
    Json,
    Slack,
    Ntfy,
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct NotifyWebhook {
    /// The URL is the credential of Slack, Mattermost and ntfy hooks: shown as `scheme://host/…`.
    pub url: SecretUrl,
    #[serde(default)]
    pub format: WebhookFormat,
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct NotifyConfig {
    pub email_to: Vec<EmailAddress>,
    pub webhooks: Vec<NotifyWebhook>,
    /// First wait before retrying a failed notification; doubles up to `retry_max_backoff`.
    pub retry_backoff: HumanDuration,
    pub retry_max_backoff: HumanDuration,
    /// Attempts per notification before it is dropped as failed.
    pub max_attempts: u32,
}

impl Default for NotifyConfig {
    fn default() -> Self {
        Self {
            email_to: Vec::new(),
            webhooks: Vec::new(),
            retry_backoff: secs(10),
            retry_max_backoff: secs(600),
            max_attempts: 30,
        }
    }
}

secret_fields!(NotifyConfig);

/// A service level objective for the weekly report.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SloConfig {
    pub name: String,
    /// PromQL giving the good ratio over the period; `$__range` becomes the lookback.
    pub query: String,
    pub objective: f64,
}

secret_fields!(SloConfig);

/// An investigation run on a cron schedule.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ScheduleConfig {
    pub name: String,
    pub cron: CronSchedule,
    pub prompt: String,
    #[serde(default)]
    pub timezone: TimeZone,
}

secret_fields!(ScheduleConfig);
