//! A sled tree holding typed values under byte-string keys: serde values encoded as JSON,
//! or another `Codec` where a compact encoding matters.

use std::marker::PhantomData;
use std::sync::Arc;

use serde::Serialize;
use serde::de::DeserializeOwned;

use super::StoreError;
use super::flush::GroupFlusher;

/// How a tree's values are written as bytes.
pub trait Codec<V> {
    fn encode(value: &V) -> Result<Vec<u8>, String>;
    fn decode(bytes: &[u8]) -> Result<V, String>;
}

/// Serde values as JSON (the default).
pub struct Json;

impl<V: Serialize + DeserializeOwned> Codec<V> for Json {
    fn encode(value: &V) -> Result<Vec<u8>, String> {
        serde_json::to_vec(value).map_err(|e| e.to_string())
    }
    fn decode(bytes: &[u8]) -> Result<V, String> {
        serde_json::from_slice(bytes).map_err(|e| e.to_string())
    }
}

/// A tree of `V` values written by `C`. Keys are ordered bytes; use time-ordered ids for
/// time order.
pub struct Tree<V, C = Json> {
    name: &'static str,
    inner: sled::Tree,
    flusher: Arc<GroupFlusher>,
    _value: PhantomData<fn() -> (V, C)>,
}

impl<V, C> Clone for Tree<V, C> {
    fn clone(&self) -> Self {
        Self {
            name: self.name,
            inner: self.inner.clone(),
            flusher: self.flusher.clone(),
            _value: PhantomData,
        }
    }
}

impl<V, C: Codec<V>> Tree<V, C> {
    pub(super) fn new(name: &'static str, inner: sled::Tree, flusher: Arc<GroupFlusher>) -> Self {
        Self {
            name,
            inner,
            flusher,
            _value: PhantomData,
        }
    }

    fn decode(&self, key: &[u8], bytes: &[u8]) -> Result<V, StoreError> {
        C::decode(bytes).map_err(|reason| StoreError::Decode {
            tree: self.name,
            key: String::from_utf8_lossy(key).into_owned(),
            reason,
        })
    }

    fn encode(value: &V) -> Result<Vec<u8>, StoreError> {
        C::encode(value).map_err(|e| StoreError::Io(format!("cannot encode value: {e}")))
    }

    pub fn get(&self, key: impl AsRef<[u8]>) -> Result<Option<V>, StoreError> {
        let key = key.as_ref();
        self.inner
            .get(key)?
            .map(|v| self.decode(key, &v))
            .transpose()
    }

    pub fn insert(&self, key: impl AsRef<[u8]>, value: &V) -> Result<(), StoreError> {
        self.inner.insert(key.as_ref(), Self::encode(value)?)?;
        Ok(())
    }

    pub fn remove(&self, key: impl AsRef<[u8]>) -> Result<Option<V>, StoreError> {
        let key = key.as_ref();
        self.inner
            .remove(key)?
            .map(|v| self.decode(key, &v))
            .transpose()
    }

    pub fn contains(&self, key: impl AsRef<[u8]>) -> Result<bool, StoreError> {
        Ok(self.inner.contains_key(key.as_ref())?)
    }

    /// Reads, changes and writes one value atomically (retried on concurrent change).
    /// `f` returns the new value, or `None` to remove it.
    pub fn update(
        &self,
        key: impl AsRef<[u8]>,
        mut f: impl FnMut(Option<V>) -> Option<V>,
    ) -> Result<Option<V>, StoreError> {
        let key = key.as_ref();
        let mut failure = None;
        // A record that cannot be decoded (say, an enum value from a newer version) or a
        // value that cannot be encoded leaves the stored bytes as they are: never delete
        // what cannot be read; report it.
        let new = self.inner.update_and_fetch(key, |old| {
            failure = None;
            let decoded = match old.map(|b| self.decode(key, b)).transpose() {
                Ok(v) => v,
                Err(e) => {
                    failure = Some(e);
                    return old.map(<[u8]>::to_vec);
                }
            };
            match f(decoded).map(|v| Self::encode(&v)).transpose() {
                Ok(bytes) => bytes,
                Err(e) => {
                    failure = Some(e);
                    old.map(<[u8]>::to_vec)
                }
            }
        })?;
        if let Some(e) = failure {
            return Err(e);
        }
        new.map(|v| self.decode(key, &v)).transpose()
    }

