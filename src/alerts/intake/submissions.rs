//! `Submissions`: what follows the durable write of a batch, in the background (its
//! [`Effect`]s): submitting each group's pending investigation once per episode (also at
//! start, for groups a crash left pending) and noting or cancelling the investigation of a
//! group that resolved; the same for storms. A submission waits out `alerts.storm_hold`
//! when other groups of its alert are arriving (a storm may be forming), and a group of a
//! firing storm is not investigated on its own. Batches answered and not yet decided are
//! waited for (the pipeline's count of them, `pipeline.rs`) without polling. A panic
//! while running a batch's effects is contained (counted in
//! `sre_agent_panics_total{task="alert_submissions"}`); pending marks make the next start
//! submit what it left.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use tokio::sync::{Mutex, watch};
use tokio_util::sync::CancellationToken;

use super::storms::Storms;
use super::{Intake, Investigator, request_for, storm_request};
use crate::alerts::AlertStatus;
use crate::alerts::grouping::InvState;
use crate::alerts::store::AlertStore;
use crate::alerts::storm::{MEMBER_CAP, StormStatus};
use crate::config::AlertsConfig;
use crate::store::StoreError;
use crate::telemetry::supervise::contained;
use crate::telemetry::{Metrics, Task};

/// An effect of a touched group or storm.
pub(super) enum Action {
    Submit(String),
    Resolve { key: String, id: String },
    SubmitStorm(String),
    ResolveStorm { key: String, id: String },
}

/// Work a batch's decisions leave after their durable write: a submission or a
/// resolution note.
pub struct Effect(pub(super) Action);

impl Effect {
    /// Runs it; errors are logged (the pending mark makes a restart retry submissions).
    pub async fn run(self, intake: &Intake) {
        intake.inner.submissions.run(self).await;
    }
}

/// The submission of decided investigations: one at a time (its lock), so one episode is
/// submitted once.
pub(super) struct Submissions {
    /// `alerts.storm_hold`.
    storm_hold: std::time::Duration,
    /// `alerts.group_by`, named in a group's investigation.
    group_by: Vec<String>,
    store: AlertStore,
    storms: Arc<Storms>,
    investigator: Arc<dyn Investigator>,
    /// One submission at a time, so one episode is submitted once.
    lock: Mutex<()>,
    /// Cancelled at shutdown: submissions waiting out `alerts.storm_hold` stop waiting
    /// (their pending mark makes the next start submit them).
    holds: CancellationToken,
    /// How many batches were answered and are not yet decided (`None` without an inbox,
    /// where every batch is decided before it is answered).
    undecided: Option<watch::Receiver<usize>>,
    metrics: Arc<Metrics>,
}

impl Submissions {
    pub(super) fn new(
        config: &AlertsConfig,
        store: AlertStore,
        storms: Arc<Storms>,
        investigator: Arc<dyn Investigator>,
        undecided: Option<watch::Receiver<usize>>,
        metrics: Arc<Metrics>,
    ) -> Self {
        Self {
            storm_hold: config.storm_hold.get(),
            group_by: config.group_by.clone(),
            store,
            storms,
            investigator,
            lock: Mutex::new(()),
            holds: CancellationToken::new(),
            undecided,
            metrics,
        }
    }

    /// At shutdown: submissions waiting out `alerts.storm_hold` give up (the next start
    /// submits them).
    pub(super) fn stop_holding(&self) {
        self.holds.cancel();
    }

    /// Runs a batch's `effects` in order (on a task of their own), a panic contained.
    pub(super) async fn run_all(self: Arc<Self>, effects: Vec<Effect>) {
        contained(Task::AlertSubmissions, &self.metrics, async {
            for e in effects {
                self.run(e).await;
            }
        })
        .await;
    }

