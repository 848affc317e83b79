//! What follows the durable write of a batch, in the background: submitting each group's
//! pending investigation once per episode (also at start, for groups a crash left pending)
//! and noting or cancelling the investigation of a group that resolved; the same for
//! storms. A submission waits out `alerts.storm_hold` when other groups of its alert are
//! arriving (a storm may be forming), and a group of a firing storm is not investigated on
//! its own.

use chrono::{DateTime, Utc};

use super::{Intake, Investigator, request_for, storm_request};
use crate::alerts::AlertStatus;
use crate::alerts::grouping::InvState;
use crate::alerts::storm::{MEMBER_CAP, StormStatus};
use crate::store::StoreError;

/// A follow-up of a touched group or storm.
pub(super) enum Action {
    Submit(String),
    Resolve { key: String, id: String },
    SubmitStorm(String),
    ResolveStorm { key: String, id: String },
}

/// Work left after the durable write: submissions and resolution notes.
pub struct FollowUp(pub(super) Action);

impl FollowUp {
    /// Runs it; errors are logged (the pending mark makes a restart retry submissions).
    pub async fn run(self, intake: &Intake) {
        let result = match &self.0 {
            Action::Submit(key) => match intake.hold_group(key).await {
                Ok(true) => intake.submit_pending(key).await.map(|_| ()),
                other => other.map(|_| ()),
            },
            Action::Resolve { key, id } => intake.resolve("alert group", key, id).await,
            Action::SubmitStorm(key) => match intake.hold_storm(key).await {
                Ok(true) => intake.submit_storm(key).await.map(|_| ()),
                other => other.map(|_| ()),
            },
            Action::ResolveStorm { key, id } => intake.resolve("alert storm", key, id).await,
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
        // The decision's place in the budget is given back however this ends: taken over
        // by the investigation submitted, or given back when dropped or left pending on
        // an error (the next start holds it again).
        let held = HeldPlace(inner.investigator.as_ref());
        let storm = self
            .firing_storm_of(key, &group.last_alert.labels)?
            .map(|s| s.key);
        if group.status == AlertStatus::Resolved || storm.is_some() {
            if let Some(s) = storm {
                tracing::info!(group = %key, storm = %s, "group coalesced into its storm");
            }
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
            None => {
                let req = request_for(&group, &inner.config.group_by);
                let id = inner.investigator.submit(req).await?;
                held.taken();
                id
            }
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

    /// At start: re-submits every group and storm left pending by a crash (without a
    /// hold: the storms they may belong to are on disk already).
    pub async fn recover(&self) -> Result<usize, StoreError> {
        let pending = self.inner.store.pending_groups()?;
        let storms = self.inner.storms.pending()?;
        for _ in 0..pending.len() + storms.len() {
            self.inner.investigator.hold();
        }
        for s in &storms {
            tracing::info!(storm = %s.key, "re-submitting a storm investigation decided before a restart");
            self.submit_storm(&s.key).await?;
        }
        for g in &pending {
            tracing::info!(group = %g.key, "re-submitting an investigation decided before a restart");
            self.submit_pending(&g.key).await?;
        }
        Ok(pending.len() + storms.len())
    }

    /// Waits until `pending_since` + `alerts.storm_hold` when other groups of the group's
    /// alert started within the window. False when the wait was cut by shutdown.
    async fn hold_group(&self, key: &str) -> Result<bool, StoreError> {
        let Some(group) = self.inner.store.group(key)? else {
            return Ok(true);
        };
        let Some(since) = group.pending_since else {
            return Ok(true);
        };
        // Batches answered and not yet decided may hold more groups of this alert (a
        // storm arriving as one webhook per instance): they are decided first.
        self.until_decided(since).await;
        match self.storm_forming(key, &group.last_alert.labels)? {
            true => Ok(self.hold_until(since).await),
            false => Ok(true),
        }
    }

    /// Waits until no answered batch is waiting to be decided, or `alerts.storm_hold`
    /// after `since`, or shutdown.
    async fn until_decided(&self, since: DateTime<Utc>) {
        let hold = self.inner.config.storm_hold.get();
        while self.backlog() > 0
            && (Utc::now() - since).to_std().unwrap_or_default() < hold
            && !self.inner.holds.is_cancelled()
        {
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
    }

    /// A storm's investigation waits `alerts.storm_hold`, so the groups still arriving
    /// are named in it.
    async fn hold_storm(&self, key: &str) -> Result<bool, StoreError> {
        match self.inner.storms.get(key)?.and_then(|s| s.pending_since) {
            Some(since) => Ok(self.hold_until(since).await),
            None => Ok(true),
        }
    }

    async fn hold_until(&self, since: DateTime<Utc>) -> bool {
        let hold = self.inner.config.storm_hold.get();
        let waited = (Utc::now() - since).to_std().unwrap_or_default();
        let Some(left) = hold.checked_sub(waited).filter(|d| !d.is_zero()) else {
            return true;
        };
        tokio::select! {
            _ = tokio::time::sleep(left) => true,
            _ = self.inner.holds.cancelled() => false,
        }
    }

    /// Submits the storm's pending investigation (or follow-up) naming its groups, and
    /// cancels the still-queued investigations its first groups started before it formed.
    pub async fn submit_storm(&self, key: &str) -> Result<Option<String>, StoreError> {
        let inner = &self.inner;
        let _guard = inner.submit.lock().await;
        let storm = {
            let _decide = inner.decide.lock().await;
            inner.storms.get(key)?
        };
        let Some(storm) = storm else {
            return Ok(None);
        };
        let Some(since) = storm.pending_since else {
            return Ok(storm.investigation_id);
        };
        // The decision's place in the budget is taken over by the investigation submitted,
        // or given back however else this ends.
        let held = HeldPlace(inner.investigator.as_ref());
        if storm.status != StormStatus::Firing {
            let _decide = inner.decide.lock().await;
            if let Some(mut s) = inner.storms.get(key)? {
                s.pending_since = None;
                s.pending_follow_up = false;
                inner.storms.put(&s)?;
            }
            return Ok(None);
        }
        let members = inner.storms.members(key, MEMBER_CAP as usize)?;
        let sample = match members.iter().find(|(_, m)| m.firing).or(members.first()) {
            Some((g, _)) => inner.store.group(g)?,
            None => None,
        };
        let req = storm_request(&storm, &members, sample.as_ref());
        let id = match inner.investigator.find_for_group(&req.group_key, since)? {
            Some(id) => id,
            None => {
                let id = inner.investigator.submit(req).await?;
                held.taken();
                id
            }
        };
        let note = format!("coalesced into the investigation {id} of the alert storm {key}");
        for g in &storm.early {
            let Some(own) = inner.store.group(g)?.and_then(|g| g.investigation_id) else {
                continue;
            };
            if own != id && inner.investigator.state(&own)? == InvState::Queued {
                inner.investigator.cancel_queued(&own, &note).await?;
            }
        }
        {
            let _decide = inner.decide.lock().await;
            if let Some(mut s) = inner.storms.get(key)? {
                let follow_up = s.pending_follow_up;
                s.submitted(id.clone(), members.len() as u32, follow_up);
                inner.storms.put(&s)?;
            }
        }
        inner.store.flush().await?;
        tracing::info!(storm = %key, investigation = %id, groups = members.len(), "storm investigation submitted");
        Ok(Some(id))
    }

    async fn resolve(&self, what: &str, key: &str, id: &str) -> Result<(), StoreError> {
        let note = format!("{what} {key} resolved at {}", Utc::now().to_rfc3339());
        let cancelled = self.inner.investigator.cancel_queued(id, &note).await?;
        if !cancelled {
            self.inner.investigator.add_note(id, &note)?;
        }
        tracing::info!(key = %key, investigation = %id, cancelled, "{what} resolved");
        Ok(())
    }
}

/// A decision's held place in the budget, given back when dropped.
struct HeldPlace<'a>(&'a dyn Investigator);

impl HeldPlace<'_> {
    /// The place became a submitted investigation's (`Investigator::submit`).
    fn taken(self) {
        std::mem::forget(self);
    }
}

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
        fake.submit(request_for(&g, &[])).await.unwrap();
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
