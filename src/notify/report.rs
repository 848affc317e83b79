//! The weekly report as an outbox delivery: the built email (subject, text, HTML, inline
//! chart images) is stored with a Message-ID chosen up front, then sent by the worker with
//! its retries. Who records the outcome (the report store) implements [`ReportLedger`]. One
//! report email per period, whatever asked for it (schedule, catch-up, API): a report
//! claims its period atomically before it enters the outbox, and a report whose period
//! another one holds (queued, being sent, sent or unconfirmed) is not queued; before each
//! attempt the claim is checked again, so entries from before the claim existed cannot
//! make a second email either.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use chrono::TimeDelta;
use serde::{Deserialize, Serialize};

use super::NotifyError;
use super::email::{EmailMessage, InlineImage};
use crate::config::EmailAddress;
use crate::store::StoreError;

crate::telemetry::labelled! {
    /// What started a report (the `trigger` label of `sre_agent_reports_total`).
    #[derive(Serialize, Deserialize, utoipa::ToSchema)]
    #[serde(rename_all = "lowercase")]
    pub enum ReportTrigger {
        Schedule => "schedule",
        Catchup => "catchup",
        Api => "api",
        Cli => "cli",
    }
}

crate::telemetry::labelled! {
    /// Delivery state of a stored report (the `status` label of `sre_agent_reports_total`,
    /// once counted).
    #[derive(Serialize, Deserialize, utoipa::ToSchema)]
    #[serde(rename_all = "lowercase")]
    pub enum ReportStatus {
        Generated => "generated",
        /// Stored in the outbox, waiting for (or between) delivery attempts.
        Queued => "queued",
        Sent => "sent",
        Failed => "failed",
        /// sre-agent stopped during the SMTP session: it may have gone out (not resent).
        Unconfirmed => "unconfirmed",
    }
}

impl ReportStatus {
    /// Whether a report built into this state is counted in `sre_agent_reports_total` now;
    /// a queued one is counted by the outbox once its delivery ends.
    pub fn counted(self) -> bool {
        self != Self::Queued
    }
}

/// A report that could not be delivered for this long is given up (the next week's
/// report is due by then).
pub const DEADLINE: TimeDelta = TimeDelta::days(7);

/// Which report for which period, under which Message-ID.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ReportDelivery {
    pub report_id: String,
    /// The period key, e.g. `2026-W47`.
    pub period: String,
    /// The `Message-ID` header, `<…@domain>`, recorded before the first attempt.
    pub message_id: String,
    /// What built it: the `trigger` label of `sre_agent_reports_total`, counted when the
    /// delivery ends.
    pub trigger: ReportTrigger,
}

/// An inline image, base64 in the stored entry.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StoredImage {
    pub content_id: String,
    pub png_base64: String,
}

/// The report email as stored in the outbox.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StoredReport {
    pub delivery: ReportDelivery,
    pub to: Vec<EmailAddress>,
    pub subject: String,
    pub text: String,
    pub html: String,
    pub images: Vec<StoredImage>,
}

impl StoredReport {
    /// Stores `msg` (its images as base64).
    pub fn new(delivery: ReportDelivery, msg: &EmailMessage) -> Self {
        Self {
            delivery,
            to: msg.to.iter().cloned().map(EmailAddress).collect(),
            subject: msg.subject.clone(),
            text: msg.text.clone(),
            html: msg.html.clone().unwrap_or_default(),
            images: msg
                .inline_images
                .iter()
                .map(|i| StoredImage {
                    content_id: i.content_id.clone(),
                    png_base64: STANDARD.encode(&i.png),
                })
                .collect(),
        }
    }

    /// The email to send.
    pub fn message(&self) -> Result<EmailMessage, NotifyError> {
        let inline_images = self
            .images
            .iter()
            .map(|i| {
                STANDARD
                    .decode(&i.png_base64)
                    .map(|png| InlineImage {
                        content_id: i.content_id.clone(),
                        png,
                    })
                    .map_err(|e| {
                        NotifyError::Config(format!("stored report image {}: {e}", i.content_id))
                    })
            })
            .collect::<Result<_, _>>()?;
        Ok(EmailMessage {
            to: self.to.iter().map(|a| a.0.clone()).collect(),
            subject: self.subject.clone(),
            text: self.text.clone(),
            html: Some(self.html.clone()),
            inline_images,
        })
    }
}

/// The report that holds a period: the one email of that period is, or was, its.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PeriodHolder {
    pub report_id: String,
    pub message_id: String,
    /// `queued`, `sending`, `sent` or `unconfirmed`.
    pub state: &'static str,
    /// Sent, or maybe sent (unconfirmed).
    pub went_out: bool,
}

impl std::fmt::Display for PeriodHolder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "report {} ({}, Message-ID {})",
            self.report_id, self.state, self.message_id
        )
    }
}

/// Where report deliveries are recorded (the report store): per period, the one report
/// that holds it. Writes are flushed by the notifier.
pub trait ReportLedger: Send + Sync {
    /// Claims `d.period` for `d`, queued, unless another report holds it: then nothing
    /// changes and that holder is returned. Atomic: of two claims of a period, one wins.
    fn claim(&self, d: &ReportDelivery) -> Result<Option<PeriodHolder>, StoreError>;
    /// The report holding `period`, if any.
    fn holder(&self, period: &str) -> Result<Option<PeriodHolder>, StoreError>;
    /// An attempt to send `d` starts: the period becomes `d`'s, being sent, unless another
    /// report holds it or `d` already went out (then nothing changes and that holder is
    /// returned). Atomic like [`Self::claim`].
    fn sending(&self, d: &ReportDelivery) -> Result<Option<PeriodHolder>, StoreError>;
    /// The SMTP server accepted `d`.
    fn sent(&self, d: &ReportDelivery) -> Result<(), StoreError>;
    /// `d` was given up with `error`; its period is free again if `d` held it.
    fn failed(&self, d: &ReportDelivery, error: &str) -> Result<(), StoreError>;
    /// The process stopped during an attempt of `d`: it may or may not have gone out.
    fn unconfirmed(&self, d: &ReportDelivery) -> Result<(), StoreError>;
}
