//! The store's cache of decoded groups: bounded in bytes (`store.cache_mib`, estimated by
//! `cached_bytes`), the least recently used group leaving first, each eviction counted
//! (`sre_agent_alert_group_cache_evictions_total`).

use std::collections::{BTreeMap, HashMap, HashSet};

use prometheus::{IntCounter, IntGauge};

use super::AlertGroup;

/// A group's bytes in the cache: itself, plus its key in the recency index.
fn entry_bytes(key: &str, group: &AlertGroup) -> usize {
    cached_bytes(group) + key.len()
}

struct Entry {
    group: AlertGroup,
    bytes: usize,
    /// Its place in `GroupCache::recency`.
    used: u64,
}

/// Decoded groups, without their samples: a cached group holds its last alert and the rank
/// of each sample. A miss costs a read of the group's row, its last alert and its samples'
/// ranks; a flood of new groups costs evictions, never memory past the bound.
pub(super) struct GroupCache {
    groups: HashMap<String, Entry>,
    /// Keys by last use, oldest first.
    recency: BTreeMap<u64, String>,
    clock: u64,
    /// The estimated bytes of `groups`.
    bytes: usize,
    max_bytes: usize,
    evictions: IntCounter,
    gauge: IntGauge,
    /// The groups whose firing count this run has checked (see `AlertStore::cached`).
    pub counted: HashSet<String>,
}

impl GroupCache {
    /// A cache of at most `max_bytes`; `evictions` counts the groups that leave for room,
    /// `gauge` follows the bytes held.
    pub fn new(max_bytes: usize, evictions: IntCounter, gauge: IntGauge) -> Self {
        Self {
            groups: HashMap::new(),
            recency: BTreeMap::new(),
            clock: 0,
            bytes: 0,
            max_bytes,
            evictions,
            gauge,
            counted: HashSet::new(),
        }
    }

    pub fn contains(&self, key: &str) -> bool {
        self.groups.contains_key(key)
    }

    /// The group `key`, now the most recently used.
    pub fn get(&mut self, key: &str) -> Option<&AlertGroup> {
        let entry = self.groups.get_mut(key)?;
        self.clock += 1;
        if let Some(k) = self.recency.remove(&entry.used) {
            self.recency.insert(self.clock, k);
        }
        entry.used = self.clock;
        Some(&entry.group)
    }

    /// Caches `group` as the most recently used, evicting the least recently used groups
    /// until it fits (a group larger than the whole bound is kept alone: alerts are capped
    /// at intake, so that is a few hundred kilobytes at worst).
    pub fn insert(&mut self, key: String, group: AlertGroup) {
        self.remove(&key);
        let bytes = entry_bytes(&key, &group);
        while self.bytes + bytes > self.max_bytes {
            let Some((_, victim)) = self.recency.pop_first() else {
                break;
            };
            if let Some(e) = self.groups.remove(&victim) {
                self.bytes -= e.bytes;
                self.evictions.inc();
            }
        }
        self.clock += 1;
        self.recency.insert(self.clock, key.clone());
        self.groups.insert(
            key,
            Entry {
                group,
                bytes,
                used: self.clock,
            },
        );
        self.bytes += bytes;
        self.gauge.set(self.bytes as i64);
    }

    pub fn remove(&mut self, key: &str) -> Option<AlertGroup> {
        let entry = self.groups.remove(key)?;
        self.recency.remove(&entry.used);
        self.bytes -= entry.bytes;
        self.gauge.set(self.bytes as i64);
        Some(entry.group)
    }

    #[cfg(test)]
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.groups.len()
    }

    /// The bytes of the groups held, counted again.
    #[cfg(test)]
    pub fn recount(&self) -> usize {
        self.groups
            .iter()
            .map(|(k, e)| entry_bytes(k, &e.group))
            .sum()
    }
}

