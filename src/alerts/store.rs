//! Alert storage: every received alert in a time-ordered log (the `alerts` journal of
//! hourly files), and each alert group as a row with its sample alerts and firing set
//! (on-disk layout in `store/rows.rs` and `store/firing.rs`), read through a bounded cache
//! of decoded groups (`store/cache.rs`). The investigation decision (`pending_since`) lives
//! in the group row, so it is written atomically with the alert that caused it and made
//! durable by the same flush.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::alerts::{Alert, AlertStatus};
use crate::store::{Journal, Store, StoreError, Tree};
use crate::telemetry::Metrics;

mod cache;
mod firing;
mod group;
mod outcome;
mod rows;

pub use group::{AlertGroup, FiringSet};

use group::{SampleHead, SampleRank};
pub use outcome::Outcome;

use cache::GroupCache;
use firing::FiringSets;
use rows::{
    GroupRow, group_of, member_fingerprint, member_key, row_of, seen_group, seen_key, time_key,
};

/// Most recent alerts kept per group (by fingerprint) for context and the API.
pub const GROUP_SAMPLE: usize = 20;
/// The decoded-group cache of a store opened without a bound (`AlertStore::open`).
pub const DEFAULT_CACHE_BYTES: usize = 2 << 20;
/// Groups whose firing count was checked against the firing tree this run (see
/// `AlertStore::cached`); past this the set starts over (and counts are checked again).
const COUNTED_CAP: usize = 10_000;
/// Most firing fingerprints tracked per group (to know when all have resolved).
pub const GROUP_FIRING_CAP: usize = 2_000;

/// What intake decisions read of a group (cheap to copy, unlike the group's samples).
#[derive(Clone, Debug, PartialEq)]
pub struct GroupState {
    pub status: AlertStatus,
    pub pending_since: Option<DateTime<Utc>>,
    pub investigation_id: Option<String>,
    /// The inbox entry of the last batch absorbed (`AlertGroup::batch`).
    pub batch: u64,
}

impl From<&AlertGroup> for GroupState {
    fn from(g: &AlertGroup) -> Self {
        Self {
            status: g.status,
            pending_since: g.pending_since,
            investigation_id: g.investigation_id.clone(),
            batch: g.batch,
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
    /// The alert inbox entry it came in (absent for alerts decided in place): a batch
    /// decided again after a crash is logged again only when none of its alerts are.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch: Option<u64>,
}

/// The alert trees (layout in `rows.rs`).
///
/// Group writes go through one lock and a write-through cache of decoded groups: each
/// webhook reads and rewrites its groups, and decoding a group of 20 sample alerts on
/// every read was most of the intake's CPU time. sled allows one process per data
/// directory, so this is the only writer.
#[derive(Clone)]
pub struct AlertStore {
    store: Store,
    groups: Tree<GroupRow>,
    samples: Tree<Alert>,
    /// The same tree as `samples`, decoding only what a sample's rank needs.
    heads: Tree<SampleHead>,
    seen: Tree<()>,
    firing: FiringSets,
    cache: Arc<Mutex<GroupCache>>,
    /// Every received alert, in a journal outside sled.
    log: Journal<AlertRecord>,
}

/// Which sample alerts a listing reads of each group.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Samples {
    /// The latest alert of each fingerprint (up to `GROUP_SAMPLE`).
    All,
    /// Only the group's last alert.
    Last,
}

/// One page of groups, newest activity first.
#[derive(Debug)]
pub struct GroupPage {
    pub groups: Vec<AlertGroup>,
    /// Pass to `recent_groups` for the next page; `None` on the last page.
    pub next: Option<Vec<u8>>,
}

impl AlertStore {
    /// The alert trees of `store`, with a cache of `DEFAULT_CACHE_BYTES` whose figures are
    /// not exported.
    pub fn open(store: &Store) -> Result<Self, StoreError> {
        let unexported = |e: prometheus::Error| StoreError::Io(e.to_string());
        let cache = GroupCache::new(
            DEFAULT_CACHE_BYTES,
            prometheus::IntCounter::new("evictions", "not exported").map_err(unexported)?,
            prometheus::IntGauge::new("bytes", "not exported").map_err(unexported)?,
        );
        Self::open_with_cache(store, cache)
    }

