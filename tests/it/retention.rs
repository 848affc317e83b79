//! `store.retention_days`: at start (and hourly) the daemon removes old received alerts,
//! quiet alert groups and stored reports (keeping the newest report).

use chrono::{Duration as TimeDelta, Utc};
use serde_json::{Value, json};
use sre_agent::alerts::store::AlertRecord;

use crate::support::{eventually, spawn_app, spawn_app_with, test_config};

const TOML: &str = "[store]\nretention_days = 30\n";

fn alertmanager(alertname: &str) -> Value {
    json!({"version": "4", "status": "firing", "receiver": "sre-agent", "groupKey": "{}:{}",
        "alerts": [{"status": "firing", "labels": {"alertname": alertname, "instance": "h1"},
            "annotations": {}, "startsAt": "2026-11-20T10:00:00Z",
            "endsAt": "0001-01-01T00:00:00Z", "fingerprint": alertname}]})
}

#[tokio::test]
async fn old_alerts_groups_and_reports_are_removed_at_start() {
    let app = spawn_app(TOML).await;
    let mut keys = Vec::new();
    for name in ["OldAlert", "FreshAlert"] {
        let resp: Value = app
            .http
            .post(app.url("/webhook/alertmanager"))
            .json(&alertmanager(name))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        keys.push(resp["groups"][0].as_str().unwrap().to_string());
    }
    for period in ["2026-W44", "2026-W45", "2026-W46"] {
        let resp = app
            .http
            .post(app.url("/api/v1/reports"))
            .json(&json!({"period": period}))
            .send()
            .await
            .unwrap();
        assert!(resp.status().is_success(), "{}", resp.status());
    }

    // Age the first group, one logged alert and every report past the 30 days.
    let alerts = app.state.intake.store().clone();
    let old = Utc::now() - TimeDelta::days(40);
    alerts
        .update_group(&keys[0], |g, _| {
            g.map(|mut g| {
                g.last_seen = old;
                g
            })
        })
        .unwrap();
    let fresh_record = alerts.alerts_between(old, Utc::now()).unwrap().remove(0);
    alerts
        .log_alert(&AlertRecord {
            received_at: old,
            ..fresh_record
        })
        .unwrap();
    let reports = app.state.reports.store().clone();
    let stored = reports.list(10).unwrap();
    assert_eq!(stored.len(), 3);
    for mut r in stored.clone() {
        r.created_at = old;
        reports.save(&r).unwrap();
    }
    assert_eq!(alerts.alert_count(), 3);
    drop((alerts, reports));

    let dir = app.stop().await;
    let config = test_config(dir.path(), TOML);
    let app = spawn_app_with(config, dir).await;
    let alerts = app.state.intake.store();
    eventually(std::time::Duration::from_secs(10), "the sweep", || async {
        (alerts.alert_count() == 2).then_some(())
    })
    .await;
    assert!(alerts.group(&keys[0]).unwrap().is_none());
    assert!(alerts.group(&keys[1]).unwrap().is_some());
    let left = app.state.reports.store().list(10).unwrap();
    assert_eq!(left.len(), 1, "the newest report is kept");
    assert_eq!(left[0].id, stored[0].id);
    app.stop().await;
}
