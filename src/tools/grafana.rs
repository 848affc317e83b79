//! Alert-source tools: `grafana_alerts`, `grafana_alert_rules`, `grafana_annotations`
//! (Grafana, read-only with its service-account token) and `alertmanager_alerts`.

use std::sync::Arc;

use async_trait::async_trait;
use chrono::Utc;
use serde_json::{Value, json};

use super::args::{ago, arg, parse_duration};
use super::compact::{fit_lines, format_labels};
use super::format::{age, summary};
use super::{Tool, ToolError};
use crate::integrations::alertmanager::AmAlert;
use crate::integrations::prometheus::Labels;
use crate::integrations::{AlertmanagerClient, GrafanaClient};
use crate::text::truncate;

/// One line per alert: state, age, labels, summary.
fn alert_lines(alerts: &mut [AmAlert]) -> Vec<String> {
    alerts.sort_by(|a, b| {
        a.status
            .state
            .cmp(&b.status.state)
            .then(b.starts_at.cmp(&a.starts_at))
    });
    alerts
        .iter()
        .map(|a| {
            let mut labels = a.labels.clone();
            labels.retain(|k, _| !k.starts_with("__"));
            let mut state = a.status.state.clone();
            if !a.status.silenced_by.is_empty() {
                state.push_str("(silenced)");
            } else if !a.status.inhibited_by.is_empty() {
                state.push_str("(inhibited)");
            }
            format!(
                "{state} since {} {} {}",
                age(a.starts_at),
                format_labels(&labels, &Labels::new()),
                summary(&a.annotations)
            )
        })
        .collect()
}

/// `grafana_alerts`: Grafana-managed alert instances.
pub struct GrafanaAlerts {
    pub client: Arc<GrafanaClient>,
    pub max_chars: usize,
}

impl GrafanaAlerts {
    /// The name the tool registers under.
    pub const NAME: &'static str = "grafana_alerts";
}

#[async_trait]
impl Tool for GrafanaAlerts {
    fn name(&self) -> &'static str {
        Self::NAME
    }
    fn description(&self) -> &'static str {
        "Current Grafana-managed alert instances."
    }
    fn parameters(&self) -> Value {
        json!({"type": "object", "properties": {}})
    }
    async fn call(&self, _args: Value) -> Result<String, ToolError> {
        let mut alerts = self.client.alerts().await?;
        if alerts.is_empty() {
            return Ok("no Grafana alerts".into());
        }
        let lines = alert_lines(&mut alerts);
        let header = format!("{} Grafana alerts:", alerts.len());
        Ok(fit_lines(&header, &lines, "alerts", self.max_chars))
    }
}

/// `grafana_alert_rules`: Grafana-managed alert rules with their queries.
pub struct GrafanaAlertRules {
    pub client: Arc<GrafanaClient>,
    pub max_chars: usize,
}

impl GrafanaAlertRules {
    /// The name the tool registers under.
    pub const NAME: &'static str = "grafana_alert_rules";
}

#[async_trait]
impl Tool for GrafanaAlertRules {
    fn name(&self) -> &'static str {
        Self::NAME
    }
    fn description(&self) -> &'static str {
        "Grafana alert rules: group, for, labels, queries."
    }
    fn parameters(&self) -> Value {
        json!({"type": "object", "properties": {}})
    }
    async fn call(&self, _args: Value) -> Result<String, ToolError> {
        let rules = self.client.alert_rules().await?;
        if rules.is_empty() {
            return Ok("no Grafana-managed alert rules".into());
        }
        let lines: Vec<String> = rules
            .iter()
            .map(|r| {
                let queries: Vec<String> = r
                    .data
                    .iter()
                    .filter_map(|q| {
                        q.text()
                            .map(|t| format!("{}: {}", q.ref_id, truncate(t, 200)))
                    })
                    .collect();
                format!(
                    "{}{} [{}/{}] for={} {} condition={} {}",
                    r.title,
                    if r.is_paused { " (paused)" } else { "" },
                    r.folder_uid,
                    r.rule_group,
                    r.for_duration,
                    format_labels(&r.labels, &Labels::new()),
                    r.condition,
                    queries.join("; ")
                )
            })
            .collect();
        let header = format!("{} Grafana alert rules:", rules.len());
        Ok(fit_lines(&header, &lines, "rules", self.max_chars))
    }
}

