//! Storms on disk, in trees of their own (group records are not touched): one record per
//! storm key (`alert_storms`), and one small record per member group
//! (`alert_storm_members`, keys `{storm}\0{group}`), so a storm of thousands of groups is
//! not rewritten whole on every webhook. Writes happen under the intake's decision lock.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::{Storm, StormStatus};
use crate::store::{Store, StoreError, Tree};

/// One group of a storm.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Member {
    /// The group key's labels that are not storm labels (`instance`, `job`, …).
    pub labels: BTreeMap<String, String>,
    pub firing: bool,
    pub joined_at: DateTime<Utc>,
}

/// The storm trees. Cheap to clone.
#[derive(Clone)]
pub struct StormStore {
    storms: Tree<Storm>,
    members: Tree<Member>,
}

fn member_key(storm: &str, group: &str) -> String {
    format!("{storm}\0{group}")
}

impl StormStore {
    pub fn open(store: &Store) -> Result<Self, StoreError> {
        Ok(Self {
            storms: store.tree("alert_storms")?,
            members: store.tree("alert_storm_members")?,
        })
    }

    pub fn get(&self, key: &str) -> Result<Option<Storm>, StoreError> {
        self.storms.get(key)
    }

    pub fn put(&self, storm: &Storm) -> Result<(), StoreError> {
        self.storms.insert(&storm.key, storm)
    }

    pub fn member(&self, storm: &str, group: &str) -> Result<Option<Member>, StoreError> {
        self.members.get(member_key(storm, group))
    }

    pub fn put_member(&self, storm: &str, group: &str, m: &Member) -> Result<(), StoreError> {
        self.members.insert(member_key(storm, group), m)
    }

    /// The storm's members (group key, member), at most `limit`, in key order.
    pub fn members(&self, storm: &str, limit: usize) -> Result<Vec<(String, Member)>, StoreError> {
        let prefix = member_key(storm, "");
        self.members
            .scan_prefix(&prefix)
            .take(limit)
            .map(|r| {
                r.map(|(k, m)| {
                    let group = String::from_utf8_lossy(&k[prefix.len()..]).into_owned();
                    (group, m)
                })
            })
            .collect()
    }

    /// Storms (not watches), newest activity first, at most `limit`.
    pub fn recent(&self, limit: usize) -> Result<Vec<Storm>, StoreError> {
        let mut storms = self
            .storms
            .iter()
            .filter_map(|r| match r {
                Ok((_, s)) if s.status == StormStatus::Watching => None,
                other => Some(other.map(|(_, s)| s)),
            })
            .collect::<Result<Vec<_>, _>>()?;
        storms.sort_by_key(|s| std::cmp::Reverse(s.last_seen));
        storms.truncate(limit);
        Ok(storms)
    }

    /// Storms with an investigation decided but not yet submitted.
    pub fn pending(&self) -> Result<Vec<Storm>, StoreError> {
        self.storms
            .iter()
            .filter_map(|r| match r {
                Ok((_, s)) if s.pending_since.is_some() => Some(Ok(s)),
                Ok(_) => None,
                Err(e) => Some(Err(e)),
            })
            .collect()
    }

    /// Removes storms quiet since before `cutoff` (not firing, nothing pending) with their
    /// members; the caller holds the intake's decision lock. Returns how many.
    pub fn sweep(&self, cutoff: DateTime<Utc>) -> Result<usize, StoreError> {
        let stale: Vec<String> = self
            .storms
            .iter()
            .filter_map(Result::ok)
            .filter(|(_, s)| s.is_stale(cutoff))
            .map(|(_, s)| s.key)
            .collect();
        for key in &stale {
            let keys: Vec<Vec<u8>> = self
                .members
                .scan_prefix(member_key(key, ""))
                .map(|r| r.map(|(k, _)| k))
                .collect::<Result<_, _>>()?;
            for k in keys {
                self.members.remove(k)?;
            }
            self.storms.remove(key)?;
        }
        Ok(stale.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn storms_and_members_are_kept_and_swept_together() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let storms = StormStore::open(&store).unwrap();
        let now = Utc::now();
        let mut s = Storm::new("{alertname=\"A\"}".into(), "A".into(), now);
        s.form(now);
        storms.put(&s).unwrap();
        let m = Member {
            labels: [("instance".to_string(), "h1".to_string())].into(),
            firing: true,
            joined_at: now,
        };
        storms.put_member(&s.key, "g1", &m).unwrap();
        storms.put_member(&s.key, "g2", &m).unwrap();
        // A storm whose key is a prefix of another's keeps its own members.
        storms.put_member("{alertname=\"A\"}x", "g3", &m).unwrap();
        let members = storms.members(&s.key, 10).unwrap();
        assert_eq!(members.len(), 2);
        assert_eq!(members[0].0, "g1");
        assert_eq!(storms.recent(10).unwrap().len(), 1);
        let later = now + chrono::TimeDelta::days(1);
        assert_eq!(storms.sweep(later).unwrap(), 0, "a firing storm stays");
        s.status = StormStatus::Resolved;
        storms.put(&s).unwrap();
        assert_eq!(storms.sweep(later).unwrap(), 1);
        assert!(storms.get(&s.key).unwrap().is_none());
        assert!(storms.members(&s.key, 10).unwrap().is_empty());
        assert_eq!(storms.members("{alertname=\"A\"}x", 10).unwrap().len(), 1);
    }
}
