//! The retention sweep: removes what is older than `store.retention_days` (0 keeps
//! everything) from every part's store, hourly.

use std::time::Duration;

use chrono::{DateTime, TimeDelta, Utc};
use tokio_util::sync::CancellationToken;

use super::AppState;
use crate::store::StoreError;

/// How often old data is removed.
const SWEEP_EVERY: Duration = Duration::from_secs(3600);

/// Removes final investigations with their timelines, received alerts and quiet alert
/// groups, stored reports (but the newest), and the outbox's record of what was notified.
pub async fn run(state: AppState, token: CancellationToken) {
    let days = state.config.store.retention_days;
    if days == 0 {
        return;
    }
    loop {
        let Some(cutoff) = cutoff(chrono::Utc::now(), days) else {
            tracing::warn!(
                days,
                "store.retention_days reaches before the calendar; nothing is removed"
            );
            return;
        };
        let swept = (|| -> Result<[usize; 5], StoreError> {
            let investigations = state.dispatcher.sweep(cutoff)?;
            let (alerts, groups) = state.intake.store().sweep(cutoff)?;
            let reports = state.reports.store().sweep(cutoff)?;
            let notified = state.notifier.as_ref().map_or(Ok(0), |n| n.sweep(cutoff))?;
            Ok([investigations, alerts, groups, reports, notified])
        })();
        let swept = match (swept, state.intake.sweep_storms(cutoff).await) {
            (Ok(counts), Ok(storms)) => {
                if storms > 0 {
                    tracing::info!(storms, %cutoff, "removed alert storms older than store.retention_days");
                }
                Ok(counts)
            }
            (Err(e), _) | (_, Err(e)) => Err(e),
        };
        match swept {
            Ok([0, 0, 0, 0, 0]) => {}
            Ok([investigations, alerts, groups, reports, notified]) => tracing::info!(
                investigations,
                alerts,
                groups,
                reports,
                notified,
                %cutoff,
                "removed data older than store.retention_days"
            ),
            Err(e) => tracing::warn!(error = %e, "retention sweep failed"),
        }
        tokio::select! {
            _ = token.cancelled() => return,
            _ = tokio::time::sleep(SWEEP_EVERY) => {}
        }
    }
}

/// `days` before `now`; `None` when that is before the calendar begins (the configuration
/// bounds `store.retention_days` far below that; this keeps the sweep from panicking).
fn cutoff(now: DateTime<Utc>, days: u32) -> Option<DateTime<Utc>> {
    now.checked_sub_signed(TimeDelta::try_days(i64::from(days))?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_retention_beyond_the_calendar_is_no_cutoff_rather_than_a_panic() {
        let now = Utc::now();
        assert_eq!(cutoff(now, 1), Some(now - TimeDelta::days(1)));
        assert_eq!(cutoff(now, 100_000_000), None);
        assert_eq!(cutoff(now, u32::MAX), None);
        assert_eq!(cutoff(DateTime::<Utc>::MIN_UTC, 1), None);
    }
}
