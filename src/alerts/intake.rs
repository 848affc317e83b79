//! `Intake`: turns a parsed webhook batch into stored alerts, group updates and
//! investigation decisions, durable (flushed) before the webhook is answered; then submits
//! decided investigations in the background, idempotently per group episode (a group
//! marked pending without an investigation id is re-submitted at start, after checking
//! the dispatcher for one already created for it).

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use tokio::sync::Mutex;

use tokio_util::sync::CancellationToken;

use super::grouping::{self, Budget, InvState};
use super::storm::StormStore;
use super::{Alert, AlertStatus, WebhookBatch};
use crate::alerts::store::{AlertGroup, AlertRecord, AlertStore, GroupState, Outcome};
use crate::config::AlertsConfig;
use crate::config::LabelMatcher;
use crate::store::StoreError;
use crate::store::inbox::{Backlog, Inbox};
use crate::telemetry::Metrics;

mod submissions;
mod pipeline;
mod processor;
mod request;
mod storm_views;

#[cfg(test)]
mod cancel_tests;
#[cfg(test)]
mod fake;
#[cfg(test)]
mod pipeline_tests;
#[cfg(test)]
mod storm_tests;

use submissions::Action;
pub use submissions::FollowUp;
pub use pipeline::{Accepted, Settle};
pub use request::{NewInvestigation, request_for, storm_request};

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

/// Alert intake. Cheap to clone.
#[derive(Clone)]
pub struct Intake {
    inner: Arc<Inner>,
}

struct Inner {
    config: AlertsConfig,
    ignore: Vec<LabelMatcher>,
    store: AlertStore,
    storms: StormStore,
    investigator: Arc<dyn Investigator>,
    metrics: Arc<Metrics>,
    /// Serializes decisions so dedupe and the budget see each other's claims.
    decide: Mutex<()>,
    /// Serializes submissions so one episode is submitted once.
    submit: Mutex<()>,
    /// Cancelled at shutdown: submissions waiting out `alerts.storm_hold` stop waiting
    /// (their pending mark makes the next start submit them).
    holds: CancellationToken,
    /// The webhook inbox and the queue of its processor (`pipeline.rs`); `None` where
    /// batches are only decided in place (`ingest`).
    pipeline: Option<pipeline::Pipeline>,
}

/// One group touched by a batch: its stored state, the investigation's state, and the
/// batch's alerts with their outcomes.
struct Touched {
    key: String,
    group: Option<GroupState>,
    inv: InvState,
    /// The batch's alerts of the group, with their outcomes and places in the batch.
    alerts: Vec<(Alert, Outcome, usize)>,
    queued: bool,
    /// The storm key of the group's alerts (`alerts.storm_by`), once one was seen.
    storm: Option<String>,
}