    /// All entries whose key starts with `prefix`, in key order.
    pub fn scan_prefix(
        &self,
        prefix: impl AsRef<[u8]>,
    ) -> impl Iterator<Item = Result<(Vec<u8>, V), StoreError>> + '_ {
        self.inner.scan_prefix(prefix.as_ref()).map(move |r| {
            let (k, v) = r?;
            Ok((k.to_vec(), self.decode(&k, &v)?))
        })
    }

    /// All entries in key order.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = Result<(Vec<u8>, V), StoreError>> + '_ {
        self.inner.iter().map(move |r| {
            let (k, v) = r?;
            Ok((k.to_vec(), self.decode(&k, &v)?))
        })
    }

    /// Entries with keys in `[start, end)`, in key order.
    pub fn range(
        &self,
        start: impl AsRef<[u8]>,
        end: impl AsRef<[u8]>,
    ) -> impl DoubleEndedIterator<Item = Result<(Vec<u8>, V), StoreError>> + '_ {
        self.inner
            .range(start.as_ref().to_vec()..end.as_ref().to_vec())
            .map(move |r| {
                let (k, v) = r?;
                Ok((k.to_vec(), self.decode(&k, &v)?))
            })
    }

    /// The keys in `[start, end)`, in key order, without decoding values.
    pub fn keys_range(
        &self,
        start: impl AsRef<[u8]>,
        end: impl AsRef<[u8]>,
    ) -> impl DoubleEndedIterator<Item = Result<Vec<u8>, StoreError>> + '_ {
        self.inner
            .range(start.as_ref().to_vec()..end.as_ref().to_vec())
            .map(|r| Ok(r?.0.to_vec()))
    }

    /// The keys starting with `prefix`, in key order, without decoding values.
    pub fn keys_prefix(
        &self,
        prefix: impl AsRef<[u8]>,
    ) -> impl Iterator<Item = Result<Vec<u8>, StoreError>> + '_ {
        self.inner
            .scan_prefix(prefix.as_ref())
            .map(|r| Ok(r?.0.to_vec()))
    }

    /// Removes `keys` in one atomic batch (nothing to do for none). A batch costs two
    /// synchronous log writes in sled 0.34 (it seals the log buffer before and after), so
    /// hot paths that need no atomicity use `remove_each`.
    pub fn remove_all<K: AsRef<[u8]>>(
        &self,
        keys: impl IntoIterator<Item = K>,
    ) -> Result<(), StoreError> {
        let mut batch = sled::Batch::default();
        let mut any = false;
        for k in keys {
            batch.remove(k.as_ref());
            any = true;
        }
        if any {
            self.inner.apply_batch(batch)?;
        }
        Ok(())
    }

    /// Removes `keys` one by one (not atomic: after a crash some may remain).
    pub fn remove_each<K: AsRef<[u8]>>(
        &self,
        keys: impl IntoIterator<Item = K>,
    ) -> Result<(), StoreError> {
        for k in keys {
            self.inner.remove(k.as_ref())?;
        }
        Ok(())
    }

    /// Number of entries. Counts them all (sled keeps no count): not for hot paths.
    pub fn len(&self) -> usize {
        self.inner.len()
    }

    pub fn is_empty(&self) -> bool {
        self.inner.is_empty()
    }

    /// Durably writes pending changes (sled flushes all trees together; shares the
    /// store's group commit).
    pub async fn flush(&self) -> Result<(), StoreError> {
        self.flusher.flush().await
    }
}

#[cfg(test)]
mod tests {
    use serde::{Deserialize, Serialize};

    use crate::store::{Store, StoreError};

    #[derive(Debug, Serialize, Deserialize)]
    enum Status {
        Known,
    }

    #[derive(Debug, Serialize, Deserialize)]
    struct Record {
        status: Status,
    }

    #[test]
    fn update_keeps_a_record_it_cannot_decode_and_reports_it() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let raw = store.tree::<serde_json::Value>("records").unwrap();
        raw.insert("k", &serde_json::json!({"status": "FromANewerVersion"}))
            .unwrap();
        let typed = store.tree::<Record>("records").unwrap();
        for remove in [true, false] {
            let result = typed.update("k", |_| {
                (!remove).then_some(Record {
                    status: Status::Known,
                })
            });
            assert!(
                matches!(result, Err(StoreError::Decode { .. })),
                "{result:?}"
            );
            assert_eq!(
                raw.get("k").unwrap().unwrap()["status"],
                "FromANewerVersion",
                "the undecodable record is kept"
            );
        }
    }
}
