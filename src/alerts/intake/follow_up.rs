//! What follows the durable write of a batch, in the background: submitting each group's
//! pending investigation once per episode (also at start, for groups a crash left pending)
//! and noting or cancelling the investigation of a group that resolved.

use chrono::Utc;

use super::{Intake, Investigator, request_for};
use crate::alerts::AlertStatus;
use crate::store::StoreError;

/// A follow-up of a touched group.
pub(super) enum Action {
    Submit(String),
    Resolve { key: String, id: String },
}

/// Work left after the durable write: submissions and resolution notes.
pub struct FollowUp(pub(super) Action);

impl FollowUp {
    /// Runs it; errors are logged (the pending mark makes a restart retry submissions).
    pub async fn run(self, intake: &Intake) {
        let result = match &self.0 {
            Action::Submit(key) => intake.submit_pending(key).await.map(|_| ()),
            Action::Resolve { key, id } => intake.resolve(key, id).await,
        };
        if let Err(e) = result {
            tracing::error!(error = %e, "alert follow-up failed; it is retried at next start");
        }
    }
}

impl Intake {
    /// Submits the group's pending investigation unless one exists for this episode.
    pub async fn submit_pending(&self, key: &str) -> Result<Option<String>, StoreError> {
        let inner = &self.inner;
        let _guard = inner.submit.lock().await;
        let Some(group) = inner.store.group(key)? else {
            return Ok(None);
        };
        let (Some(since), None) = (group.pending_since, &group.investigation_id) else {
            return Ok(group.investigation_id);
        };
        // The decision's place in the budget is given back however this ends: submitted
        // (the investigation holds its own claim), dropped, or left pending on an error
        // (the next start holds it again).
        let _held = HeldPlace(inner.investigator.as_ref());
        if group.status == AlertStatus::Resolved {
            inner.store.update_group(key, |g, _| {
                g.map(|mut g| {
                    g.pending_since = None;
                    g
                })
            })?;
            return Ok(None);
        }
        let id = match inner.investigator.find_for_group(key, since)? {
            Some(id) => id,
            None => inner.investigator.submit(request_for(&group)).await?,
        };
        inner.store.update_group(key, |g, _| {
            g.map(|mut g| {
                g.investigation_id = Some(id.clone());
                g.pending_since = None;
                g.investigations += 1;
                g
            })
        })?;
        inner.store.flush().await?;
        Ok(Some(id))
    }

    /// At start: re-submits every group left pending by a crash.
    pub async fn recover(&self) -> Result<usize, StoreError> {
        let pending = self.inner.store.pending_groups()?;
        for _ in &pending {
            self.inner.investigator.hold();
        }
        for g in &pending {
            tracing::info!(group = %g.key, "re-submitting an investigation decided before a restart");
            self.submit_pending(&g.key).await?;
        }
        Ok(pending.len())
    }

    async fn resolve(&self, key: &str, id: &str) -> Result<(), StoreError> {
        let note = format!("alert group {key} resolved at {}", Utc::now().to_rfc3339());
        let cancelled = self.inner.investigator.cancel_queued(id, &note).await?;
        if !cancelled {
            self.inner.investigator.add_note(id, &note)?;
        }
        tracing::info!(group = %key, investigation = %id, cancelled, "alert group resolved");
        Ok(())
    }
}

/// A decision's held place in the budget, given back when dropped.
struct HeldPlace<'a>(&'a dyn Investigator);

impl Drop for HeldPlace<'_> {
    fn drop(&mut self) {
        self.0.release_hold();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::super::fake::{FakeInvestigator, alert, batch, ingest_and_follow, intake};
    use crate::alerts::AlertStatus;
    use crate::alerts::grouping::InvState;
    use crate::alerts::intake::{Investigator, request_for};
    use crate::alerts::store::Outcome;
    use crate::store::Store;

    #[tokio::test]
    async fn a_resolved_group_cancels_its_queued_investigation_and_notes_it() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let fake = Arc::new(FakeInvestigator::default());
        let intake = intake(&store, &fake, 50);
        ingest_and_follow(&intake, vec![alert("A", "h", AlertStatus::Firing)]).await;
        let summary =
            ingest_and_follow(&intake, vec![alert("A", "h", AlertStatus::Resolved)]).await;
        let g = intake.store().group(&summary.groups[0]).unwrap().unwrap();
        assert_eq!(g.status, AlertStatus::Resolved);
        assert_eq!(g.last_outcome, Outcome::Resolved);
        assert_eq!(fake.state("inv-0").unwrap(), InvState::Cancelled);
        assert!(fake.notes.lock().unwrap()[0].1.contains("resolved"));
        // Firing again after a cancelled one starts a new episode.
        let again = ingest_and_follow(&intake, vec![alert("A", "h", AlertStatus::Firing)]).await;
        assert_eq!(again.queued, 1);
    }

    #[tokio::test]
    async fn a_crash_after_the_durable_write_submits_exactly_once_at_restart() {
        let dir = tempfile::tempdir().unwrap();
        let fake = Arc::new(FakeInvestigator::default());
        {
            let store = Store::open(dir.path()).unwrap();
            let intake = intake(&store, &fake, 50);
            let (summary, _dropped_follow_ups) = intake
                .ingest(batch(vec![alert("A", "h", AlertStatus::Firing)]))
                .await
                .unwrap();
            assert_eq!(summary.queued, 1);
        }
        let store = Store::open(dir.path()).unwrap();
        let restarted = intake(&store, &fake, 50);
        assert_eq!(restarted.recover().await.unwrap(), 1);
        assert_eq!(restarted.recover().await.unwrap(), 0);
        assert_eq!(fake.submitted().len(), 1);
    }

    #[tokio::test]
    async fn a_crash_after_submit_but_before_recording_the_id_does_not_double_it() {
        let dir = tempfile::tempdir().unwrap();
        let fake = Arc::new(FakeInvestigator::default());
        let store = Store::open(dir.path()).unwrap();
        let first = intake(&store, &fake, 50);
        let (summary, _) = first
            .ingest(batch(vec![alert("A", "h", AlertStatus::Firing)]))
            .await
            .unwrap();
        // The dispatcher got it, but the group never learned the id.
        let g = first.store().group(&summary.groups[0]).unwrap().unwrap();
        fake.submit(request_for(&g)).await.unwrap();
        let restarted = intake(&store, &fake, 50);
        restarted.recover().await.unwrap();
        assert_eq!(fake.submitted().len(), 1);
        let g = restarted
            .store()
            .group(&summary.groups[0])
            .unwrap()
            .unwrap();
        assert_eq!(g.investigation_id.as_deref(), Some("inv-0"));
    }
}
