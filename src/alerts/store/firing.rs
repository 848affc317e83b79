//! The fingerprints of each group's firing alerts, as 44 bits of a mixed hash each: a
//! small set in the group's row (up to `INLINE_CAP`, written with the row), a larger one
//! in buckets: `{group}\0{bucket}` keys (`1 << BUCKET_BITS` per group, by the hash), each
//! holding 40 bits of that hash per fingerprint (5 bytes each, sorted).
//!
//! Why in the row first: most groups hold one alert, and every key sled holds costs
//! resident memory (its page table, segment accounting and index entries, outside its
//! cache bound), so a flood of new groups would otherwise pay a key each for a set of one.
//! A set that outgrows the row moves to the buckets for good (until the group is removed);
//! the row says which holds it, so a move a crash cut short leaves buckets the row does
//! not read, cleared at the next move.
//! Why buckets of hashes: with distinct alerts a group's set grows to its cap
//! (`GROUP_FIRING_CAP`), and sled keeps resident every node it writes, so a key per
//! fingerprint would make the firing sets most of the daemon's memory on a large store.
//! Buckets keep a group's set in 16 small keys.
//! A fingerprint's bucket and kept bits come from 44 bits of its mixed hash: two
//! fingerprints of one group at the cap share them with odds of about 1 in 10^7; the set
//! only counts what is firing, so such a pair would count once (and the group would read
//! resolved early until the other fires again).

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
/// Most fingerprints a group's row holds; past it the set moves to the buckets.
pub(super) const INLINE_CAP: usize = 8;

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
    pub(super) tree: Tree<Vec<u64>, Packed>,
}

impl FiringSets {
    pub fn new(tree: Tree<Vec<u64>, Packed>) -> Self {
        Self { tree }
    }

    /// How many fingerprints of `group` are firing in its buckets.
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

    /// The set of `group` as a `FiringSet`: `inline` is the set its row holds (`None`:
    /// the set is in the buckets). The first storage error is kept in `error`.
    pub fn of<'a>(&'a self, group: &'a str, inline: Option<Vec<u64>>) -> StoredFiring<'a> {
        StoredFiring {
            sets: self,
            group,
            inline,
            error: None,
        }
    }
}

/// The hash of a fingerprint: FNV-1a, so it is the same in every build.
fn hash(fingerprint: &str) -> u64 {
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

/// A fingerprint as the row keeps it: its bucket and kept bits together.
fn inline_hash(fingerprint: &str) -> u64 {
    let (bucket, kept) = slot(hash(fingerprint));
    (bucket << KEPT_BITS) | kept
}

/// The key of `bucket` of `group`'s set.
fn bucket_key(group: &str, bucket: u64) -> String {
    member_key(group, &format!("{bucket:x}"))
}

/// One group's firing set, in its row (`inline`, written with the row by `update_group`)
/// or in the buckets. The first storage error is kept and returned by `update_group`.
pub(super) struct StoredFiring<'a> {
    sets: &'a FiringSets,
    group: &'a str,
    /// The set the row holds, sorted; `None` once it is in the buckets.
    pub inline: Option<Vec<u64>>,
    pub error: Option<StoreError>,
}

impl StoredFiring<'_> {
    fn apply(&mut self, fingerprint: &str, insert: bool) -> bool {
        if self.error.is_some() {
            return false;
        }
        if let Some(set) = &mut self.inline {
            let h = inline_hash(fingerprint);
            match (set.binary_search(&h), insert) {
                (Ok(_), true) | (Err(_), false) => return false,
                (Ok(at), false) => {
                    set.remove(at);
                    return true;
                }
                (Err(at), true) if set.len() < INLINE_CAP => {
                    set.insert(at, h);
                    return true;
                }
                (Err(_), true) => {
                    if let Err(e) = self.move_to_buckets() {
                        self.error = Some(e);
                        return false;
                    }
                }
            }
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

impl StoredFiring<'_> {
    /// Moves the row's set to the buckets (the row, written next, says so). Buckets a move
    /// a crash cut short left behind go first: until now the row held the whole set.
    fn move_to_buckets(&mut self) -> Result<(), StoreError> {
        let set = self.inline.take().unwrap_or_default();
        self.sets.remove_group(self.group)?;
        let mut buckets: std::collections::BTreeMap<u64, Vec<u64>> = Default::default();
        // Sorted by bucket, then by kept bits: each bucket's list comes out sorted.
        for h in set {
            buckets
                .entry(h >> KEPT_BITS)
                .or_default()
                .push(h & ((1 << KEPT_BITS) - 1));
        }
        for (bucket, kept) in buckets {
            self.sets
                .tree
                .insert(bucket_key(self.group, bucket), &kept)?;
        }
        Ok(())
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
        let mut a = sets.of("a", None);
        for i in 0..500 {
            assert!(a.insert(&format!("{i:016x}")));
        }
        assert!(!a.insert(&format!("{:016x}", 7)), "already there");
        assert!(a.remove(&format!("{:016x}", 7)));
        assert!(!a.remove(&format!("{:016x}", 7)), "already gone");
        assert!(a.error.is_none());
        sets.of("ab", None).insert("x");
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
}