    /// The alert trees of `store`, with decoded groups cached in at most `cache_bytes`
    /// (evictions and bytes held in `metrics`).
    pub fn open_bounded(
        store: &Store,
        cache_bytes: usize,
        metrics: &Metrics,
    ) -> Result<Self, StoreError> {
        Self::open_with_cache(
            store,
            GroupCache::new(
                cache_bytes,
                metrics.alert_group_cache_evictions.clone(),
                metrics.alert_group_cache_bytes.clone(),
            ),
        )
    }

    fn open_with_cache(store: &Store, cache: GroupCache) -> Result<Self, StoreError> {
        Ok(Self {
            store: store.clone(),
            groups: store.tree("alert_groups")?,
            samples: store.tree("alert_samples")?,
            heads: store.tree("alert_samples")?,
            seen: store.tree("alert_groups_seen")?,
            firing: FiringSets::new(store.tree_with("alert_firing_packed")?),
            cache: Arc::new(Mutex::new(cache)),
            log: store.journal("alerts")?,
        })
    }

    /// The group `key` with its samples.
    pub fn group(&self, key: &str) -> Result<Option<AlertGroup>, StoreError> {
        let mut cache = self.lock_cache();
        let Some(mut group) = self.cached(&mut cache, key)?.cloned() else {
            return Ok(None);
        };
        if group.sample_in_row {
            let last = group.last_alert.clone();
            group.alerts.insert(last.fingerprint.clone(), last);
            return Ok(Some(group));
        }
        // Read under the lock, so they are the samples of the cached group.
        for r in self.samples.scan_prefix(member_key(key, "")) {
            let (k, alert) = r?;
            group.alerts.insert(member_fingerprint(&k), alert);
        }
        Ok(Some(group))
    }

    /// The decision fields of the group `key`, without copying its samples.
    pub fn group_state(&self, key: &str) -> Result<Option<GroupState>, StoreError> {
        let mut cache = self.lock_cache();
        self.cached(&mut cache, key)
            .map(|g| g.map(GroupState::from))
    }

    /// Atomically replaces the group `key` with `f(old, its firing set)` (None removes
    /// it, with its samples and firing set); returns the new group's decision fields.
    /// Samples change only through `AlertGroup::absorb`.
    pub fn update_group(
        &self,
        key: &str,
        f: impl FnOnce(Option<AlertGroup>, &mut dyn FiringSet) -> Option<AlertGroup>,
    ) -> Result<Option<GroupState>, StoreError> {
        let mut cache = self.lock_cache();
        self.cached(&mut cache, key)?;
        // Taken out, not copied: on an error below the next read reloads it from the tree.
        let old = cache.remove(key);
        // A new group's set starts in its row.
        let inline = old
            .as_ref()
            .map_or_else(|| Some(Vec::new()), |g| g.firing_inline.clone());
        let mut firing = self.firing.of(key, inline);
        let old_seen = old.as_ref().map(|g| seen_key(g.last_seen, key));
        // The samples in `alert_samples`, and the one the row holds instead (kept to move
        // there should the group gain a second).
        let (old_samples, old_row_sample) = match &old {
            Some(g) if g.sample_in_row => (Vec::new(), Some(g.last_alert.clone())),
            Some(g) => (g.ranks.keys().cloned().collect(), None),
            None => (Vec::new(), None),
        };
        let new = f(old, &mut firing);
        if let Some(e) = firing.error {
            return Err(e);
        }
        let Some(mut group) = new else {
            self.groups.remove(key)?;
            if let Some(k) = old_seen {
                self.seen.remove(k)?;
            }
            self.firing.remove_group(key)?;
            let prefix = member_key(key, "");
            let keys = self
                .samples
                .keys_prefix(&prefix)
                .collect::<Result<Vec<_>, _>>()?;
            self.samples.remove_all(keys)?;
            return Ok(None);
        };
        group.firing_inline = firing.inline;
        let touched = std::mem::take(&mut group.touched);
        for (fp, alert) in &group.alerts {
            group
                .ranks
                .entry(fp.clone())
                .or_insert_with(|| SampleRank::of(alert));
        }
        // A group of one sample (its last alert) keeps it in its row.
        let in_row =
            group.ranks.len() == 1 && group.ranks.contains_key(&group.last_alert.fingerprint);
        group.sample_in_row = in_row;
        if !in_row {
            // Samples first: a row on disk always has its samples (sled recovers a prefix
            // of the writes).
            if let Some(a) = old_row_sample.filter(|a| {
                group.ranks.contains_key(&a.fingerprint)
                    && !group.alerts.contains_key(&a.fingerprint)
            }) {
                self.samples.insert(member_key(key, &a.fingerprint), &a)?;
            }
            for (fp, alert) in &group.alerts {
                if touched.contains(fp) || !old_samples.contains(fp) {
                    self.samples.insert(member_key(key, fp), alert)?;
                }
            }
        }
        let new_seen = seen_key(group.last_seen, key);
        if old_seen.as_ref() != Some(&new_seen) {
            self.seen.insert(&new_seen, &())?;
            if let Some(k) = old_seen {
                self.seen.remove(k)?;
            }
        }
        self.groups.insert(key, &row_of(&group))?;
        // After the row that holds them now (or no longer names them): a sample left by a
        // crash here is dropped again at the group's next update.
        let dropped = old_samples
            .iter()
            .filter(|fp| in_row || !group.ranks.contains_key(*fp))
            .map(|fp| member_key(key, fp));
        self.samples.remove_each(dropped)?;
        let state = GroupState::from(&group);
        group.alerts.clear();
        cache.insert(key.to_string(), group);
        Ok(Some(state))
    }

