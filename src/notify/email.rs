//! `Mailer`: sends an `EmailMessage` (plain text + optional HTML alternative, optional
//! inline PNG images referenced by `cid:`) over SMTP with lettre: STARTTLS, implicit TLS or
//! none; AUTH when `smtp.username` is set; `smtp.ca_file` added to the trusted roots.

use std::sync::Arc;
use std::time::Duration;

use lettre::message::header::ContentType;
use lettre::message::{Attachment, Mailbox, MultiPart, SinglePart};
use lettre::transport::smtp::authentication::Credentials;
use lettre::transport::smtp::client::{Certificate, Tls, TlsParameters};
use lettre::{AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};

use super::{Delivered, NotifyError};
use crate::config::{SmtpConfig, SmtpSecurity};
use crate::telemetry::Metrics;

/// An image shown inline in the HTML part as `<img src="cid:{content_id}">`.
#[derive(Clone, Debug)]
pub struct InlineImage {
    pub content_id: String,
    pub png: Vec<u8>,
}

/// One email to send.
#[derive(Clone, Debug)]
pub struct EmailMessage {
    pub to: Vec<Mailbox>,
    pub subject: String,
    pub text: String,
    pub html: Option<String>,
    pub inline_images: Vec<InlineImage>,
}

/// An SMTP client built from `[smtp]`. Cheap to clone.
#[derive(Clone)]
pub struct Mailer {
    transport: AsyncSmtpTransport<Tokio1Executor>,
    from: Mailbox,
    server: String,
    metrics: Option<Arc<Metrics>>,
}

impl Mailer {
    /// Builds the transport; fails when `smtp.host` is unset or `smtp.ca_file` is unreadable.
    pub fn new(config: &SmtpConfig) -> Result<Mailer, NotifyError> {
        crate::install_crypto_provider();
        let host = config
            .host
            .clone()
            .filter(|h| !h.trim().is_empty())
            .ok_or_else(|| NotifyError::Config("smtp.host is not set".into()))?;
        let server = format!("{host}:{}", config.port);
        let tls = match config.security {
            SmtpSecurity::None => Tls::None,
            SmtpSecurity::Starttls => Tls::Required(tls_parameters(config, &host)?),
            SmtpSecurity::Tls => Tls::Wrapper(tls_parameters(config, &host)?),
        };
        let mut builder = AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous(host.as_str())
            .port(config.port)
            .tls(tls)
            .timeout(Some(config.timeout.get()));
        if let Some(user) = &config.username {
            let password = config
                .password
                .as_ref()
                .map(|p| p.expose().to_string())
                .unwrap_or_default();
            builder = builder.credentials(Credentials::new(user.clone(), password));
        }
        Ok(Mailer {
            transport: builder.build(),
            from: config.from.0.clone(),
            server,
            metrics: None,
        })
    }

    /// Counts sends in `sre_agent_notifications_total{channel="email",status}`.
    pub fn with_metrics(mut self, metrics: Arc<Metrics>) -> Self {
        self.metrics = Some(metrics);
        self
    }

    /// Sends once (bounded by `smtp.timeout`).
    pub async fn send(&self, msg: &EmailMessage) -> Result<(), NotifyError> {
        self.send_with_id(msg, None).await
    }

    /// Sends once with the `Message-ID` header `message_id` (`<…@domain>`; None: a
    /// random one), so the id recorded before sending is the one recipients see.
    pub async fn send_with_id(
        &self,
        msg: &EmailMessage,
        message_id: Option<&str>,
    ) -> Result<(), NotifyError> {
        let result = self.try_send(msg, message_id).await;
        self.count(if result.is_ok() {
            Delivered::Sent
        } else {
            Delivered::Failed
        });
        result
    }

    /// The domain of `smtp.from`, for Message-IDs.
    pub fn from_domain(&self) -> String {
        self.from.email.domain().to_string()
    }

    /// Sends, retrying failures `attempts` times in all with doubling backoff (capped at 5 min).
    pub async fn send_with_retries(
        &self,
        msg: &EmailMessage,
        attempts: u32,
        first_backoff: Duration,
    ) -> Result<(), NotifyError> {
        self.send_with_retries_as(msg, None, attempts, first_backoff)
            .await
    }

    /// [`Self::send_with_retries`] with a chosen `Message-ID` (the same on every attempt).
    pub async fn send_with_retries_as(
        &self,
        msg: &EmailMessage,
        message_id: Option<&str>,
        attempts: u32,
        first_backoff: Duration,
    ) -> Result<(), NotifyError> {
        let attempts = attempts.max(1);
        let mut backoff = first_backoff;
        for attempt in 1..=attempts {
            match self.try_send(msg, message_id).await {
                Ok(()) => {
                    self.count(Delivered::Sent);
                    return Ok(());
                }
                Err(e) if attempt < attempts => {
                    self.count(Delivered::Retry);
                    tracing::warn!(error = %e, attempt, ?backoff, "email failed; retrying");
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(Duration::from_secs(300));
                }
                Err(e) => {
                    self.count(Delivered::Failed);
                    return Err(e);
                }
            }
        }
        unreachable!("the loop returns on its last attempt")
    }

    async fn try_send(
        &self,
        msg: &EmailMessage,
        message_id: Option<&str>,
    ) -> Result<(), NotifyError> {
        let message = build_message_with_id(&self.from, msg, message_id)?;
        self.transport
            .send(message)
            .await
            .map(|_| ())
            .map_err(|e| NotifyError::Smtp {
                server: self.server.clone(),
                reason: error_chain(&e),
            })
    }

