//! The `Alert` model and lenient parsing of the Grafana (version "1") and Alertmanager
//! (version "4") webhook payloads into it. Unknown fields are ignored; absent or null
//! optional fields, Go zero times and offsets are all accepted.

use std::collections::BTreeMap;

use chrono::{DateTime, Datelike, Utc};
use serde::{Deserialize, Deserializer, Serialize};

crate::telemetry::labelled! {
    /// Which sender an alert came from (the `source` label of the alert metrics).
    #[derive(Serialize, Deserialize, utoipa::ToSchema)]
    #[serde(rename_all = "lowercase")]
    pub enum AlertSource {
        Grafana => "grafana",
        Alertmanager => "alertmanager",
    }
}

/// Firing or resolved (anything else reads as firing).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum AlertStatus {
    Firing,
    Resolved,
}

/// One alert instance, whichever sender it came from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Alert {
    pub source: AlertSource,
    pub fingerprint: String,
    pub status: AlertStatus,
    /// The `alertname` label ("" when absent).
    pub name: String,
    pub labels: BTreeMap<String, String>,
    pub annotations: BTreeMap<String, String>,
    pub starts_at: Option<DateTime<Utc>>,
    pub ends_at: Option<DateTime<Utc>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generator_url: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dashboard_url: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub panel_url: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub silence_url: Option<String>,
    /// Grafana's `valueString`, or the `values` map rendered as `A=1, B=2`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
}

/// A parsed webhook body: its alerts plus the sender's group key.
#[derive(Clone, Debug)]
pub struct WebhookBatch {
    pub alerts: Vec<Alert>,
    pub group_key: Option<String>,
    pub truncated_alerts: u64,
    /// Alerts cut to the bounds of `alerts::cap` (a label or annotation too long, too many).
    pub capped: usize,
}

impl WebhookBatch {
    /// What the parsed alerts take in memory, near enough (`cap::memory_bytes`).
    pub fn memory_bytes(&self) -> usize {
        self.alerts
            .iter()
            .map(super::cap::memory_bytes)
            .sum::<usize>()
            + self.group_key.as_ref().map_or(0, String::len)
    }
}

#[derive(Deserialize)]
struct RawPayload {
    #[serde(default, deserialize_with = "lenient_string")]
    version: Option<String>,
    #[serde(default, rename = "groupKey", deserialize_with = "lenient_string")]
    group_key: Option<String>,
    #[serde(default, rename = "truncatedAlerts", deserialize_with = "lenient_u64")]
    truncated_alerts: u64,
    #[serde(default, deserialize_with = "lenient_string")]
    status: Option<String>,
    alerts: Option<Vec<RawAlert>>,
}

#[derive(Deserialize)]
struct RawAlert {
    #[serde(default, deserialize_with = "lenient_string")]
    status: Option<String>,
    #[serde(default, deserialize_with = "string_map")]
    labels: BTreeMap<String, String>,
    #[serde(default, deserialize_with = "string_map")]
    annotations: BTreeMap<String, String>,
    #[serde(default, rename = "startsAt", deserialize_with = "lenient_string")]
    starts_at: Option<String>,
    #[serde(default, rename = "endsAt", deserialize_with = "lenient_string")]
    ends_at: Option<String>,
    #[serde(default, rename = "generatorURL", deserialize_with = "lenient_string")]
    generator_url: Option<String>,
    #[serde(default, deserialize_with = "lenient_string")]
    fingerprint: Option<String>,
    #[serde(default, rename = "silenceURL", deserialize_with = "lenient_string")]
    silence_url: Option<String>,
    #[serde(default, rename = "dashboardURL", deserialize_with = "lenient_string")]
    dashboard_url: Option<String>,
    #[serde(default, rename = "panelURL", deserialize_with = "lenient_string")]
    panel_url: Option<String>,
    #[serde(default)]
    values: Option<BTreeMap<String, serde_json::Value>>,
    #[serde(default, rename = "valueString", deserialize_with = "lenient_string")]
    value_string: Option<String>,
}

