//! Delivery of a rendered report by email: multipart/alternative (text + HTML with the
//! charts as inline `cid:` images), with bounded retries.
//!
//! Uses lettre directly with the `[smtp]` settings; `notify::email::Mailer` (branch
//! `alerts`) takes this over once merged.

use std::time::Duration;

use lettre::message::header::ContentType;
use lettre::message::{Attachment, Mailbox, MultiPart, SinglePart};
use lettre::transport::smtp::authentication::Credentials;
use lettre::transport::smtp::client::{Certificate, Tls, TlsParameters};
use lettre::{AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};

use super::render::Rendered;
use crate::config::{SmtpConfig, SmtpSecurity};
use crate::telemetry::Metrics;

/// Attempts per report email.
pub const ATTEMPTS: u32 = 3;

pub fn build_message(
    smtp: &SmtpConfig,
    to: &[Mailbox],
    subject: &str,
    rendered: &Rendered,
) -> Result<Message, String> {
    let mut related = MultiPart::related().singlepart(SinglePart::html(rendered.html.clone()));
    for c in &rendered.charts {
        related = related.singlepart(Attachment::new_inline(c.content_id.to_string()).body(
            c.png.clone(),
            ContentType::parse("image/png").expect("valid MIME type"),
        ));
    }
    let mut builder = Message::builder()
        .from(smtp.from.0.clone())
        .subject(subject);
    for m in to {
        builder = builder.to(m.clone());
    }
    builder
        .multipart(
            MultiPart::alternative()
                .singlepart(SinglePart::plain(rendered.markdown.clone()))
                .multipart(related),
        )
        .map_err(|e| format!("cannot build the report email: {e}"))
}

fn transport(smtp: &SmtpConfig) -> Result<AsyncSmtpTransport<Tokio1Executor>, String> {
    let host = smtp.host.clone().ok_or("smtp.host is not set")?;
    let server = format!("SMTP server {host}:{}", smtp.port);
    let mut tls = TlsParameters::builder(host.clone());
    if let Some(ca) = &smtp.ca_file {
        let pem = std::fs::read(ca)
            .map_err(|e| format!("cannot read smtp.ca_file {}: {e}", ca.display()))?;
        let cert = Certificate::from_pem(&pem)
            .map_err(|e| format!("smtp.ca_file {} is not PEM: {e}", ca.display()))?;
        tls = tls.add_root_certificate(cert);
    }
    let tls = tls
        .build_rustls()
        .map_err(|e| format!("{server}: TLS setup: {e}"))?;
    let mut builder = AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous(host)
        .port(smtp.port)
        .timeout(Some(smtp.timeout.get()))
        .tls(match smtp.security {
            SmtpSecurity::Starttls => Tls::Required(tls),
            SmtpSecurity::Tls => Tls::Wrapper(tls),
            SmtpSecurity::None => Tls::None,
        });
    if let Some(user) = &smtp.username {
        let password = smtp
            .password
            .as_ref()
            .map(|p| p.expose().to_string())
            .unwrap_or_default();
        builder = builder.credentials(Credentials::new(user.clone(), password));
    }
    Ok(builder.build())
}

/// Sends `message`, retrying with a doubling backoff; the last error on failure.
pub async fn send(smtp: &SmtpConfig, metrics: &Metrics, message: &Message) -> Result<(), String> {
    let transport = transport(smtp)?;
    let server = format!(
        "SMTP server {}:{}",
        smtp.host.as_deref().unwrap_or_default(),
        smtp.port
    );
    let mut backoff = Duration::from_secs(1);
    let mut last = String::new();
    for attempt in 1..=ATTEMPTS {
        match transport.send(message.clone()).await {
            Ok(_) => {
                metrics
                    .notifications
                    .with_label_values(&["email", "ok"])
                    .inc();
                return Ok(());
            }
            Err(e) => {
                metrics
                    .notifications
                    .with_label_values(&["email", "error"])
                    .inc();
                last = format!("{server}: {e}");
                tracing::warn!(attempt, error = %last, "report email failed");
                if attempt < ATTEMPTS {
                    tokio::time::sleep(backoff).await;
                    backoff *= 2;
                }
            }
        }
    }
    Err(last)
}
