//! Notifications against real services: the Mailer through smtp_sink.py with STARTTLS
//! (trusting the test CA via smtp.ca_file) and AUTH; findings emailed and posted to a
//! local webhook receiver; an SMTP outage outlasted across a restart.

use std::time::Duration;

use sre_agent::config::{EmailAddress, HumanDuration, Secret, SmtpConfig, SmtpSecurity};
use sre_agent::notify::{EmailMessage, InlineImage, Mailer};

use crate::support::alerts::GRAFANA_FIRING;
use crate::support::fake_llm::{self, FakeLlm, answer, finding_json, tool_calls};
use crate::support::mail::{
    SinkOptions, gen_test_certs, received_mail, require_aiosmtpd, start_smtp_sink,
};
use crate::support::receiver::Receiver;
use crate::support::{TestApp, eventually, free_port, metric_value, spawn_app};

fn smtp_config(port: u16, ca: Option<&std::path::Path>, auth: bool) -> SmtpConfig {
    SmtpConfig {
        host: Some("localhost".into()),
        port,
        security: if ca.is_some() {
            SmtpSecurity::Starttls
        } else {
            SmtpSecurity::None
        },
        username: auth.then(|| "agent".to_string()),
        password: auth.then(|| Secret::new("s3cret")),
        from: EmailAddress("sre-agent <sre-agent@example.org>".parse().unwrap()),
        timeout: HumanDuration::secs(10),
        ca_file: ca.map(|d| d.join("ca.pem")),
        ..SmtpConfig::default()
    }
}

fn finding_email() -> EmailMessage {
    EmailMessage {
        to: vec!["Ops <ops@example.org>".parse().unwrap()],
        subject: "Finding: disk almost full on nas".into(),
        text: "The disk on nas is 97% full.".into(),
        html: Some("<p>The disk on <b>nas</b> is 97% full.</p><img src=\"cid:chart\">".into()),
        inline_images: vec![InlineImage {
            content_id: "chart".into(),
            png: vec![0x89, b'P', b'N', b'G', 13, 10, 26, 10],
        }],
    }
}

#[tokio::test]
async fn the_mailer_sends_over_starttls_with_auth_to_a_real_smtp_server() {
    if !require_aiosmtpd() {
        return;
    }
    let certs = tempfile::tempdir().unwrap();
    gen_test_certs(certs.path());
    let port = free_port();
    let sink = start_smtp_sink(
        port,
        &SinkOptions {
            starttls_certs: Some(certs.path()),
            auth: Some("agent:s3cret"),
        },
    );
    let mailer = Mailer::new(&smtp_config(port, Some(certs.path()), true)).unwrap();
    mailer.send(&finding_email()).await.unwrap();

    let mail = received_mail(&sink);
    assert_eq!(mail.len(), 1);
    let (meta, eml) = &mail[0];
    assert_eq!(meta["tls"], true);
    assert_eq!(meta["auth_login"], "agent");
    assert_eq!(meta["rcpt_tos"][0], "ops@example.org");
    assert!(eml.contains("multipart/alternative"), "{eml}");
    assert!(eml.contains("multipart/related"), "{eml}");
    assert!(eml.contains("Content-ID: <chart>"), "{eml}");
    assert!(
        eml.contains("Subject: Finding: disk almost full on nas"),
        "{eml}"
    );
}

#[tokio::test]
async fn a_wrong_password_is_an_error_naming_the_server() {
    if !require_aiosmtpd() {
        return;
    }
    let certs = tempfile::tempdir().unwrap();
    gen_test_certs(certs.path());
    let port = free_port();
    let sink = start_smtp_sink(
        port,
        &SinkOptions {
            starttls_certs: Some(certs.path()),
            auth: Some("agent:other"),
        },
    );
    let mailer = Mailer::new(&smtp_config(port, Some(certs.path()), true)).unwrap();
    let err = mailer.send(&finding_email()).await.unwrap_err().to_string();
    assert!(err.contains(&format!("localhost:{port}")), "{err}");
    assert!(received_mail(&sink).is_empty());
}

#[tokio::test]
async fn an_untrusted_certificate_is_refused_without_the_ca_file() {
    if !require_aiosmtpd() {
        return;
    }
    let certs = tempfile::tempdir().unwrap();
    gen_test_certs(certs.path());
    let port = free_port();
    let sink = start_smtp_sink(
        port,
        &SinkOptions {
            starttls_certs: Some(certs.path()),
            auth: None,
        },
    );
    let mut config = smtp_config(port, Some(certs.path()), false);
    config.ca_file = None;
    let err = Mailer::new(&config)
        .unwrap()
        .send(&finding_email())
        .await
        .unwrap_err();
    assert!(err.to_string().contains("SMTP server"), "{err}");
    assert!(received_mail(&sink).is_empty());
}

