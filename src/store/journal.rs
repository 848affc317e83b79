//! An append-only journal of records outside sled: one line per record (`{ms}\t{json}`) in
//! hourly segment files under `{data_dir}/journal/{name}/`.
//!
//! Why not a sled tree: sled keeps the nodes it writes resident beyond its cache until the
//! process restarts, and compresses every page it writes; a log of every received alert
//! made the daemon's memory grow with history and cost most of the intake's CPU. Here a
//! record is one `write` to a file, made durable by the store's group commit (`flush.rs`
//! syncs every journal after sled), and nothing stays in memory.
//!
//! Segments:
//! - `{YYYYMMDD}T{HH}-{session}-{n}.jsonl`: being written, or left by an earlier process.
//!   Each process writes its own segments (a new `session`), so it never appends after a
//!   line torn by a crash; a line that does not decode is skipped when read.
//! - `{stem}-c{count}.jsonl.zst`: a closed segment, zstd-compressed with its record count
//!   in the name. Segments are compressed in the background when the hour turns and, at
//!   open, those an earlier process left.
//!
//! Retention removes whole segments (`sweep`); reads stream the segments of the hours they
//! cover (`scan`).

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Write};
use std::marker::PhantomData;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::StoreError;

mod segment;

use segment::{Name, compress, list};

/// A journal of `V` records. Cheap to clone.
pub struct Journal<V> {
    inner: Arc<Inner>,
    _value: PhantomData<fn() -> V>,
}

impl<V> Clone for Journal<V> {
    fn clone(&self) -> Self {
        Self {
            inner: self.inner.clone(),
            _value: PhantomData,
        }
    }
}

pub(super) struct Inner {
    name: &'static str,
    dir: PathBuf,
    /// Names this process's segments apart from earlier ones.
    session: String,
    open: Mutex<Option<Open>>,
    /// Segments this session created (numbers them, so none is ever reopened).
    segments_made: AtomicU32,
    /// Written since the last sync.
    dirty: AtomicBool,
    /// Readers hold it shared; replacing a segment by its compressed form and removing
    /// segments hold it exclusively, so a reader never sees a segment twice or half.
    segments: RwLock<()>,
    /// One compression at a time (the hour's turn and `compress_closed` may both want one).
    compressing: Mutex<()>,
}

/// The segment being written.
struct Open {
    hour: i64,
    /// Its number among this session's segments.
    n: u32,
    file: Arc<File>,
    path: PathBuf,
}

impl<V: Serialize + DeserializeOwned> Journal<V> {
    /// Opens `{data_dir}/journal/{name}`, creating it, and compresses in the background the
    /// segments an earlier process left.
    pub(super) fn open(data_dir: &Path, name: &'static str) -> Result<Self, StoreError> {
        let dir = dir_of(data_dir, name);
        std::fs::create_dir_all(&dir).map_err(|e| io_error(name, &dir, "cannot create", &e))?;
        segment::remove_leftovers(&dir).map_err(|e| io_error(name, &dir, "cannot clean", &e))?;
        let inner = Arc::new(Inner {
            name,
            dir,
            session: format!("{:x}", Utc::now().timestamp_millis()),
            open: Mutex::new(None),
            segments_made: AtomicU32::new(0),
            dirty: AtomicBool::new(false),
            segments: RwLock::new(()),
            compressing: Mutex::new(()),
        });
        let left: Vec<Name> = list(&inner.dir)
            .map_err(|e| io_error(name, &inner.dir, "cannot list", &e))?
            .into_iter()
            .filter(|s| !s.compressed)
            .collect();
        if !left.is_empty() {
            let inner = inner.clone();
            std::thread::spawn(move || {
                for seg in left {
                    inner.compress_logged(&seg);
                }
            });
        }
        Ok(Self {
            inner,
            _value: PhantomData,
        })
    }

    /// What the store keeps of the journal (to sync it, and to hand it out again).
    pub(super) fn shared(&self) -> Arc<Inner> {
        self.inner.clone()
    }

    /// The journal of `shared` (any record type: the files hold JSON lines).
    pub(super) fn from_shared(shared: Arc<Inner>) -> Self {
        Self {
            inner: shared,
            _value: PhantomData,
        }
    }

    /// The journal's directory.
    pub fn dir(&self) -> &Path {
        &self.inner.dir
    }

