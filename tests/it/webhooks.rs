//! Alert webhooks end to end: Grafana and Alertmanager payloads over HTTP with bearer,
//! basic and HMAC auth; bad input stores nothing; storms, cooldown, budget and resolution;
//! a real Prometheus + Alertmanager firing into the daemon; kill -9 after the 2xx.

use std::time::Duration;

use base64::Engine;
use reqwest::StatusCode;
use serde_json::Value;

use crate::support::alerts::*;
use crate::support::{TestApp, eventually, metric_value, spawn_app};

const TOKEN: &str = "hook-token";

async fn post(
    app: &TestApp,
    path: &str,
    body: &[u8],
    headers: &[(&str, String)],
) -> (StatusCode, Value) {
    let mut req = app.http.post(app.url(path)).body(body.to_vec());
    req = req.header("content-type", "application/json");
    for (k, v) in headers {
        req = req.header(*k, v);
    }
    let resp = req.send().await.unwrap();
    let status = resp.status();
    (status, resp.json().await.unwrap_or(Value::Null))
}

fn bearer(t: &str) -> (&'static str, String) {
    ("authorization", format!("Bearer {t}"))
}

fn stored_alerts(app: &TestApp) -> usize {
    app.state.intake.store().alert_count()
}

async fn groups(app: &TestApp) -> Vec<Value> {
    let body: Value = app.get("/api/v1/alerts").await.json().await.unwrap();
    body["groups"].as_array().unwrap().clone()
}

#[tokio::test]
async fn a_grafana_alert_with_a_bearer_token_is_stored_and_investigated() {
    let app = spawn_app(&format!("[webhook]\ntoken = \"{TOKEN}\"\n")).await;
    let (status, body) = post(
        &app,
        "/webhook/grafana",
        GRAFANA_FIRING.as_bytes(),
        &[bearer(TOKEN)],
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["queued"], 1);
    // Without llm.base_url the investigation ends failed, which still completes it once.
    let invs = all_final(&app.base, None, 1).await;
    assert_eq!(invs.len(), 1);
    assert_eq!(invs[0]["trigger"], "alert");
    assert!(
        invs[0]["title"]
            .as_str()
            .unwrap()
            .starts_with("HighErrorRate")
    );
    let g = &groups(&app).await[0];
    assert_eq!(g["status"], "firing");
    assert_eq!(g["investigation"]["id"], invs[0]["id"]);
    assert!(
        g["last_alert"]["panel_url"]
            .as_str()
            .unwrap()
            .contains("viewPanel=4")
    );
    let m = app.metrics().await;
    assert_eq!(
        metric_value(
            &m,
            r#"sre_agent_alerts_received_total{outcome="queued",source="grafana"}"#
        ),
        Some(1.0)
    );
}

