//! An inbox: requests written to disk before they are answered and processed after, so
//! the answer waits for one `fdatasync` shared by every request in flight (group commit)
//! rather than for the work the request starts.
//!
//! Files live in `{data_dir}/inbox/{name}/`:
//! - `{first seq:020}.log`: frames (`frame.rs`). Each process starts a new file, and a
//!   write or sync that fails is cut off (the file truncated to its last good length) or,
//!   when that fails too, left behind for a new file: nothing is ever appended after a torn
//!   frame. Entries whose write or sync failed are lost (their writers are told, to answer
//!   503), and are never processed in this process.
//! - `done`: the highest sequence number whose processing is durable (written by
//!   `checkpoint`, after the caller made its own writes durable). Files holding only
//!   entries up to it are removed.
//!
//! Sequence numbers are never handed out twice: at open the next one follows the highest
//! of `done`, every intact frame (including those after a torn one) and every file's name.
//! At open, the entries after `done` are counted; `Backlog` then streams them, in order,
//! for the caller to process again (at least once: an entry processed just before a crash
//! may be processed twice).

use std::collections::BTreeSet;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use chrono::{DateTime, Utc};

use super::StoreError;
use dir::{create, list, read_done};

mod backlog;
mod dir;
#[cfg(test)]
mod faults;
mod frame;

pub use backlog::Backlog;
#[cfg(test)]
pub use faults::Faults;

/// A file is closed and a new one started past this size.
const FILE_BYTES: u64 = 8 << 20;
/// A checkpoint covering every entry of the open file closes it (so it can go) past this
/// size: an idle inbox keeps at most this much of bodies already processed.
const COVERED_BYTES: u64 = 64 << 10;

/// One request as written.
#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    pub seq: u64,
    pub at: DateTime<Utc>,
    /// What the body is (the caller's tag, say the webhook's source).
    pub kind: u8,
    pub body: Vec<u8>,
}

/// The inbox `name`. Cheap to clone.
#[derive(Clone)]
pub struct Inbox {
    inner: Arc<Inner>,
}

struct Inner {
    dir: PathBuf,
    open: Mutex<Open>,
    /// Every entry up to this one is on disk, or lost (in `lost`).
    synced: AtomicU64,
    /// Entries whose write or sync failed, as inclusive ranges, oldest first (dropped once
    /// a checkpoint passes them).
    lost: Mutex<Vec<(u64, u64)>>,
    /// One `fdatasync` at a time; callers behind it usually find their entry covered.
    syncing: tokio::sync::Mutex<()>,
    progress: Mutex<Progress>,
    #[cfg(test)]
    faults: Mutex<faults::Faults>,
}

struct Open {
    file: Arc<File>,
    /// The first sequence number of the open file (its name).
    first: u64,
    /// Bytes of whole frames in the open file.
    bytes: u64,
    /// Of them, known to be on disk.
    synced_bytes: u64,
    next_seq: u64,
    /// Closed files with the first sequence number each holds, oldest first.
    closed: Vec<(u64, PathBuf)>,
    /// The open file may end in a frame that could not be cut off: the next append starts
    /// a new file first.
    broken: bool,
}

/// Processing: which entries are handed out and not finished.
struct Progress {
    /// Entries appended or replayed and not yet finished.
    outstanding: BTreeSet<u64>,
    /// The highest entry handed out (or on disk at open).
    high: u64,
    /// While the backlog is replayed: the first entry it has not handed out yet.
    replay_next: Option<u64>,
}

impl Progress {
    /// The highest entry such that it and every one before it are finished.
    fn done(&self) -> u64 {
        let lowest = match (self.outstanding.first(), self.replay_next) {
            (Some(&a), Some(b)) => Some(a.min(b)),
            (a, b) => a.copied().or(b),
        };
        lowest.map_or(self.high, |l| l.saturating_sub(1))
    }
}

fn io_error(what: &str, path: &Path, e: std::io::Error) -> StoreError {
    StoreError::Io(format!("inbox: {what} {}: {e}", path.display()))
}

