//! Stored weekly reports (by time-ordered id) and the periods already delivered, so that
//! exactly one report goes out per period, across restarts.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::report::model::Report;
use crate::report::period::ReportPeriod;
use crate::store::{Store, StoreError, Tree};

const REPORTS: &str = "reports";
const PERIODS: &str = "report_periods";

/// A period that was delivered, and by which report.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct DeliveredPeriod {
    pub report_id: String,
    pub at: DateTime<Utc>,
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

    /// Records `period` as delivered and flushes, so a restart does not deliver it again.
    pub async fn mark_delivered(
        &self,
        period: ReportPeriod,
        report_id: &str,
    ) -> Result<(), StoreError> {
        self.periods.insert(
            period.to_string(),
            &DeliveredPeriod {
                report_id: report_id.to_string(),
                at: Utc::now(),
            },
        )?;
        self.periods.flush().await?;
        self.reports.flush().await
    }

    pub fn delivered(&self, period: ReportPeriod) -> Result<Option<DeliveredPeriod>, StoreError> {
        self.periods.get(period.to_string())
    }

    /// When the newest delivered report went out, if any.
    pub fn last_delivered_at(&self) -> Result<Option<DateTime<Utc>>, StoreError> {
        let mut last = None;
        for r in self.periods.iter() {
            let (_, d) = r?;
            last = last.max(Some(d.at));
        }
        Ok(last)
    }
}
