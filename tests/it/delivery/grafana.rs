//! `grafana.annotate`: a finding written back as an annotation on the alert's dashboard
//! panel, through the real binary and a Grafana that records the exact posts.

use std::time::Duration;

use crate::support::alerts::GRAFANA_FIRING;
use crate::support::fake_grafana_writes::AnnotationGrafana;
use crate::support::fake_llm::FakeLlm;
use crate::support::{Daemon, eventually, free_port, metric_value, spawn_app};

fn grafana_toml(grafana_port: u16, token: &str, llm: &FakeLlm) -> String {
    format!(
        "[grafana]\nurl = \"http://127.0.0.1:{grafana_port}\"\ntoken = \"{token}\"\nannotate = true\n\n\
         [notify]\nretry_backoff = \"200ms\"\nretry_max_backoff = \"1s\"\n\n{}",
        llm.config("")
    )
}

async fn post_alert(http: &reqwest::Client, base: &str) {
    let resp = http
        .post(format!("{base}/webhook/grafana"))
        .header("content-type", "application/json")
        .body(GRAFANA_FIRING)
        .send()
        .await
        .unwrap();
    assert!(resp.status().is_success(), "{}", resp.status());
}

async fn metric(http: &reqwest::Client, base: &str, series: &str) -> f64 {
    let text = http
        .get(format!("{base}/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    metric_value(&text, series).unwrap_or(0.0)
}

#[tokio::test]
async fn a_finding_is_annotated_on_the_alerts_panel_once_after_grafana_comes_back() {
    let llm = FakeLlm::start(super::finding_llm(
        "checkout 5xx come from a bad deploy <v2>",
    ))
    .await;
    let dir = tempfile::tempdir().unwrap();
    let (port, grafana_port) = (free_port(), free_port());
    let file = dir.path().join("config.toml");
    std::fs::write(
        &file,
        format!(
            "[server]\nlisten = \"127.0.0.1:{port}\"\ndata_dir = \"data\"\n\
             public_url = \"https://sre-agent.example.org/\"\n\n{}",
            grafana_toml(grafana_port, "glsa_editor", &llm)
        ),
    )
    .unwrap();
    let daemon = Daemon::start(dir.path(), &file, &[]).await;
    let http = reqwest::Client::new();
    post_alert(&http, &daemon.base).await;

    // Grafana is down: the annotation waits in the outbox, retried.
    let retry = r#"sre_agent_notifications_total{channel="grafana",status="retry"}"#;
    eventually(Duration::from_secs(60), "a retried annotation", || async {
        (metric(&http, &daemon.base, retry).await >= 1.0).then_some(())
    })
    .await;
    let log = daemon.log_text();
    let named =
        format!("Grafana at http://127.0.0.1:{grafana_port}/api/annotations is unreachable");
    assert!(log.contains(&named), "{log}");
    assert!(
        !log.contains("glsa_editor"),
        "the token never reaches the log"
    );
    let grafana = AnnotationGrafana::start(grafana_port, "glsa_editor").await;
    let posted = eventually(Duration::from_secs(30), "the annotation", || async {
        grafana.posted().into_iter().next()
    })
    .await;

    assert_eq!(posted.header("authorization"), Some("Bearer glsa_editor"));
    assert_eq!(posted.header("content-type"), Some("application/json"));
    let body = posted.json();
    let keys: Vec<&str> = body
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        ["dashboardUID", "panelId", "tags", "text", "time"],
        "{body}"
    );
    assert_eq!(body["dashboardUID"], "sre-sli");
    assert_eq!(body["panelId"], 4);
    // The alert's startsAt, 2025-06-01T10:15:00Z, in epoch milliseconds.
    assert_eq!(body["time"], 1_748_772_900_000i64);
    assert_eq!(
        body["tags"],
        serde_json::json!(["sre-agent", "HighErrorRate"])
    );
    let text = body["text"].as_str().unwrap();
    assert!(
        text.contains("bad deploy &lt;v2&gt;"),
        "escaped summary: {text}"
    );
    // It links to the investigation's console page, not to the API's JSON.
    let link = "<a href=\"https://sre-agent.example.org/investigations/";
    assert!(text.contains(link), "{text}");

    let sent = r#"sre_agent_notifications_total{channel="grafana",status="sent"}"#;
    eventually(Duration::from_secs(10), "the sent count", || async {
        (metric(&http, &daemon.base, sent).await == 1.0).then_some(())
    })
    .await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(grafana.posted().len(), 1, "delivered once");
}

#[tokio::test]
async fn a_refused_annotation_is_not_retried_and_the_error_names_grafana_the_url_and_status() {
    let llm = FakeLlm::start(super::finding_llm("disk full")).await;
    let grafana_port = free_port();
    let grafana = AnnotationGrafana::start(grafana_port, "glsa_editor").await;
    let app = spawn_app(&grafana_toml(grafana_port, "glsa_viewer_wrong", &llm)).await;
    post_alert(&app.http, &app.base).await;
    let failed = r#"sre_agent_notifications_total{channel="grafana",status="failed"}"#;
    eventually(Duration::from_secs(30), "a failed annotation", || async {
        (metric(&app.http, &app.base, failed).await == 1.0).then_some(())
    })
    .await;
    let retry = r#"sre_agent_notifications_total{channel="grafana",status="retry"}"#;
    assert_eq!(metric(&app.http, &app.base, retry).await, 0.0);
    assert!(grafana.posted().is_empty());
    let inv = app.state.dispatcher.list(None, 10, None).unwrap().items;
    assert_eq!(
        inv[0].status.as_str(),
        "finished",
        "the investigation is unaffected"
    );
    assert!(
        app.state
            .notifier
            .as_ref()
            .unwrap()
            .pending()
            .unwrap()
            .is_empty()
    );
}

#[test]
fn grafana_annotate_without_url_or_token_is_refused_naming_the_key() {
    use crate::support::tool_registry::load_err;
    for (toml, why) in [
        ("[grafana]\nannotate = true\n", "needs grafana.url"),
        (
            "[grafana]\nurl = \"http://grafana:3000\"\nannotate = true\n",
            "Editor role",
        ),
    ] {
        let err = load_err(toml);
        assert!(
            err.contains("grafana.annotate") && err.contains(why),
            "{err}"
        );
    }
}