impl Inbox {
    /// Opens the inbox `name` under `data_dir`; returns it with the entries written but
    /// not checkpointed by an earlier process (counted, to be read in order).
    pub fn open(data_dir: &Path, name: &str) -> Result<(Self, Backlog), StoreError> {
        let dir = data_dir.join("inbox").join(name);
        std::fs::create_dir_all(&dir).map_err(|e| io_error("cannot create", &dir, e))?;
        let done = read_done(&dir)?;
        let files = list(&dir)?;
        let scan = backlog::scan(&files, done)?;
        let first = scan.last + 1;
        let path = dir.join(format!("{first:020}.log"));
        let file = create(&dir, &path)?;
        // A file named after the next number can hold no intact frame: whatever it holds
        // (a frame torn by a crash) goes, so nothing follows it.
        file.set_len(0)
            .map_err(|e| io_error("cannot truncate", &path, e))?;
        let mut kept = Vec::new();
        for (first, p) in files {
            let empty = std::fs::metadata(&p).is_ok_and(|m| m.len() == 0);
            if p == path {
                continue;
            } else if empty {
                std::fs::remove_file(&p).map_err(|e| io_error("cannot remove", &p, e))?;
            } else {
                kept.push((first, p));
            }
        }
        let replay: Vec<PathBuf> = kept.iter().map(|(_, p)| p.clone()).collect();
        let inner = Inner {
            dir,
            open: Mutex::new(Open {
                file: Arc::new(file),
                first,
                bytes: 0,
                synced_bytes: 0,
                next_seq: first,
                closed: kept,
                broken: false,
            }),
            synced: AtomicU64::new(scan.last),
            lost: Mutex::new(Vec::new()),
            syncing: tokio::sync::Mutex::new(()),
            progress: Mutex::new(Progress {
                outstanding: BTreeSet::new(),
                high: scan.last,
                replay_next: (scan.count > 0).then_some(done + 1),
            }),
            #[cfg(test)]
            faults: Mutex::default(),
        };
        let inbox = Self {
            inner: Arc::new(inner),
        };
        inbox.remove_done(done)?;
        let backlog = Backlog::new(inbox.clone(), replay, done, scan);
        Ok((inbox, backlog))
    }

    /// Writes one entry (durable after `sync` of its number); returns its number, to be
    /// passed to `finished` once processed. On an error nothing of it is left in the file.
    pub fn append(&self, at: DateTime<Utc>, kind: u8, body: &[u8]) -> Result<u64, StoreError> {
        self.append_then(at, kind, body, |seq| seq)
    }

    /// `append`, then `then(its number)` before any later entry is written: what `then`
    /// queues is queued in the order of the numbers.
    pub fn append_then<T>(
        &self,
        at: DateTime<Utc>,
        kind: u8,
        body: &[u8],
        then: impl FnOnce(u64) -> T,
    ) -> Result<T, StoreError> {
        let mut open = self.lock_open();
        if open.broken {
            self.abandon_open(&mut open)?;
        } else if open.bytes >= FILE_BYTES {
            self.close_full(&mut open)?;
        }
        let seq = open.next_seq;
        let head = frame::head(seq, at, kind, body);
        if let Err(e) = self.write_frame(&open.file, &head, body) {
            let path = self.file_path(open.first);
            tracing::error!(file = %path.display(), error = %e, "inbox: a write failed; its entry is not stored");
            // Cut off what part of the frame was written, so nothing follows a torn frame.
            if let Err(e) = self.truncate(&open.file, open.bytes) {
                tracing::error!(file = %path.display(), error = %e, "inbox: cannot cut off a failed write; a new file follows it");
                let _ = self.abandon_open(&mut open);
            }
            return Err(StoreError::NotStored(format!(
                "inbox: cannot write {}: {e}",
                path.display()
            )));
        }
        open.next_seq += 1;
        open.bytes += (head.len() + body.len()) as u64;
        {
            let mut p = self.lock_progress();
            p.outstanding.insert(seq);
            p.high = p.high.max(seq);
        }
        Ok(then(seq))
    }