/// Parses a webhook body; the error names what is wrong and where (JSON path, line, column).
pub fn parse_webhook(source: AlertSource, body: &[u8]) -> Result<WebhookBatch, String> {
    // serde would read the payload struct from a list too, field by field.
    if body.trim_ascii_start().first().is_some_and(|&b| b != b'{') {
        return Err("invalid JSON body: expected a JSON object".into());
    }
    // Tracking the path costs an allocation per key read, so it is done only to name where
    // a body that failed went wrong (the same parse again, to the same error).
    let de = &mut serde_json::Deserializer::from_slice(body);
    let Ok(raw) = RawPayload::deserialize(de) else {
        return Err(located_error(body));
    };
    let alerts = raw.alerts.ok_or_else(|| {
        let expected = match source {
            AlertSource::Grafana => "a Grafana webhook (version \"1\")",
            AlertSource::Alertmanager => "an Alertmanager webhook (version \"4\")",
        };
        format!("not {expected}: missing field `alerts`")
    })?;
    if let Some(v) = &raw.version
        && !matches!(v.as_str(), "1" | "4" | "")
    {
        let v = crate::text::truncate(v, 40);
        return Err(format!(
            "unsupported webhook version {v:?} (expected \"1\" for Grafana or \"4\" for Alertmanager)"
        ));
    }
    let group_status = raw.status.as_deref().map(parse_status);
    let mut capped = 0;
    let alerts = alerts
        .into_iter()
        .map(|a| {
            let mut alert = convert(source, a, group_status);
            capped += usize::from(super::cap::cap(&mut alert));
            alert
        })
        .collect();
    Ok(WebhookBatch {
        alerts,
        group_key: raw.group_key.filter(|k| !k.is_empty()),
        truncated_alerts: raw.truncated_alerts,
        capped,
    })
}

/// The error of a body that does not parse as a payload, with the JSON path it failed at.
fn located_error(body: &[u8]) -> String {
    let de = &mut serde_json::Deserializer::from_slice(body);
    match serde_path_to_error::deserialize::<_, RawPayload>(de) {
        // Not reached: this is the parse that failed, with its path tracked.
        Ok(_) => "invalid JSON body".into(),
        Err(e) => {
            let path = e.path().to_string();
            let inner = e.into_inner();
            let message = if path == "." || path.is_empty() {
                format!("invalid JSON body: {inner}")
            } else {
                format!("invalid JSON body at {path}: {inner}")
            };
            shorten(&message)
        }
    }
}

/// The longest parse error returned, in characters.
const MAX_ERROR_CHARS: usize = 500;

/// `message` cut in the middle when long: serde quotes an unexpected string whole, and a
/// 1 MB label must not come back in a 1 MB answer; the end says where (line, column).
fn shorten(message: &str) -> String {
    let n = message.chars().count();
    if n <= MAX_ERROR_CHARS {
        return message.to_string();
    }
    let head = crate::text::first_chars(message, MAX_ERROR_CHARS - 120);
    let tail: String = message.chars().skip(n - 100).collect();
    format!("{head} … {tail}")
}

fn convert(source: AlertSource, a: RawAlert, group_status: Option<AlertStatus>) -> Alert {
    let status = a
        .status
        .as_deref()
        .map(parse_status)
        .or(group_status)
        .unwrap_or(AlertStatus::Firing);
    let fingerprint = a
        .fingerprint
        .filter(|f| !f.trim().is_empty())
        .unwrap_or_else(|| label_fingerprint(&a.labels));
    let value = a.value_string.filter(|v| !v.is_empty()).or_else(|| {
        a.values
            .as_ref()
            .filter(|v| !v.is_empty())
            .map(render_values)
    });
    let nonempty = |s: Option<String>| s.filter(|s| !s.trim().is_empty());
    Alert {
        source,
        fingerprint,
        status,
        name: a.labels.get("alertname").cloned().unwrap_or_default(),
        starts_at: a.starts_at.as_deref().and_then(parse_time),
        ends_at: a.ends_at.as_deref().and_then(parse_time),
        generator_url: nonempty(a.generator_url),
        dashboard_url: nonempty(a.dashboard_url),
        panel_url: nonempty(a.panel_url),
        silence_url: nonempty(a.silence_url),
        value,
        labels: a.labels,
        annotations: a.annotations,
    }
}

fn parse_status(s: &str) -> AlertStatus {
    if s.eq_ignore_ascii_case("resolved") {
        AlertStatus::Resolved
    } else {
        AlertStatus::Firing
    }
}

