//! Investigations in sled: records keyed by uuid v7 id (so key order is creation order),
//! their event timelines keyed `<id>/<seq>`, the durable queue of ids still to run, and
//! the index of investigations that reached a final status and were not yet taken by the
//! notifier (written in the same step as the final status, so a notifier that lags or
//! restarts recovers every one of them from the store).

use chrono::{DateTime, Utc};

use crate::agent::{Event, Investigation, InvestigationStatus};
use crate::store::{Store, StoreError, Tree};

/// The typed trees of investigations. Cheap to clone.
#[derive(Clone)]
pub struct InvestigationStore {
    records: Tree<Investigation>,
    events: Tree<Event>,
    queue: Tree<DateTime<Utc>>,
    finished: Tree<DateTime<Utc>>,
    store: Store,
}

/// The smallest id of an investigation created at `t` or later: a uuid v7's text begins
/// with its 48-bit millisecond timestamp in hex (`tttttttt-tttt-7…`).
fn id_floor(t: DateTime<Utc>) -> String {
    // uuid v7 holds 48 bits of milliseconds: later times (`DateTime::MAX_UTC` as "no end")
    // clamp to the largest, earlier ones to 0.
    let ms = u64::try_from(t.timestamp_millis())
        .unwrap_or(0)
        .min(0xffff_ffff_ffff);
    format!("{:08x}-{:04x}", (ms >> 16) & 0xffff_ffff, ms & 0xffff)
}

/// One page of a listing, newest first.
#[derive(Debug, serde::Serialize, serde::Deserialize, utoipa::ToSchema)]
pub struct Page {
    pub items: Vec<Investigation>,
    /// Pass as `cursor` to get the next page; `None` on the last page.
    pub next_cursor: Option<String>,
}

impl InvestigationStore {
    pub fn open(store: &Store) -> Result<Self, StoreError> {
        Ok(Self {
            records: store.tree("investigations")?,
            events: store.tree("investigation_events")?,
            queue: store.tree("investigation_queue")?,
            finished: store.tree("investigation_finished")?,
            store: store.clone(),
        })
    }

    pub fn get(&self, id: &str) -> Result<Option<Investigation>, StoreError> {
        self.records.get(id)
    }

    pub fn put(&self, inv: &Investigation) -> Result<(), StoreError> {
        let became_final = inv.status.is_final()
            && !self
                .records
                .get(&inv.id)?
                .is_some_and(|old| old.status.is_final());
        self.records.insert(&inv.id, inv)?;
        if became_final {
            self.mark_finished(inv)?;
        }
        Ok(())
    }

    /// Changes one record atomically; `None` when absent (nothing is created). A change to
    /// a final status also records the id in the finished index.
    pub fn update(
        &self,
        id: &str,
        mut f: impl FnMut(&mut Investigation),
    ) -> Result<Option<Investigation>, StoreError> {
        let mut became_final = false;
        let new = self.records.update(id, |old| {
            old.map(|mut inv| {
                let was_final = inv.status.is_final();
                f(&mut inv);
                became_final = !was_final && inv.status.is_final();
                inv
            })
        })?;
        if let (true, Some(inv)) = (became_final, &new) {
            self.mark_finished(inv)?;
        }
        Ok(new)
    }

    fn mark_finished(&self, inv: &Investigation) -> Result<(), StoreError> {
        self.finished
            .insert(&inv.id, &inv.finished_at.unwrap_or_else(Utc::now))
    }

    /// Ids of final investigations not yet taken with [`Self::take_finished`], oldest
    /// first (ids are time-ordered).
    pub fn finished_ids(&self) -> Result<Vec<String>, StoreError> {
        self.finished
            .iter()
            .map(|r| r.map(|(k, _)| String::from_utf8_lossy(&k).into_owned()))
            .collect()
    }

    /// Removes `id` from the finished index (its notifications are stored).
    pub fn take_finished(&self, id: &str) -> Result<(), StoreError> {
        self.finished.remove(id).map(|_| ())
    }

    /// Removes a record, its events and its queue entry; false when it did not exist.
    pub fn delete(&self, id: &str) -> Result<bool, StoreError> {
        let existed = self.records.remove(id)?.is_some();
        self.queue.remove(id)?;
        self.finished.remove(id)?;
        self.clear_events(id)?;
        Ok(existed)
    }

    /// Newest first, optionally only `status`, starting after `cursor` (an id).
    pub fn list(
        &self,
        status: Option<InvestigationStatus>,
        limit: usize,
        cursor: Option<&str>,
    ) -> Result<Page, StoreError> {
        let limit = limit.clamp(1, 500);
        let end = cursor.unwrap_or("\u{10FFFF}").to_string();
        let mut items = Vec::new();
        let mut more = false;
        for r in self.records.range("", end).rev() {
            let (_, inv) = r?;
            if status.is_some_and(|s| s != inv.status) {
                continue;
            }
            if items.len() == limit {
                more = true;
                break;
            }
            items.push(inv);
        }
        let next_cursor = more.then(|| items.last().map(|i| i.id.clone())).flatten();
        Ok(Page { items, next_cursor })
    }

