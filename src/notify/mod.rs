//! Deliveries from one durable outbox: finding notifications (email `Mailer`, webhooks
//! json/slack/ntfy) for investigations that reached a final status, the weekly report
//! email, and Grafana annotations (`grafana.annotate`), each sent with capped exponential
//! retries that survive restarts.
//!
//! - [`outbox`]: the stored entries and the `Notifier`.
//! - [`investigation_entries`]: final investigations (from the store's finished index) to
//!   entries.
//! - [`worker`]: sending due entries, retries, at-most-once reports.
//! - [`report`]: the report email as an entry, and the ledger of report periods;
//!   `report_delivery.rs` enqueues it and checks its period before each attempt.
//! - [`grafana`]: the annotation of a finding on the alert's dashboard panel.
//! - [`markup`]: untrusted text made inert per channel, and the one check links pass.

mod channel;
pub mod email;
pub mod grafana;
pub mod investigation_entries;
pub mod markup;
pub mod outbox;
pub mod report;
mod report_delivery;
pub mod templates;
pub mod webhook;
mod worker;

pub use channel::{Channel, Delivered};
pub use email::{EmailMessage, InlineImage, Mailer};
pub use markup::safe_url;
pub use outbox::Notifier;
pub use report::{PeriodHolder, ReportDelivery, ReportLedger};

use crate::integrations::UpstreamError;
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
    /// An upstream (Grafana) error: names the service, the redacted URL and the status.
    #[error(transparent)]
    Upstream(#[from] UpstreamError),
}
