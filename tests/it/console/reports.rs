//! Reports in the console: shown as emailed, in their own framed document (inline styles
//! allowed there, no script at all), with their `cid:` charts served by a route.

use reqwest::header::{CONTENT_SECURITY_POLICY, CONTENT_TYPE};
use serde_json::Value;

use crate::support::spawn_app;

#[tokio::test]
async fn a_report_page_frames_the_email_whose_charts_are_served_as_png_by_content_id() {
    let app = spawn_app("").await;
    let resp = app
        .http
        .post(app.url("/api/v1/reports"))
        .json(&serde_json::json!({}))
        .send()
        .await
        .unwrap();
    assert!(resp.status().is_success());
    let report: Value = resp.json().await.unwrap();
    let id = report["id"].as_str().unwrap().to_string();
    // Give it a week of alerts, so it has a chart.
    let store = app.state.reports.store();
    let mut stored = store.get(&id).unwrap().unwrap();
    stored.data.alerts.data.per_day = vec![("Mon 16".into(), 2), ("Tue 17".into(), 5)];
    store.save(&stored).unwrap();

    let page = app.get(&format!("/reports/{id}")).await;
    assert_eq!(page.status(), 200);
    let page = page.text().await.unwrap();
    assert!(
        page.contains(&format!("src=\"/reports/{id}/email\"")),
        "{page}"
    );

    let email = app.get(&format!("/reports/{id}/email")).await;
    assert_eq!(email.status(), 200);
    let csp = email.headers()[CONTENT_SECURITY_POLICY]
        .to_str()
        .unwrap()
        .to_string();
    assert!(
        csp.starts_with("default-src 'none'") && !csp.contains("script-src"),
        "{csp}"
    );
    assert!(csp.contains("frame-ancestors 'self'"));
    let html = email.text().await.unwrap();
    assert!(html.contains("weekly report"));
    let src = format!("src=\"/reports/{id}/charts/alerts-per-day\"");
    assert!(html.contains(&src), "{html}");
    assert!(!html.contains("cid:"));

    let png = app
        .get(&format!("/reports/{id}/charts/alerts-per-day"))
        .await;
    assert_eq!(png.status(), 200);
    assert_eq!(png.headers()[CONTENT_TYPE], "image/png");
    assert!(png.bytes().await.unwrap().starts_with(b"\x89PNG"));
    for missing in [
        format!("/reports/{id}/charts/nope"),
        "/reports/nope/charts/alerts-per-day".to_string(),
        "/reports/nope".to_string(),
    ] {
        assert_eq!(app.get(&missing).await.status(), 404, "{missing}");
    }
    app.stop().await;
}
