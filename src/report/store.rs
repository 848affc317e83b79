//! Stored weekly reports (by time-ordered id) and the ledger of periods: which report holds
//! each period, queued, being sent (with the Message-ID), sent, or unconfirmed (a restart
//! interrupted the SMTP session), so that at most one report email goes out per period,
//! across restarts and however the reports of a period race. A period is claimed and taken
//! for sending with one atomic read-modify-write of its record. The notifier's outbox
//! records its deliveries here through [`ReportLedger`].

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::notify::{PeriodHolder, ReportDelivery, ReportLedger};
use crate::report::model::{Report, ReportStatus};
use crate::report::period::ReportPeriod;
use crate::store::{Store, StoreError, Tree};

const REPORTS: &str = "reports";
const PERIODS: &str = "report_periods";

/// Where the report of a period is on its way out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PeriodState {
    Queued,
    Sending,
    Sent,
    Unconfirmed,
}

/// The report of a period: which one, its Message-ID, its state and when it got there.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct DeliveredPeriod {
    pub report_id: String,
    pub at: DateTime<Utc>,
    pub state: PeriodState,
    pub message_id: String,
}

impl DeliveredPeriod {
    /// Sent, or maybe sent: another report of the period must not go out.
    fn went_out(&self) -> bool {
        matches!(self.state, PeriodState::Sent | PeriodState::Unconfirmed)
    }

    /// Whether this is the record of `d`.
    fn is_of(&self, d: &ReportDelivery) -> bool {
        self.message_id == d.message_id
    }

    fn holder(&self) -> PeriodHolder {
        PeriodHolder {
            report_id: self.report_id.clone(),
            message_id: self.message_id.clone(),
            state: match self.state {
                PeriodState::Queued => "queued",
                PeriodState::Sending => "being sent",
                PeriodState::Sent => "sent",
                PeriodState::Unconfirmed => "unconfirmed",
            },
            went_out: self.went_out(),
        }
    }
}

/// Typed access to the report trees.
#[derive(Clone)]
pub struct ReportStore {
    reports: Tree<Report>,
    periods: Tree<DeliveredPeriod>,
}

impl ReportStore {
    pub fn open(store: &Store) -> Result<Self, StoreError> {
        Ok(Self {
            reports: store.tree(REPORTS)?,
            periods: store.tree(PERIODS)?,
        })
    }

    pub fn save(&self, report: &Report) -> Result<(), StoreError> {
        self.reports.insert(&report.id, report)
    }

    pub fn get(&self, id: &str) -> Result<Option<Report>, StoreError> {
        self.reports.get(id)
    }

    /// The newest `limit` reports, newest first.
    pub fn list(&self, limit: usize) -> Result<Vec<Report>, StoreError> {
        self.reports
            .iter()
            .rev()
            .take(limit)
            .map(|r| r.map(|(_, v)| v))
            .collect()
    }

    /// Removes reports generated before `cutoff`, keeping the newest one (it is the
    /// baseline of next week's changes). Delivered-period marks are kept: they are tiny
    /// and are what stops a second report for a period.
    pub fn sweep(&self, cutoff: DateTime<Utc>) -> Result<usize, StoreError> {
        let mut old = Vec::new();
        for r in self.reports.iter().rev().skip(1) {
            let (key, report) = r?;
            if report.created_at < cutoff {
                old.push(key);
            }
        }
        for key in &old {
            self.reports.remove(key)?;
        }
        Ok(old.len())
    }

    /// The newest report of a period before `period`, for week-over-week changes.
    pub fn previous(&self, period: ReportPeriod) -> Result<Option<Report>, StoreError> {
        for r in self.reports.iter().rev() {
            let (_, report) = r?;
            if report.window.period < period {
                return Ok(Some(report));
            }
        }
        Ok(None)
    }

    /// Makes the reports and the period ledger durable.
    pub async fn flush(&self) -> Result<(), StoreError> {
        self.periods.flush().await?;
        self.reports.flush().await
    }

    /// The report of `period` that is queued, being sent, sent or unconfirmed: while there
    /// is one, no other is generated for the period.
    pub fn delivered(&self, period: ReportPeriod) -> Result<Option<DeliveredPeriod>, StoreError> {
        self.periods.get(period.to_string())
    }

    /// When the newest delivered report went out, if any.
    pub fn last_delivered_at(&self) -> Result<Option<DateTime<Utc>>, StoreError> {
        let mut last = None;
        for r in self.periods.iter() {
            let (_, d) = r?;
            if d.state == PeriodState::Sent {
                last = last.max(Some(d.at));
            }
        }
        Ok(last)
    }

    /// Sets the period record of `d` to `state`, unless another report of the period
    /// already went out.
    fn set_period(&self, d: &ReportDelivery, state: PeriodState) -> Result<(), StoreError> {
        self.take_period(d, state, |p| p.went_out() && !p.is_of(d))
            .map(drop)
    }

    /// Sets the period record of `d` to `state` unless `keep(record)`: then the record
    /// stays and its holder is returned. One atomic read-modify-write (sled retries it
    /// when another writer got there first), so two reports racing for a period cannot
    /// both take it.
    fn take_period(
        &self,
        d: &ReportDelivery,
        state: PeriodState,
        keep: impl Fn(&DeliveredPeriod) -> bool,
    ) -> Result<Option<PeriodHolder>, StoreError> {
        let mut kept = None;
        self.periods.update(&d.period, |old| {
            kept = None;
            match old {
                Some(p) if keep(&p) => {
                    kept = Some(p.holder());
                    Some(p)
                }
                _ => Some(DeliveredPeriod {
                    report_id: d.report_id.clone(),
                    at: Utc::now(),
                    state,
                    message_id: d.message_id.clone(),
                }),
            }
        })?;
        Ok(kept)
    }

