//! `Intake`: turns a parsed webhook batch into stored alerts, group updates and
//! investigation decisions, then submits the decided investigations in the background.
//! Four parts, each owning its state:
//! - `pipeline.rs` (`Pipeline`): the webhook inbox; a batch is answered once on disk (or
//!   once decided, when small and alone) and one processor task (`processor.rs`, run under
//!   `telemetry::supervise`) decides the batches in order, checkpointing the inbox behind
//!   the store's flushes; a batch whose decision panics is given up.
//! - `decisions.rs` (`Decisions`): grouping, dedupe, ignore rules, cooldown and the daily
//!   budget, one batch at a time; `decisions/storm_views.rs` is its storm part.
//! - `storms.rs` (`Storms`): the storm records and their writer lock.
//! - `submissions.rs` (`Submissions`): the decisions' effects, run in the background:
//!   submissions idempotent per group episode (a group marked pending without an
//!   investigation id is re-submitted at start, after checking the dispatcher for one
//!   already created for it) and resolution notes.

use std::sync::Arc;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::grouping::{Budget, InvState};
use super::storm::StormStore;
use super::{AlertSource, WebhookBatch};
use crate::alerts::store::AlertStore;
use crate::config::AlertsConfig;
use crate::store::StoreError;
use crate::store::inbox::{Backlog, Inbox};
use crate::telemetry::Metrics;

mod decisions;
mod pipeline;
mod processor;
mod request;
mod storms;
mod submissions;

#[cfg(test)]
mod cancel_tests;
#[cfg(test)]
mod fake;
#[cfg(test)]
mod pipeline_tests;
#[cfg(test)]
mod storm_tests;

use decisions::Decisions;
use pipeline::Pipeline;
pub use pipeline::{Accepted, Settle};
pub use request::{NewInvestigation, request_for, storm_request};
use storms::Storms;
pub use submissions::Effect;
use submissions::Submissions;

/// What the intake needs from the investigation dispatcher.
#[async_trait]
pub trait Investigator: Send + Sync + 'static {
    /// Stores the investigation `queued` (durably) and returns its id. The place its
    /// decision held in the budget (`hold`) becomes the investigation's own; on an error
    /// it stays held.
    async fn submit(&self, req: NewInvestigation) -> Result<String, StoreError>;
    /// True when it was still queued and is now cancelled.
    async fn cancel_queued(&self, id: &str, note: &str) -> Result<bool, StoreError>;
    fn add_note(&self, id: &str, note: &str) -> Result<(), StoreError>;
    fn state(&self, id: &str) -> Result<InvState, StoreError>;
    /// Today's budgets, with every claim made so far (held decisions included).
    fn budget(&self) -> Budget;
    /// Holds a place in the budget for a decision not yet submitted.
    fn hold(&self);
    /// Gives a held place back (the decision was submitted, or dropped).
    fn release_hold(&self);
    /// An investigation for `group_key` created at or after `since`, if any.
    fn find_for_group(
        &self,
        group_key: &str,
        since: DateTime<Utc>,
    ) -> Result<Option<String>, StoreError>;
}

/// The result of one batch.
#[derive(Clone, Debug, Default, serde::Serialize, utoipa::ToSchema)]
pub struct IntakeSummary {
    pub received: usize,
    pub queued: usize,
    pub groups: Vec<String>,
    /// Storms the batch's alerts attached to (or formed).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub storms: Vec<String>,
    /// True when the batch was answered once on disk, before its decisions (answered
    /// 202: it has over 20 alerts, or batches ahead of it were still being decided):
    /// `queued`, `groups` and `storms` are then empty, and its decisions show in the
    /// alerts API moments later.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub deferred: bool,
}

/// Alert intake: the webhook inbox's pipeline, the decisions, the storms and the
/// submissions, each owning its state. Cheap to clone.
#[derive(Clone)]
pub struct Intake {
    inner: Arc<Inner>,
}

struct Inner {
    decisions: Arc<Decisions>,
    submissions: Arc<Submissions>,
    storms: Arc<Storms>,
    /// The webhook inbox and the queue of its processor (`pipeline.rs`); `None` where
    /// batches are only decided in place (`ingest`).
    pipeline: Option<Arc<Pipeline>>,
}

/// An `alerts.ignore` matcher that does not parse (config validation reports it first).
#[derive(Debug, thiserror::Error)]
#[error("alerts.ignore: {0}")]
pub struct BadMatcher(String);

