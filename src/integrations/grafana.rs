//! Grafana client with a service-account bearer token: health, Grafana-managed alerts
//! (Alertmanager-compatible API), provisioned alert rules and annotations (read), and one
//! write, `POST /api/annotations` (the finding write-back of `grafana.annotate`, which
//! needs an Editor token). Grafana's JSON error bodies (`{"message": …}`) are reduced to
//! their message.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::alertmanager::AmAlert;
use super::query_result::{Labels, nullable};
use super::{Auth, Upstream, UpstreamError, UpstreamOptions};
use crate::config::GrafanaConfig;

/// `/api/health`.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(default)]
pub struct GrafanaHealth {
    #[serde(deserialize_with = "nullable")]
    pub version: String,
    #[serde(deserialize_with = "nullable")]
    pub database: String,
    #[serde(deserialize_with = "nullable")]
    pub commit: String,
}

/// A Grafana-managed alert rule from the provisioning API.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(default)]
pub struct GrafanaAlertRule {
    #[serde(deserialize_with = "nullable")]
    pub uid: String,
    #[serde(deserialize_with = "nullable")]
    pub title: String,
    #[serde(rename = "folderUID", deserialize_with = "nullable")]
    pub folder_uid: String,
    #[serde(rename = "ruleGroup", deserialize_with = "nullable")]
    pub rule_group: String,
    #[serde(deserialize_with = "nullable")]
    pub condition: String,
    #[serde(deserialize_with = "nullable")]
    pub data: Vec<RuleQuery>,
    /// Duration string such as `5m`.
    #[serde(rename = "for", deserialize_with = "nullable")]
    pub for_duration: String,
    #[serde(deserialize_with = "nullable")]
    pub labels: Labels,
    #[serde(deserialize_with = "nullable")]
    pub annotations: Labels,
    #[serde(rename = "isPaused")]
    pub is_paused: bool,
    #[serde(rename = "noDataState", deserialize_with = "nullable")]
    pub no_data_state: String,
    #[serde(rename = "execErrState", deserialize_with = "nullable")]
    pub exec_err_state: String,
    pub updated: Option<DateTime<Utc>>,
}

/// One query or expression of a rule.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(default)]
pub struct RuleQuery {
    #[serde(rename = "refId", deserialize_with = "nullable")]
    pub ref_id: String,
    #[serde(rename = "datasourceUid", deserialize_with = "nullable")]
    pub datasource_uid: String,
    pub model: Value,
}

impl RuleQuery {
    /// The query text: `expr` for Prometheus/Loki, `expression` for server-side expressions.
    pub fn text(&self) -> Option<&str> {
        ["expr", "expression", "query"]
            .iter()
            .find_map(|k| self.model.get(*k).and_then(Value::as_str))
    }
}

/// An annotation; `type=alert` ones are alert state changes.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Annotation {
    pub id: i64,
    #[serde(deserialize_with = "nullable")]
    pub alert_name: String,
    #[serde(rename = "dashboardUID", deserialize_with = "nullable")]
    pub dashboard_uid: String,
    pub panel_id: Option<i64>,
    #[serde(deserialize_with = "nullable")]
    pub new_state: String,
    #[serde(deserialize_with = "nullable")]
    pub prev_state: String,
    /// Epoch milliseconds.
    pub time: i64,
    pub time_end: Option<i64>,
    #[serde(deserialize_with = "nullable")]
    pub text: String,
    #[serde(deserialize_with = "nullable")]
    pub tags: Vec<String>,
}

/// The body of `POST /api/annotations` (times in epoch milliseconds).
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
pub struct NewAnnotation {
    #[serde(rename = "dashboardUID")]
    pub dashboard_uid: String,
    #[serde(rename = "panelId", skip_serializing_if = "Option::is_none")]
    pub panel_id: Option<i64>,
    pub time: i64,
    pub tags: Vec<String>,
    pub text: String,
}

/// Grafana's answer to a created annotation.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub struct AnnotationAdded {
    pub id: i64,
    #[serde(deserialize_with = "nullable")]
    pub message: String,
}

/// A client for one Grafana.
#[derive(Clone, Debug)]
pub struct GrafanaClient {
    upstream: Upstream,
}

/// Grafana's message out of a JSON error body; the raw text otherwise.
fn grafana_message(body: String) -> String {
    serde_json::from_str::<BTreeMap<String, Value>>(&body)
        .ok()
        .and_then(|m| m.get("message").and_then(Value::as_str).map(str::to_string))
        .unwrap_or(body)
}

impl GrafanaClient {
    /// A client for `[grafana]`; fails when `url` is unset.
    pub fn new(config: &GrafanaConfig) -> Result<Self, UpstreamError> {
        let url = config.url.as_ref().ok_or(UpstreamError::Setup {
            service: "Grafana",
            reason: "grafana.url is not set".into(),
        })?;
        let opts = UpstreamOptions {
            timeout: config.timeout.get(),
            auth: config.token.clone().map(Auth::Bearer),
            ..Default::default()
        };
        Ok(Self {
            upstream: Upstream::new("Grafana", &url.0, opts)?,
        })
    }

