//! Notifications: email (`Mailer`) and webhooks for finished investigations, sent from a
//! durable outbox with retries.

pub mod email;

pub use email::{EmailMessage, InlineImage, Mailer};

/// A notification that could not be sent (or built).
#[derive(Debug, thiserror::Error)]
pub enum NotifyError {
    #[error("notification setup: {0}")]
    Config(String),
    #[error("SMTP server {server}: {reason}")]
    Smtp { server: String, reason: String },
    #[error("webhook {url}: {reason}")]
    Webhook { url: String, reason: String },
}
