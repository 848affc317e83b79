//! Alertmanager API v2 client (`/api/v2/alerts`, `/api/v2/silences`). The alert shape is
//! shared with Grafana's Alertmanager-compatible API.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::query_result::{Labels, nullable};
use super::{Upstream, UpstreamError, UpstreamOptions};
use crate::config::UpstreamConfig;

/// An alert as Alertmanager v2 (or Grafana's compatible API) reports it.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase", default)]
pub struct AmAlert {
    #[serde(deserialize_with = "nullable")]
    pub labels: Labels,
    #[serde(deserialize_with = "nullable")]
    pub annotations: Labels,
    pub starts_at: Option<DateTime<Utc>>,
    pub ends_at: Option<DateTime<Utc>>,
    pub updated_at: Option<DateTime<Utc>>,
    #[serde(rename = "generatorURL", deserialize_with = "nullable")]
    pub generator_url: String,
    #[serde(deserialize_with = "nullable")]
    pub fingerprint: String,
    #[serde(deserialize_with = "nullable")]
    pub status: AmAlertStatus,
    #[serde(deserialize_with = "nullable")]
    pub receivers: Vec<Receiver>,
}

/// `status` of an alert: `active`, `suppressed` or `unprocessed`, and why.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase", default)]
pub struct AmAlertStatus {
    #[serde(deserialize_with = "nullable")]
    pub state: String,
    #[serde(deserialize_with = "nullable")]
    pub silenced_by: Vec<String>,
    #[serde(deserialize_with = "nullable")]
    pub inhibited_by: Vec<String>,
}

/// A receiver reference.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(default)]
pub struct Receiver {
    #[serde(deserialize_with = "nullable")]
    pub name: String,
}

/// A silence (active, pending or expired).
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Silence {
    #[serde(deserialize_with = "nullable")]
    pub id: String,
    #[serde(deserialize_with = "nullable")]
    pub status: SilenceStatus,
    #[serde(deserialize_with = "nullable")]
    pub matchers: Vec<SilenceMatcher>,
    pub starts_at: Option<DateTime<Utc>>,
    pub ends_at: Option<DateTime<Utc>>,
    pub updated_at: Option<DateTime<Utc>>,
    #[serde(deserialize_with = "nullable")]
    pub created_by: String,
    #[serde(deserialize_with = "nullable")]
    pub comment: String,
}

/// `status.state`: `active`, `pending` or `expired`.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(default)]
pub struct SilenceStatus {
    #[serde(deserialize_with = "nullable")]
    pub state: String,
}

/// One matcher of a silence.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SilenceMatcher {
    pub name: String,
    pub value: String,
    #[serde(default)]
    pub is_regex: bool,
    /// Absent in older silences, where it means `true`.
    #[serde(default = "yes")]
    pub is_equal: bool,
}

fn yes() -> bool {
    true
}

impl SilenceMatcher {
    /// `name="value"`, `name!~"value"`, …
    pub fn to_selector(&self) -> String {
        let op = match (self.is_equal, self.is_regex) {
            (true, false) => "=",
            (false, false) => "!=",
            (true, true) => "=~",
            (false, true) => "!~",
        };
        format!("{}{op}{:?}", self.name, self.value)
    }
}

/// A client for one Alertmanager.
#[derive(Clone, Debug)]
pub struct AlertmanagerClient {
    upstream: Upstream,
}

impl AlertmanagerClient {
    /// A client for `[alertmanager]`; fails when `url` is unset.
    pub fn new(config: &UpstreamConfig) -> Result<Self, UpstreamError> {
        let url = config.url.as_ref().ok_or(UpstreamError::Setup {
            service: "Alertmanager",
            reason: "alertmanager.url is not set".into(),
        })?;
        let opts = UpstreamOptions {
            timeout: config.timeout.get(),
            ..Default::default()
        };
        Ok(Self {
            upstream: Upstream::new("Alertmanager", &url.0, opts)?,
        })
    }

    /// The HTTP plumbing under this client (the health checker probes through it).
    pub fn upstream(&self) -> &Upstream {
        &self.upstream
    }

    pub fn base_display(&self) -> String {
        self.upstream.base_display()
    }

    /// Current alerts (active, silenced and inhibited).
    pub async fn alerts(&self) -> Result<Vec<AmAlert>, UpstreamError> {
        let alerts: Option<Vec<AmAlert>> = self.upstream.get_json("api/v2/alerts", &[]).await?;
        Ok(alerts.unwrap_or_default())
    }

    /// All silences, expired ones included (filter on `status.state`).
    pub async fn silences(&self) -> Result<Vec<Silence>, UpstreamError> {
        let silences: Option<Vec<Silence>> = self.upstream.get_json("api/v2/silences", &[]).await?;
        Ok(silences.unwrap_or_default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn captured_alerts_and_documented_silences_parse() {
        let alerts = r#"[{"annotations":{"summary":"Always-firing test alert"},"endsAt":"2026-11-22T20:45:38.847Z","fingerprint":"15a37193dce72bab","receivers":[{"name":"webhook"}],"startsAt":"2026-11-22T20:45:24.847Z","status":{"inhibitedBy":[],"silencedBy":null,"state":"active","mutedBy":[]},"updatedAt":"2026-11-22T20:45:30.851Z","generatorURL":"http://127.0.0.1:54857/graph?g0.expr=vector%281%29","labels":{"alertname":"AlwaysFiring","severity":"warning"}}]"#;
        let a: Vec<AmAlert> = serde_json::from_str(alerts).unwrap();
        assert_eq!(a[0].labels["alertname"], "AlwaysFiring");
        assert_eq!(a[0].status.state, "active");
        assert!(a[0].generator_url.starts_with("http://"));
        let silences = r#"[{"id":"9f1b","status":{"state":"active"},"updatedAt":"2025-06-01T09:00:00.000Z","matchers":[{"name":"alertname","value":"HighLatency","isRegex":false},{"name":"job","value":"api|web","isRegex":true,"isEqual":false}],"startsAt":"2025-06-01T09:00:00.000Z","endsAt":"2025-06-01T13:00:00.000Z","createdBy":"oncall","comment":"deploy window"}]"#;
        let s: Vec<Silence> = serde_json::from_str(silences).unwrap();
        assert_eq!(s[0].matchers[0].to_selector(), "alertname=\"HighLatency\"");
        assert_eq!(s[0].matchers[1].to_selector(), "job!~\"api|web\"");
    }
}