    /// Runs `effect`; errors are logged (the pending mark makes a restart retry
    /// submissions).
    pub(super) async fn run(&self, effect: Effect) {
        let result = match &effect.0 {
            Action::Submit(key) => match self.hold_group(key).await {
                Ok(true) => self.submit_group(key).await.map(|_| ()),
                other => other.map(|_| ()),
            },
            Action::Resolve { key, id } => self.resolve("alert group", key, id).await,
            Action::SubmitStorm(key) => match self.hold_storm(key).await {
                Ok(true) => self.submit_storm(key).await.map(|_| ()),
                other => other.map(|_| ()),
            },
            Action::ResolveStorm { key, id } => self.resolve("alert storm", key, id).await,
        };
        if let Err(e) = result {
            tracing::error!(error = %e, "an alert submission or resolution note failed; it is retried at next start");
        }
    }

    /// Submits the group's pending investigation unless one exists for this episode.
    pub(super) async fn submit_group(&self, key: &str) -> Result<Option<String>, StoreError> {
        let _guard = self.lock.lock().await;
        let Some(group) = self.store.group(key)? else {
            return Ok(None);
        };
        let (Some(since), None) = (group.pending_since, &group.investigation_id) else {
            return Ok(group.investigation_id);
        };
        // The decision's place in the budget is given back however this ends: taken over
        // by the investigation submitted, or given back when dropped or left pending on
        // an error (the next start holds it again).
        let held = HeldPlace(self.investigator.as_ref());
        let storm = self
            .storms
            .firing_storm_of(key, &group.last_alert.labels)?
            .map(|s| s.key);
        if group.status == AlertStatus::Resolved || storm.is_some() {
            if let Some(s) = storm {
                tracing::info!(group = %key, storm = %s, "group coalesced into its storm");
            }
            self.store.update_group(key, |g, _| {
                g.map(|mut g| {
                    g.pending_since = None;
                    g
                })
            })?;
            return Ok(None);
        }
        let id = match self.investigator.find_for_group(key, since)? {
            Some(id) => id,
            None => {
                let req = request_for(&group, &self.group_by);
                let id = self.investigator.submit(req).await?;
                held.taken();
                id
            }
        };
        self.store.update_group(key, |g, _| {
            g.map(|mut g| {
                g.investigation_id = Some(id.clone());
                g.pending_since = None;
                g.investigations += 1;
                g
            })
        })?;
        self.store.flush().await?;
        Ok(Some(id))
    }

    /// At start: re-submits every group and storm left pending by a crash (without a
    /// hold: the storms they may belong to are on disk already).
    pub(super) async fn recover(&self) -> Result<usize, StoreError> {
        let pending = self.store.pending_groups()?;
        let storms = self.storms.store().pending()?;
        for _ in 0..pending.len() + storms.len() {
            self.investigator.hold();
        }
        for s in &storms {
            tracing::info!(storm = %s.key, "re-submitting a storm investigation decided before a restart");
            self.submit_storm(&s.key).await?;
        }
        for g in &pending {
            tracing::info!(group = %g.key, "re-submitting an investigation decided before a restart");
            self.submit_group(&g.key).await?;
        }
        Ok(pending.len() + storms.len())
    }

    /// Waits until `pending_since` + `alerts.storm_hold` when other groups of the group's
    /// alert started within the window. False when the wait was cut by shutdown.
    async fn hold_group(&self, key: &str) -> Result<bool, StoreError> {
        let Some(group) = self.store.group(key)? else {
            return Ok(true);
        };
        let Some(since) = group.pending_since else {
            return Ok(true);
        };
        // Batches answered and not yet decided may hold more groups of this alert (a
        // storm arriving as one webhook per instance): they are decided first.
        self.until_decided(since).await;
        match self.storms.forming(key, &group.last_alert.labels)? {
            true => Ok(self.hold_until(since).await),
            false => Ok(true),
        }
    }