    /// Investigations created in `[from, to)`, oldest first. Reads only that time range:
    /// uuid v7 ids begin with their creation time.
    pub fn between(
        &self,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> Result<Vec<Investigation>, StoreError> {
        // The id is taken a moment before `created_at`: a second's margin each side.
        let margin = chrono::Duration::seconds(1);
        let mut out = Vec::new();
        let (low, high) = (
            from.checked_sub_signed(margin).unwrap_or(from),
            to.checked_add_signed(margin).unwrap_or(to),
        );
        for r in self.records.range(id_floor(low), id_floor(high)) {
            let (_, inv) = r?;
            if inv.created_at >= from && inv.created_at < to {
                out.push(inv);
            }
        }
        Ok(out)
    }

    /// The follow-ups of `parent_id`, oldest first: created after it, so only the records
    /// with a later id are read.
    pub fn follow_ups(&self, parent_id: &str) -> Result<Vec<Investigation>, StoreError> {
        let mut out = Vec::new();
        for r in self
            .records
            .range(parent_id.to_string(), "\u{10FFFF}".to_string())
        {
            let (_, inv) = r?;
            if inv.parent_id.as_deref() == Some(parent_id) {
                out.push(inv);
            }
        }
        Ok(out)
    }

    pub fn append_event(&self, id: &str, seq: u32, event: &Event) -> Result<(), StoreError> {
        self.events.insert(format!("{id}/{seq:06}"), event)
    }

    /// The timeline of `id`, in order.
    pub fn events(&self, id: &str) -> Result<Vec<Event>, StoreError> {
        self.events
            .scan_prefix(format!("{id}/"))
            .map(|r| r.map(|(_, e)| e))
            .collect()
    }

    /// Removes the events of `id` (before a restart from scratch).
    pub fn clear_events(&self, id: &str) -> Result<(), StoreError> {
        let keys: Vec<Vec<u8>> = self
            .events
            .scan_prefix(format!("{id}/"))
            .filter_map(|r| r.ok().map(|(k, _)| k))
            .collect();
        for k in keys {
            self.events.remove(k)?;
        }
        Ok(())
    }

    pub fn enqueue(&self, id: &str) -> Result<(), StoreError> {
        self.queue.insert(id, &Utc::now())
    }

    pub fn dequeue(&self, id: &str) -> Result<(), StoreError> {
        self.queue.remove(id).map(|_| ())
    }

    /// Ids still to run (queued, or running when the process stopped), oldest first.
    pub fn queued_ids(&self) -> Result<Vec<String>, StoreError> {
        self.queue
            .iter()
            .map(|r| r.map(|(k, _)| String::from_utf8_lossy(&k).into_owned()))
            .collect()
    }

    pub fn queue_len(&self) -> usize {
        self.queue.len()
    }

    /// Deletes final investigations created before `cutoff`; returns how many. Reads only
    /// those (ids are time-ordered).
    pub fn sweep(&self, cutoff: DateTime<Utc>) -> Result<usize, StoreError> {
        let old: Vec<String> = self
            .records
            .range("", id_floor(cutoff + chrono::Duration::seconds(1)))
            .filter_map(Result::ok)
            .map(|(_, inv)| inv)
            .filter(|inv| inv.created_at < cutoff)
            .filter(|inv| inv.status.is_final())
            .map(|inv| inv.id)
            .collect();
        for id in &old {
            self.delete(id)?;
        }
        Ok(old.len())
    }

    /// Makes everything written so far durable.
    pub async fn flush(&self) -> Result<(), StoreError> {
        self.store.flush().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::{InvestigationRequest, Trigger};

    #[test]
    fn a_v7_id_sorts_between_the_floors_of_its_creation_time() {
        for _ in 0..100 {
            let before = Utc::now();
            let id = uuid::Uuid::now_v7().to_string();
            let after = Utc::now() + chrono::Duration::milliseconds(1);
            assert!(id_floor(before) <= id, "{id} < {}", id_floor(before));
            assert!(id < id_floor(after), "{id} >= {}", id_floor(after));
        }
    }

    #[test]
    fn between_finds_the_investigations_of_a_time_range_only() {
        let dir = tempfile::tempdir().unwrap();
        let store = InvestigationStore::open(&Store::open(dir.path()).unwrap()).unwrap();
        let request = || InvestigationRequest {
            trigger: Trigger::Ask,
            title: "t".into(),
            prompt: "p".into(),
            context: None,
            group_key: None,
        };
        let mut old = Investigation::new(request(), "m");
        old.created_at -= chrono::Duration::days(2);
        old.id = format!("{}-7000-8000-000000000000", id_floor(old.created_at));
        let new = Investigation::new(request(), "m");
        store.put(&old).unwrap();
        store.put(&new).unwrap();
        let now = Utc::now();
        let day = chrono::Duration::days(1);
        let ids = |from, to| -> Vec<String> {
            store
                .between(from, to)
                .unwrap()
                .into_iter()
                .map(|i| i.id)
                .collect()
        };
        assert_eq!(ids(now - day, now + day), std::slice::from_ref(&new.id));
        assert_eq!(ids(now - day * 3, now - day), std::slice::from_ref(&old.id));
        assert_eq!(
            ids(now - day * 3, now + day),
            [old.id.clone(), new.id.clone()]
        );
        assert!(ids(now + day, now + day * 2).is_empty());
    }
}