    /// Appends `records`, all at time `at`, in one write. Durable at the next flush of the
    /// store (`Store::flush`).
    pub fn append<'a>(
        &self,
        at: DateTime<Utc>,
        records: impl IntoIterator<Item = &'a V>,
    ) -> Result<(), StoreError>
    where
        V: 'a,
    {
        let ms = at.timestamp_millis();
        let mut buf = Vec::new();
        for r in records {
            buf.extend_from_slice(ms.to_string().as_bytes());
            buf.push(b'\t');
            serde_json::to_writer(&mut buf, r)
                .map_err(|e| StoreError::Io(format!("cannot encode a journal record: {e}")))?;
            buf.push(b'\n');
        }
        if buf.is_empty() {
            return Ok(());
        }
        let hour = ms.div_euclid(3_600_000);
        let inner = &self.inner;
        let mut open = inner.open.lock().unwrap_or_else(|p| p.into_inner());
        if open.as_ref().is_none_or(|o| o.hour != hour) {
            if let Some(old) = open.take() {
                close(inner, old)?;
            }
            let n = inner.segments_made.fetch_add(1, Ordering::Relaxed);
            *open = Some(inner.create(hour, n)?);
        }
        let seg = open.as_ref().expect("opened above");
        (&*seg.file)
            .write_all(&buf)
            .map_err(|e| io_error(inner.name, &seg.path, "cannot write", &e))?;
        inner.dirty.store(true, Ordering::Release);
        Ok(())
    }

    /// Calls `f` with each record stored at a time in `[from, to)`, oldest segment first
    /// (records of one hour in the order written). Lines that do not decode are skipped;
    /// returns how many.
    pub fn scan(
        &self,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
        mut f: impl FnMut(DateTime<Utc>, V),
    ) -> Result<usize, StoreError> {
        let (from_ms, to_ms) = (from.timestamp_millis(), to.timestamp_millis());
        let _shared = self.inner.shared();
        let mut skipped = 0;
        for seg in self.inner.listed()? {
            if seg.hour < from_ms.div_euclid(3_600_000)
                || seg.hour > (to_ms - 1).div_euclid(3_600_000)
            {
                continue;
            }
            let path = self.inner.dir.join(seg.file_name());
            let read_error =
                |e: std::io::Error| io_error(self.inner.name, &path, "cannot read", &e);
            let mut reader = open_reader(&path, seg.compressed).map_err(read_error)?;
            let mut line = Vec::new();
            loop {
                line.clear();
                if reader.read_until(b'\n', &mut line).map_err(read_error)? == 0 {
                    break;
                }
                // A last line without its newline is being written, or was torn by a crash.
                let Some(complete) = line.strip_suffix(b"\n") else {
                    break;
                };
                match decode::<V>(complete) {
                    Some((ms, v)) if ms >= from_ms && ms < to_ms => {
                        f(DateTime::from_timestamp_millis(ms).unwrap_or_default(), v);
                    }
                    Some(_) => {}
                    None => skipped += 1,
                }
            }
        }
        if skipped > 0 {
            tracing::warn!(
                journal = self.inner.name,
                skipped,
                "journal lines that do not decode were skipped"
            );
        }
        Ok(skipped)
    }

    /// Removes the segments whose hour ended at or before `cutoff`. Returns how many records
    /// they held.
    pub fn sweep(&self, cutoff: DateTime<Utc>) -> Result<usize, StoreError> {
        let last_hour = cutoff.timestamp_millis().div_euclid(3_600_000) - 1;
        let open_hour = self.inner.lock_open().as_ref().map(|o| (o.hour, o.n));
        let _exclusive = self.inner.exclusive();
        let mut removed = 0;
        for seg in self.inner.listed()? {
            let is_open = seg.session == self.inner.session && open_hour == Some((seg.hour, seg.n));
            if seg.hour > last_hour || is_open {
                continue;
            }
            let path = self.inner.dir.join(seg.file_name());
            removed += self.inner.records_in(&seg)?;
            std::fs::remove_file(&path)
                .map_err(|e| io_error(self.inner.name, &path, "cannot remove", &e))?;
        }
        Ok(removed)
    }

    /// Records stored (reads the segments not yet compressed: not for hot paths).
    pub fn count(&self) -> Result<usize, StoreError> {
        let _shared = self.inner.shared();
        let mut n = 0;
        for seg in self.inner.listed()? {
            n += self.inner.records_in(&seg)?;
        }
        Ok(n)
    }

    /// Compresses every closed segment now (tests, and before a bench measures disk).
    pub fn compress_closed(&self) -> Result<(), StoreError> {
        let open = self.inner.lock_open().as_ref().map(|o| (o.hour, o.n));
        for seg in self.inner.listed()? {
            let mine = seg.session == self.inner.session && open == Some((seg.hour, seg.n));
            if !seg.compressed && !mine {
                self.inner.compress_one(&seg)?;
            }
        }
        Ok(())
    }
}

