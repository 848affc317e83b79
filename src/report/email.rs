//! The report email through `notify::email::Mailer`: multipart/alternative (text + HTML
//! with the charts as inline `cid:` images) under a Message-ID fixed per report, and the
//! direct send with bounded retries of a one-shot command (the daemon uses the outbox).

use std::sync::Arc;
use std::time::Duration;

use super::model::Report;
use super::render::Rendered;
use crate::config::SmtpConfig;
use crate::notify::NotifyError;
use crate::notify::email::{EmailMessage, InlineImage, Mailer};
use crate::telemetry::Metrics;

/// Attempts per report email.
pub const ATTEMPTS: u32 = 3;
const FIRST_BACKOFF: Duration = Duration::from_secs(1);

pub fn message(
    to: Vec<lettre::message::Mailbox>,
    subject: &str,
    rendered: &Rendered,
) -> EmailMessage {
    EmailMessage {
        to,
        subject: subject.to_string(),
        text: rendered.text.clone(),
        html: Some(rendered.html.clone()),
        inline_images: rendered
            .charts
            .iter()
            .map(|c| InlineImage {
                content_id: c.content_id.to_string(),
                png: c.png.clone(),
            })
            .collect(),
    }
}

/// `<sre-agent.report.2026-W47.{report id}@{smtp.from domain}>`: recorded before the
/// first attempt and the same on every attempt.
pub fn message_id(report: &Report, smtp: &SmtpConfig) -> String {
    format!(
        "<sre-agent.report.{}.{}@{}>",
        report.window.period,
        report.id,
        smtp.from.0.email.domain()
    )
}

/// Sends `msg` with retries; the last error on failure.
pub async fn send(
    smtp: &SmtpConfig,
    metrics: Arc<Metrics>,
    msg: &EmailMessage,
    message_id: &str,
) -> Result<(), NotifyError> {
    let mailer = Mailer::new(smtp)?.with_metrics(metrics);
    mailer
        .send_with_retries_as(msg, Some(message_id), ATTEMPTS, FIRST_BACKOFF)
        .await
}
