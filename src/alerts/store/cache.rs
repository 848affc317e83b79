//! The store's cache of decoded groups, bounded in count and in bytes.

use std::collections::{BTreeMap, HashMap, HashSet};

use super::AlertGroup;

/// Groups kept decoded in memory, without their samples: a cached group holds its last
/// alert and the rank of each sample. Past this one group leaves for each that comes in.
/// A miss costs a read of the group's row, its last alert and its samples' ranks, so the
/// bound is above the groups a storm keeps busy at once (the storm bench's 1,000
/// instances).
const GROUP_CACHE: usize = 1024;
/// And at most this many bytes of them (estimated, `cached_bytes`): alerts are bounded
/// (`alerts::cap`) but a few hundred kilobytes each at worst, and what the cache holds
/// must follow this bound, not what senders put in labels.
const GROUP_CACHE_BYTES: usize = 4 << 20;
/// Decoded groups (`GROUP_CACHE`) and the groups whose firing count this run has checked.
#[derive(Default)]
pub(super) struct GroupCache {
    pub groups: HashMap<String, AlertGroup>,
    /// The estimated bytes of `groups`.
    pub bytes: usize,
    pub counted: HashSet<String>,
}

impl GroupCache {
    pub fn insert(&mut self, key: String, group: AlertGroup) {
        self.bytes += cached_bytes(&group);
        if let Some(old) = self.groups.insert(key, group) {
            self.bytes -= cached_bytes(&old);
        }
    }

    pub fn remove(&mut self, key: &str) -> Option<AlertGroup> {
        let old = self.groups.remove(key)?;
        self.bytes -= cached_bytes(&old);
        Some(old)
    }

    /// Makes room for one more group of `incoming` bytes.
    pub fn make_room(&mut self, incoming: usize) {
        while !self.groups.is_empty()
            && (self.groups.len() >= GROUP_CACHE || self.bytes + incoming > GROUP_CACHE_BYTES)
        {
            // Any one: a scan of the map per miss would cost more than a wrong choice.
            let victim = self.groups.keys().next().cloned();
            victim.map(|v| self.remove(&v));
        }
    }
}

/// What a cached group takes in memory, near enough: its text and a fixed part per map
/// entry and per struct.
pub(super) fn cached_bytes(g: &AlertGroup) -> usize {
    const ENTRY: usize = 48;
    let a = &g.last_alert;
    let map = |m: &BTreeMap<String, String>| {
        m.iter()
            .map(|(k, v)| k.len() + v.len() + ENTRY)
            .sum::<usize>()
    };
    let text = [
        &a.generator_url,
        &a.dashboard_url,
        &a.panel_url,
        &a.silence_url,
        &a.value,
        &g.investigation_id,
    ]
    .into_iter()
    .flatten()
    .map(String::len)
    .sum::<usize>();
    let ranks = g.ranks.keys().map(|k| k.len() + ENTRY).sum::<usize>();
    512 + 2 * g.key.len()
        + g.title.len()
        + a.fingerprint.len()
        + a.name.len()
        + map(&a.labels)
        + map(&a.annotations)
        + text
        + ranks
}