    /// Waits until no answered batch is waiting to be decided, or `alerts.storm_hold`
    /// after `since`, or shutdown.
    async fn until_decided(&self, since: DateTime<Utc>) {
        let Some(mut undecided) = self.undecided.clone() else {
            return;
        };
        let Some(left) = self.hold_left(since) else {
            return;
        };
        tokio::select! {
            // An error means the pipeline is gone: nothing is left to wait for.
            _ = undecided.wait_for(|n| *n == 0) => {}
            () = tokio::time::sleep(left) => {}
            () = self.holds.cancelled() => {}
        }
    }

    /// What is left of `alerts.storm_hold` after `since`; `None` once it is over.
    fn hold_left(&self, since: DateTime<Utc>) -> Option<std::time::Duration> {
        let waited = (Utc::now() - since).to_std().unwrap_or_default();
        self.storm_hold.checked_sub(waited).filter(|d| !d.is_zero())
    }

    /// A storm's investigation waits `alerts.storm_hold`, so the groups still arriving
    /// are named in it.
    async fn hold_storm(&self, key: &str) -> Result<bool, StoreError> {
        match self.storms.store().get(key)?.and_then(|s| s.pending_since) {
            Some(since) => Ok(self.hold_until(since).await),
            None => Ok(true),
        }
    }

    async fn hold_until(&self, since: DateTime<Utc>) -> bool {
        let Some(left) = self.hold_left(since) else {
            return true;
        };
        tokio::select! {
            _ = tokio::time::sleep(left) => true,
            _ = self.holds.cancelled() => false,
        }
    }

    /// Submits the storm's pending investigation (or re-investigation) naming its groups,
    /// and cancels the still-queued investigations its first groups started before it
    /// formed.
    pub(super) async fn submit_storm(&self, key: &str) -> Result<Option<String>, StoreError> {
        let _guard = self.lock.lock().await;
        let Some(storm) = self.storms.get(key).await? else {
            return Ok(None);
        };
        let Some(since) = storm.pending_since else {
            return Ok(storm.investigation_id);
        };
        // The decision's place in the budget is taken over by the investigation submitted,
        // or given back however else this ends.
        let held = HeldPlace(self.investigator.as_ref());
        if storm.status != StormStatus::Firing {
            self.storms
                .update(key, |s| {
                    s.pending_since = None;
                    s.pending_reinvestigation = false;
                })
                .await?;
            return Ok(None);
        }
        let members = self.storms.store().members(key, MEMBER_CAP as usize)?;
        let sample = match members.iter().find(|(_, m)| m.firing).or(members.first()) {
            Some((g, _)) => self.store.group(g)?,
            None => None,
        };
        let req = storm_request(&storm, &members, sample.as_ref());
        let id = match self.investigator.find_for_group(&req.group_key, since)? {
            Some(id) => id,
            None => {
                let id = self.investigator.submit(req).await?;
                held.taken();
                id
            }
        };
        let note = format!("coalesced into the investigation {id} of the alert storm {key}");
        for g in &storm.early {
            let Some(own) = self.store.group(g)?.and_then(|g| g.investigation_id) else {
                continue;
            };
            if own != id && self.investigator.state(&own)? == InvState::Queued {
                self.investigator.cancel_queued(&own, &note).await?;
            }
        }
        self.storms
            .update(key, |s| {
                let reinvestigation = s.pending_reinvestigation;
                s.submitted(id.clone(), members.len() as u32, reinvestigation);
            })
            .await?;
        self.store.flush().await?;
        tracing::info!(storm = %key, investigation = %id, groups = members.len(), "storm investigation submitted");
        Ok(Some(id))
    }