/// `grafana_annotations`: alert state changes recorded as annotations.
pub struct GrafanaAnnotations {
    pub client: Arc<GrafanaClient>,
    pub max_chars: usize,
}

impl GrafanaAnnotations {
    /// The name the tool registers under.
    pub const NAME: &'static str = "grafana_annotations";
}

#[async_trait]
impl Tool for GrafanaAnnotations {
    fn name(&self) -> &'static str {
        Self::NAME
    }
    fn description(&self) -> &'static str {
        "Grafana alert state-change annotations over the last 'since' (default 24h)."
    }
    fn parameters(&self) -> Value {
        json!({"type": "object", "properties": {"since": {"type": "string"}}})
    }
    async fn call(&self, args: Value) -> Result<String, ToolError> {
        let since = parse_duration(arg(&args, "since").unwrap_or("24h"))?;
        let to = Utc::now();
        let from = ago(to, since)?;
        let mut anns = self
            .client
            .annotations(from, to, Some("alert"), 500)
            .await?;
        if anns.is_empty() {
            return Ok("no alert annotations in that range".into());
        }
        anns.sort_by_key(|a| std::cmp::Reverse(a.time));
        let lines: Vec<String> = anns
            .iter()
            .map(|a| {
                let at = chrono::DateTime::from_timestamp_millis(a.time)
                    .map(|t| t.format("%m-%d %H:%M").to_string())
                    .unwrap_or_default();
                format!(
                    "{at} {} {}→{} {}",
                    a.alert_name,
                    a.prev_state,
                    a.new_state,
                    truncate(&a.text, 160)
                )
            })
            .collect();
        let header = format!("{} alert annotations, newest first:", anns.len());
        Ok(fit_lines(&header, &lines, "annotations", self.max_chars))
    }
}

/// `alertmanager_alerts`: Alertmanager alerts and active silences.
pub struct AlertmanagerAlerts {
    pub client: Arc<AlertmanagerClient>,
    pub max_chars: usize,
}

impl AlertmanagerAlerts {
    /// The name the tool registers under.
    pub const NAME: &'static str = "alertmanager_alerts";
}

#[async_trait]
impl Tool for AlertmanagerAlerts {
    fn name(&self) -> &'static str {
        Self::NAME
    }
    fn description(&self) -> &'static str {
        "Alertmanager alerts (active/silenced/inhibited) and active silences."
    }
    fn parameters(&self) -> Value {
        json!({"type": "object", "properties": {}})
    }
    async fn call(&self, _args: Value) -> Result<String, ToolError> {
        let (alerts, silences) = tokio::join!(self.client.alerts(), self.client.silences());
        let mut alerts = alerts?;
        let silences = silences?;
        let mut lines = alert_lines(&mut alerts);
        let active: Vec<_> = silences
            .iter()
            .filter(|s| s.status.state == "active")
            .collect();
        lines.extend(active.iter().map(|s| {
            let m: Vec<String> = s.matchers.iter().map(|m| m.to_selector()).collect();
            format!(
                "silence {{{}}} until {} by {}: {}",
                m.join(","),
                s.ends_at
                    .map(|t| t.format("%m-%d %H:%M").to_string())
                    .unwrap_or_default(),
                s.created_by,
                truncate(&s.comment, 100)
            )
        }));
        let header = format!("{} alerts, {} active silences:", alerts.len(), active.len());
        Ok(fit_lines(&header, &lines, "lines", self.max_chars))
    }
}