#[tokio::test]
async fn send_with_retries_outlasts_an_smtp_outage() {
    if !require_aiosmtpd() {
        return;
    }
    let port = free_port();
    let metrics = std::sync::Arc::new(sre_agent::telemetry::Metrics::new("test"));
    let mailer = Mailer::new(&smtp_config(port, None, false))
        .unwrap()
        .with_metrics(metrics.clone());
    let sending = tokio::spawn(async move {
        mailer
            .send_with_retries(&finding_email(), 40, Duration::from_millis(100))
            .await
    });
    let retries = || {
        metrics
            .notifications
            .with_label_values(&["email", "retry"])
            .get()
    };
    // The first attempts hit a closed port; the sink starts while the mailer backs off.
    eventually(
        Duration::from_secs(10),
        "a retried first attempt",
        || async { (retries() >= 1).then_some(()) },
    )
    .await;
    let sink = start_smtp_sink(port, &SinkOptions::default());
    sending.await.unwrap().unwrap();
    assert_eq!(received_mail(&sink).len(), 1);
    assert_eq!(
        metrics
            .notifications
            .with_label_values(&["email", "sent"])
            .get(),
        1
    );
}

fn notify_toml(
    smtp_port: u16,
    certs: Option<&std::path::Path>,
    llm: &FakeLlm,
    hooks: &str,
) -> String {
    let smtp = match certs {
        Some(dir) => format!(
            "security = \"starttls\"\nusername = \"agent\"\npassword = \"s3cret\"\nca_file = \"{}\"\n",
            dir.join("ca.pem").display()
        ),
        None => "security = \"none\"\n".to_string(),
    };
    format!(
        "[smtp]\nhost = \"localhost\"\nport = {smtp_port}\ntimeout = \"5s\"\n{smtp}\n\
         [notify]\nemail_to = [\"Ops <ops@example.org>\"]\nretry_backoff = \"200ms\"\n\
         retry_max_backoff = \"1s\"\n{hooks}\n{}",
        llm.config("")
    )
}

async fn post_grafana_alert(app: &TestApp) {
    let resp = app
        .http
        .post(app.url("/webhook/grafana"))
        .header("content-type", "application/json")
        .body(GRAFANA_FIRING)
        .send()
        .await
        .unwrap();
    assert!(resp.status().is_success());
}

/// One tool call, then the finding (a conclusion without any tool result is inconclusive).
fn finding_llm() -> Vec<fake_llm::Reply> {
    vec![
        tool_calls(&[("call_1", "current_time", "{}")], (50, 10, 0)),
        answer(
            &finding_json("checkout 5xx come from a bad deploy <v2>", "call_1"),
            (100, 20, 0),
        ),
    ]
}

