//! One alert group as the API and the intake see it (`AlertGroup`), and how an alert
//! folds into it; its firing fingerprints are kept outside it (`FiringSet`).

use std::collections::{BTreeMap, BTreeSet};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::{GROUP_FIRING_CAP, GROUP_SAMPLE, Outcome};
use crate::alerts::{Alert, AlertSource, AlertStatus};

/// One alert group: alerts sharing the `alerts.group_by` labels.
///
/// Stored as one small row (`GroupRow`) plus one record per sample alert, so an alert
/// rewrites its own sample, not the group's twenty; a group of one sample keeps it in its
/// row.
#[derive(Clone, Debug, Serialize, Deserialize, utoipa::ToSchema)]
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
    /// Latest alert per fingerprint (at most `GROUP_SAMPLE`); empty (and not shown) when
    /// a listing read only the last alert (`Samples::Last`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub alerts: BTreeMap<String, Alert>,
    /// How many of the group's alerts are firing. The fingerprints themselves are kept
    /// beside the group (`firing_inline`), or in their own tree once there are more than a
    /// few, so a group of hundreds of firing alerts is not rewritten whole on every webhook.
    #[serde(default)]
    pub firing_count: usize,
    /// The current episode's investigation.
    pub investigation_id: Option<String>,
    /// Set when an investigation was decided but not yet submitted (survives a crash).
    pub pending_since: Option<DateTime<Utc>>,
    /// Investigations started for this group so far.
    pub investigations: u32,
    /// The alert inbox entry of the last batch absorbed (0: none, or decided in place):
    /// a batch decided again after a crash skips the groups that already hold it.
    #[serde(skip)]
    pub batch: u64,
    /// Fingerprints whose sample `absorb` changed since the group was read (written with
    /// the group).
    #[serde(skip)]
    pub(super) touched: BTreeSet<String>,
    /// The rank of every stored sample (`alerts` may hold only some of them: the store's
    /// cache keeps a group without its samples); `absorb` drops the lowest past
    /// `GROUP_SAMPLE`.
    #[serde(skip)]
    pub(super) ranks: BTreeMap<String, SampleRank>,
    /// The firing set while the group's row holds it (a small set: see `firing.rs`);
    /// `None` once it is kept in the firing tree.
    #[serde(skip)]
    pub(super) firing_inline: Option<Vec<u64>>,
    /// True when the group's only sample (its last alert) is kept in its row, not in
    /// `alert_samples`.
    #[serde(skip)]
    pub(super) sample_in_row: bool,
}

/// What choosing a sample to drop needs of it: resolved ones go first, then the oldest.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct SampleRank {
    firing: bool,
    starts_at: Option<DateTime<Utc>>,
}

impl SampleRank {
    pub fn of(alert: &Alert) -> Self {
        Self::new(alert.status, alert.starts_at)
    }

    fn new(status: AlertStatus, starts_at: Option<DateTime<Utc>>) -> Self {
        Self {
            firing: status == AlertStatus::Firing,
            starts_at,
        }
    }
}

/// The fields of a stored sample its rank needs, decoded without the rest of it (never
/// written: `Serialize` only because typed trees are read-write).
#[derive(Serialize, Deserialize)]
pub(super) struct SampleHead {
    status: AlertStatus,
    starts_at: Option<DateTime<Utc>>,
}

impl From<SampleHead> for SampleRank {
    fn from(h: SampleHead) -> Self {
        Self::new(h.status, h.starts_at)
    }
}

impl AlertGroup {
    /// Quiet since before `cutoff`, with no investigation waiting to be submitted.
    pub(super) fn is_stale(&self, cutoff: DateTime<Utc>) -> bool {
        self.last_seen < cutoff && self.pending_since.is_none()
    }

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
            firing_count: 0,
            investigation_id: None,
            pending_since: None,
            investigations: 0,
            batch: 0,
            touched: BTreeSet::new(),
            ranks: BTreeMap::new(),
            firing_inline: Some(Vec::new()),
            sample_in_row: false,
        }
    }

    /// Folds `alert` in: counts, latest sample, firing set and group status.
    pub fn absorb(&mut self, alert: &Alert, now: DateTime<Utc>, firing: &mut dyn FiringSet) {
        self.received += 1;
        self.last_seen = now;
        self.last_alert = alert.clone();
        self.source = alert.source;
        match alert.status {
            AlertStatus::Firing => {
                if self.firing_count < GROUP_FIRING_CAP && firing.insert(&alert.fingerprint) {
                    self.firing_count += 1;
                }
            }
            AlertStatus::Resolved => {
                if firing.remove(&alert.fingerprint) {
                    self.firing_count = self.firing_count.saturating_sub(1);
                }
            }
        }
        self.status = if self.firing_count == 0 {
            AlertStatus::Resolved
        } else {
            AlertStatus::Firing
        };
        self.ranks
            .insert(alert.fingerprint.clone(), SampleRank::of(alert));
        self.alerts.insert(alert.fingerprint.clone(), alert.clone());
        self.touched.insert(alert.fingerprint.clone());
        while self.ranks.len() > GROUP_SAMPLE {
            let drop = self
                .ranks
                .iter()
                .filter(|(fp, _)| *fp != &alert.fingerprint)
                .min_by_key(|(_, rank)| **rank)
                .map(|(fp, _)| fp.clone());
            let Some(fp) = drop else { break };
            self.ranks.remove(&fp);
            self.alerts.remove(&fp);
        }
    }
}

/// The fingerprints of a group's firing alerts. `insert` and `remove` say whether the set
/// changed.
pub trait FiringSet {
    fn insert(&mut self, fingerprint: &str) -> bool;
    fn remove(&mut self, fingerprint: &str) -> bool;
}

impl FiringSet for BTreeSet<String> {
    fn insert(&mut self, fingerprint: &str) -> bool {
        BTreeSet::insert(self, fingerprint.to_string())
    }
    fn remove(&mut self, fingerprint: &str) -> bool {
        BTreeSet::remove(self, fingerprint)
    }
}