    fn set_status(
        &self,
        report_id: &str,
        status: ReportStatus,
        error: Option<&str>,
    ) -> Result<(), StoreError> {
        self.reports.update(report_id, |old| {
            old.map(|mut r| {
                r.status = status;
                r.delivery_error = error.map(str::to_string);
                r
            })
        })?;
        Ok(())
    }
}

impl ReportLedger for ReportStore {
    fn claim(&self, d: &ReportDelivery) -> Result<Option<PeriodHolder>, StoreError> {
        let held = self.take_period(d, PeriodState::Queued, |p| !p.is_of(d))?;
        if held.is_none() {
            self.set_status(&d.report_id, ReportStatus::Queued, None)?;
        }
        Ok(held)
    }

    fn holder(&self, period: &str) -> Result<Option<PeriodHolder>, StoreError> {
        Ok(self.periods.get(period)?.map(|p| p.holder()))
    }

    fn sending(&self, d: &ReportDelivery) -> Result<Option<PeriodHolder>, StoreError> {
        self.take_period(d, PeriodState::Sending, |p| !p.is_of(d) || p.went_out())
    }

    fn sent(&self, d: &ReportDelivery) -> Result<(), StoreError> {
        self.set_period(d, PeriodState::Sent)?;
        self.set_status(&d.report_id, ReportStatus::Sent, None)
    }

    fn failed(&self, d: &ReportDelivery, error: &str) -> Result<(), StoreError> {
        // The period is free again: the next start's catch-up may generate it anew.
        self.periods
            .update(&d.period, |old| old.filter(|p| p.went_out() || !p.is_of(d)))?;
        self.set_status(&d.report_id, ReportStatus::Failed, Some(error))
    }

    fn unconfirmed(&self, d: &ReportDelivery) -> Result<(), StoreError> {
        self.set_period(d, PeriodState::Unconfirmed)?;
        self.set_status(
            &d.report_id,
            ReportStatus::Unconfirmed,
            Some(&format!(
                "sre-agent stopped while sending this report (Message-ID {}); it may have \
                 gone out and is not sent again",
                d.message_id
            )),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::model::ReportTrigger;

    fn delivery(id: &str) -> ReportDelivery {
        ReportDelivery {
            report_id: id.into(),
            period: "2026-W47".into(),
            message_id: format!("<{id}@example.org>"),
            trigger: ReportTrigger::Schedule,
        }
    }

    fn open() -> (tempfile::TempDir, ReportStore) {
        let dir = tempfile::tempdir().unwrap();
        let store = ReportStore::open(&Store::open(dir.path()).unwrap()).unwrap();
        (dir, store)
    }

    fn held_by(h: Option<PeriodHolder>) -> Option<String> {
        h.map(|h| h.report_id)
    }

    #[test]
    fn the_ledger_keeps_the_period_that_went_out_and_frees_one_that_failed() {
        let (_dir, store) = open();
        let (a, b) = (delivery("a"), delivery("b"));
        assert_eq!(store.claim(&a).unwrap(), None);
        assert_eq!(
            held_by(store.claim(&a).unwrap()),
            None,
            "a claim is idempotent"
        );
        assert!(!store.holder("2026-W47").unwrap().unwrap().went_out);
        assert_eq!(store.sending(&a).unwrap(), None);
        store.sent(&a).unwrap();
        let h = store.holder("2026-W47").unwrap().unwrap();
        assert!(h.went_out);
        assert_eq!(h.message_id, "<a@example.org>");
        // Another report of the period neither claims, nor sends, nor frees it.
        assert_eq!(held_by(store.claim(&b).unwrap()).as_deref(), Some("a"));
        assert_eq!(held_by(store.sending(&b).unwrap()).as_deref(), Some("a"));
        store.failed(&b, "smtp down").unwrap();
        let p = store.periods.get("2026-W47").unwrap().unwrap();
        assert_eq!((p.state, p.report_id.as_str()), (PeriodState::Sent, "a"));
        // Nor is `a` sent twice.
        assert_eq!(held_by(store.sending(&a).unwrap()).as_deref(), Some("a"));
        // A queued report given up frees its period for the next catch-up.
        let c = ReportDelivery {
            period: "2026-W48".into(),
            ..delivery("c")
        };
        store.claim(&c).unwrap();
        assert!(store.periods.get("2026-W48").unwrap().is_some());
        store.failed(&c, "smtp down").unwrap();
        assert!(store.periods.get("2026-W48").unwrap().is_none());
        // Interrupted mid-send: kept as unconfirmed, which blocks a second report.
        let d = ReportDelivery {
            period: "2026-W49".into(),
            ..delivery("d")
        };
        store.sending(&d).unwrap();
        store.unconfirmed(&d).unwrap();
        let e = ReportDelivery {
            period: "2026-W49".into(),
            ..delivery("e")
        };
        assert_eq!(held_by(store.claim(&e).unwrap()).as_deref(), Some("d"));
        assert!(store.last_delivered_at().unwrap().is_some());
    }

    #[test]
    fn of_many_reports_claiming_one_period_at_once_exactly_one_holds_it() {
        for _ in 0..20 {
            let (_dir, store) = open();
            let winners: Vec<bool> = std::thread::scope(|s| {
                let handles: Vec<_> = (0..8)
                    .map(|i| {
                        let store = store.clone();
                        s.spawn(move || store.claim(&delivery(&format!("r{i}"))).unwrap().is_none())
                    })
                    .collect();
                handles.into_iter().map(|h| h.join().unwrap()).collect()
            });
            assert_eq!(winners.iter().filter(|w| **w).count(), 1, "{winners:?}");
        }
    }
}