    async fn resolve(&self, what: &str, key: &str, id: &str) -> Result<(), StoreError> {
        let note = format!("{what} {key} resolved at {}", Utc::now().to_rfc3339());
        let cancelled = self.investigator.cancel_queued(id, &note).await?;
        if !cancelled {
            self.investigator.add_note(id, &note)?;
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

    use super::super::fake::{FakeInvestigator, alert, batch, ingest_and_run_effects, intake};
    use crate::alerts::AlertStatus;
    use crate::alerts::grouping::InvState;
    use crate::alerts::intake::{Investigator, request_for};
    use crate::alerts::store::Outcome;
    use crate::store::Store;

    /// Submissions over an empty store, with `storm_hold` and a count of undecided
    /// batches at `undecided`.
    fn waiting(
        dir: &tempfile::TempDir,
        storm_hold: u64,
        undecided: usize,
    ) -> (super::Submissions, tokio::sync::watch::Sender<usize>) {
        let store = Store::open(dir.path()).unwrap();
        let mut cfg = super::super::fake::config(50);
        cfg.storm_hold = crate::config::HumanDuration::secs(storm_hold);
        let storms = crate::alerts::storm::StormStore::open(&store).unwrap();
        let storms = Arc::new(super::Storms::new(&cfg, storms));
        let count = tokio::sync::watch::Sender::new(undecided);
        let submissions = super::Submissions::new(
            &cfg,
            crate::alerts::store::AlertStore::open(&store).unwrap(),
            storms,
            Arc::new(FakeInvestigator::default()),
            Some(count.subscribe()),
            Arc::new(crate::telemetry::Metrics::new("m")),
        );
        (submissions, count)
    }

    #[tokio::test(start_paused = true)]
    async fn a_submission_waiting_for_undecided_batches_goes_on_as_soon_as_they_are_decided() {
        let dir = tempfile::tempdir().unwrap();
        let (submissions, count) = waiting(&dir, 60, 2);
        let started = tokio::time::Instant::now();
        let decided = async {
            tokio::time::sleep(std::time::Duration::from_millis(7)).await;
            count.send_replace(1);
            tokio::time::sleep(std::time::Duration::from_millis(6)).await;
            count.send_replace(0);
        };
        tokio::join!(submissions.until_decided(chrono::Utc::now()), decided);
        assert_eq!(started.elapsed(), std::time::Duration::from_millis(13));
    }

    #[tokio::test(start_paused = true)]
    async fn a_submission_waits_for_undecided_batches_no_longer_than_the_storm_hold() {
        let dir = tempfile::tempdir().unwrap();
        let (submissions, _count) = waiting(&dir, 30, 1);
        let started = tokio::time::Instant::now();
        submissions.until_decided(chrono::Utc::now()).await;
        let waited = started.elapsed();
        assert!(
            waited > std::time::Duration::from_secs(29)
                && waited <= std::time::Duration::from_secs(30),
            "{waited:?}"
        );
    }

    #[tokio::test]
    async fn a_resolved_group_cancels_its_queued_investigation_and_notes_it() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let fake = Arc::new(FakeInvestigator::default());
        let intake = intake(&store, &fake, 50);
        ingest_and_run_effects(&intake, vec![alert("A", "h", AlertStatus::Firing)]).await;
        let summary =
            ingest_and_run_effects(&intake, vec![alert("A", "h", AlertStatus::Resolved)]).await;
        let g = intake.store().group(&summary.groups[0]).unwrap().unwrap();
        assert_eq!(g.status, AlertStatus::Resolved);
        assert_eq!(g.last_outcome, Outcome::Resolved);
        assert_eq!(fake.state("inv-0").unwrap(), InvState::Cancelled);
        assert!(fake.notes.lock().unwrap()[0].1.contains("resolved"));
        // Firing again after a cancelled one starts a new episode.
        let again =
            ingest_and_run_effects(&intake, vec![alert("A", "h", AlertStatus::Firing)]).await;
        assert_eq!(again.queued, 1);
    }

    #[tokio::test]
    async fn a_crash_after_the_durable_write_submits_exactly_once_at_restart() {
        let dir = tempfile::tempdir().unwrap();
        let fake = Arc::new(FakeInvestigator::default());
        {
            let store = Store::open(dir.path()).unwrap();
            let intake = intake(&store, &fake, 50);
            let (summary, _effects) = intake
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