#[tokio::test]
async fn basic_auth_and_a_fresh_hmac_signature_are_both_required_when_configured() {
    let app = spawn_app(
        "[webhook]\nbasic_user = \"grafana\"\nbasic_password = \"pw\"\nhmac_secret = \"s3cr3t\"\nhmac_max_skew = \"5m\"\n",
    )
    .await;
    let basic = |u: &str, p: &str| {
        (
            "authorization",
            format!(
                "Basic {}",
                base64::engine::general_purpose::STANDARD.encode(format!("{u}:{p}"))
            ),
        )
    };
    let body = GRAFANA_FIRING.as_bytes();
    let signed = |ts: i64, secret: &str| {
        vec![
            basic("grafana", "pw"),
            ("x-grafana-alerting-timestamp", ts.to_string()),
            (
                "X-Grafana-Alerting-Signature",
                grafana_signature(secret, &ts.to_string(), body),
            ),
        ]
    };
    let now = unix_now();
    let bad: Vec<Vec<(&str, String)>> = vec![
        vec![],
        vec![basic("grafana", "pw")],
        signed(now, "wrong-secret"),
        signed(now - 3600, "s3cr3t"),
        [
            vec![basic("grafana", "nope")],
            signed(now, "s3cr3t")[1..].to_vec(),
        ]
        .concat(),
    ];
    for headers in bad {
        let (status, err) = post(&app, "/webhook/grafana", body, &headers).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{headers:?}");
        assert!(err["error"].is_string());
    }
    let (status, err) = post(
        &app,
        "/webhook/grafana",
        body,
        &signed(now - 3600, "s3cr3t"),
    )
    .await;
    assert!(
        err["error"].as_str().unwrap().contains("stale"),
        "{status} {err}"
    );
    assert_eq!(stored_alerts(&app), 0);
    let (status, _) = post(&app, "/webhook/grafana", body, &signed(now, "s3cr3t")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(stored_alerts(&app), 1);
}

/// (path, body, headers, expected status, error text)
type BadCase = (
    &'static str,
    Vec<u8>,
    Vec<(&'static str, String)>,
    StatusCode,
    &'static str,
);

#[tokio::test]
async fn bad_input_gets_401_400_or_413_with_a_json_error_and_stores_nothing() {
    let app = spawn_app(&format!(
        "[webhook]\ntoken = \"{TOKEN}\"\nmax_body_bytes = 4096\n"
    ))
    .await;
    let cases: Vec<BadCase> = vec![
        (
            "/webhook/alertmanager",
            AM_FIRING.into(),
            vec![],
            StatusCode::UNAUTHORIZED,
            "missing bearer",
        ),
        (
            "/webhook/alertmanager",
            AM_FIRING.into(),
            vec![bearer("nope")],
            StatusCode::UNAUTHORIZED,
            "invalid bearer",
        ),
        (
            "/webhook/alertmanager",
            b"{\"alerts\": [".to_vec(),
            vec![bearer(TOKEN)],
            StatusCode::BAD_REQUEST,
            "line 1",
        ),
        (
            "/webhook/grafana",
            b"{\"hello\": 1}".to_vec(),
            vec![bearer(TOKEN)],
            StatusCode::BAD_REQUEST,
            "missing field `alerts`",
        ),
        (
            "/webhook/grafana",
            br#"{"alerts":[{"labels":"x"}]}"#.to_vec(),
            vec![bearer(TOKEN)],
            StatusCode::BAD_REQUEST,
            "alerts[0].labels",
        ),
        (
            "/webhook/alertmanager",
            vec![b' '; 5000],
            vec![bearer(TOKEN)],
            StatusCode::PAYLOAD_TOO_LARGE,
            "4096",
        ),
    ];
    for (path, body, headers, want, says) in cases {
        let (status, err) = post(&app, path, &body, &headers).await;
        assert_eq!(status, want, "{path} {err}");
        assert!(err["error"].as_str().unwrap().contains(says), "{err}");
    }
    // A chunked body without Content-Length is cut off at the limit too.
    let stream = futures::stream::iter((0..10).map(|_| Ok::<_, std::io::Error>(vec![b' '; 1000])));
    let resp = app
        .http
        .post(app.url("/webhook/alertmanager"))
        .bearer_auth(TOKEN)
        .header("content-type", "application/json")
        .body(reqwest::Body::wrap_stream(stream))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(stored_alerts(&app), 0);
    assert!(groups(&app).await.is_empty());
    assert!(investigations(&app.base, None).await.is_empty());
}

#[tokio::test]
async fn odd_but_valid_payloads_are_accepted() {
    let app = spawn_app("").await;
    let empty = br#"{"version":"4","alerts":[],"newField":{"x":1}}"#;
    assert_eq!(
        post(&app, "/webhook/alertmanager", empty, &[]).await.0,
        StatusCode::OK
    );
    let (status, body) = post(&app, "/webhook/grafana", GRAFANA8_MIXED.as_bytes(), &[]).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["received"], 2);
    assert_eq!(stored_alerts(&app), 2);
}

#[tokio::test]
async fn a_500_alert_storm_becomes_a_handful_of_investigations() {
    let app = spawn_app("").await;
    let storm = serde_json::to_vec(&am_storm(500, 4, "firing")).unwrap();
    // Over 20 alerts: answered once on disk (202), decided right after.
    let (status, body) = post(&app, "/webhook/alertmanager", &storm, &[]).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    assert_eq!(body["received"], 500);
    assert_eq!(body["deferred"], true);
    all_decided(&app.base).await;
    let queued = r#"sre_agent_alerts_received_total{outcome="queued",source="alertmanager"}"#;
    assert_eq!(metric_value(&app.metrics().await, queued), Some(4.0));
    // A repeat while those are queued or running (or just finished) starts nothing new.
    post(&app, "/webhook/alertmanager", &storm, &[]).await;
    all_decided(&app.base).await;
    assert_eq!(metric_value(&app.metrics().await, queued), Some(4.0));
    let invs = all_final(&app.base, None, 4).await;
    assert_eq!(invs.len(), 4);
    assert_eq!(stored_alerts(&app), 1000);
    let m = app.metrics().await;
    let deduped = metric_value(
        &m,
        r#"sre_agent_alerts_received_total{outcome="deduped",source="alertmanager"}"#,
    )
    .unwrap();
    let cooldown = metric_value(
        &m,
        r#"sre_agent_alerts_received_total{outcome="cooldown",source="alertmanager"}"#,
    )
    .unwrap();
    assert_eq!(deduped + cooldown, 996.0);
}

#[tokio::test]
async fn the_daily_budget_and_cooldown_limit_new_investigations() {
    // Storm coalescing off: five groups of one alert would otherwise be one storm.
    let app = spawn_app(
        "[alerts]\nmax_investigations_per_day = 2\ncooldown = \"1h\"\nstorm_threshold = 0\n",
    )
    .await;
    let storm = serde_json::to_vec(&am_storm(5, 5, "firing")).unwrap();
    let (_, body) = post(&app, "/webhook/alertmanager", &storm, &[]).await;
    assert_eq!(body["queued"], 2);
    all_final(&app.base, None, 2).await;
    let (_, body) = post(&app, "/webhook/alertmanager", &storm, &[]).await;
    assert_eq!(body["queued"], 0);
    let outcomes: Vec<String> = groups(&app)
        .await
        .iter()
        .map(|g| g["last_outcome"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        outcomes.iter().filter(|o| *o == "cooldown").count(),
        2,
        "{outcomes:?}"
    );
    assert_eq!(
        outcomes.iter().filter(|o| *o == "budget").count(),
        3,
        "{outcomes:?}"
    );
    assert_eq!(investigations(&app.base, None).await.len(), 2);
    assert_eq!(stored_alerts(&app), 10);
}

#[tokio::test]
async fn a_resolved_alert_resolves_the_group_and_notes_the_investigation() {
    let app = spawn_app("").await;
    let firing = serde_json::to_vec(&am_storm(1, 1, "firing")).unwrap();
    post(&app, "/webhook/alertmanager", &firing, &[]).await;
    all_final(&app.base, None, 1).await;
    let resolved = serde_json::to_vec(&am_storm(1, 1, "resolved")).unwrap();
    let (status, _) = post(&app, "/webhook/alertmanager", &resolved, &[]).await;
    assert_eq!(status, StatusCode::OK);
    let g = &groups(&app).await[0];
    assert_eq!(g["status"], "resolved");
    assert_eq!(g["last_outcome"], "resolved");
    let id = g["investigation"]["id"].as_str().unwrap().to_string();
    eventually(Duration::from_secs(10), "a resolution note", || async {
        let inv = app.state.dispatcher.get(&id).unwrap().unwrap();
        inv.notes
            .iter()
            .any(|n| n.contains("resolved"))
            .then_some(())
    })
    .await;
}

#[tokio::test]
async fn the_alerts_api_requires_the_api_token_when_set() {
    let app = spawn_app("[server]\napi_token = \"api\"\n").await;
    assert_eq!(
        app.get("/api/v1/alerts").await.status(),
        StatusCode::UNAUTHORIZED
    );
    let ok = app
        .http
        .get(app.url("/api/v1/alerts"))
        .bearer_auth("api")
        .send()
        .await
        .unwrap();
    assert_eq!(ok.status(), StatusCode::OK);
}