    /// Returns once entry `seq` (and every one before it) is on disk; an error when its
    /// write or sync failed (it is then lost). Callers waiting at the same time share one
    /// `fdatasync`.
    pub async fn sync(&self, seq: u64) -> Result<(), StoreError> {
        if self.inner.synced.load(Ordering::Acquire) >= seq {
            return self.outcome(seq);
        }
        let _turn = self.inner.syncing.lock().await;
        if self.inner.synced.load(Ordering::Acquire) >= seq {
            return self.outcome(seq);
        }
        let (file, first, upto, bytes) = {
            let open = self.lock_open();
            (open.file.clone(), open.first, open.next_seq - 1, open.bytes)
        };
        let (fault, stall) = (self.sync_fault(), self.sync_stall());
        let result = tokio::task::spawn_blocking(move || {
            if let Some(d) = stall {
                std::thread::sleep(d);
            }
            match fault {
                Some(e) => Err(e),
                None => file.sync_data(),
            }
        })
        .await
        .unwrap_or_else(|e| Err(std::io::Error::other(e)));
        let mut open = self.lock_open();
        match result {
            Ok(()) => {
                if open.first == first {
                    open.synced_bytes = open.synced_bytes.max(bytes);
                }
                self.inner.synced.fetch_max(upto, Ordering::AcqRel);
            }
            Err(e) if open.first == first => {
                let path = self.file_path(first);
                tracing::error!(file = %path.display(), error = %e, "inbox: a sync failed; the entries it covered are not stored");
                let _ = self.abandon_open(&mut open);
            }
            // The file was closed meanwhile, and closing syncs it.
            Err(_) => {
                self.inner.synced.fetch_max(upto, Ordering::AcqRel);
            }
        }
        drop(open);
        self.outcome(seq)
    }

    /// Marks entry `seq` processed (in memory), or given up (lost); returns the highest
    /// entry such that it and every one before it are finished, to pass to `checkpoint`
    /// once the processing's own writes are durable.
    pub fn finished(&self, seq: u64) -> u64 {
        let mut p = self.lock_progress();
        p.outstanding.remove(&seq);
        p.done()
    }

    /// The highest entry such that it and every one before it are finished.
    pub fn done(&self) -> u64 {
        self.lock_progress().done()
    }

    /// Records that every entry up to `done` is processed durably, and removes the files
    /// that hold only such entries.
    pub fn checkpoint(&self, done: u64) -> Result<(), StoreError> {
        let path = self.inner.dir.join("done");
        let tmp = self.inner.dir.join("done.tmp");
        let write = || -> std::io::Result<()> {
            let mut f = File::create(&tmp)?;
            f.write_all(done.to_string().as_bytes())?;
            f.sync_data()?;
            std::fs::rename(&tmp, &path)?;
            File::open(&self.inner.dir)?.sync_all()
        };
        write().map_err(|e| io_error("cannot write", &path, e))?;
        self.lock_lost().retain(|&(_, hi)| hi > done);
        {
            let mut open = self.lock_open();
            if !open.broken && open.bytes >= COVERED_BYTES && open.next_seq <= done + 1 {
                self.start_file(&mut open)?;
            }
        }
        self.remove_done(done)
    }

    /// Entries handed out and not yet processed (the processing backlog).
    pub fn backlog(&self) -> u64 {
        let p = self.lock_progress();
        p.high.saturating_sub(p.done())
    }

    /// Ok when entry `seq` is on disk, the error when it is lost.
    fn outcome(&self, seq: u64) -> Result<(), StoreError> {
        if self
            .lock_lost()
            .iter()
            .any(|&(lo, hi)| (lo..=hi).contains(&seq))
        {
            return Err(StoreError::NotStored(format!(
                "inbox: entry {seq} was not stored: a write or sync of {} failed",
                self.inner.dir.display()
            )));
        }
        Ok(())
    }

    /// Syncs the open (full) file and starts a new one.
    fn close_full(&self, open: &mut Open) -> Result<(), StoreError> {
        let path = self.file_path(open.first);
        let synced = match self.sync_fault() {
            Some(e) => Err(e),
            None => open.file.sync_data(),
        };
        if let Err(e) = synced {
            tracing::error!(file = %path.display(), error = %e, "inbox: a sync failed; the entries it covered are not stored");
            self.abandon_open(open)?;
            return Ok(());
        }
        self.inner
            .synced
            .fetch_max(open.next_seq - 1, Ordering::AcqRel);
        open.synced_bytes = open.bytes;
        self.start_file(open)
    }

