//! The weekly report through the outbox: enqueueing its email once its period is claimed,
//! and the check before each attempt that keeps one period to one email (see `worker.rs`
//! for at most once).

use super::email::EmailMessage;
use super::outbox::{Notifier, OutboxEntry, Payload};
use super::report::{PeriodHolder, ReportDelivery, ReportStatus, StoredReport};
use crate::store::StoreError;

/// What the worker does with a due report entry.
pub(super) enum ReportCheck {
    Send,
    /// Its period (or this very message) already went out.
    Drop,
    /// Found in flight after a restart: not sent again (at most once).
    Unconfirmed,
}

impl Notifier {
    /// Stores the report email `msg` for delivery (flushed) and wakes the worker, once its
    /// period is claimed; when another report holds the period, nothing is stored and that
    /// holder is returned.
    pub async fn enqueue_report(
        &self,
        delivery: ReportDelivery,
        msg: &EmailMessage,
    ) -> Result<Option<PeriodHolder>, StoreError> {
        if let Some(ledger) = &self.inner.reports
            && let Some(holder) = ledger.claim(&delivery)?
        {
            tracing::info!(period = %delivery.period, report = %delivery.report_id, %holder,
                "not queued: the period already has its report email");
            return Ok(Some(holder));
        }
        let about = delivery.report_id.clone();
        let entry = OutboxEntry::new(&about, Payload::Report(StoredReport::new(delivery, msg)));
        self.store_entries(&[entry])?;
        self.inner.store.flush().await?;
        self.wake();
        Ok(None)
    }

    /// Whether a report can be emailed (`smtp.host` set and the outbox running).
    pub fn can_mail(&self) -> bool {
        self.inner.mailer.is_some()
    }

    /// Decides about a due report entry; `in_flight` means a previous attempt never ended.
    pub(super) fn check_report(
        &self,
        r: &StoredReport,
        in_flight: bool,
    ) -> Result<ReportCheck, StoreError> {
        let d = &r.delivery;
        let Some(ledger) = &self.inner.reports else {
            return Ok(ReportCheck::Send);
        };
        if in_flight {
            if let Some(holder) = ledger.holder(&d.period)?
                && holder.went_out
            {
                tracing::info!(period = %d.period, report = %d.report_id, %holder,
                    "the report of this period already went out; not sending it again");
                return Ok(ReportCheck::Drop);
            }
            tracing::warn!(period = %d.period, report = %d.report_id, message_id = %d.message_id,
                "sre-agent stopped while this report was being sent; it is not sent again \
                 (at most once): look for this Message-ID in the recipients' mail");
            ledger.unconfirmed(d)?;
            self.count_report(d, ReportStatus::Unconfirmed);
            return Ok(ReportCheck::Unconfirmed);
        }
        let Some(holder) = ledger.sending(d)? else {
            return Ok(ReportCheck::Send);
        };
        tracing::info!(period = %d.period, report = %d.report_id, %holder,
            "the period already has its report email; not sending this one");
        if holder.message_id != d.message_id {
            ledger.failed(
                d,
                &format!(
                    "not sent: one report email goes out per period, and {} has {holder}",
                    d.period
                ),
            )?;
        }
        Ok(ReportCheck::Drop)
    }
}
