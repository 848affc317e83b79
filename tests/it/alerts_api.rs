//! `GET /api/v1/alerts` pages: groups by newest activity first, `limit` and `cursor`
//! (`next_cursor`), every group exactly once across the pages, sample alerts only with
//! `samples=true`; bad parameters get a 400.

use reqwest::StatusCode;
use serde_json::Value;

use crate::support::alerts::am_storm;
use crate::support::spawn_app;

#[tokio::test]
async fn alert_groups_are_listed_newest_first_one_page_at_a_time() {
    let app = spawn_app("").await;
    // Five groups (one per instance), then host2 again: it becomes the newest.
    let post = |body: Value| {
        let app = &app;
        async move {
            let resp = app
                .http
                .post(app.url("/webhook/alertmanager"))
                .json(&body)
                .send()
                .await
                .unwrap();
            assert!(resp.status().is_success(), "{}", resp.status());
        }
    };
    post(am_storm(5, 5, "firing")).await;
    // Activity is ordered to the second (groups of one second by key): the later alert
    // comes in a later second.
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    let mut again = am_storm(3, 5, "firing");
    again["alerts"] = Value::Array(vec![again["alerts"][2].clone()]);
    post(again).await;

    let mut instances = Vec::new();
    let mut path = "/api/v1/alerts?limit=2".to_string();
    loop {
        let page: Value = app.get(&path).await.json().await.unwrap();
        let groups = page["groups"].as_array().unwrap();
        assert!(groups.len() <= 2, "{page}");
        for g in groups {
            instances.push(
                g["last_alert"]["labels"]["instance"]
                    .as_str()
                    .unwrap()
                    .to_string(),
            );
            assert!(g.get("alerts").is_none(), "samples only when asked: {g}");
        }
        match page["next_cursor"].as_str() {
            Some(c) => path = format!("/api/v1/alerts?limit=2&cursor={c}"),
            None => break,
        }
    }
    assert_eq!(instances.len(), 5, "{instances:?}");
    assert_eq!(instances[0], "host2", "{instances:?}");
    let mut unique = instances.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), 5, "each group once: {instances:?}");

    let page: Value = app
        .get("/api/v1/alerts?limit=1&samples=true")
        .await
        .json()
        .await
        .unwrap();
    let samples = page["groups"][0]["alerts"].as_object().unwrap();
    assert_eq!(samples.len(), 1, "{page}");
    assert!(samples.values().all(|a| a["labels"]["instance"] == "host2"));

    for bad in [
        "limit=0",
        "limit=1001",
        "limit=x",
        "cursor=%21%21",
        "samples=yes",
    ] {
        let resp = app.get(&format!("/api/v1/alerts?{bad}")).await;
        assert_eq!(resp.status(), StatusCode::BAD_REQUEST, "{bad}");
        let body: Value = resp.json().await.unwrap();
        assert!(
            body["error"].as_str().is_some_and(|e| !e.is_empty()),
            "{bad}: {body}"
        );
    }
}
