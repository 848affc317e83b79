//! The fingerprints of each group's firing alerts, in buckets: `{group}\0{bucket}` keys
//! (`BUCKETS` per group, by a hash of the fingerprint), each holding 40 bits of that hash
//! per fingerprint (5 bytes each, sorted).
//!
//! Layout 3 kept one key per fingerprint. With distinct alerts a group's set grows to its
//! cap (`GROUP_FIRING_CAP`), and sled keeps resident every node it writes: at 1,000,000
//! stored alerts (200 groups at the cap, 400,000 keys) that tree was 370 MB of sled's
//! files and most of the daemon's memory while ingesting. Buckets keep the same
//! fingerprints in a few thousand keys. Layout 4 kept them as JSON lists of the
//! fingerprints (about 19 bytes each; heaptrack: 7.2 MB of the daemon's heap at 1,000,000
//! alerts), layout 5 as 8-byte hashes in 64 buckets a group (3.6 MB; still ~7 MiB of the
//! daemon's resident memory when idle at 1,000,000 alerts, against a fill whose alerts all
//! resolve), layout 6 as 5 bytes in 16 buckets (fewer keys, each with sled's overhead).
//! A fingerprint's bucket and kept bits come from 44 bits of its mixed hash: two
//! fingerprints of one group at the cap share them with odds of about 1 in 10^7; the set
//! only counts what is firing, so such a pair would count once (and the group would read
//! resolved early until the other fires again).

use std::collections::BTreeMap;

use super::FiringSet;
use super::rows::member_key;
use crate::store::{Codec, StoreError, Tree};

/// Bits of the mixed hash that choose a fingerprint's bucket: 16 buckets a group, so a
/// group at the cap holds about 125 fingerprints per bucket (a rewrite of some 625 bytes
/// per firing alert); a small group one per bucket.
const BUCKET_BITS: u32 = 4;
/// Bits of the mixed hash a bucket keeps per fingerprint.
const KEPT_BITS: u32 = 40;
/// Bytes a bucket keeps per fingerprint.
const KEPT_BYTES: usize = (KEPT_BITS / 8) as usize;

/// A layout-5 bucket's value: its sorted 64-bit hashes, 8 bytes each (little-endian).
pub(super) struct Hashes;

impl Codec<Vec<u64>> for Hashes {
    fn encode(hashes: &Vec<u64>) -> Result<Vec<u8>, String> {
        Ok(hashes.iter().flat_map(|h| h.to_le_bytes()).collect())
    }
    fn decode(bytes: &[u8]) -> Result<Vec<u64>, String> {
        if !bytes.len().is_multiple_of(8) {
            return Err(format!("{} bytes are not 8-byte hashes", bytes.len()));
        }
        Ok(bytes
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes(c.try_into().expect("chunks of 8")))
            .collect())
    }
}

/// A bucket's value: the kept bits of its fingerprints' hashes, sorted, `KEPT_BYTES` each
/// (little-endian).
pub(super) struct Packed;

impl Codec<Vec<u64>> for Packed {
    fn encode(kept: &Vec<u64>) -> Result<Vec<u8>, String> {
        Ok(kept
            .iter()
            .flat_map(|k| k.to_le_bytes().into_iter().take(KEPT_BYTES))
            .collect())
    }
    fn decode(bytes: &[u8]) -> Result<Vec<u64>, String> {
        if !bytes.len().is_multiple_of(KEPT_BYTES) {
            return Err(format!(
                "{} bytes are not {KEPT_BYTES}-byte hashes",
                bytes.len()
            ));
        }
        Ok(bytes
            .chunks_exact(KEPT_BYTES)
            .map(|c| {
                let mut b = [0; 8];
                b[..KEPT_BYTES].copy_from_slice(c);
                u64::from_le_bytes(b)
            })
            .collect())
    }
}

/// The firing sets of all groups.
#[derive(Clone)]
pub(super) struct FiringSets {
    tree: Tree<Vec<u64>, Packed>,
}

impl FiringSets {
    pub fn new(tree: Tree<Vec<u64>, Packed>) -> Self {
        Self { tree }
    }

