//! Durable state in sled: typed trees with serde values, a schema version, and clear
//! errors for a data directory that is unwritable or locked by another sre-agent, plus
//! append-only journals beside it for records that only grow (`journal.rs`).
//! sled writes without compression (schema 4; see `SLED_COMPRESSION`) in segments of
//! 64 KiB (schema 5; see `SEGMENT_SIZE`); a store written in another format is copied
//! into this one on first start (`migrate.rs`).
//! sled types do not leave this module. The parts keep their own typed stores on top of it
//! (`alerts::store`, `agent::store`, `report::store`, the notifier's outbox).

mod flush;
pub mod inbox;
mod journal;
mod migrate;
mod tree;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use flush::GroupFlusher;

pub use journal::Journal;
pub use tree::{Codec, Tree};

#[cfg(test)]
pub(crate) use migrate::write_schema_1;

/// The on-disk schema this build writes. Bumped when a stored type changes incompatibly.
/// 2: sled compression on; alert groups stored without their samples (see
/// `alerts::store`), with a last-seen index.
/// 3: the log of received alerts in a journal outside sled (`journal.rs`).
/// 4: sled compression off again (`SLED_COMPRESSION`).
/// 5: sled segments of 64 KiB (`SEGMENT_SIZE`).
/// 6: firing sets hold 8-byte hashes of the fingerprints (`alerts::store`'s layout 5).
/// 7: firing sets hold 5 bytes of each hash, in 16 buckets a group (layout 6).
pub const SCHEMA_VERSION: u32 = 7;

/// sled's page cache. Pages past it are read back from disk (through the OS cache). 16 MiB
/// rather than 4: a storm's 1,000 groups fit (storm bench p50 8.8 -> 7.4 ms, 30,000 ->
/// 36,000 alerts/s), and the daemon still ingests at 51.5 MiB resident on a 1.1M-alert
/// store after a restart. Measured again with schema 7: 8 MiB took the storm bench to p50
/// 12.3, p99 28.2 ms (16 MiB: 7.4, 15.6), 32 MiB did no better than 16 (7.4, 13.3).
const SLED_CACHE_BYTES: u64 = 16 * 1024 * 1024;
/// Whether sled compresses what it writes. Off since schema 4: sled 0.34 compresses each
/// write with a new zstd context (about 9 µs, measured at levels 1 and 3 alike), which was
/// over half of the intake's CPU time (six writes per alert). Schema 2 turned it on when
/// the log of received alerts lived in sled (1.7 kB per alert uncompressed); that log is
/// in the journal now (zstd per hour), and what stays in sled is bounded state: groups
/// and their samples, firing sets, investigations.
const SLED_COMPRESSION: bool = false;
/// zstd level of a compressed sled (kept to read schemas 2 and 3 for their migration).
const COMPRESSION_LEVEL: i32 = 3;
/// The size of sled's log segments (sled's default, which schemas 1-4 used, is 512 KiB).
/// sled frees a segment only once nothing live is left in it, and the pages the intake
/// rewrites (samples, rows, firing buckets) leave a little live data in most segments: the
/// scale bench's store of 100,000 alerts took 106 MB of sled files with 512 KiB segments,
/// 81 MB with 128 KiB and 68 MB with 64 KiB, for about 6 MB of records. Below 64 KiB sled
/// writes nodes past an eighth of a segment as separate blob files (thousands of them at
/// 32 KiB) and the files grew again.
const SEGMENT_SIZE: usize = 64 * 1024;

/// How a sled database is written: sled cannot change either in place.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Format {
    compressed: bool,
    segment_size: usize,
}

/// The format this build writes.
const FORMAT: Format = Format {
    compressed: SLED_COMPRESSION,
    segment_size: SEGMENT_SIZE,
};

/// The sled configuration of `path` in `format` (an older format only to read a store
/// for its migration).
fn sled_config(path: &Path, format: Format) -> sled::Config {
    let config = sled::Config::new()
        .path(path)
        .cache_capacity(SLED_CACHE_BYTES)
        .segment_size(format.segment_size)
        // Periodic flushes come from the group flusher (see flush.rs).
        .flush_every_ms(None);
    if format.compressed {
        config
            .use_compression(true)
            .compression_factor(COMPRESSION_LEVEL)
    } else {
        config
    }
}