/// RFC 3339 with any offset, in UTC; Go's zero time (year 1) and garbage are `None`.
pub fn parse_time(s: &str) -> Option<DateTime<Utc>> {
    let t = DateTime::parse_from_rfc3339(s.trim())
        .ok()?
        .with_timezone(&Utc);
    (t.year() > 1).then_some(t)
}

fn render_values(values: &BTreeMap<String, serde_json::Value>) -> String {
    values
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A stable fingerprint from the sorted labels: FNV-1a 64 over name 0xFF value 0xFF …,
/// rendered as 16 hex digits (the scheme Prometheus uses).
pub fn label_fingerprint(labels: &BTreeMap<String, String>) -> String {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    let mut h = OFFSET;
    for (k, v) in labels {
        for b in k.bytes().chain([0xff]).chain(v.bytes()).chain([0xff]) {
            h ^= u64::from(b);
            h = h.wrapping_mul(PRIME);
        }
    }
    format!("{h:016x}")
}

fn lenient_string<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    Ok(match serde_json::Value::deserialize(d)? {
        serde_json::Value::Null => None,
        serde_json::Value::String(s) => Some(s),
        other => Some(other.to_string()),
    })
}

fn lenient_u64<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    Ok(match serde_json::Value::deserialize(d)? {
        serde_json::Value::Number(n) => n.as_u64().unwrap_or(0),
        serde_json::Value::String(s) => s.trim().parse().unwrap_or(0),
        _ => 0,
    })
}

