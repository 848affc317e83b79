//! Delivery of a rendered report through `notify::email::Mailer`: multipart/alternative
//! (text + HTML with the charts as inline `cid:` images), with bounded retries.

use std::sync::Arc;
use std::time::Duration;

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

/// Sends `msg` with retries; the last error on failure.
pub async fn send(
    smtp: &SmtpConfig,
    metrics: Arc<Metrics>,
    msg: &EmailMessage,
) -> Result<(), NotifyError> {
    let mailer = Mailer::new(smtp)?.with_metrics(metrics);
    mailer.send_with_retries(msg, ATTEMPTS, FIRST_BACKOFF).await
}
