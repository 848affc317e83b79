//! The feedback form on a timeline: refused without the browser's CSRF token (nothing
//! stored, nothing counted), stored like the API's feedback with it, and the next
//! investigation of the same alert shows the recurrence with that verdict.

use std::time::Duration;

use reqwest::header::{COOKIE, LOCATION};
use serde_json::{Value, json};

use super::{Jar, assert_strict, client, csrf_of, form_body, page, post_form, scripted};
use crate::agent::wait_final;
use crate::support::fake_llm::FakeLlm;
use crate::support::{TestApp, eventually, metric_value, spawn_app};

fn disk_alert() -> Value {
    json!({"version": "4", "status": "firing", "receiver": "sre", "groupKey": "{}:{}",
        "groupLabels": {}, "commonLabels": {}, "commonAnnotations": {},
        "externalURL": "http://am", "truncatedAlerts": 0, "alerts": [{"status": "firing",
            "labels": {"alertname": "DiskFull", "instance": "nas", "severity": "warning"},
            "annotations": {"summary": "Disk almost full"},
            "startsAt": "2026-11-22T20:45:24.847Z", "endsAt": "0001-01-01T00:00:00Z",
            "generatorURL": "http://prom/graph", "fingerprint": "00000000000000aa"}]})
}

/// Posts the alert and waits for a new investigation (not in `known`) to end; its id.
async fn investigate_alert(app: &TestApp, known: &[&str]) -> String {
    let resp = app
        .http
        .post(app.url("/webhook/alertmanager"))
        .json(&disk_alert())
        .send()
        .await
        .unwrap();
    assert!(resp.status().is_success(), "{}", resp.status());
    let id = eventually(
        Duration::from_secs(20),
        "the alert's investigation",
        || async {
            let v: Value = app.get("/api/v1/investigations").await.json().await.ok()?;
            v["items"]
                .as_array()?
                .iter()
                .filter_map(|i| i["id"].as_str())
                .find(|id| !known.contains(id))
                .map(str::to_string)
        },
    )
    .await;
    wait_final(app, &id).await;
    id
}

async fn feedback_count(app: &TestApp, verdict: &str) -> Option<f64> {
    let series = format!("sre_agent_feedback_total{{verdict=\"{verdict}\"}}");
    metric_value(&app.metrics().await, &series)
}

#[tokio::test]
async fn feedback_from_the_timeline_needs_the_csrf_token_and_the_next_investigation_shows_the_recurrence()
 {
    let fake = FakeLlm::start([scripted(), scripted()].concat()).await;
    let app = spawn_app(&format!(
        "[alerts]\ncooldown = \"0s\"\n\n{}",
        fake.config("")
    ))
    .await;
    let first = investigate_alert(&app, &[]).await;
    let path = format!("/investigations/{first}");
    let action = format!("{path}/feedback");
    let mut jar = Jar::default();
    let (status, body, headers) = page(&app, &mut jar, &path).await;
    assert_eq!(status, 200, "{body}");
    assert_strict(&path, &body, &headers);
    assert!(
        body.contains(&format!("action=\"{action}\"")),
        "a feedback form: {body}"
    );
    for field in ["verdict-right", "verdict-wrong", "feedback-note"] {
        assert!(
            body.contains(&format!("<label for=\"{field}\"")),
            "{field} has a label"
        );
    }
    assert!(!body.contains("Seen before"), "a first investigation");
    let token = csrf_of(&body);

    // Without this browser's token: refused, nothing stored or counted.
    let note = "it was <b>DNS</b>";
    for (form, cookies) in [
        (vec![("verdict", "wrong"), ("note", note)], jar.header()),
        (
            vec![("verdict", "wrong"), ("note", note), ("_csrf", "00")],
            jar.header(),
        ),
        (
            vec![
                ("verdict", "wrong"),
                ("note", note),
                ("_csrf", token.as_str()),
            ],
            String::new(),
        ),
    ] {
        let resp = client()
            .post(app.url(&action))
            .header(COOKIE, cookies)
            .header("content-type", "application/x-www-form-urlencoded")
            .body(form_body(&form))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 403);
        let text = resp.text().await.unwrap();
        assert!(text.contains("did not come from this console"), "{text}");
    }
    let shown: Value = app
        .get(&format!("/api/v1/investigations/{first}"))
        .await
        .json()
        .await
        .unwrap();
    assert!(shown.get("feedback").is_none_or(Value::is_null), "{shown}");
    assert_eq!(feedback_count(&app, "wrong").await, Some(0.0));

    // With it: a bad verdict or an unknown investigation is an error page, not stored.
    let resp = post_form(
        &app,
        &mut jar,
        &action,
        &[("verdict", "maybe"), ("_csrf", &token)],
    )
    .await;
    assert_eq!(resp.status(), 400);
    let headers = resp.headers().clone();
    let text = resp.text().await.unwrap();
    assert_strict("400", &text, &headers);
    assert!(text.contains("&quot;maybe&quot;"), "{text}");
    let resp = post_form(
        &app,
        &mut jar,
        "/investigations/nope/feedback",
        &[("verdict", "right"), ("_csrf", &token)],
    )
    .await;
    assert_eq!(resp.status(), 404);
    assert_eq!(feedback_count(&app, "right").await, Some(0.0));

    let resp = post_form(
        &app,
        &mut jar,
        &action,
        &[("verdict", "wrong"), ("note", note), ("_csrf", &token)],
    )
    .await;
    assert_eq!(resp.status(), 303);
    assert_eq!(resp.headers()[LOCATION], format!("{path}#feedback"));
    let shown: Value = app
        .get(&format!("/api/v1/investigations/{first}"))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(shown["feedback"]["verdict"], "wrong", "{shown}");
    assert_eq!(shown["feedback"]["note"], note);
    assert_eq!(feedback_count(&app, "wrong").await, Some(1.0));
    let (_, body, _) = page(&app, &mut jar, &path).await;
    assert!(
        body.contains("it was &lt;b&gt;DNS&lt;/b&gt;") && !body.contains("<b>DNS"),
        "the note, escaped: {body}"
    );
    assert!(body.contains("value=\"wrong\" required checked"), "{body}");

    // The next investigation of the same alert: its page shows the recurrence.
    let second = investigate_alert(&app, &[&first]).await;
    let detail = wait_final(&app, &second).await;
    assert_eq!(detail["finding"]["recurrence"]["count"], 1, "{detail}");
    let second_path = format!("/investigations/{second}");
    let (status, body, headers) = page(&app, &mut jar, &second_path).await;
    assert_eq!(status, 200);
    assert_strict(&second_path, &body, &headers);
    assert!(body.contains("Seen before"), "{body}");
    assert!(body.contains("1 time before"), "{body}");
    assert!(body.contains(&format!("href=\"{path}\"")), "{body}");
    assert!(body.contains("badge v-wrong\">wrong</span>"), "{body}");
    app.stop().await;
}