/// Opens the sled database at `path` (in the data directory `dir`). A lock still held is
/// waited out for up to `LOCK_WAIT`: a process stopping (a restart) or a database this
/// process just closed (a migration step) lets go of it a moment later.
fn open_sled(dir: &Path, path: &Path, format: Format) -> Result<sled::Db, StoreError> {
    let deadline = std::time::Instant::now() + LOCK_WAIT;
    loop {
        match sled_config(path, format).open() {
            Ok(db) => return Ok(db),
            Err(e) => match open_error(dir, &e) {
                StoreError::Locked(_) if std::time::Instant::now() < deadline => {
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
                other => return Err(other),
            },
        }
    }
}

/// Rounds of `collect_garbage`: each frees up to eight of sled's sealed garbage bags
/// (crossbeam-epoch's `COLLECT_STEPS`), so 64 rounds free up to 512 bags.
const COLLECT_ROUNDS: usize = 64;

/// Frees what sled's writes left for epoch-based reclamation. sled defers freeing each
/// node and log buffer it replaces until every thread has moved on, and crossbeam-epoch
/// frees a few of those batches at each later operation; when writes stop, the rest waits
/// for the next burst. Cheap when there is nothing to free; the heap trimmer calls it
/// every second. With the flush thread handing its own over (`hand_over_garbage`), the
/// daemon's anonymous memory idle after a 1,000,000-alert fill went from 22.3-23.7 MiB
/// to 21.4-21.7 MiB (two runs each).
pub fn collect_garbage() {
    for _ in 0..COLLECT_ROUNDS {
        sled::crossbeam_pin().flush();
    }
}

/// Hands what this thread's sled operations left for epoch-based reclamation to the
/// shared queue `collect_garbage` frees (crossbeam-epoch keeps up to 64 items a thread
/// until that thread's next operations).
pub fn hand_over_garbage() {
    sled::crossbeam_pin().flush();
}

/// How long `open_sled` waits for a held lock.
const LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

fn open_error(dir: &Path, e: &sled::Error) -> StoreError {
    match e {
        sled::Error::Io(_) if lock_held(&dir.join("sled").join("db")) => {
            StoreError::Locked(dir.to_path_buf())
        }
        _ => StoreError::Open {
            path: dir.to_path_buf(),
            reason: e.to_string(),
        },
    }
}

/// A storage failure, with the data directory it concerns.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error(
        "data directory {0} is locked by another running sre-agent (sled allows one process); \
         stop it or use another server.data_dir"
    )]
    Locked(PathBuf),
    #[error("cannot open data directory {path}: {reason}")]
    Open { path: PathBuf, reason: String },
    #[error(
        "data directory {path} holds schema version {found}, newer than this build's \
         {SCHEMA_VERSION}; upgrade sre-agent"
    )]
    NewerSchema { path: PathBuf, found: u32 },
    /// sled failed (the sled error is kept as the source).
    #[error("storage error: {0}")]
    Sled(#[from] sled::Error),
    /// A storage failure outside sled (encoding a value, the flush thread).
    #[error("storage error: {0}")]
    Io(String),
    /// A write or sync of a request failed (a full disk, an I/O error) and nothing of it
    /// is kept: the sender may try again.
    #[error("not stored: {0}")]
    NotStored(String),
    #[error("stored record {key:?} in {tree} cannot be decoded: {reason}")]
    Decode {
        tree: &'static str,
        key: String,
        reason: String,
    },
}

/// True when another process (or another open `Store`) holds sled's lock on `db_file`.
/// sled reports a held lock only in its error text, so the lock is tried here directly
/// (the same `flock` sled takes).
fn lock_held(db_file: &Path) -> bool {
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(db_file)
        .is_ok_and(|f| matches!(f.try_lock(), Err(std::fs::TryLockError::WouldBlock)))
}

/// The open database. Cheap to clone.
#[derive(Clone)]
pub struct Store {
    db: sled::Db,
    flusher: Arc<GroupFlusher>,
    /// The journals opened so far (one per name), synced by every flush.
    journals: flush::Journals,
    path: PathBuf,
}

impl Store {
    /// Opens (creating if needed) the store in `dir`.
    pub fn open(dir: &Path) -> Result<Self, StoreError> {
        let open_err = |reason: String| StoreError::Open {
            path: dir.to_path_buf(),
            reason,
        };
        std::fs::create_dir_all(dir).map_err(|e| open_err(e.to_string()))?;
        let probe = dir.join(".write-test");
        std::fs::write(&probe, b"ok").map_err(|e| open_err(format!("not writable: {e}")))?;
        let _ = std::fs::remove_file(&probe);

        migrate::finish_interrupted(dir).map_err(|e| open_err(e.to_string()))?;
        if let Some(found) = migrate::format_of(&dir.join("sled"))
            && found != FORMAT
        {
            migrate::reformat(dir, found, FORMAT)?;
        }
        let db = open_sled(dir, &dir.join("sled"), FORMAT)?;
        let journals = flush::Journals::default();
        let store = Self {
            flusher: Arc::new(GroupFlusher::start(db.clone(), journals.clone())?),
            journals,
            db,
            path: dir.to_path_buf(),
        };
        store.check_schema()?;
        Ok(store)
    }

    fn check_schema(&self) -> Result<(), StoreError> {
        let meta = self.db.open_tree("meta")?;
        match meta.get("schema_version")? {
            Some(v) => {
                let found = std::str::from_utf8(&v)
                    .ok()
                    .and_then(|s| s.parse().ok())
                    .unwrap_or(0);
                if found > SCHEMA_VERSION {
                    return Err(StoreError::NewerSchema {
                        path: self.path.clone(),
                        found,
                    });
                }
                if found < SCHEMA_VERSION {
                    meta.insert("schema_version", SCHEMA_VERSION.to_string().as_bytes())?;
                    meta.flush()?;
                }
            }
            None => {
                meta.insert("schema_version", SCHEMA_VERSION.to_string().as_bytes())?;
                meta.flush()?;
            }
        }
        Ok(())
    }

