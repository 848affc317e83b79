use super::*;

const GRAFANA_FIRING: &str = include_str!("../../tests/it/fixtures/grafana-webhook-firing.json");
const GRAFANA_RESOLVED: &str =
    include_str!("../../tests/it/fixtures/grafana-webhook-resolved.json");
const GRAFANA8_MIXED: &str = include_str!("../../tests/it/fixtures/grafana8-webhook-mixed.json");
const AM_FIRING: &str = include_str!("../../tests/it/fixtures/alertmanager-webhook-firing.json");
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
    let err = parse_webhook(AlertSource::Grafana, br#"{"alerts":[{"labels":[1]}]}"#).unwrap_err();
    assert!(err.contains("alerts[0].labels"), "{err}");
    let err = parse_webhook(AlertSource::Grafana, b"{\"alerts\": [").unwrap_err();
    assert!(err.contains("line 1"), "{err}");
    let err = parse_webhook(AlertSource::Alertmanager, br#"{"hello":"world"}"#).unwrap_err();
    assert!(err.contains("missing field `alerts`"), "{err}");
    let err = parse_webhook(AlertSource::Alertmanager, br#"{"version":"9","alerts":[]}"#);
    assert!(err.unwrap_err().contains("unsupported webhook version"));
    assert!(parse_webhook(AlertSource::Grafana, b"[1,2]").is_err());
}
