//! Alert storage: every received alert (time-ordered log) and one record per alert group
//! holding its state, recent alerts and the investigation decision. The decision
//! (`pending_since`) lives in the group record, so it is written atomically with the alert
//! that caused it and made durable by the same flush.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicU64, Ordering};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::{Store, StoreError, Tree};
use crate::alerts::{Alert, AlertSource, AlertStatus};

/// Most recent alerts kept per group (by fingerprint) for context and the API.
pub const GROUP_SAMPLE: usize = 20;
/// Most firing fingerprints tracked per group (to know when all have resolved).
pub const GROUP_FIRING_CAP: usize = 2_000;

/// What happened to one received alert; the `outcome` label of `alerts_received_total`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    Queued,
    Deduped,
    Cooldown,
    Budget,
    Ignored,
    Resolved,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Queued => "queued",
            Self::Deduped => "deduped",
            Self::Cooldown => "cooldown",
            Self::Budget => "budget",
            Self::Ignored => "ignored",
            Self::Resolved => "resolved",
        }
    }
}

/// One alert group: alerts sharing the `alerts.group_by` labels.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct AlertGroup {
    pub key: String,
    pub title: String,
    pub status: AlertStatus,
    pub source: AlertSource,
    pub first_seen: DateTime<Utc>,
    pub last_seen: DateTime<Utc>,
    pub received: u64,
    pub last_alert: Alert,
    pub last_outcome: Outcome,
    /// Latest alert per fingerprint (at most `GROUP_SAMPLE`).
    pub alerts: BTreeMap<String, Alert>,
    pub firing: BTreeSet<String>,
    /// The current episode's investigation.
    pub investigation_id: Option<String>,
    /// Set when an investigation was decided but not yet submitted (survives a crash).
    pub pending_since: Option<DateTime<Utc>>,
    /// Investigations started for this group so far.
    pub investigations: u32,
}

impl AlertGroup {
    pub fn new(key: String, title: String, alert: &Alert, now: DateTime<Utc>) -> Self {
        Self {
            key,
            title,
            status: alert.status,
            source: alert.source,
            first_seen: now,
            last_seen: now,
            received: 0,
            last_alert: alert.clone(),
            last_outcome: Outcome::Queued,
            alerts: BTreeMap::new(),
            firing: BTreeSet::new(),
            investigation_id: None,
            pending_since: None,
            investigations: 0,
        }
    }

    /// Folds `alert` in: counts, latest sample, firing set and group status.
    pub fn absorb(&mut self, alert: &Alert, now: DateTime<Utc>) {
        self.received += 1;
        self.last_seen = now;
        self.last_alert = alert.clone();
        self.source = alert.source;
        match alert.status {
            AlertStatus::Firing => {
                if self.firing.len() < GROUP_FIRING_CAP {
                    self.firing.insert(alert.fingerprint.clone());
                }
            }
            AlertStatus::Resolved => {
                self.firing.remove(&alert.fingerprint);
            }
        }
        self.status = if self.firing.is_empty() {
            AlertStatus::Resolved
        } else {
            AlertStatus::Firing
        };
        self.alerts.insert(alert.fingerprint.clone(), alert.clone());
        while self.alerts.len() > GROUP_SAMPLE {
            let drop = self
                .alerts
                .iter()
                .filter(|(fp, _)| *fp != &alert.fingerprint)
                .min_by_key(|(_, a)| (a.status == AlertStatus::Firing, a.starts_at))
                .map(|(fp, _)| fp.clone());
            match drop {
                Some(fp) => self.alerts.remove(&fp),
                None => break,
            };
        }
    }
}

/// One received alert as logged.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct AlertRecord {
    pub received_at: DateTime<Utc>,
    pub group_key: String,
    pub outcome: Outcome,
    pub alert: Alert,
}

/// The alert trees.
#[derive(Clone)]
pub struct AlertStore {
    store: Store,
    groups: Tree<AlertGroup>,
    log: Tree<AlertRecord>,
}

static SEQ: AtomicU64 = AtomicU64::new(0);

impl AlertStore {
    pub fn open(store: &Store) -> Result<Self, StoreError> {
        Ok(Self {
            store: store.clone(),
            groups: store.tree("alert_groups")?,
            log: store.tree("alerts")?,
        })
    }

    pub fn group(&self, key: &str) -> Result<Option<AlertGroup>, StoreError> {
        self.groups.get(key)
    }

    /// Atomically replaces the group `key` with `f(old)` (None removes it).
    pub fn update_group(
        &self,
        key: &str,
        f: impl FnMut(Option<AlertGroup>) -> Option<AlertGroup>,
    ) -> Result<Option<AlertGroup>, StoreError> {
        self.groups.update(key, f)
    }

    /// Appends one received alert to the time-ordered log.
    pub fn log_alert(&self, record: &AlertRecord) -> Result<(), StoreError> {
        let nanos = record.received_at.timestamp_nanos_opt().unwrap_or(0).max(0);
        let seq = SEQ.fetch_add(1, Ordering::Relaxed) % 1_000_000;
        self.log.insert(format!("{nanos:020}-{seq:06}"), record)
    }

    /// Every group, newest activity first, at most `limit`.
    pub fn recent_groups(&self, limit: usize) -> Result<Vec<AlertGroup>, StoreError> {
        let mut groups = self
            .groups
            .iter()
            .map(|r| r.map(|(_, g)| g))
            .collect::<Result<Vec<_>, _>>()?;
        groups.sort_by_key(|g| std::cmp::Reverse(g.last_seen));
        groups.truncate(limit);
        Ok(groups)
    }

    /// Groups with an investigation decided but not submitted (for recovery at start).
    pub fn pending_groups(&self) -> Result<Vec<AlertGroup>, StoreError> {
        self.groups
            .iter()
            .filter_map(|r| match r {
                Ok((_, g)) if g.pending_since.is_some() && g.investigation_id.is_none() => {
                    Some(Ok(g))
                }
                Ok(_) => None,
                Err(e) => Some(Err(e)),
            })
            .collect()
    }

    /// Alerts received in `[from, to)`, oldest first.
    pub fn alerts_between(
        &self,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> Result<Vec<AlertRecord>, StoreError> {
        let key = |t: DateTime<Utc>| format!("{:020}", t.timestamp_nanos_opt().unwrap_or(0).max(0));
        self.log
            .range(key(from), key(to))
            .map(|r| r.map(|(_, v)| v))
            .collect()
    }

    /// Number of received alerts stored.
    pub fn alert_count(&self) -> usize {
        self.log.len()
    }

    /// Makes everything written so far durable.
    pub async fn flush(&self) -> Result<(), StoreError> {
        self.store.flush().await
    }
}
