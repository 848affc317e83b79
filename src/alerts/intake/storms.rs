//! `Storms`: the storm records (`alerts::storm::StormStore`) and the lock that keeps one
//! writer at a time on them. A batch's decisions hold it while they read and write the
//! batch's storms (`decisions/storm_views.rs`); a storm's submission holds it only to read
//! or update its record; the retention sweep holds it to remove quiet storms. Also
//! answers, for a group's submission, whether its alert's storm fires or is forming.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use tokio::sync::{Mutex, MutexGuard};

use crate::alerts::storm::{self, Storm, StormStatus, StormStore};
use crate::config::AlertsConfig;
use crate::store::StoreError;

/// The storm records and their writer lock.
pub(super) struct Storms {
    store: StormStore,
    /// `alerts.storm_by`, with storms off when `alerts.storm_threshold` is 0.
    storm_by: Option<Vec<String>>,
    /// One writer at a time: a batch's decisions, a submission's update, the sweep.
    writer: Mutex<()>,
}

impl Storms {
    pub(super) fn new(config: &AlertsConfig, store: StormStore) -> Self {
        Self {
            store,
            storm_by: (config.storm_threshold > 0).then(|| config.storm_by.clone()),
            writer: Mutex::new(()),
        }
    }

    /// The records, for reads that need no lock and for writes made holding [`Self::write`].
    pub(super) fn store(&self) -> &StormStore {
        &self.store
    }

    /// Waits for the writer lock (a batch's decisions hold it for the whole batch).
    pub(super) async fn write(&self) -> MutexGuard<'_, ()> {
        self.writer.lock().await
    }

    /// Reads `key`'s storm once no batch is writing it.
    pub(super) async fn get(&self, key: &str) -> Result<Option<Storm>, StoreError> {
        let _writer = self.write().await;
        self.store.get(key)
    }

    /// Changes `key`'s storm, if it exists, once no batch is writing it.
    pub(super) async fn update(
        &self,
        key: &str,
        change: impl FnOnce(&mut Storm),
    ) -> Result<(), StoreError> {
        let _writer = self.write().await;
        if let Some(mut s) = self.store.get(key)? {
            change(&mut s);
            self.store.put(&s)?;
        }
        Ok(())
    }

    /// Removes storms quiet since before `cutoff`. Returns how many.
    pub(super) async fn sweep(&self, cutoff: DateTime<Utc>) -> Result<usize, StoreError> {
        let _writer = self.write().await;
        self.store.sweep(cutoff)
    }

    /// The storm key of `labels`' alert, when storms are on and it has one.
    fn key_of(&self, labels: &BTreeMap<String, String>) -> Option<String> {
        storm::storm_key(self.storm_by.as_deref()?, labels)
    }

    /// The storm `group` belongs to, when it fires (its own investigation is not needed).
    pub(super) fn firing_storm_of(
        &self,
        group: &str,
        labels: &BTreeMap<String, String>,
    ) -> Result<Option<Storm>, StoreError> {
        let Some(key) = self.key_of(labels) else {
            return Ok(None);
        };
        let Some(s) = self.store.get(&key)? else {
            return Ok(None);
        };
        let member = self.store.member(&key, group)?.is_some();
        Ok((member && s.status == StormStatus::Firing).then_some(s))
    }

    /// True when other groups of `labels`' alert started within the storm window (a new
    /// investigation then waits `alerts.storm_hold`).
    pub(super) fn forming(
        &self,
        group: &str,
        labels: &BTreeMap<String, String>,
    ) -> Result<bool, StoreError> {
        let Some(key) = self.key_of(labels) else {
            return Ok(false);
        };
        Ok(self
            .store
            .get(&key)?
            .is_some_and(|s| s.others_starting(group)))
    }
}
