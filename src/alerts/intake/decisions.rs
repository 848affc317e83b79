//! `Decisions`: what a batch of alerts does. Each alert is grouped, deduped, checked
//! against `alerts.ignore`, the cooldown and the daily investigation limits, and passed
//! through its storm (`decisions/storm_views.rs`); each group touched is read once and
//! written once, then each storm touched. Decisions are made one batch at a time (their
//! lock), so dedupe and the limits see each other's claims; a decision to investigate holds
//! a place in the limits (`Investigator::hold`) until it is submitted (`submissions.rs`).

use std::collections::HashMap;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use tokio::sync::Mutex;

use super::storms::Storms;
use super::submissions::{Action, Effect};
use super::{BadMatcher, IntakeSummary, Investigator};
use crate::agent::Spender;
use crate::alerts::grouping::{self, Budget, InvState};
use crate::alerts::store::{AlertGroup, AlertRecord, AlertStore, GroupState, Outcome};
use crate::alerts::{Alert, AlertStatus, WebhookBatch};
use crate::config::{AlertsConfig, LabelMatcher};
use crate::store::StoreError;
use crate::telemetry::Metrics;

mod storm_views;

use storm_views::StormViews;

/// The decision of batches: the rules, the stores they write, and their lock.
pub(super) struct Decisions {
    pub(super) config: AlertsConfig,
    ignore: Vec<LabelMatcher>,
    pub(super) store: AlertStore,
    pub(super) storms: Arc<Storms>,
    pub(super) investigator: Arc<dyn Investigator>,
    metrics: Arc<Metrics>,
    /// One batch decided at a time, so dedupe and the limits see each other's claims.
    lock: Mutex<()>,
}

/// One group touched by a batch: its stored state, the investigation's state, and the
/// batch's alerts with their outcomes.
pub(super) struct Touched {
    pub(super) key: String,
    group: Option<GroupState>,
    inv: InvState,
    /// The batch's alerts of the group, with their outcomes and places in the batch.
    alerts: Vec<(Alert, Outcome, usize)>,
    queued: bool,
    /// The storm key of the group's alerts (`alerts.storm_by`), once one was seen.
    pub(super) storm: Option<String>,
}

/// What writing one touched group gives back: its effect, its status after the batch,
/// and its alerts as logged, each with its place in the batch.
struct Written {
    action: Option<Action>,
    status: AlertStatus,
    records: Vec<(usize, AlertRecord)>,
}

impl Decisions {
    pub(super) fn new(
        config: &AlertsConfig,
        store: AlertStore,
        storms: Arc<Storms>,
        investigator: Arc<dyn Investigator>,
        metrics: Arc<Metrics>,
    ) -> Result<Self, BadMatcher> {
        let ignore = config
            .ignore
            .iter()
            .map(|m| LabelMatcher::parse(m).map_err(BadMatcher))
            .collect::<Result<_, _>>()?;
        Ok(Self {
            config: config.clone(),
            ignore,
            store,
            storms,
            investigator,
            metrics,
            lock: Mutex::new(()),
        })
    }

    /// Decides the batch (received at `now`; the inbox's entry `seq`, if it came through
    /// the inbox) and writes its groups and storms; returns the summary, what to do next
    /// and the alerts to log, in batch order. Each group touched is read once and written
    /// once per batch. A group that already holds entry `seq` (decided before a crash, not
    /// checkpointed) is skipped: its alerts are not counted or decided again, and are
    /// logged as `deduped`.
    pub(super) async fn decide_batch(
        &self,
        batch: WebhookBatch,
        now: DateTime<Utc>,
        seq: Option<u64>,
    ) -> Result<(IntakeSummary, Vec<Effect>, Vec<AlertRecord>), StoreError> {
        let mut summary = IntakeSummary {
            received: batch.alerts.len(),
            ..Default::default()
        };
        let mut actions = Vec::new();
        let mut log = Vec::with_capacity(summary.received);
        {
            let _decisions = self.lock.lock().await;
            let _storms = self.storms.write().await;
            let mut touched: Vec<Touched> = Vec::new();
            let mut index: HashMap<String, usize> = HashMap::new();
            let mut storms = StormViews::new();
            for (at, alert) in batch.alerts.into_iter().enumerate() {
                let key =
                    grouping::group_key(&self.config.group_by, &alert.labels, &alert.fingerprint);
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
        Ok((summary, actions.into_iter().map(Effect).collect(), log))
    }

    fn load(&self, key: &str) -> Result<Touched, StoreError> {
        let group = self.store.group_state(key)?;
        let inv = match group.as_ref().and_then(|g| g.investigation_id.as_deref()) {
            Some(id) => self.investigator.state(id)?,
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

    pub(super) fn decide(&self, t: &Touched, alert: &Alert, now: DateTime<Utc>) -> Outcome {
        let cfg = &self.config;
        if alert.status == AlertStatus::Resolved {
            return Outcome::Resolved;
        }
        let ignored = self.ignore.iter().any(|m| m.matches(&alert.labels));
        let inv = if t.queued { &InvState::Queued } else { &t.inv };
        let mut seen: Option<Budget> = None;
        let outcome = grouping::decide_firing(
            t.group.as_ref(),
            inv,
            ignored,
            now,
            cfg.cooldown.get(),
            || *seen.insert(self.investigator.budget()),
        );
        if let (Outcome::Budget, Some(limit)) = (outcome, seen.and_then(|b| b.exceeded())) {
            self.metrics
                .budget_rejections
                .with_label_values(&[limit.label(), Spender::Alert.label()])
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
        self.metrics
            .alerts_received
            .with_label_values(&[alert.source.label(), outcome.label()])
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
            self.investigator.hold();
        }
        t.alerts.push((alert, outcome, at));
    }

    /// Writes one touched group atomically (re-applying this batch's alerts onto the
    /// stored value, so a concurrent submission's id is kept) and returns its effect,
    /// its status and its alerts as logged (with their places in the batch).
    fn write_group(
        &self,
        t: Touched,
        now: DateTime<Utc>,
        seq: Option<u64>,
    ) -> Result<Written, StoreError> {
        let group_by = &self.config.group_by;
        let group = self
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