/// What a cached group takes in memory, near enough: its last alert as parsed
/// (`cap::memory_bytes`), its other strings, the ranks of its samples, the firing set it
/// holds, and its slot in the map and in the recency index (the group struct itself, with
/// the map's spare capacity).
pub(super) fn cached_bytes(g: &AlertGroup) -> usize {
    /// A `String` key's entry in a B-tree of small values, with its heap copy.
    const RANK: usize = 96;
    let text = [&g.investigation_id]
        .into_iter()
        .flatten()
        .map(|s| s.len() + 16)
        .sum::<usize>();
    let ranks = g.ranks.keys().map(|k| k.len() + RANK).sum::<usize>();
    let firing = g.firing_inline.as_ref().map_or(0, |v| 8 * v.capacity());
    2 * std::mem::size_of::<Entry>()
        + 2 * (g.key.len() + 16)
        + g.title.len()
        + 16
        + crate::alerts::cap::memory_bytes(&g.last_alert)
        + text
        + ranks
        + firing
}

#[cfg(test)]
mod tests {
    use chrono::Utc;

    use super::*;
    use crate::alerts::{Alert, AlertStatus};

    fn group(key: &str, label_bytes: usize) -> AlertGroup {
        let json = serde_json::json!({
            "source": "alertmanager", "fingerprint": key, "status": AlertStatus::Firing,
            "name": "X", "labels": {"alertname": "X", "blob": "b".repeat(label_bytes)},
            "annotations": {},
        });
        let alert: Alert = serde_json::from_value(json).unwrap();
        AlertGroup::new(key.into(), "t".into(), &alert, Utc::now())
    }

    fn cache(max_bytes: usize) -> GroupCache {
        GroupCache::new(
            max_bytes,
            IntCounter::new("evictions", "test").unwrap(),
            IntGauge::new("bytes", "test").unwrap(),
        )
    }

    #[test]
    fn a_flood_of_groups_stays_under_the_byte_bound_and_every_eviction_is_counted() {
        let one = entry_bytes("g0", &group("g0", 100));
        let mut c = cache(10 * one);
        for i in 0..1_000 {
            let key = format!("g{}", i % 1_000_000);
            c.insert(key.clone(), group(&key, 100));
            assert!(c.bytes() <= 10 * one, "{} over {}", c.bytes(), 10 * one);
        }
        assert!((9..=10).contains(&c.len()), "{}", c.len());
        assert_eq!(c.evictions.get(), 1_000 - c.len() as u64);
        assert_eq!(c.gauge.get(), c.bytes() as i64);
    }

    #[test]
    fn the_least_recently_used_group_leaves_first() {
        let one = entry_bytes("a", &group("a", 100));
        let mut c = cache(3 * one);
        for k in ["a", "b", "c"] {
            c.insert(k.into(), group(k, 100));
        }
        // "a" read again, so "b" is now the oldest.
        assert!(c.get("a").is_some());
        c.insert("d".into(), group("d", 100));
        assert!(c.contains("a") && c.contains("c") && c.contains("d"));
        assert!(!c.contains("b"));
        assert_eq!(c.evictions.get(), 1);
    }

    #[test]
    fn a_group_larger_than_the_bound_is_kept_alone() {
        let mut c = cache(4_096);
        c.insert("small".into(), group("small", 10));
        c.insert("huge".into(), group("huge", 10_000));
        assert!(!c.contains("small") && c.contains("huge"));
        assert_eq!((c.len(), c.evictions.get()), (1, 1));
        c.insert("small".into(), group("small", 10));
        assert!(c.contains("small") && !c.contains("huge"));
    }

    #[test]
    fn replacing_or_removing_a_group_gives_its_bytes_back() {
        let mut c = cache(1 << 20);
        c.insert("a".into(), group("a", 1_000));
        c.insert("a".into(), group("a", 10));
        assert_eq!(c.bytes(), entry_bytes("a", &group("a", 10)));
        assert!(c.remove("a").is_some());
        assert_eq!((c.bytes(), c.len(), c.gauge.get()), (0, 0, 0));
    }
}
