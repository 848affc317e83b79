//! Alert text that carries chat markup or script links reaches every channel inert: Slack
//! gets `<!channel>`, `<@…>` and `<url|label>` escaped and no live mention, Discord gets its
//! mentions broken and `allowed_mentions` empty, and neither ntfy nor the email carries a
//! `javascript:` or `data:` link.

use std::time::Duration;

use serde_json::json;

use crate::support::fake_llm::FakeLlm;
use crate::support::mail::{SinkOptions, received_mail, require_aiosmtpd, start_smtp_sink};
use crate::support::receiver::Receiver;
use crate::support::{eventually, free_port, spawn_app};

#[tokio::test]
async fn an_alert_carrying_chat_markup_and_script_links_reaches_slack_discord_ntfy_and_email_inert()
{
    if !require_aiosmtpd() {
        return;
    }
    let smtp_port = free_port();
    let sink = start_smtp_sink(smtp_port, &SinkOptions::default());
    let receiver = Receiver::start().await;
    let llm = FakeLlm::start(super::finding_llm("disk full on <!here> @everyone")).await;
    let toml = format!(
        "[smtp]\nhost = \"localhost\"\nport = {smtp_port}\nsecurity = \"none\"\ntimeout = \"5s\"\n\n\
         [notify]\nemail_to = [\"ops@example.org\"]\n\n\
         [[notify.webhooks]]\nurl = \"{0}/slack\"\nformat = \"slack\"\n\n\
         [[notify.webhooks]]\nurl = \"{0}/ntfy\"\nformat = \"ntfy\"\n\n{1}",
        receiver.base,
        llm.config("")
    );
    let app = spawn_app(&toml).await;
    let alert = json!({"version": "4", "status": "firing", "receiver": "sre",
        "groupKey": "{}:{alertname=\"DiskFull\"}", "groupLabels": {}, "commonLabels": {},
        "commonAnnotations": {}, "externalURL": "http://am", "truncatedAlerts": 0,
        "alerts": [{"status": "firing",
            "labels": {"alertname": "DiskFull", "instance": "nas <!channel>",
                "team": "@everyone <@U024BE7LH> <@&1234>"},
            "annotations": {"summary": "<https://evil.example|reset your password> @here"},
            "startsAt": "2026-11-22T20:45:24.847Z", "endsAt": "0001-01-01T00:00:00Z",
            "generatorURL": "javascript:alert(document.cookie)",
            "fingerprint": "00000000000000ab"}]});
    let resp = app
        .http
        .post(app.url("/webhook/alertmanager"))
        .json(&alert)
        .send()
        .await
        .unwrap();
    assert!(resp.status().is_success(), "{}", resp.status());
    eventually(Duration::from_secs(30), "both webhook posts", || async {
        (receiver.received().len() >= 2).then_some(())
    })
    .await;

    let slack = receiver.at("/slack").unwrap().json();
    let text = slack["text"].as_str().unwrap();
    assert!(text.contains("DiskFull"), "{text}");
    for raw in [
        "<!channel>",
        "<!here>",
        "<@U024BE7LH>",
        "<https://evil.example|",
        "@everyone",
        "@here",
    ] {
        assert!(!text.contains(raw), "Slack text holds {raw:?}: {text}");
    }
    assert!(text.contains("&lt;https://evil.example|reset your password&gt;"));
    let content = slack["content"].as_str().unwrap();
    for raw in ["@everyone", "@here", "<@U024BE7LH>", "<@&1234>"] {
        assert!(
            !content.contains(raw),
            "Discord content holds {raw:?}: {content}"
        );
    }
    assert_eq!(slack["allowed_mentions"], json!({"parse": []}));
    for text in [text, content] {
        assert!(!text.to_ascii_lowercase().contains("javascript:"), "{text}");
    }
    let ntfy = receiver.at("/ntfy").unwrap();
    assert!(ntfy.body.contains("DiskFull"));
    assert!(
        !ntfy.body.to_ascii_lowercase().contains("javascript:"),
        "{}",
        ntfy.body
    );

    let (_, eml) = eventually(Duration::from_secs(30), "the finding email", || async {
        received_mail(&sink).into_iter().next()
    })
    .await;
    // Quoted-printable soft line breaks removed.
    let eml = eml.replace("=\r\n", "").replace("=\n", "");
    assert!(eml.contains("DiskFull"), "{eml}");
    assert!(!eml.to_ascii_lowercase().contains("javascript:"), "{eml}");
    assert!(
        eml.contains("nas &lt;!channel&gt;"),
        "escaped in HTML: {eml}"
    );
    app.stop().await;
}
