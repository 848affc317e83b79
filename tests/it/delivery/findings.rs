//! Finding notifications: the store's finished index, not the wake-up, is the source of
//! truth (many findings during an SMTP outage are each emailed once after it, across a
//! restart), and the notifier reads the alert groups intake writes (not a stale copy of
//! its own).

use std::time::Duration;

use crate::support::alerts::GRAFANA_FIRING;
use crate::support::fake_llm::FakeLlm;
use crate::support::mail::{SinkOptions, received_mail, require_aiosmtpd, start_smtp_sink};
use crate::support::receiver::Receiver;
use crate::support::{
    TestApp, eventually, free_port, metric_value, spawn_app, spawn_app_with, test_config,
};

async fn final_count(app: &TestApp) -> usize {
    let page = app.state.dispatcher.list(None, 500, None).unwrap();
    page.items.iter().filter(|i| i.status.is_final()).count()
}

#[tokio::test]
async fn findings_piling_up_during_an_smtp_outage_are_each_emailed_once_after_a_restart() {
    if !require_aiosmtpd() {
        return;
    }
    const N: usize = 24;
    let smtp_port = free_port();
    let llm = FakeLlm::start(super::finding_llm("disk full")).await;
    let toml = format!(
        "[smtp]\nhost = \"localhost\"\nport = {smtp_port}\nsecurity = \"none\"\ntimeout = \"5s\"\n\n\
         [notify]\nemail_to = [\"ops@example.org\"]\nretry_backoff = \"200ms\"\nretry_max_backoff = \"1s\"\n\n\
         [alerts]\nconcurrency = 4\n\n{}",
        llm.config("")
    );
    let app = spawn_app(&toml).await;
    for i in 0..N {
        let resp = app
            .http
            .post(app.url("/api/v1/ask"))
            .json(&serde_json::json!({"question": format!("question-{i:02} about disks")}))
            .send()
            .await
            .unwrap();
        assert!(resp.status().is_success(), "{}", resp.status());
    }
    eventually(
        Duration::from_secs(90),
        "every investigation final",
        || async { (final_count(&app).await == N).then_some(()) },
    )
    .await;
    let retry = r#"sre_agent_notifications_total{channel="email",status="retry"}"#;
    eventually(Duration::from_secs(30), "retried emails", || async {
        (metric_value(&app.metrics().await, retry).unwrap_or(0.0) >= 1.0).then_some(())
    })
    .await;
    let dir = app.stop().await;

    let sink = start_smtp_sink(smtp_port, &SinkOptions::default());
    let app = spawn_app_with(test_config(dir.path(), &toml), dir).await;
    eventually(Duration::from_secs(60), "every finding emailed", || async {
        (received_mail(&sink).len() >= N).then_some(())
    })
    .await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let mail = received_mail(&sink);
    assert_eq!(mail.len(), N, "once each");
    for i in 0..N {
        let q = format!("question-{i:02} about disks");
        let n = mail.iter().filter(|(_, eml)| eml.contains(&q)).count();
        assert_eq!(n, 1, "{q} emailed {n} times");
    }
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

#[tokio::test]
async fn a_later_finding_of_a_group_carries_the_alert_intake_stored_last() {
    let receiver = Receiver::start().await;
    let llm = FakeLlm::start(super::finding_llm("checkout 5xx from a bad deploy")).await;
    let toml = format!(
        "[alerts]\ncooldown = \"0s\"\n\n[[notify.webhooks]]\nurl = \"{}/json\"\n\n{}",
        receiver.base,
        llm.config("")
    );
    let app = spawn_app(&toml).await;
    let post = |body: String| {
        let app = &app;
        async move {
            let resp = app
                .http
                .post(app.url("/webhook/grafana"))
                .header("content-type", "application/json")
                .body(body)
                .send()
                .await
                .unwrap();
            assert!(resp.status().is_success());
        }
    };
    post(GRAFANA_FIRING.to_string()).await;
    eventually(
        Duration::from_secs(30),
        "the first notification",
        || async { (receiver.received().len() == 1).then_some(()) },
    )
    .await;
    let first = receiver.received()[0].json();
    assert_eq!(
        first["alert"]["annotations"]["summary"],
        "5xx ratio above 5% for checkout"
    );

    let later = GRAFANA_FIRING.replace(
        "5xx ratio above 5% for checkout",
        "5xx ratio now 40% for checkout",
    );
    assert_ne!(later, GRAFANA_FIRING);
    post(later).await;
    eventually(
        Duration::from_secs(30),
        "the second notification",
        || async { (receiver.received().len() == 2).then_some(()) },
    )
    .await;
    let second = receiver.received()[1].json();
    assert_ne!(first["investigation"]["id"], second["investigation"]["id"]);
    assert_eq!(
        second["alert"]["annotations"]["summary"], "5xx ratio now 40% for checkout",
        "the notifier reads the group intake just wrote"
    );
}