impl Inner {
    fn lock_open(&self) -> std::sync::MutexGuard<'_, Option<Open>> {
        self.open.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn shared(&self) -> std::sync::RwLockReadGuard<'_, ()> {
        self.segments.read().unwrap_or_else(|p| p.into_inner())
    }

    fn exclusive(&self) -> std::sync::RwLockWriteGuard<'_, ()> {
        self.segments.write().unwrap_or_else(|p| p.into_inner())
    }

    /// The records in `seg`: from its name once compressed, else counted.
    fn records_in(&self, seg: &Name) -> Result<usize, StoreError> {
        match seg.count {
            Some(c) => Ok(c),
            None => {
                let path = self.dir.join(seg.file_name());
                count_lines(&path, false).map_err(|e| io_error(self.name, &path, "cannot read", &e))
            }
        }
    }

    fn listed(&self) -> Result<Vec<Name>, StoreError> {
        list(&self.dir).map_err(|e| io_error(self.name, &self.dir, "cannot list", &e))
    }

    fn create(&self, hour: i64, n: u32) -> Result<Open, StoreError> {
        let name = Name {
            hour,
            session: self.session.clone(),
            n,
            count: None,
            compressed: false,
        };
        let path = self.dir.join(name.file_name());
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(|e| io_error(self.name, &path, "cannot create", &e))?;
        sync_dir(&self.dir).map_err(|e| io_error(self.name, &self.dir, "cannot sync", &e))?;
        Ok(Open {
            hour,
            n,
            file: Arc::new(file),
            path,
        })
    }

    fn compress_logged(&self, seg: &Name) {
        if let Err(e) = self.compress_one(seg) {
            tracing::warn!(journal = self.name, error = %e, "cannot compress a journal segment (it stays uncompressed)");
        }
    }

    fn compress_one(&self, seg: &Name) -> Result<(), StoreError> {
        let _one = self.compressing.lock().unwrap_or_else(|p| p.into_inner());
        let path = self.dir.join(seg.file_name());
        if !path.exists() {
            return Ok(()); // compressed meanwhile
        }
        compress(&self.dir, seg, &self.session, &self.segments)
            .map_err(|e| io_error(self.name, &path, "cannot compress", &e))
    }
}

/// Syncs a segment the hour left behind and compresses it in the background.
fn close(inner: &Arc<Inner>, old: Open) -> Result<(), StoreError> {
    old.file
        .sync_data()
        .map_err(|e| io_error(inner.name, &old.path, "cannot sync", &e))?;
    let seg = Name {
        hour: old.hour,
        session: inner.session.clone(),
        n: old.n,
        count: None,
        compressed: false,
    };
    let inner = inner.clone();
    std::thread::spawn(move || inner.compress_logged(&seg));
    Ok(())
}

/// What the group flusher calls after sled's flush.
impl Inner {
    pub(super) fn name(&self) -> &'static str {
        self.name
    }

    /// Makes what was appended so far durable.
    pub(super) fn sync(&self) -> Result<(), String> {
        if !self.dirty.swap(false, Ordering::AcqRel) {
            return Ok(());
        }
        let file = self
            .lock_open()
            .as_ref()
            .map(|o| (o.file.clone(), o.path.clone()));
        match file {
            Some((f, path)) => f.sync_data().map_err(|e| {
                self.dirty.store(true, Ordering::Release);
                format!("journal {}: cannot sync {}: {e}", self.name, path.display())
            }),
            None => Ok(()),
        }
    }
}

/// Where the journal `name` of the store in `data_dir` lives.
fn dir_of(data_dir: &Path, name: &str) -> PathBuf {
    data_dir.join("journal").join(name)
}

fn decode<V: DeserializeOwned>(line: &[u8]) -> Option<(i64, V)> {
    let tab = line.iter().position(|b| *b == b'\t')?;
    let ms = std::str::from_utf8(&line[..tab]).ok()?.parse().ok()?;
    let v = serde_json::from_slice(&line[tab + 1..]).ok()?;
    Some((ms, v))
}

fn open_reader(path: &Path, compressed: bool) -> std::io::Result<Box<dyn BufRead>> {
    let file = File::open(path)?;
    Ok(if compressed {
        Box::new(BufReader::new(zstd::stream::Decoder::new(file)?))
    } else {
        Box::new(BufReader::new(file))
    })
}

/// Complete lines in a segment (a torn last line is not counted).
fn count_lines(path: &Path, compressed: bool) -> std::io::Result<usize> {
    let mut reader = open_reader(path, compressed)?;
    let mut n = 0;
    let mut buf = [0u8; 64 * 1024];
    loop {
        let read = reader.read(&mut buf)?;
        if read == 0 {
            return Ok(n);
        }
        n += buf[..read].iter().filter(|b| **b == b'\n').count();
    }
}

fn sync_dir(dir: &Path) -> std::io::Result<()> {
    File::open(dir)?.sync_all()
}

fn io_error(journal: &str, path: &Path, what: &str, e: &std::io::Error) -> StoreError {
    StoreError::Io(format!("journal {journal}: {what} {}: {e}", path.display()))
}

#[cfg(test)]
mod tests;
