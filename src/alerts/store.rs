//! Alert storage: every received alert (time-ordered log) and one record per alert group
//! holding its state, recent alerts and the investigation decision. The decision
//! (`pending_since`) lives in the group record, so it is written atomically with the alert
//! that caused it and made durable by the same flush.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::alerts::{Alert, AlertSource, AlertStatus};
use crate::store::{Store, StoreError, Tree};

/// Most recent alerts kept per group (by fingerprint) for context and the API.
pub const GROUP_SAMPLE: usize = 20;
/// Groups kept decoded in memory (the hot ones during a storm); past this the cache
/// starts over.
const GROUP_CACHE: usize = 512;
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
    /// Attached to a storm of its alert (`alerts::storm`) instead of its own investigation.
    Storm,
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
            Self::Storm => "storm",
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
    /// How many of the group's alerts are firing. The fingerprints themselves are kept in
    /// their own tree (one small key each), so a group of hundreds of firing alerts is not
    /// rewritten whole on every webhook.
    #[serde(default)]
    pub firing_count: usize,
    /// The firing fingerprints as stored before they had their own tree; moved there when
    /// the group is first read.
    #[serde(default, rename = "firing", skip_serializing)]
    legacy_firing: BTreeSet<String>,
    /// The current episode's investigation.
    pub investigation_id: Option<String>,
    /// Set when an investigation was decided but not yet submitted (survives a crash).
    pub pending_since: Option<DateTime<Utc>>,
    /// Investigations started for this group so far.
    pub investigations: u32,
}

impl AlertGroup {
    /// Quiet since before `cutoff`, with no investigation waiting to be submitted.
    fn is_stale(&self, cutoff: DateTime<Utc>) -> bool {
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
            legacy_firing: BTreeSet::new(),
            investigation_id: None,
            pending_since: None,
            investigations: 0,
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

/// A group's firing set in the `alert_firing` tree (`{group}\0{fingerprint}` keys). The
/// first storage error is kept and returned by `update_group`.
struct StoredFiring<'a> {
    tree: &'a Tree<()>,
    group: &'a str,
    error: Option<StoreError>,
}

impl StoredFiring<'_> {
    fn apply(&mut self, fingerprint: &str, insert: bool) -> bool {
        if self.error.is_some() {
            return false;
        }
        let key = firing_key(self.group, fingerprint);
        let changed = match self.tree.contains(&key) {
            Ok(present) if present == insert => Ok(false),
            Ok(_) if insert => self.tree.insert(&key, &()).map(|_| true),
            Ok(_) => self.tree.remove(&key).map(|_| true),
            Err(e) => Err(e),
        };
        changed.unwrap_or_else(|e| {
            self.error = Some(e);
            false
        })
    }
}

impl FiringSet for StoredFiring<'_> {
    fn insert(&mut self, fingerprint: &str) -> bool {
        self.apply(fingerprint, true)
    }
    fn remove(&mut self, fingerprint: &str) -> bool {
        self.apply(fingerprint, false)
    }
}

fn firing_key(group: &str, fingerprint: &str) -> String {
    format!("{group}\0{fingerprint}")
}

/// What intake decisions read of a group (cheap to copy, unlike the group's samples).
#[derive(Clone, Debug, PartialEq)]
pub struct GroupState {
    pub status: AlertStatus,
    pub pending_since: Option<DateTime<Utc>>,
    pub investigation_id: Option<String>,
}