/// A label/annotation map: null is empty; non-string values become their JSON text.
fn string_map<'de, D: Deserializer<'de>>(d: D) -> Result<BTreeMap<String, String>, D::Error> {
    let raw: Option<BTreeMap<String, serde_json::Value>> = Option::deserialize(d)?;
    Ok(raw
        .unwrap_or_default()
        .into_iter()
        .map(|(k, v)| {
            let v = match v {
                serde_json::Value::String(s) => s,
                serde_json::Value::Null => String::new(),
                other => other.to_string(),
            };
            (k, v)
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    const GRAFANA_FIRING: &str =
        include_str!("../../tests/it/fixtures/grafana-webhook-firing.json");
    const GRAFANA_RESOLVED: &str =
        include_str!("../../tests/it/fixtures/grafana-webhook-resolved.json");
    const GRAFANA8_MIXED: &str =
        include_str!("../../tests/it/fixtures/grafana8-webhook-mixed.json");
    const AM_FIRING: &str =
        include_str!("../../tests/it/fixtures/alertmanager-webhook-firing.json");

    #[test]
    fn every_source_is_stored_by_its_label() {
        for s in AlertSource::ALL {
            assert_eq!(serde_json::to_value(s).unwrap(), s.label());
        }
    }
    const AM_TWO: &str =
        include_str!("../../tests/it/fixtures/alertmanager-webhook-firing-two-alerts.json");
    const AM_RESOLVED: &str =
        include_str!("../../tests/it/fixtures/alertmanager-webhook-resolved.json");

    #[test]
    fn a_grafana_firing_payload_becomes_one_alert_with_urls_and_values() {
        let batch = parse_webhook(AlertSource::Grafana, GRAFANA_FIRING.as_bytes()).unwrap();
        assert_eq!(batch.alerts.len(), 1);
        let a = &batch.alerts[0];
        assert_eq!(a.source, AlertSource::Grafana);
        assert_eq!(a.status, AlertStatus::Firing);
        assert_eq!(a.name, "HighErrorRate");
        assert_eq!(a.fingerprint, "a3c2f1e0d9b8c7a6");
        assert_eq!(a.labels["job"], "checkout");
        assert!(a.ends_at.is_none(), "Go zero time means no end");
        assert_eq!(
            a.starts_at.unwrap().to_rfc3339(),
            "2025-06-01T10:15:00+00:00"
        );
        assert!(a.panel_url.as_deref().unwrap().contains("viewPanel=4"));
        assert!(a.dashboard_url.is_some() && a.silence_url.is_some());
        assert!(
            a.generator_url
                .as_deref()
                .unwrap()
                .contains("/alerting/grafana/")
        );
        assert!(a.value.as_deref().unwrap().contains("value=0.0731"));
        assert!(batch.group_key.unwrap().contains("HighErrorRate"));
    }

    #[test]
    fn a_grafana_resolved_payload_has_an_end_and_no_values() {
        let batch = parse_webhook(AlertSource::Grafana, GRAFANA_RESOLVED.as_bytes()).unwrap();
        let a = &batch.alerts[0];
        assert_eq!(a.status, AlertStatus::Resolved);
        assert!(a.ends_at.is_some());
        assert_eq!(a.value, None);
        assert_eq!(a.dashboard_url, None, "empty URLs are absent");
    }

    #[test]
    fn an_old_grafana_payload_with_offsets_mixed_statuses_and_no_fingerprint_parses() {
        let batch = parse_webhook(AlertSource::Grafana, GRAFANA8_MIXED.as_bytes()).unwrap();
        assert_eq!(batch.truncated_alerts, 3);
        let [first, second] = &batch.alerts[..] else {
            panic!("two alerts")
        };
        assert_eq!(first.status, AlertStatus::Firing);
        assert_eq!(second.status, AlertStatus::Resolved);
        assert_eq!(
            first.starts_at.unwrap().to_rfc3339(),
            "2021-09-01T10:15:00.500+00:00"
        );
        assert_eq!(first.fingerprint, label_fingerprint(&first.labels));
        assert_eq!(first.labels["mount"], "/srv/Ünïcode");
        assert_eq!(second.fingerprint, "0123456789abcdef");
    }

    #[test]
    fn alertmanager_captured_payloads_parse() {
        let firing = parse_webhook(AlertSource::Alertmanager, AM_FIRING.as_bytes()).unwrap();
        assert_eq!(firing.alerts[0].name, "AlwaysFiring");
        assert_eq!(firing.alerts[0].fingerprint, "15a37193dce72bab");
        assert_eq!(firing.alerts[0].source, AlertSource::Alertmanager);
        let two = parse_webhook(AlertSource::Alertmanager, AM_TWO.as_bytes()).unwrap();
        assert_eq!(two.alerts.len(), 2);
        let resolved = parse_webhook(AlertSource::Alertmanager, AM_RESOLVED.as_bytes()).unwrap();
        assert!(
            resolved
                .alerts
                .iter()
                .all(|a| a.status == AlertStatus::Resolved)
        );
    }

    #[test]
    fn the_computed_fingerprint_matches_prometheus_for_the_captured_alert() {
        // Alertmanager computed 15a37193dce72bab for exactly these labels.
        let labels = BTreeMap::from([
            ("alertname".to_string(), "AlwaysFiring".to_string()),
            ("severity".to_string(), "warning".to_string()),
        ]);
        assert_eq!(label_fingerprint(&labels), "15a37193dce72bab");
    }

    #[test]
    fn null_fields_and_unknown_extras_are_accepted() {
        let body = br#"{"version":"1","orgId":null,"alerts":[{"status":"firing","labels":null,
        "annotations":{"n":3},"values":null,"valueString":null,"startsAt":null,"new":[1]}],
        "notification_reason":"x","routeLabels":{}}"#;
        let batch = parse_webhook(AlertSource::Grafana, body).unwrap();
        let a = &batch.alerts[0];
        assert!(a.labels.is_empty());
        assert_eq!(a.annotations["n"], "3");
        assert_eq!(a.starts_at, None);
    }

    #[test]
    fn an_empty_alert_list_is_a_valid_empty_batch() {
        let batch = parse_webhook(AlertSource::Alertmanager, br#"{"version":"4","alerts":[]}"#);
        assert!(batch.unwrap().alerts.is_empty());
    }

    #[test]
    fn errors_name_the_json_path_or_position() {
        let err =
            parse_webhook(AlertSource::Grafana, br#"{"alerts":[{"labels":[1]}]}"#).unwrap_err();
        assert!(err.contains("alerts[0].labels"), "{err}");
        let err = parse_webhook(AlertSource::Grafana, b"{\"alerts\": [").unwrap_err();
        assert!(err.contains("line 1"), "{err}");
        let err = parse_webhook(AlertSource::Alertmanager, br#"{"hello":"world"}"#).unwrap_err();
        assert!(err.contains("missing field `alerts`"), "{err}");
        let err = parse_webhook(AlertSource::Alertmanager, br#"{"version":"9","alerts":[]}"#);
        assert!(err.unwrap_err().contains("unsupported webhook version"));
        assert!(parse_webhook(AlertSource::Grafana, b"[1,2]").is_err());
    }
}