    /// How many fingerprints of `group` are firing.
    pub fn count(&self, group: &str) -> Result<usize, StoreError> {
        let mut n = 0;
        for r in self.tree.scan_prefix(member_key(group, "")) {
            n += r?.1.len();
        }
        Ok(n)
    }

    /// Removes the set of `group`.
    pub fn remove_group(&self, group: &str) -> Result<(), StoreError> {
        let keys = self
            .tree
            .keys_prefix(member_key(group, ""))
            .collect::<Result<Vec<_>, _>>()?;
        self.tree.remove_all(keys)
    }

    /// The set of `group` as a `FiringSet` (the first storage error is kept in `error`).
    pub fn of<'a>(&'a self, group: &'a str) -> StoredFiring<'a> {
        StoredFiring {
            sets: self,
            group,
            error: None,
        }
    }

    /// Adds `fingerprints` to the set of `group` (a migration; safe to repeat).
    pub fn add_all<'f>(
        &self,
        group: &str,
        fingerprints: impl IntoIterator<Item = &'f str>,
    ) -> Result<(), StoreError> {
        self.add_hashes(group, fingerprints.into_iter().map(hash))
    }

    /// Adds the fingerprints hashed `hashes` (by `hash`) to the set of `group` (a
    /// migration; safe to repeat).
    fn add_hashes(
        &self,
        group: &str,
        hashes: impl IntoIterator<Item = u64>,
    ) -> Result<(), StoreError> {
        let mut buckets: BTreeMap<String, Vec<u64>> = BTreeMap::new();
        for h in hashes {
            let (bucket, kept) = slot(h);
            buckets
                .entry(bucket_key(group, bucket))
                .or_default()
                .push(kept);
        }
        for (key, kept) in buckets {
            let mut set = self.tree.get(&key)?.unwrap_or_default();
            for k in kept {
                if let Err(at) = set.binary_search(&k) {
                    set.insert(at, k);
                }
            }
            self.tree.insert(&key, &set)?;
        }
        Ok(())
    }

    /// Moves layout 4's buckets (JSON lists of fingerprints) into this layout; returns
    /// how many fingerprints. Safe to run again after a stop midway (the old tree is
    /// dropped by the caller once this returns).
    pub fn convert(&self, old: &Tree<Vec<String>>) -> Result<usize, StoreError> {
        let mut moved = 0;
        for r in old.iter() {
            let (key, fps) = r?;
            moved += fps.len();
            self.add_hashes(&bucket_group(&key), fps.iter().map(|fp| hash(fp)))?;
        }
        Ok(moved)
    }

    /// Moves layout 5's buckets (8-byte hashes) into this layout; returns how many
    /// fingerprints. Safe to run again after a stop midway (the old tree is dropped by the
    /// caller once this returns).
    pub fn convert_hashes(&self, old: &Tree<Vec<u64>, Hashes>) -> Result<usize, StoreError> {
        let mut moved = 0;
        for r in old.iter() {
            let (key, hashes) = r?;
            moved += hashes.len();
            self.add_hashes(&bucket_group(&key), hashes)?;
        }
        Ok(moved)
    }

    /// Moves layout 3's one-key-per-fingerprint tree (`{group}\0{fingerprint}` keys) into
    /// buckets, a group at a time; returns how many fingerprints. Safe to run again after
    /// a stop midway (the old tree is dropped by the caller once this returns).
    pub fn import(&self, old: &Tree<()>) -> Result<usize, StoreError> {
        let mut moved = 0;
        let mut group = String::new();
        let mut fps: Vec<String> = Vec::new();
        for k in old.keys_range([], [0xff]) {
            let k = k?;
            let at = k.iter().position(|b| *b == 0).unwrap_or(k.len());
            let g = String::from_utf8_lossy(&k[..at]);
            if g != group {
                self.add_all(&group, fps.iter().map(String::as_str))?;
                moved += fps.len();
                fps.clear();
                group = g.into_owned();
            }
            fps.push(String::from_utf8_lossy(k.get(at + 1..).unwrap_or_default()).into_owned());
        }
        self.add_all(&group, fps.iter().map(String::as_str))?;
        Ok(moved + fps.len())
    }
}