#[tokio::test]
async fn a_finding_is_emailed_over_starttls_and_posted_to_each_webhook_format() {
    if !require_aiosmtpd() {
        return;
    }
    let certs = tempfile::tempdir().unwrap();
    gen_test_certs(certs.path());
    let smtp_port = free_port();
    let sink = start_smtp_sink(
        smtp_port,
        &SinkOptions {
            starttls_certs: Some(certs.path()),
            auth: Some("agent:s3cret"),
        },
    );
    let receiver = Receiver::start().await;
    let llm = FakeLlm::start(finding_llm()).await;
    let hooks = format!(
        "[[notify.webhooks]]\nurl = \"{0}/json\"\n\n[[notify.webhooks]]\nurl = \"{0}/slack\"\nformat = \"slack\"\n\n\
         [[notify.webhooks]]\nurl = \"{0}/ntfy\"\nformat = \"ntfy\"\n",
        receiver.base
    );
    // With server.public_url, notifications link to the investigation's console page and
    // say how to give feedback.
    let toml = format!(
        "[server]\npublic_url = \"https://sre.example.org/\"\n{}",
        notify_toml(smtp_port, Some(certs.path()), &llm, &hooks)
    );
    let app = spawn_app(&toml).await;
    post_grafana_alert(&app).await;

    let mail = eventually(Duration::from_secs(30), "the finding email", || async {
        received_mail(&sink).into_iter().next()
    })
    .await;
    let (meta, eml) = mail;
    assert_eq!(meta["tls"], true);
    assert_eq!(meta["auth_login"], "agent");
    assert!(eml.contains("multipart/alternative"), "{eml}");
    assert!(eml.contains("HighErrorRate"), "{eml}");
    assert!(
        eml.contains("viewPanel=3D4") || eml.contains("viewPanel=4"),
        "{eml}"
    );
    assert!(
        eml.contains("&lt;v2&gt;"),
        "alert/finding text is escaped in HTML: {eml}"
    );
    let id = app.state.dispatcher.list(None, 1, None).unwrap().items[0]
        .id
        .clone();
    // The link goes to the console page; the hint names its form and the API endpoint.
    let link = format!("https://sre.example.org/investigations/{id}");
    // Quoted-printable soft line breaks removed.
    let unwrapped = eml.replace("=\r\n", "").replace("=\n", "");
    assert!(
        unwrapped.contains(&format!("href=3D\"{link}\""))
            || unwrapped.contains(&format!("href=\"{link}\"")),
        "{eml}"
    );
    assert!(unwrapped.contains(&format!("{link}#feedback")), "{eml}");
    assert!(
        unwrapped.contains(&format!(
            "https://sre.example.org/api/v1/investigations/{id}/feedback"
        )),
        "{eml}"
    );

    eventually(Duration::from_secs(30), "three webhook posts", || async {
        (receiver.received().len() >= 3).then_some(())
    })
    .await;
    let json = receiver.at("/json").unwrap().json();
    assert_eq!(json["investigation"]["status"], "finished");
    assert!(
        json["finding"]["summary"]
            .as_str()
            .unwrap()
            .contains("bad deploy")
    );
    assert_eq!(json["alert"]["name"], "HighErrorRate");
    let slack = receiver.at("/slack").unwrap().json();
    assert!(slack["text"].as_str().unwrap().contains("bad deploy"));
    assert!(slack["content"].as_str().unwrap().contains("bad deploy"));
    let text = slack["text"].as_str().unwrap();
    assert!(
        text.contains(&format!("- [Investigation]({link})")),
        "{text}"
    );
    assert!(
        text.contains(&format!("investigations feedback {id} right|wrong")),
        "{text}"
    );
    let ntfy = receiver.at("/ntfy").unwrap();
    assert!(ntfy.header("title").unwrap().contains("HighErrorRate"));
    assert_eq!(ntfy.header("priority"), Some("4"));
    assert!(ntfy.header("tags").unwrap().contains("warning"));
    assert!(ntfy.body.contains("bad deploy"));
    let m = app.metrics().await;
    assert_eq!(
        metric_value(
            &m,
            r#"sre_agent_notifications_total{channel="email",status="sent"}"#
        ),
        Some(1.0)
    );
    assert_eq!(
        metric_value(
            &m,
            r#"sre_agent_notifications_total{channel="webhook",status="sent"}"#
        ),
        Some(3.0)
    );
}

#[tokio::test]
async fn an_email_queued_during_an_smtp_outage_is_sent_after_a_restart() {
    if !require_aiosmtpd() {
        return;
    }
    let smtp_port = free_port();
    let llm = FakeLlm::start(finding_llm()).await;
    let toml = notify_toml(smtp_port, None, &llm, "");
    let app = spawn_app(&toml).await;
    post_grafana_alert(&app).await;
    eventually(Duration::from_secs(30), "a retried email", || async {
        let m = app.metrics().await;
        let retries = metric_value(
            &m,
            r#"sre_agent_notifications_total{channel="email",status="retry"}"#,
        );
        (retries.unwrap_or(0.0) >= 1.0).then_some(())
    })
    .await;
    let dir = app.stop().await;

    let sink = start_smtp_sink(smtp_port, &SinkOptions::default());
    let config = crate::support::test_config(dir.path(), &toml);
    let app = crate::support::spawn_app_with(config, dir).await;
    eventually(
        Duration::from_secs(30),
        "the email after the outage",
        || async { (!received_mail(&sink).is_empty()).then_some(()) },
    )
    .await;
    let m = app.metrics().await;
    assert_eq!(
        metric_value(
            &m,
            r#"sre_agent_notifications_total{channel="email",status="sent"}"#
        ),
        Some(1.0)
    );
    assert_eq!(received_mail(&sink).len(), 1, "sent once");
}