/// What writing one touched group gives back: its follow-up, its status after the batch,
/// and its alerts as logged, each with its place in the batch.
struct Written {
    action: Option<Action>,
    status: AlertStatus,
    records: Vec<(usize, AlertRecord)>,
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
        let ignore = config
            .ignore
            .iter()
            .map(|m| LabelMatcher::parse(m).map_err(BadMatcher))
            .collect::<Result<_, _>>()?;
        Ok(Self {
            inner: Arc::new(Inner {
                config: config.clone(),
                ignore,
                store,
                storms,
                investigator,
                metrics,
                decide: Mutex::new(()),
                submit: Mutex::new(()),
                holds: CancellationToken::new(),
                pipeline: inbox.map(|(inbox, left)| pipeline::Pipeline::new(inbox, left)),
            }),
        })
    }

    pub fn store(&self) -> &AlertStore {
        &self.inner.store
    }

    pub fn investigator(&self) -> &Arc<dyn Investigator> {
        &self.inner.investigator
    }

    /// The storms of alerts (`alerts::storm`).
    pub fn storms(&self) -> &StormStore {
        &self.inner.storms
    }

    /// At shutdown: submissions waiting out `alerts.storm_hold` give up (the next start
    /// submits them).
    pub fn stop_holding(&self) {
        self.inner.holds.cancel();
    }

    /// Removes storms quiet since before `cutoff` (under the decision lock, so no batch
    /// is writing them). Returns how many.
    pub async fn sweep_storms(&self, cutoff: DateTime<Utc>) -> Result<usize, StoreError> {
        let _guard = self.inner.decide.lock().await;
        self.inner.storms.sweep(cutoff)
    }

    /// Stores the batch and its decisions durably; returns what to do next. Call
    /// `FollowUp::run` on each result (in the background) to submit and cancel.
    /// (The daemon's webhooks go through `accept`, which answers once the batch is in the
    /// inbox.)
    pub async fn ingest(
        &self,
        batch: WebhookBatch,
    ) -> Result<(IntakeSummary, Vec<FollowUp>), StoreError> {
        let now = Utc::now();
        let (summary, follow_ups, log) = self.decide_batch(batch, now, None).await?;
        self.inner.store.log_alerts(now, &log)?;
        self.inner.store.flush().await?;
        Ok((summary, follow_ups))
    }

    /// Decides the batch (received at `now`; the inbox's entry `seq`, if it came through
    /// the inbox) and writes its groups and storms; returns the summary, what to do next
    /// and the alerts to log, in batch order. Each group touched is read once and written
    /// once per batch. A group that already holds entry `seq` (decided before a crash, not
    /// checkpointed) is skipped: its alerts are not counted or decided again, and are
    /// logged as `deduped`.
    async fn decide_batch(
        &self,
        batch: WebhookBatch,
        now: DateTime<Utc>,
        seq: Option<u64>,
    ) -> Result<(IntakeSummary, Vec<FollowUp>, Vec<AlertRecord>), StoreError> {
        let mut summary = IntakeSummary {
            received: batch.alerts.len(),
            ..Default::default()
        };
        let mut actions = Vec::new();
        let mut log = Vec::with_capacity(summary.received);
        {
            let _guard = self.inner.decide.lock().await;
            let mut touched: Vec<Touched> = Vec::new();
            let mut index: HashMap<String, usize> = HashMap::new();
            let mut storms = storm_views::StormViews::new();
            for (at, alert) in batch.alerts.into_iter().enumerate() {
                let key = grouping::group_key(
                    &self.inner.config.group_by,
                    &alert.labels,
                    &alert.fingerprint,
                );
                let i = match index.get(&key) {
                    Some(i) => *i,
                    None => {
                        touched.push(self.load(&key)?);
                        index.insert(key.clone(), touched.len() - 1);
                        touched.len() - 1
                    }
                };
                let held = touched[i].group.as_ref().map_or(0, |g| g.batch);
                if let Some(s) = seq.filter(|s| held >= *s) {
                    self.storm_again(&mut storms, &mut touched[i], &alert, s, now)?;
                    let record = AlertRecord {
                        received_at: now,
                        group_key: key,
                        outcome: Outcome::Deduped,
                        alert,
                        batch: seq,
                    };
                    log.push((at, record));
                    continue;
                }
                let outcome = self.decide(&touched[i], &alert, now);
                let outcome =
                    self.storm_outcome(&mut storms, &mut touched[i], &alert, outcome, now)?;
                if outcome == Outcome::Queued {
                    summary.queued += 1;
                }
                self.absorb(&mut touched[i], alert, outcome, at, now);
            }
            let mut statuses = HashMap::new();
            for t in &touched {
                // Groups holding the batch already are not written again.
                if let (true, Some(g)) = (t.alerts.is_empty(), &t.group) {
                    statuses.insert(t.key.clone(), g.status);
                }
            }
            for t in touched.into_iter().filter(|t| !t.alerts.is_empty()) {
                summary.groups.push(t.key.clone());
                let key = t.key.clone();
                let written = self.write_group(t, now, seq)?;
                log.extend(written.records);
                actions.extend(written.action);
                statuses.insert(key, written.status);
            }
            summary.storms = storms
                .iter()
                .filter(|(_, v)| v.attached())
                .map(|(k, _)| k.clone())
                .collect();
            summary.storms.sort();
            actions.extend(self.write_storms(storms, &statuses, now, seq)?);
        }
        // Sorted outside the decision lock, so the next batch's decisions do not wait.
        log.sort_by_key(|(at, _)| *at);
        let log = log.into_iter().map(|(_, r)| r).collect();
        Ok((summary, actions.into_iter().map(FollowUp).collect(), log))
    }

    fn load(&self, key: &str) -> Result<Touched, StoreError> {
        let group = self.inner.store.group_state(key)?;
        let inv = match group.as_ref().and_then(|g| g.investigation_id.as_deref()) {
            Some(id) => self.inner.investigator.state(id)?,
            None => InvState::Missing,
        };
        Ok(Touched {
            key: key.to_string(),
            group,
            inv,
            alerts: Vec::new(),
            queued: false,
            storm: None,
        })
    }

    fn decide(&self, t: &Touched, alert: &Alert, now: DateTime<Utc>) -> Outcome {
        let inner = &self.inner;
        let cfg = &inner.config;
        if alert.status == AlertStatus::Resolved {
            return Outcome::Resolved;
        }
        let ignored = inner.ignore.iter().any(|m| m.matches(&alert.labels));
        let inv = if t.queued { &InvState::Queued } else { &t.inv };
        let mut seen: Option<Budget> = None;
        let outcome = grouping::decide_firing(
            t.group.as_ref(),
            inv,
            ignored,
            now,
            cfg.cooldown.get(),
            || *seen.insert(inner.investigator.budget()),
        );
        if let (Outcome::Budget, Some(limit)) = (outcome, seen.and_then(|b| b.exceeded())) {
            inner
                .metrics
                .budget_rejections
                .with_label_values(&[limit.label(), "alert"])
                .inc();
        }
        outcome
    }

    /// Folds the alert (the batch's `at`-th) into the in-memory view of its group.
    fn absorb(
        &self,
        t: &mut Touched,
        alert: Alert,
        outcome: Outcome,
        at: usize,
        now: DateTime<Utc>,
    ) {
        let inner = &self.inner;
        inner
            .metrics
            .alerts_received
            .with_label_values(&[alert.source.as_str(), outcome.as_str()])
            .inc();
        let g = t.group.get_or_insert(GroupState {
            status: alert.status,
            pending_since: None,
            investigation_id: None,
            batch: 0,
        });
        if outcome == Outcome::Queued {
            g.pending_since = Some(now);
            g.investigation_id = None;
            t.queued = true;
            inner.investigator.hold();
        }
        t.alerts.push((alert, outcome, at));
    }

    /// Writes one touched group atomically (re-applying this batch's alerts onto the
    /// stored value, so a concurrent submission's id is kept) and returns its follow-up,
    /// its status and its alerts as logged (with their places in the batch).
    fn write_group(
        &self,
        t: Touched,
        now: DateTime<Utc>,
        seq: Option<u64>,
    ) -> Result<Written, StoreError> {
        let group_by = &self.inner.config.group_by;
        let group = self
            .inner
            .store
            .update_group(&t.key, |old, firing| {
                let (first, ..) = t.alerts.first()?;
                let title = grouping::group_title(group_by, &first.labels);
                let mut g =
                    old.unwrap_or_else(|| AlertGroup::new(t.key.clone(), title, first, now));
                for (alert, outcome, _) in &t.alerts {
                    g.absorb(alert, now, firing);
                    g.last_outcome = *outcome;
                }
                if t.queued {
                    g.pending_since = Some(now);
                    g.investigation_id = None;
                }
                if let Some(seq) = seq {
                    g.batch = seq;
                }
                Some(g)
            })?
            .expect("update returns the new group");
        let resolved_now = group.status == AlertStatus::Resolved
            && t.alerts
                .iter()
                .any(|(a, ..)| a.status == AlertStatus::Resolved);
        let records = t
            .alerts
            .into_iter()
            .map(|(alert, outcome, at)| {
                let record = AlertRecord {
                    received_at: now,
                    group_key: t.key.clone(),
                    outcome,
                    alert,
                    batch: seq,
                };
                (at, record)
            })
            .collect();
        if t.queued {
            return Ok(Written {
                action: Some(Action::Submit(t.key)),
                status: group.status,
                records,
            });
        }
        let had_investigation = matches!(
            t.inv,
            InvState::Queued | InvState::Running | InvState::Done { .. }
        );
        let status = group.status;
        let action = group
            .investigation_id
            .filter(|_| resolved_now && had_investigation)
            .map(|id| Action::Resolve { key: t.key, id });
        Ok(Written {
            action,
            status,
            records,
        })
    }
}

#[cfg(test)]
mod tests;