/// The hash of a fingerprint: FNV-1a, so it is the same in every build.
pub(super) fn hash(fingerprint: &str) -> u64 {
    fingerprint.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// The bucket (of `1 << BUCKET_BITS`) of the fingerprint hashed `hash` and the bits of
/// it that bucket keeps. FNV-1a mixes its low bits poorly, so the hash is mixed first
/// (splitmix64's finaliser, a bijection).
fn slot(hash: u64) -> (u64, u64) {
    let mut z = hash;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^= z >> 31;
    (z >> (64 - BUCKET_BITS), z & ((1 << KEPT_BITS) - 1))
}

/// The key of `bucket` of `group`'s set.
fn bucket_key(group: &str, bucket: u64) -> String {
    member_key(group, &format!("{bucket:x}"))
}

/// The group of a bucket key (of this layout or an older one).
fn bucket_group(key: &[u8]) -> String {
    let at = key.iter().position(|b| *b == 0).unwrap_or(key.len());
    String::from_utf8_lossy(&key[..at]).into_owned()
}

/// One group's firing set in the buckets. The first storage error is kept and returned
/// by `update_group`.
pub(super) struct StoredFiring<'a> {
    sets: &'a FiringSets,
    group: &'a str,
    pub error: Option<StoreError>,
}

impl StoredFiring<'_> {
    fn apply(&mut self, fingerprint: &str, insert: bool) -> bool {
        if self.error.is_some() {
            return false;
        }
        let (bucket, kept) = slot(hash(fingerprint));
        let key = bucket_key(self.group, bucket);
        let tree = &self.sets.tree;
        let changed = tree.get(&key).and_then(|set| {
            let mut set = set.unwrap_or_default();
            match (set.binary_search(&kept), insert) {
                (Ok(_), true) | (Err(_), false) => return Ok(false),
                (Err(at), true) => set.insert(at, kept),
                (Ok(at), false) => {
                    set.remove(at);
                }
            }
            if set.is_empty() {
                tree.remove(&key)?;
            } else {
                tree.insert(&key, &set)?;
            }
            Ok(true)
        });
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Store;

    #[test]
    fn a_set_counts_inserts_and_removals_across_buckets_and_groups_stay_apart() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let sets = FiringSets::new(store.tree_with("firing_test").unwrap());
        let mut a = sets.of("a");
        for i in 0..500 {
            assert!(a.insert(&format!("{i:016x}")));
        }
        assert!(!a.insert(&format!("{:016x}", 7)), "already there");
        assert!(a.remove(&format!("{:016x}", 7)));
        assert!(!a.remove(&format!("{:016x}", 7)), "already gone");
        assert!(a.error.is_none());
        sets.of("ab").insert("x");
        assert_eq!(sets.count("a").unwrap(), 499);
        assert_eq!(sets.count("ab").unwrap(), 1);
        sets.remove_group("a").unwrap();
        assert_eq!(sets.count("a").unwrap(), 0);
        assert_eq!(sets.count("ab").unwrap(), 1);
    }

    #[test]
    fn a_bucket_keeps_five_bytes_a_fingerprint_and_refuses_a_torn_value() {
        let kept: Vec<u64> = ["a", "b", "c"].iter().map(|fp| slot(hash(fp)).1).collect();
        let bytes = Packed::encode(&kept).unwrap();
        assert_eq!(bytes.len(), 15);
        assert_eq!(Packed::decode(&bytes).unwrap(), kept);
        assert!(kept.iter().all(|k| *k < 1 << KEPT_BITS));
        let err = Packed::decode(&bytes[..14]).unwrap_err();
        assert!(err.contains("14 bytes"), "{err}");
    }

    #[test]
    fn the_one_key_per_fingerprint_layout_imports_group_by_group_and_again() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let old: Tree<()> = store.tree("old_firing").unwrap();
        for g in ["g1", "g2"] {
            for i in 0..100 {
                old.insert(member_key(g, &format!("fp{i}")), &()).unwrap();
            }
        }
        let sets = FiringSets::new(store.tree_with("firing_test").unwrap());
        assert_eq!(sets.import(&old).unwrap(), 200);
        assert_eq!(
            sets.import(&old).unwrap(),
            200,
            "a second run changes nothing"
        );
        assert_eq!(sets.count("g1").unwrap(), 100);
        assert_eq!(sets.count("g2").unwrap(), 100);
        assert!(!sets.of("g1").insert("fp42"));
    }
}