    fn count(&self, status: Delivered) {
        if let Some(m) = &self.metrics {
            m.notifications
                .with_label_values(&[super::Channel::Email.label(), status.label()])
                .inc();
        }
    }
}

fn tls_parameters(config: &SmtpConfig, host: &str) -> Result<TlsParameters, NotifyError> {
    let mut builder = TlsParameters::builder(host.to_string());
    if let Some(path) = &config.ca_file {
        let pem = std::fs::read(path).map_err(|e| {
            NotifyError::Config(format!("cannot read smtp.ca_file {}: {e}", path.display()))
        })?;
        let cert = Certificate::from_pem(&pem).map_err(|e| {
            NotifyError::Config(format!("smtp.ca_file {} is not PEM: {e}", path.display()))
        })?;
        builder = builder.add_root_certificate(cert);
    }
    builder
        .build_rustls()
        .map_err(|e| NotifyError::Config(format!("TLS setup for {host}: {e}")))
}

/// The MIME message: text/plain, or multipart/alternative with HTML; images make the HTML
/// part multipart/related with `Content-ID`s.
pub fn build_message(from: &Mailbox, msg: &EmailMessage) -> Result<Message, NotifyError> {
    build_message_with_id(from, msg, None)
}

/// [`build_message`] with a chosen `Message-ID` (None: a random one).
pub fn build_message_with_id(
    from: &Mailbox,
    msg: &EmailMessage,
    message_id: Option<&str>,
) -> Result<Message, NotifyError> {
    if msg.to.is_empty() {
        return Err(NotifyError::Config("email has no recipients".into()));
    }
    let mut builder = Message::builder()
        .from(from.clone())
        .subject(msg.subject.clone())
        .message_id(message_id.map(str::to_string));
    for to in &msg.to {
        builder = builder.to(to.clone());
    }
    let text = SinglePart::plain(msg.text.clone());
    let message = match &msg.html {
        None => builder.singlepart(text),
        Some(html) => {
            let html = SinglePart::html(html.clone());
            let html_part = if msg.inline_images.is_empty() {
                MultiPart::alternative().singlepart(text).singlepart(html)
            } else {
                let mut related = MultiPart::related().singlepart(html);
                for img in &msg.inline_images {
                    related =
                        related.singlepart(Attachment::new_inline(img.content_id.clone()).body(
                            img.png.clone(),
                            ContentType::parse("image/png").expect("valid"),
                        ));
                }
                MultiPart::alternative().singlepart(text).multipart(related)
            };
            builder.multipart(html_part)
        }
    };
    message.map_err(|e| NotifyError::Config(format!("cannot build email: {e}")))
}

fn error_chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        out.push_str(": ");
        out.push_str(&s.to_string());
        source = s.source();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(html: Option<&str>, images: usize) -> String {
        let msg = EmailMessage {
            to: vec!["ops@example.org".parse().unwrap()],
            subject: "Finding: disk full".into(),
            text: "plain body".into(),
            html: html.map(String::from),
            inline_images: (0..images)
                .map(|i| InlineImage {
                    content_id: format!("chart{i}"),
                    png: vec![0x89, b'P', b'N', b'G'],
                })
                .collect(),
        };
        let from: Mailbox = "sre-agent <sre@example.org>".parse().unwrap();
        String::from_utf8(build_message(&from, &msg).unwrap().formatted()).unwrap()
    }

    #[test]
    fn a_text_only_email_is_a_single_plain_part() {
        let raw = message(None, 0);
        assert!(raw.contains("Content-Type: text/plain"), "{raw}");
        assert!(!raw.contains("multipart"), "{raw}");
    }

    #[test]
    fn html_makes_a_multipart_alternative_with_text_first() {
        let raw = message(Some("<p>html body</p>"), 0);
        assert!(raw.contains("multipart/alternative"), "{raw}");
        let text = raw.find("text/plain").unwrap();
        let html = raw.find("text/html").unwrap();
        assert!(text < html);
    }

    #[test]
    fn inline_images_are_related_parts_with_content_ids() {
        let raw = message(Some("<img src=\"cid:chart0\">"), 2);
        assert!(raw.contains("multipart/related"), "{raw}");
        assert!(raw.contains("Content-ID: <chart0>"), "{raw}");
        assert!(raw.contains("Content-ID: <chart1>"), "{raw}");
        assert!(raw.contains("image/png"), "{raw}");
    }

    #[test]
    fn a_chosen_message_id_is_the_header() {
        let from: Mailbox = "a@example.org".parse().unwrap();
        let msg = EmailMessage {
            to: vec!["ops@example.org".parse().unwrap()],
            subject: "s".into(),
            text: "t".into(),
            html: None,
            inline_images: vec![],
        };
        let raw = build_message_with_id(&from, &msg, Some("<r1.2026-W47@example.org>"))
            .unwrap()
            .formatted();
        let raw = String::from_utf8(raw).unwrap();
        assert!(
            raw.contains("Message-ID: <r1.2026-W47@example.org>"),
            "{raw}"
        );
    }

    #[test]
    fn an_email_without_recipients_is_refused() {
        let from: Mailbox = "a@b.c".parse().unwrap();
        let msg = EmailMessage {
            to: vec![],
            subject: "s".into(),
            text: "t".into(),
            html: None,
            inline_images: vec![],
        };
        assert!(build_message(&from, &msg).is_err());
    }
}