impl Intake {
    pub fn new(
        config: &AlertsConfig,
        store: AlertStore,
        storms: StormStore,
        investigator: Arc<dyn Investigator>,
        metrics: Arc<Metrics>,
        inbox: Option<(Inbox, Backlog)>,
    ) -> Result<Self, BadMatcher> {
        let storms = Arc::new(Storms::new(config, storms));
        let decisions = Arc::new(Decisions::new(
            config,
            store.clone(),
            storms.clone(),
            investigator.clone(),
            metrics.clone(),
        )?);
        let backlog = inbox.as_ref().map(|_| watch::Sender::new(0));
        let submissions = Arc::new(Submissions::new(
            config,
            store,
            storms.clone(),
            investigator,
            backlog.as_ref().map(watch::Sender::subscribe),
            metrics.clone(),
        ));
        let pipeline = inbox.zip(backlog).map(|(inbox, backlog)| {
            Arc::new(Pipeline::new(
                inbox,
                backlog,
                decisions.clone(),
                submissions.clone(),
                metrics,
            ))
        });
        Ok(Self {
            inner: Arc::new(Inner {
                decisions,
                submissions,
                storms,
                pipeline,
            }),
        })
    }

    pub fn store(&self) -> &AlertStore {
        &self.inner.decisions.store
    }

    pub fn investigator(&self) -> &Arc<dyn Investigator> {
        &self.inner.decisions.investigator
    }

    /// The storms of alerts (`alerts::storm`).
    pub fn storms(&self) -> &StormStore {
        self.inner.storms.store()
    }

    /// At shutdown: submissions waiting out `alerts.storm_hold` give up (the next start
    /// submits them).
    pub fn stop_holding(&self) {
        self.inner.submissions.stop_holding();
    }

    /// Removes storms quiet since before `cutoff` (once no batch is writing them).
    /// Returns how many.
    pub async fn sweep_storms(&self, cutoff: DateTime<Utc>) -> Result<usize, StoreError> {
        self.inner.storms.sweep(cutoff).await
    }

    /// Stores the batch and its decisions durably; returns what to do next. Call
    /// `Effect::run` on each result (in the background) to submit and cancel.
    /// (The daemon's webhooks go through `accept`, which answers once the batch is in the
    /// inbox.)
    pub async fn ingest(
        &self,
        batch: WebhookBatch,
    ) -> Result<(IntakeSummary, Vec<Effect>), StoreError> {
        let now = Utc::now();
        let decisions = &self.inner.decisions;
        let (summary, effects, log) = decisions.decide_batch(batch, now, None).await?;
        decisions.store.log_alerts(now, &log)?;
        decisions.store.flush().await?;
        Ok((summary, effects))
    }

    /// Takes a parsed webhook (`body` is what was parsed, kept to process again after a
    /// crash): returns once it is on disk and, when it is small and no batch is ahead of
    /// it, decided (`Pipeline::accept`). `settle` is told whether it was stored, even when
    /// this future is dropped before then. Without an inbox (unit tests), decides and
    /// flushes in place, and runs the effects on a task of their own.
    pub async fn accept(
        &self,
        source: AlertSource,
        body: &[u8],
        batch: WebhookBatch,
        settle: Settle,
    ) -> Result<Accepted, StoreError> {
        if let Some(p) = &self.inner.pipeline {
            return p.accept(source, body, batch, settle).await;
        }
        let (summary, effects) = self.ingest(batch).await?;
        settle.tell(true);
        tokio::spawn(self.inner.submissions.clone().run_all(effects));
        Ok(Accepted::Decided(summary))
    }

    /// Batches accepted and not yet decided.
    pub fn backlog(&self) -> usize {
        self.inner.pipeline.as_ref().map_or(0, |p| p.backlog())
    }

    /// Decides the batches an earlier process left in the inbox (in order), then starts
    /// the processor on `tasks`; it stops at `token`, deciding what is queued first.
    /// Returns how many batches were left.
    pub async fn start(
        &self,
        tasks: &TaskTracker,
        token: CancellationToken,
    ) -> Result<usize, StoreError> {
        match &self.inner.pipeline {
            Some(p) => p.start(tasks, token).await,
            None => Ok(0),
        }
    }

    /// Submits the group's pending investigation unless one exists for this episode.
    pub async fn submit_pending(&self, key: &str) -> Result<Option<String>, StoreError> {
        self.inner.submissions.submit_group(key).await
    }

    /// Submits the storm's pending investigation (or re-investigation).
    pub async fn submit_storm(&self, key: &str) -> Result<Option<String>, StoreError> {
        self.inner.submissions.submit_storm(key).await
    }

    /// At start: re-submits every group and storm left pending by a crash.
    pub async fn recover(&self) -> Result<usize, StoreError> {
        self.inner.submissions.recover().await
    }

    #[cfg(test)]
    fn decisions(&self) -> &Decisions {
        &self.inner.decisions
    }
}

#[cfg(test)]
mod tests;