impl From<&AlertGroup> for GroupState {
    fn from(g: &AlertGroup) -> Self {
        Self {
            status: g.status,
            pending_since: g.pending_since,
            investigation_id: g.investigation_id.clone(),
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
///
/// Group writes go through one lock and a write-through cache of decoded groups: each
/// webhook reads and rewrites its groups, and decoding a group of 20 sample alerts on
/// every read (plus sled's compare-and-swap) was most of the intake's CPU time. sled
/// allows one process per data directory, so this is the only writer.
#[derive(Clone)]
pub struct AlertStore {
    store: Store,
    groups: Tree<AlertGroup>,
    firing: Tree<()>,
    cache: Arc<Mutex<HashMap<String, AlertGroup>>>,
    log: Tree<AlertRecord>,
}

static SEQ: AtomicU64 = AtomicU64::new(0);

/// The time prefix of an alert's log key: nanoseconds, zero-padded so keys sort by time.
fn log_key(t: DateTime<Utc>) -> String {
    format!("{:020}", t.timestamp_nanos_opt().unwrap_or(0).max(0))
}

impl AlertStore {
    pub fn open(store: &Store) -> Result<Self, StoreError> {
        Ok(Self {
            store: store.clone(),
            groups: store.tree("alert_groups")?,
            firing: store.tree("alert_firing")?,
            cache: Arc::default(),
            log: store.tree("alerts")?,
        })
    }

    pub fn group(&self, key: &str) -> Result<Option<AlertGroup>, StoreError> {
        let mut cache = self.lock_cache();
        self.cached(&mut cache, key).map(|g| g.cloned())
    }

    /// The decision fields of the group `key`, without copying its samples.
    pub fn group_state(&self, key: &str) -> Result<Option<GroupState>, StoreError> {
        let mut cache = self.lock_cache();
        self.cached(&mut cache, key)
            .map(|g| g.map(GroupState::from))
    }

    /// Atomically replaces the group `key` with `f(old, its firing set)` (None removes
    /// it, with its firing set); returns the new group's decision fields.
    pub fn update_group(
        &self,
        key: &str,
        f: impl FnOnce(Option<AlertGroup>, &mut dyn FiringSet) -> Option<AlertGroup>,
    ) -> Result<Option<GroupState>, StoreError> {
        let mut cache = self.lock_cache();
        self.cached(&mut cache, key)?;
        let mut firing = StoredFiring {
            tree: &self.firing,
            group: key,
            error: None,
        };
        // Taken out, not copied: on an error below the next read reloads it from the tree.
        let new = f(cache.remove(key), &mut firing);
        if let Some(e) = firing.error {
            return Err(e);
        }
        let Some(group) = new else {
            self.groups.remove(key)?;
            let keys: Vec<Vec<u8>> = self
                .firing
                .scan_prefix(firing_key(key, ""))
                .map(|r| r.map(|(k, _)| k))
                .collect::<Result<_, _>>()?;
            for k in keys {
                self.firing.remove(k)?;
            }
            return Ok(None);
        };
        self.groups.insert(key, &group)?;
        let state = GroupState::from(&group);
        cache.insert(key.to_string(), group);
        Ok(Some(state))
    }

    /// Moves a group's legacy firing set into the firing tree, and counts the tree's
    /// entries (the count is rewritten with the group at its next update).
    fn load_firing(&self, g: &mut AlertGroup) -> Result<(), StoreError> {
        for fp in std::mem::take(&mut g.legacy_firing) {
            self.firing.insert(firing_key(&g.key, &fp), &())?;
        }
        g.firing_count = self.firing.scan_prefix(firing_key(&g.key, "")).count();
        Ok(())
    }

    fn lock_cache(&self) -> std::sync::MutexGuard<'_, HashMap<String, AlertGroup>> {
        self.cache
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The group from the cache, read from the tree (and cached) on a miss.
    fn cached<'c>(
        &self,
        cache: &'c mut HashMap<String, AlertGroup>,
        key: &str,
    ) -> Result<Option<&'c AlertGroup>, StoreError> {
        if !cache.contains_key(key) {
            let Some(mut g) = self.groups.get(key)? else {
                return Ok(None);
            };
            self.load_firing(&mut g)?;
            if cache.len() >= GROUP_CACHE {
                cache.clear();
            }
            cache.insert(key.to_string(), g);
        }
        Ok(cache.get(key))
    }

    /// Appends one received alert to the time-ordered log.
    pub fn log_alert(&self, record: &AlertRecord) -> Result<(), StoreError> {
        let seq = SEQ.fetch_add(1, Ordering::Relaxed) % 1_000_000;
        let key = format!("{}-{seq:06}", log_key(record.received_at));
        self.log.insert(key, record)
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
        self.log
            .range(log_key(from), log_key(to))
            .map(|r| r.map(|(_, v)| v))
            .collect()
    }

    /// Removes alerts received before `cutoff`, and groups last seen before it that have
    /// no investigation waiting to be submitted. Returns (alerts, groups) removed.
    pub fn sweep(&self, cutoff: DateTime<Utc>) -> Result<(usize, usize), StoreError> {
        let old: Vec<Vec<u8>> = self
            .log
            .range(log_key(DateTime::<Utc>::MIN_UTC), log_key(cutoff))
            .map(|r| r.map(|(k, _)| k))
            .collect::<Result<_, _>>()?;
        for k in &old {
            self.log.remove(k)?;
        }
        let stale: Vec<String> = self
            .groups
            .iter()
            .filter_map(Result::ok)
            .map(|(_, g)| g)
            .filter(|g| g.is_stale(cutoff))
            .map(|g| g.key)
            .collect();
        let mut removed = 0;
        for key in &stale {
            // Checked again under the lock: an alert may have arrived meanwhile.
            if self
                .update_group(key, |g, _| g.filter(|g| !g.is_stale(cutoff)))?
                .is_none()
            {
                removed += 1;
            }
        }
        Ok((old.len(), removed))
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

#[cfg(test)]
mod tests {
    use super::*;

    fn alert(fingerprint: &str, status: AlertStatus) -> Alert {
        let json = serde_json::json!({
            "source": "alertmanager", "fingerprint": fingerprint, "status": status,
            "name": "X", "labels": {"alertname": "X"}, "annotations": {}
        });
        serde_json::from_value(json).unwrap()
    }

    #[test]
    fn a_group_stored_with_its_firing_set_inline_is_migrated_and_still_resolves() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let now = Utc::now();
        let mut legacy = serde_json::to_value(AlertGroup::new(
            "g".into(),
            "t".into(),
            &alert("a", AlertStatus::Firing),
            now,
        ))
        .unwrap();
        legacy["firing"] = serde_json::json!(["a", "b"]);
        legacy["status"] = serde_json::json!("firing");
        legacy.as_object_mut().unwrap().remove("firing_count");
        let raw: Tree<serde_json::Value> = store.tree("alert_groups").unwrap();
        raw.insert("g", &legacy).unwrap();

        let alerts = AlertStore::open(&store).unwrap();
        assert_eq!(alerts.group("g").unwrap().unwrap().firing_count, 2);
        let resolve = |fp: &str| {
            alerts
                .update_group("g", |g, firing| {
                    let mut g = g.unwrap();
                    g.absorb(&alert(fp, AlertStatus::Resolved), now, firing);
                    Some(g)
                })
                .unwrap()
                .unwrap()
                .status
        };
        assert_eq!(resolve("a"), AlertStatus::Firing);
        assert_eq!(
            resolve("a"),
            AlertStatus::Firing,
            "resolving twice counts once"
        );
        assert_eq!(resolve("b"), AlertStatus::Resolved);
        let stored = raw.get("g").unwrap().unwrap();
        assert!(stored.get("firing").is_none(), "{stored}");
        assert_eq!(stored["firing_count"], 0);

        alerts.update_group("g", |_, _| None).unwrap();
        assert!(alerts.group("g").unwrap().is_none());
        assert_eq!(alerts.firing.scan_prefix("g\0").count(), 0);
    }
}