    /// The HTTP plumbing under this client (the health checker probes through it).
    pub fn upstream(&self) -> &Upstream {
        &self.upstream
    }

    pub fn base_display(&self) -> String {
        self.upstream.base_display()
    }

    async fn get<T: DeserializeOwned + Default>(
        &self,
        path: &str,
        query: &[(&str, String)],
    ) -> Result<T, UpstreamError> {
        let value: Option<T> = self
            .upstream
            .get_json(path, query)
            .await
            .map_err(|e| e.map_status_body(grafana_message))?;
        Ok(value.unwrap_or_default())
    }

    /// Version and database status.
    pub async fn health(&self) -> Result<GrafanaHealth, UpstreamError> {
        self.get("api/health", &[]).await
    }

    /// Grafana-managed alerts, via the Alertmanager-compatible API.
    pub async fn alerts(&self) -> Result<Vec<AmAlert>, UpstreamError> {
        self.get("api/alertmanager/grafana/api/v2/alerts", &[])
            .await
    }

    /// Grafana-managed alert rules (provisioning API).
    pub async fn alert_rules(&self) -> Result<Vec<GrafanaAlertRule>, UpstreamError> {
        self.get("api/v1/provisioning/alert-rules", &[]).await
    }

    /// Up to `limit` annotations between `from` and `to`; `kind` is `alert` or `annotation`
    /// (None: both).
    pub async fn annotations(
        &self,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
        kind: Option<&str>,
        limit: u32,
    ) -> Result<Vec<Annotation>, UpstreamError> {
        let mut q = vec![
            ("from", from.timestamp_millis().to_string()),
            ("to", to.timestamp_millis().to_string()),
            ("limit", limit.to_string()),
        ];
        if let Some(k) = kind {
            q.push(("type", k.to_string()));
        }
        self.get("api/annotations", &q).await
    }

    /// Creates `annotation`; its id.
    pub async fn create_annotation(
        &self,
        annotation: &NewAnnotation,
    ) -> Result<i64, UpstreamError> {
        let body = serde_json::to_value(annotation).map_err(|e| UpstreamError::Setup {
            service: "Grafana",
            reason: format!("cannot encode the annotation: {e}"),
        })?;
        let added: AnnotationAdded = self
            .upstream
            .post_json("api/annotations", &body)
            .await
            .map_err(|e| e.map_status_body(grafana_message))?;
        Ok(added.id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documented_rule_and_annotation_shapes_parse() {
        let rules = r#"[{"id":7,"uid":"fe8r","orgID":1,"folderUID":"sre","ruleGroup":"sre-agent","title":"HighErrorRate","condition":"C","data":[{"refId":"A","queryType":"","relativeTimeRange":{"from":600,"to":0},"datasourceUid":"prometheus","model":{"refId":"A","expr":"sum(rate(x[5m]))"}},{"refId":"C","datasourceUid":"__expr__","model":{"type":"threshold","expression":"A"}}],"updated":"2025-06-01T09:00:00Z","noDataState":"NoData","execErrState":"Error","for":"5m","keep_firing_for":"0s","annotations":{"summary":"5xx"},"labels":{"severity":"critical"},"provenance":"file","isPaused":false,"notification_settings":null,"record":null}]"#;
        let r: Vec<GrafanaAlertRule> = serde_json::from_str(rules).unwrap();
        assert_eq!(r[0].title, "HighErrorRate");
        assert_eq!(r[0].for_duration, "5m");
        assert_eq!(r[0].data[0].text(), Some("sum(rate(x[5m]))"));
        assert_eq!(r[0].data[1].text(), Some("A"));
        let ann = r#"[{"id":1124,"alertId":0,"alertName":"HighErrorRate","dashboardUID":"sre","panelId":4,"newState":"Alerting","prevState":"Pending","time":1748772900000,"timeEnd":1748772900000,"text":"job=checkout","tags":null,"data":{}}]"#;
        let a: Vec<Annotation> = serde_json::from_str(ann).unwrap();
        assert_eq!(a[0].new_state, "Alerting");
        assert!(a[0].tags.is_empty());
    }

    #[test]
    fn a_new_annotation_has_the_documented_wire_format() {
        let a = NewAnnotation {
            dashboard_uid: "node-exporter".into(),
            panel_id: Some(7),
            time: 1748772900000,
            tags: vec!["sre-agent".into(), "DiskFillingUp".into()],
            text: "sre-agent: full".into(),
        };
        assert_eq!(
            serde_json::to_value(&a).unwrap(),
            serde_json::json!({"dashboardUID": "node-exporter", "panelId": 7,
                "time": 1748772900000i64, "tags": ["sre-agent", "DiskFillingUp"],
                "text": "sre-agent: full"})
        );
        let added: AnnotationAdded =
            serde_json::from_str(r#"{"message":"Annotation added","id":1125}"#).unwrap();
        assert_eq!(added.id, 1125);
    }

    #[test]
    fn grafana_error_bodies_reduce_to_their_message() {
        let body =
            r#"{"message":"Invalid API key","messageId":"api-key.invalid","statusCode":401}"#;
        assert_eq!(grafana_message(body.into()), "Invalid API key");
        assert_eq!(grafana_message("Bad Gateway".into()), "Bad Gateway");
    }
}
