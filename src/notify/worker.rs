//! The outbox worker: attempts each due entry once per pass, removes what was delivered
//! or failed for good, and reschedules the rest with backoff.
//!
//! Delivery is at least once for findings and annotations (a crash after a successful
//! send and before the entry is removed sends it again) and at most once for the weekly
//! report: its entry is marked in flight (flushed) before the SMTP session, and an entry
//! found in flight after a restart is not sent again; its period is recorded as
//! `unconfirmed` with the Message-ID, so a person can look for that message.

use std::time::Duration;

use chrono::{DateTime, TimeDelta, Utc};

use super::email::EmailMessage;
use super::outbox::{Notifier, OutboxEntry, Payload};
use super::report;
use super::report_delivery::ReportCheck;
use super::{Delivered, NotifyError};
use super::{grafana, webhook};
use crate::store::StoreError;

/// Time limit of one webhook POST.
const WEBHOOK_TIMEOUT: Duration = Duration::from_secs(15);

/// When an entry that failed at `now` is tried again: `backoff` later, or at the end of
/// the calendar when that is past it (checked: the backoff comes from the configuration).
fn retry_at(now: DateTime<Utc>, backoff: Duration) -> DateTime<Utc> {
    TimeDelta::from_std(backoff)
        .ok()
        .and_then(|d| now.checked_add_signed(d))
        .unwrap_or(DateTime::<Utc>::MAX_UTC)
}

/// How a failed attempt ends.
struct Failure {
    pub retryable: bool,
    pub error: NotifyError,
}

impl Notifier {
    /// Attempts every due entry once; returns how long until the next one is due.
    pub(super) async fn send_due(&self) -> Result<Duration, StoreError> {
        let inner = &self.inner;
        let now = Utc::now();
        let mut next = Duration::from_secs(60);
        let entries: Vec<_> = inner.outbox.iter().collect::<Result<_, _>>()?;
        for (key, mut entry) in entries {
            if entry.next_attempt_at > now {
                next = next.min((entry.next_attempt_at - now).to_std().unwrap_or_default());
                continue;
            }
            let channel = entry.payload.channel();
            if let Payload::Report(r) = &entry.payload {
                match self.check_report(r, entry.in_flight.is_some())? {
                    ReportCheck::Send => {
                        entry.in_flight = Some(Utc::now());
                        inner.outbox.insert(&key, &entry)?;
                        inner.store.flush().await?;
                    }
                    ReportCheck::Drop => {
                        inner.outbox.remove(&key)?;
                        inner.store.flush().await?;
                        continue;
                    }
                    ReportCheck::Unconfirmed => {
                        self.count(channel, Delivered::Unconfirmed);
                        inner.outbox.remove(&key)?;
                        inner.store.flush().await?;
                        continue;
                    }
                }
            }
            match self.attempt(&entry.payload).await {
                Ok(()) => {
                    self.count(channel, Delivered::Sent);
                    self.delivered(&entry)?;
                    inner.outbox.remove(&key)?;
                    tracing::info!(channel, about = %entry.about, "delivered");
                }
                Err(f) => {
                    let attempts = entry.attempts + 1;
                    if !f.retryable || self.gives_up(&entry, attempts) {
                        self.count(channel, Delivered::Failed);
                        self.failed(&entry, &f.error)?;
                        inner.outbox.remove(&key)?;
                        tracing::error!(channel, attempts, error = %f.error, about = %entry.about, "delivery failed; giving up");
                    } else {
                        self.count(channel, Delivered::Retry);
                        let backoff = self.backoff(attempts);
                        tracing::warn!(channel, attempts, ?backoff, error = %f.error, about = %entry.about, "delivery failed; retrying");
                        next = next.min(backoff);
                        inner.outbox.insert(
                            &key,
                            &OutboxEntry {
                                attempts,
                                next_attempt_at: retry_at(Utc::now(), backoff),
                                last_error: Some(f.error.to_string()),
                                in_flight: None,
                                ..entry
                            },
                        )?;
                    }
                }
            }
            inner.store.flush().await?;
        }
        Ok(next)
    }

    /// Findings and annotations give up after `notify.max_attempts`; a report keeps trying
    /// for a week (until the next one), since it is the week's only copy.
    fn gives_up(&self, entry: &OutboxEntry, attempts: u32) -> bool {
        match entry.payload {
            Payload::Report(_) => Utc::now() - entry.created_at > report::DEADLINE,
            _ => attempts >= self.inner.config.notify.max_attempts.max(1),
        }
    }

    fn delivered(&self, entry: &OutboxEntry) -> Result<(), StoreError> {
        if let (Payload::Report(r), Some(ledger)) = (&entry.payload, &self.inner.reports) {
            ledger.sent(&r.delivery)?;
            self.count_report(&r.delivery, report::ReportStatus::Sent);
            self.inner
                .metrics
                .last_report_timestamp
                .set(Utc::now().timestamp() as f64);
        }
        Ok(())
    }

    fn failed(&self, entry: &OutboxEntry, error: &NotifyError) -> Result<(), StoreError> {
        if let (Payload::Report(r), Some(ledger)) = (&entry.payload, &self.inner.reports) {
            ledger.failed(&r.delivery, &error.to_string())?;
            self.count_report(&r.delivery, report::ReportStatus::Failed);
        }
        Ok(())
    }

    async fn attempt(&self, payload: &Payload) -> Result<(), Failure> {
        let fatal = |error| Failure {
            retryable: false,
            error,
        };
        let retry = |error| Failure {
            retryable: true,
            error,
        };
        match payload {
            Payload::Email(mail) => {
                let mailer = self.inner.mailer.as_ref().ok_or_else(|| {
                    fatal(NotifyError::Config("smtp.host is no longer set".into()))
                })?;
                let msg = EmailMessage {
                    to: mail.to.iter().map(|a| a.0.clone()).collect(),
                    subject: mail.subject.clone(),
                    text: mail.text.clone(),
                    html: Some(mail.html.clone()),
                    inline_images: Vec::new(),
                };
                mailer.send(&msg).await.map_err(retry)
            }
            Payload::Report(r) => {
                let mailer = self.inner.mailer.as_ref().ok_or_else(|| {
                    fatal(NotifyError::Config("smtp.host is no longer set".into()))
                })?;
                let msg = r.message().map_err(fatal)?;
                mailer
                    .send_with_id(&msg, Some(&r.delivery.message_id))
                    .await
                    .map_err(retry)
            }
            Payload::Webhook(req) => webhook::send(&self.inner.http, req, WEBHOOK_TIMEOUT)
                .await
                .map_err(|(status, e)| Failure {
                    retryable: webhook::is_retryable(status),
                    error: e,
                }),
            Payload::Grafana(req) => {
                let client = self.inner.grafana.as_ref().ok_or_else(|| {
                    fatal(NotifyError::Config(
                        "grafana.annotate is no longer set".into(),
                    ))
                })?;
                grafana::send(client, req).await.map_err(|e| Failure {
                    retryable: grafana::is_retryable(&e),
                    error: NotifyError::Upstream(e),
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_retry_beyond_the_calendar_waits_until_its_end_instead_of_panicking() {
        let now = Utc::now();
        assert_eq!(
            retry_at(now, Duration::from_secs(10)),
            now + TimeDelta::seconds(10)
        );
        let far = Duration::from_secs(300_000 * 366 * 86_400);
        assert_eq!(retry_at(now, far), DateTime::<Utc>::MAX_UTC);
        assert_eq!(retry_at(now, Duration::MAX), DateTime::<Utc>::MAX_UTC);
    }
}
