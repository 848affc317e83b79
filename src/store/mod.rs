//! Durable state: typed sled trees with serde values (`tree.rs`), the schema version a
//! data directory is stamped with (`schema.rs`), append-only journals beside sled for
//! records that only grow (`journal.rs`), inboxes of requests written before they are
//! answered (`inbox.rs`), and one group-commit flush that makes sled and the journals
//! durable for every writer waiting on it (`flush.rs`). Errors are clear for a data
//! directory that is unwritable, locked by another sre-agent or written in another schema.
//! sled writes without compression in segments of 64 KiB (see `SLED_COMPRESSION` and
//! `SEGMENT_SIZE`), and its deferred garbage is freed when idle (`collect_garbage`).
//! sled types do not leave this module. The parts keep their own typed stores on top of it
//! (`alerts::store`, `agent::store`, `report::store`, the notifier's outbox).

mod flush;
pub mod inbox;
mod journal;
mod schema;
mod tree;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use flush::GroupFlusher;

pub use journal::Journal;
pub use tree::{Codec, Tree};

pub use schema::SCHEMA_VERSION;
#[cfg(test)]
pub(crate) use schema::write_schema;

/// sled's page cache for a store opened without a bound (`Store::open`: tools and tests;
/// the daemon's comes from `store.cache_mib`). Pages past it are read back from disk
/// (through the OS cache).
pub const DEFAULT_CACHE_BYTES: u64 = 8 << 20;
/// The smallest page cache: sled splits it into 256 shards and evicts a shard's pages only
/// while it holds more than one.
const MIN_CACHE_BYTES: u64 = 256 << 10;
/// Whether sled compresses what it writes: off, because sled 0.34 compresses each write
/// with a new zstd context, which costs more CPU than the rest of the intake. What stays in
/// sled is bounded state (groups and their samples, firing sets, investigations); the log
/// that grows with history is in a journal, compressed per hour.
const SLED_COMPRESSION: bool = false;
/// The size of sled's log segments. sled frees a segment only once nothing live is left
/// in it, and the pages the intake rewrites (samples, rows, firing buckets) leave a little
/// live data in most segments, so smaller segments keep the files smaller; below 64 KiB
/// sled writes nodes past an eighth of a segment as separate blob files.
const SEGMENT_SIZE: usize = 64 * 1024;

/// The sled configuration of the database at `path`, its page cache bounded at
/// `cache_bytes`.
fn sled_config(path: &Path, cache_bytes: u64) -> sled::Config {
    sled::Config::new()
        .path(path)
        .cache_capacity(cache_bytes.max(MIN_CACHE_BYTES))
        .segment_size(SEGMENT_SIZE)
        .use_compression(SLED_COMPRESSION)
        // Periodic flushes come from the group flusher (see flush.rs).
        .flush_every_ms(None)
}

/// Opens the sled database at `path` (in the data directory `dir`). A lock still held is
/// waited out for up to `LOCK_WAIT`: a process stopping (a restart) lets go of it a moment
/// later.
fn open_sled(dir: &Path, path: &Path, cache_bytes: u64) -> Result<sled::Db, StoreError> {
    let deadline = std::time::Instant::now() + LOCK_WAIT;
    loop {
        match sled_config(path, cache_bytes).open() {
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
/// every second, and the flush thread hands its own garbage over (`hand_over_garbage`).
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
        "data directory {path} holds store schema {found}, and this build reads schema \
         {SCHEMA_VERSION} only{advice}",
        advice = schema::advice(.found)
    )]
    OtherSchema { path: PathBuf, found: String },
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
    /// Opens (creating if needed) the store in `dir`, with sled's page cache bounded at
    /// `DEFAULT_CACHE_BYTES`.
    pub fn open(dir: &Path) -> Result<Self, StoreError> {
        Self::open_with_cache(dir, DEFAULT_CACHE_BYTES)
    }

    /// Opens (creating if needed) the store in `dir`, with sled's page cache bounded at
    /// `cache_bytes` (sled's own estimate: the on-disk size of the pages it keeps).
    pub fn open_with_cache(dir: &Path, cache_bytes: u64) -> Result<Self, StoreError> {
        let open_err = |reason: String| StoreError::Open {
            path: dir.to_path_buf(),
            reason,
        };
        std::fs::create_dir_all(dir).map_err(|e| open_err(e.to_string()))?;
        let probe = dir.join(".write-test");
        std::fs::write(&probe, b"ok").map_err(|e| open_err(format!("not writable: {e}")))?;
        let _ = std::fs::remove_file(&probe);

        let db = open_sled(dir, &dir.join("sled"), cache_bytes)?;
        let journals = flush::Journals::default();
        let store = Self {
            flusher: Arc::new(GroupFlusher::start(db.clone(), journals.clone())?),
            journals,
            db,
            path: dir.to_path_buf(),
        };
        schema::check(&store.db, dir)?;
        Ok(store)
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

    /// Writes everything buffered to disk; returns once it is durable. Concurrent callers
    /// share one flush (group commit, see `flush.rs`).
    pub async fn flush(&self) -> Result<(), StoreError> {
        self.flusher.flush().await
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

    #[test]
    fn sleds_page_cache_is_the_bound_given_and_never_below_sleds_minimum() {
        let path = Path::new("unused");
        assert_eq!(sled_config(path, 3 << 20).cache_capacity, 3 << 20);
        assert_eq!(sled_config(path, 0).cache_capacity, MIN_CACHE_BYTES);
    }
}