    /// A typed tree of JSON values; `name` is the sled tree name.
    pub fn tree<V: serde::Serialize + serde::de::DeserializeOwned>(
        &self,
        name: &'static str,
    ) -> Result<Tree<V>, StoreError> {
        self.tree_with(name)
    }

    /// A typed tree whose values `C` encodes; `name` is the sled tree name.
    pub fn tree_with<V, C: Codec<V>>(&self, name: &'static str) -> Result<Tree<V, C>, StoreError> {
        Ok(Tree::new(
            name,
            self.db.open_tree(name)?,
            self.flusher.clone(),
        ))
    }

    /// The journal `name` (`journal.rs`): records appended to files outside sled, made
    /// durable by the same flushes. One per name per store.
    pub fn journal<V: serde::Serialize + serde::de::DeserializeOwned>(
        &self,
        name: &'static str,
    ) -> Result<Journal<V>, StoreError> {
        let mut journals = self.journals.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(j) = journals.iter().find(|j| j.name() == name) {
            return Ok(Journal::from_shared(j.clone()));
        }
        let journal = Journal::open(&self.path, name)?;
        journals.push(journal.shared());
        Ok(journal)
    }

    /// The journal `name`, first moving into it the records of the sled tree `tree` (an
    /// earlier schema kept them there), once: `at` gives a record's time. A stop midway
    /// leaves the tree whole and the journal absent, so the next start does it again.
    pub fn journal_from_tree<V: serde::Serialize + serde::de::DeserializeOwned>(
        &self,
        tree: &'static str,
        name: &'static str,
        at: impl Fn(&V) -> chrono::DateTime<chrono::Utc>,
    ) -> Result<Journal<V>, StoreError> {
        let marker = format!("journal_{name}");
        if self.marker(&marker)?.is_none() {
            let dir = journal::dir_of(&self.path, name);
            let old = self.db.open_tree(tree)?;
            if !dir.exists() && !old.is_empty() {
                let io = |e: std::io::Error| {
                    StoreError::Io(format!(
                        "moving {tree} into the journal in {}: {e}",
                        dir.display()
                    ))
                };
                let records = old.iter().map(|r| {
                    let (k, v) = r.map_err(std::io::Error::other)?;
                    // A record that does not decode keeps its bytes (reads skip it; the
                    // retention sweep removes it with its hour).
                    let ms = serde_json::from_slice::<V>(&v)
                        .map(|v| at(&v).timestamp_millis())
                        .unwrap_or_else(|_| {
                            tracing::warn!(tree, key = %String::from_utf8_lossy(&k), "a record that does not decode is moved as it is");
                            chrono::Utc::now().timestamp_millis()
                        });
                    Ok((ms, v.to_vec()))
                });
                let moved = journal::import(&dir, records).map_err(io)?;
                tracing::info!(
                    records = moved,
                    tree,
                    journal = name,
                    "records moved from sled into the journal"
                );
            }
            self.set_marker(&marker, "1")?;
            self.db.flush()?;
        }
        let old = self.db.open_tree(tree)?;
        if !old.is_empty() {
            old.clear()?;
            self.db.flush()?;
        }
        self.journal(name)
    }

    /// Writes everything buffered to disk; returns once it is durable. Concurrent callers
    /// share one flush (group commit, see `flush.rs`).
    pub async fn flush(&self) -> Result<(), StoreError> {
        self.flusher.flush().await
    }

    /// A named marker in the store's own `meta` tree (say, that a part's records were
    /// migrated to a new layout).
    pub fn marker(&self, name: &str) -> Result<Option<String>, StoreError> {
        let meta = self.db.open_tree("meta")?;
        Ok(meta
            .get(name)?
            .map(|v| String::from_utf8_lossy(&v).into_owned()))
    }

    /// Sets a marker (see `marker`); durable at the next flush.
    pub fn set_marker(&self, name: &str, value: &str) -> Result<(), StoreError> {
        self.db.open_tree("meta")?.insert(name, value.as_bytes())?;
        Ok(())
    }

    /// Removes the tree `name` and everything in it (a layout that moved elsewhere).
    pub fn drop_tree(&self, name: &str) -> Result<(), StoreError> {
        self.db.drop_tree(name)?;
        Ok(())
    }

    /// The data directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Checks the store answers (for /readyz).
    pub fn is_healthy(&self) -> bool {
        self.db
            .open_tree("meta")
            .and_then(|t| t.get("schema_version"))
            .is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_data_directory_open_elsewhere_is_reported_locked() {
        let dir = tempfile::tempdir().unwrap();
        let _first = Store::open(dir.path()).unwrap();
        let second = Store::open(dir.path())
            .err()
            .expect("the directory is locked");
        assert!(matches!(second, StoreError::Locked(_)), "{second}");
    }
}
