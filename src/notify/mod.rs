//! Notifications: email (`Mailer`) and webhooks (json, slack, ntfy) for investigations that
//! reached a final status, sent from a durable sled outbox with capped exponential retries.

pub mod email;
pub mod outbox;
pub mod templates;
pub mod webhook;

pub use email::{EmailMessage, InlineImage, Mailer};
pub use outbox::Notifier;

use crate::store::StoreError;

/// A notification that could not be sent (or built), or a notifier that could not start.
#[derive(Debug, thiserror::Error)]
pub enum NotifyError {
    #[error("notification setup: {0}")]
    Config(String),
    #[error("notification setup: cannot build the webhook HTTP client: {0}")]
    HttpClient(#[source] reqwest::Error),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("SMTP server {server}: {reason}")]
    Smtp { server: String, reason: String },
    #[error("webhook {url}: {reason}")]
    Webhook { url: String, reason: String },
}