    fn lock_cache(&self) -> std::sync::MutexGuard<'_, GroupCache> {
        self.cache
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The group from the cache, read from the trees (and cached) on a miss. The first time
    /// a run reads a group whose set is in the firing tree, its firing count is recounted
    /// from that tree (a crash can keep firing-set writes whose row update was lost; the
    /// count is rewritten with the group at its next update).
    fn cached<'c>(
        &self,
        cache: &'c mut GroupCache,
        key: &str,
    ) -> Result<Option<&'c AlertGroup>, StoreError> {
        if !cache.contains(key) {
            let Some(mut g) = self.read_cached(key)? else {
                return Ok(None);
            };
            if let Some(set) = &g.firing_inline {
                // The row holds the set: it and the count were written together.
                g.firing_count = set.len();
            } else if !cache.counted.contains(key) {
                g.firing_count = self.firing.count(key)?;
                if cache.counted.len() >= COUNTED_CAP {
                    cache.counted.clear();
                }
                cache.counted.insert(key.to_string());
            }
            cache.insert(key.to_string(), g);
        }
        Ok(cache.get(key))
    }

    /// The group `key` as the cache keeps it: its row, its last alert and its samples'
    /// ranks (all samples decoded for a row that does not name its last alert, or whose
    /// sample a crash lost).
    fn read_cached(&self, key: &str) -> Result<Option<AlertGroup>, StoreError> {
        let Some(row) = self.groups.get(key)? else {
            return Ok(None);
        };
        let mut group = self.summary(row)?;
        if group.alerts.is_empty() && !group.sample_in_row {
            for r in self.heads.scan_prefix(member_key(key, "")) {
                let (k, head) = r?;
                group.ranks.insert(member_fingerprint(&k), head.into());
            }
        }
        group.alerts.clear();
        Ok(Some(group))
    }

    fn assemble(&self, mut row: GroupRow) -> Result<AlertGroup, StoreError> {
        if let Some(sample) = row.sample.take() {
            let alerts = BTreeMap::from([(sample.fingerprint.clone(), sample.clone())]);
            row.sample = Some(sample.clone());
            return Ok(group_of(row, alerts, sample));
        }
        let mut alerts = BTreeMap::new();
        for r in self.samples.scan_prefix(member_key(&row.key, "")) {
            let (k, alert) = r?;
            alerts.insert(member_fingerprint(&k), alert);
        }
        let last_alert = alerts
            .get(&row.last_fingerprint)
            .or_else(|| alerts.values().max_by_key(|a| a.starts_at))
            .cloned()
            .ok_or_else(|| StoreError::Decode {
                tree: "alert_samples",
                key: row.key.clone(),
                reason: "the group has no sample alert".into(),
            })?;
        Ok(group_of(row, alerts, last_alert))
    }

    /// The group of `row` with its last alert only (all samples for a row that does not
    /// hold or name its last alert, or whose sample a crash lost).
    fn summary(&self, row: GroupRow) -> Result<AlertGroup, StoreError> {
        let last = match (&row.sample, row.last_fingerprint.as_str()) {
            (Some(sample), _) => Some(sample.clone()),
            (None, "") => None,
            (None, fp) => self.samples.get(member_key(&row.key, fp))?,
        };
        match last {
            Some(last) => Ok(group_of(row, BTreeMap::new(), last)),
            None => self.assemble(row),
        }
    }

    /// Appends one received alert to the log (durable at the next `flush`).
    pub fn log_alert(&self, record: &AlertRecord) -> Result<(), StoreError> {
        self.log.append(record.received_at, [record])
    }

    /// Appends the alerts of one webhook, received at `at`, in one write.
    pub fn log_alerts(&self, at: DateTime<Utc>, records: &[AlertRecord]) -> Result<(), StoreError> {
        self.log.append(at, records)
    }

    /// Groups by newest activity first, at most `limit`, starting after the page that
    /// ended at `cursor` (a `GroupPage::next`). Reads only the groups returned; with
    /// `Samples::Last` only their last alert (`alerts` left empty), which is one read per
    /// group instead of twenty decoded alerts.
    pub fn recent_groups(
        &self,
        limit: usize,
        cursor: Option<&[u8]>,
        samples: Samples,
    ) -> Result<GroupPage, StoreError> {
        let end = cursor.map_or_else(|| vec![0xff], <[u8]>::to_vec);
        let mut groups = Vec::new();
        let mut last = None;
        let mut keys = self.seen.keys_range([], &end).rev();
        for k in keys.by_ref() {
            let k = k?;
            if groups.len() == limit {
                return Ok(GroupPage { groups, next: last });
            }
            if let Some(row) = self.groups.get(seen_group(&k))? {
                groups.push(match samples {
                    Samples::All => self.assemble(row)?,
                    Samples::Last => self.summary(row)?,
                });
            }
            last = Some(k);
        }
        Ok(GroupPage { groups, next: None })
    }

    /// Groups with an investigation decided but not submitted (for recovery at start).
    pub fn pending_groups(&self) -> Result<Vec<AlertGroup>, StoreError> {
        let mut out = Vec::new();
        for r in self.groups.iter() {
            let (_, row) = r?;
            if row.pending_since.is_some() && row.investigation_id.is_none() {
                out.push(self.assemble(row)?);
            }
        }
        Ok(out)
    }

    /// Alerts received in `[from, to)`, oldest first.
    pub fn alerts_between(
        &self,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> Result<Vec<AlertRecord>, StoreError> {
        let mut out = Vec::new();
        self.for_each_alert(from, to, |r| out.push(r))?;
        Ok(out)
    }

    /// Calls `f` with each alert received in `[from, to)`, oldest first, holding one at a
    /// time (a month of a noisy homelab is hundreds of thousands).
    pub fn for_each_alert(
        &self,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
        mut f: impl FnMut(AlertRecord),
    ) -> Result<(), StoreError> {
        self.log.scan(from, to, |_, r| f(r)).map(|_| ())
    }

    /// Removes alerts received before `cutoff` (whole hours of the log: an hour goes once
    /// it has all passed the cutoff), and groups last seen before it that have no
    /// investigation waiting to be submitted. Returns (alerts, groups) removed. Reads only
    /// what it removes (time-ordered keys).
    pub fn sweep(&self, cutoff: DateTime<Utc>) -> Result<(usize, usize), StoreError> {
        let alerts = self.log.sweep(cutoff)?;
        let quiet: Vec<String> = self
            .seen
            .keys_range(time_key(DateTime::<Utc>::MIN_UTC), time_key(cutoff))
            .map(|k| k.map(|k| seen_group(&k)))
            .collect::<Result<_, _>>()?;
        let mut removed = 0;
        for key in &quiet {
            // Checked under the lock: an alert may have arrived meanwhile.
            if self
                .update_group(key, |g, _| g.filter(|g| !g.is_stale(cutoff)))?
                .is_none()
            {
                removed += 1;
            }
        }
        Ok((alerts, removed))
    }

    /// Number of received alerts stored (reads the log's open segments: not for hot
    /// paths; 0 when the log cannot be read).
    pub fn alert_count(&self) -> usize {
        self.log.count().unwrap_or_else(|e| {
            tracing::warn!(error = %e, "cannot count the stored alerts");
            0
        })
    }

    /// Compresses the log's closed hours now (they are compressed in the background as
    /// each hour ends; benches call this before measuring disk).
    pub fn compact_log(&self) -> Result<(), StoreError> {
        self.log.compress_closed()
    }

    /// Makes everything written so far durable.
    pub async fn flush(&self) -> Result<(), StoreError> {
        self.store.flush().await
    }
}

#[cfg(test)]
mod tests;