    /// Gives the open file up past its last synced length: the entries written to it since
    /// are lost, what they wrote is cut off (best effort), and a new file is started.
    fn abandon_open(&self, open: &mut Open) -> Result<(), StoreError> {
        let synced = self.inner.synced.load(Ordering::Acquire);
        let (lo, hi) = ((synced + 1).max(open.first), open.next_seq - 1);
        if lo <= hi {
            self.lock_lost().push((lo, hi));
        }
        self.inner.synced.fetch_max(hi, Ordering::AcqRel);
        let cut = self.truncate(&open.file, open.synced_bytes);
        if cut.is_ok() {
            open.bytes = open.synced_bytes;
        }
        if open.first == open.next_seq {
            if cut.is_ok() {
                // It holds no entry: it stays the open file.
                open.broken = false;
                return Ok(());
            }
            // The next file is named after its first number, which is this file's name:
            // that number is skipped (numbers need not be contiguous).
            open.next_seq += 1;
        }
        open.broken = true;
        self.start_file(open)
    }

    /// Closes the open file (its entries are synced or lost) and starts the next one.
    fn start_file(&self, open: &mut Open) -> Result<(), StoreError> {
        let first = open.next_seq;
        let next = self.file_path(first);
        let file = match self.create_fault() {
            Some(e) => Err(io_error("cannot create", &next, e)),
            None => create(&self.inner.dir, &next),
        }
        .map_err(|e| StoreError::NotStored(e.to_string()))?;
        open.file = Arc::new(file);
        let closed = std::mem::replace(&mut open.first, first);
        let path = self.file_path(closed);
        open.closed.push((closed, path));
        open.bytes = 0;
        open.synced_bytes = 0;
        open.broken = false;
        Ok(())
    }

    /// Removes closed files all of whose entries are at or below `done`.
    fn remove_done(&self, done: u64) -> Result<(), StoreError> {
        let mut open = self.lock_open();
        let mut keep = Vec::new();
        let closed = std::mem::take(&mut open.closed);
        let firsts: Vec<u64> = closed
            .iter()
            .map(|(first, _)| *first)
            .skip(1)
            .chain([open.first])
            .collect();
        for ((first, path), next_first) in closed.into_iter().zip(firsts) {
            if next_first <= done + 1 {
                std::fs::remove_file(&path)
                    .or_else(|e| match e.kind() {
                        std::io::ErrorKind::NotFound => Ok(()),
                        _ => Err(e),
                    })
                    .map_err(|e| io_error("cannot remove", &path, e))?;
            } else {
                keep.push((first, path));
            }
        }
        open.closed = keep;
        Ok(())
    }

    fn write_frame(&self, file: &File, head: &[u8], body: &[u8]) -> std::io::Result<()> {
        #[cfg(test)]
        if let Some((written, e)) = self.write_fault(head.len() + body.len()) {
            let frame = [head, body].concat();
            let _ = (&*file).write_all(&frame[..written]);
            return Err(e);
        }
        (&*file).write_all(head)?;
        (&*file).write_all(body)
    }

    fn truncate(&self, file: &File, len: u64) -> std::io::Result<()> {
        #[cfg(test)]
        if let Some(e) = self.truncate_fault() {
            return Err(e);
        }
        file.set_len(len)
    }

    #[cfg(not(test))]
    fn sync_fault(&self) -> Option<std::io::Error> {
        None
    }

    #[cfg(not(test))]
    fn sync_stall(&self) -> Option<std::time::Duration> {
        None
    }

    #[cfg(not(test))]
    fn create_fault(&self) -> Option<std::io::Error> {
        None
    }

    fn lock_open(&self) -> std::sync::MutexGuard<'_, Open> {
        self.inner.open.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn lock_progress(&self) -> std::sync::MutexGuard<'_, Progress> {
        self.inner
            .progress
            .lock()
            .unwrap_or_else(|p| p.into_inner())
    }

    fn lock_lost(&self) -> std::sync::MutexGuard<'_, Vec<(u64, u64)>> {
        self.inner.lost.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn file_path(&self, first: u64) -> PathBuf {
        self.inner.dir.join(format!("{first:020}.log"))
    }
}

#[cfg(test)]
mod tests;
