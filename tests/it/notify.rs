//! Notifications against real services: the Mailer through smtp_sink.py with STARTTLS
//! (trusting the test CA via smtp.ca_file) and AUTH.

use std::time::Duration;

use sre_agent::config::{EmailAddress, HumanDuration, Secret, SmtpConfig, SmtpSecurity};
use sre_agent::notify::{EmailMessage, InlineImage, Mailer};

use crate::support::mail::{
    SinkOptions, gen_test_certs, received_mail, require_aiosmtpd, start_smtp_sink,
};
use crate::support::{eventually, free_port};

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
