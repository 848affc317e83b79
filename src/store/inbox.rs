//! An inbox: requests written to disk before they are answered and processed after, so
//! the answer waits for one `fdatasync` shared by every request in flight (group commit)
//! rather than for the work the request starts.
//!
//! Files live in `{data_dir}/inbox/{name}/`:
//! - `{first seq:020}.log`: frames `[len u32][crc32 u32][seq u64][ms i64][kind u8][body]`
//!   (little-endian; `len` counts from `seq`, the CRC covers the same bytes). Each process
//!   starts a new file, so nothing is appended after a frame torn by a crash; reading a
//!   file stops at its first frame that is short or fails its CRC.
//! - `done`: the highest sequence number whose processing is durable (written by
//!   `checkpoint`, after the caller made its own writes durable). Files holding only
//!   entries up to it are removed.
//!
//! At open, entries after `done` are returned, in order, for the caller to process again
//! (at least once: an entry processed just before a crash may be processed twice).

use std::collections::BTreeSet;
use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use chrono::{DateTime, Utc};

use super::StoreError;

/// A file is closed and a new one started past this size.
const FILE_BYTES: u64 = 8 << 20;
/// A checkpoint covering every entry of the open file closes it (so it can go) past this
/// size: an idle inbox keeps at most this much of bodies already processed.
const COVERED_BYTES: u64 = 64 << 10;
/// `seq`, `ms` and `kind`: the frame bytes before the body.
const HEAD: usize = 17;

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
    /// Every entry up to this one is written (possibly not synced).
    written: AtomicU64,
    /// Every entry up to this one is on disk.
    synced: AtomicU64,
    /// One `fdatasync` at a time; callers behind it usually find their entry covered.
    syncing: tokio::sync::Mutex<()>,
    /// Processing: entries finished above `done`, and the highest finished with every
    /// entry before it finished too.
    progress: Mutex<Progress>,
}

struct Open {
    file: Arc<File>,
    bytes: u64,
    next_seq: u64,
    /// Closed files with the first sequence number each holds, oldest first.
    closed: Vec<(u64, PathBuf)>,
    /// The first sequence number of the open file.
    first: u64,
}

#[derive(Default)]
struct Progress {
    done: u64,
    finished: BTreeSet<u64>,
}

fn io_error(what: &str, path: &Path, e: std::io::Error) -> StoreError {
    StoreError::Io(format!("inbox: {what} {}: {e}", path.display()))
}

impl Inbox {
    /// Opens the inbox `name` under `data_dir`; returns it with the entries written but
    /// not checkpointed by an earlier process, oldest first.
    pub fn open(data_dir: &Path, name: &str) -> Result<(Self, Vec<Entry>), StoreError> {
        let dir = data_dir.join("inbox").join(name);
        std::fs::create_dir_all(&dir).map_err(|e| io_error("cannot create", &dir, e))?;
        let done = read_done(&dir)?;
        let files = list(&dir)?;
        let mut pending = Vec::new();
        let mut last = done;
        for (_, path) in &files {
            for entry in read_file(path)? {
                last = last.max(entry.seq);
                if entry.seq > done {
                    pending.push(entry);
                }
            }
        }
        let first = last + 1;
        let path = dir.join(format!("{first:020}.log"));
        let file = create(&dir, &path)?;
        // Files an earlier process left empty hold nothing (one may be this new file).
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
        let files = kept;
        let inner = Inner {
            dir,
            open: Mutex::new(Open {
                file: Arc::new(file),
                bytes: 0,
                next_seq: first,
                closed: files,
                first,
            }),
            written: AtomicU64::new(last),
            synced: AtomicU64::new(last),
            syncing: tokio::sync::Mutex::new(()),
            progress: Mutex::new(Progress {
                done,
                finished: BTreeSet::new(),
            }),
        };
        let inbox = Self {
            inner: Arc::new(inner),
        };
        inbox.remove_done(done)?;
        Ok((inbox, pending))
    }

    /// Writes one entry (durable after `sync` of its number); returns its number.
    pub fn append(&self, at: DateTime<Utc>, kind: u8, body: &[u8]) -> Result<u64, StoreError> {
        let mut open = self.lock_open();
        let seq = open.next_seq;
        let frame = frame(seq, at, kind, body);
        let path = self.file_path(open.first);
        (&*open.file)
            .write_all(&frame)
            .map_err(|e| io_error("cannot write", &path, e))?;
        open.next_seq += 1;
        open.bytes += frame.len() as u64;
        self.inner.written.store(seq, Ordering::Release);
        if open.bytes >= FILE_BYTES {
            // Synced before it is closed, so `sync` only ever syncs the open file.
            open.file
                .sync_data()
                .map_err(|e| io_error("cannot sync", &path, e))?;
            self.inner.synced.fetch_max(seq, Ordering::AcqRel);
            let first = open.next_seq;
            let next = self.file_path(first);
            open.file = Arc::new(create(&self.inner.dir, &next)?);
            let closed = std::mem::replace(&mut open.first, first);
            open.closed.push((closed, path));
            open.bytes = 0;
        }
        Ok(seq)
    }

    /// Returns once entry `seq` (and every one before it) is on disk. Callers waiting at
    /// the same time share one `fdatasync`.
    pub async fn sync(&self, seq: u64) -> Result<(), StoreError> {
        if self.inner.synced.load(Ordering::Acquire) >= seq {
            return Ok(());
        }
        let _turn = self.inner.syncing.lock().await;
        if self.inner.synced.load(Ordering::Acquire) >= seq {
            return Ok(());
        }
        let (file, upto, first) = {
            let open = self.lock_open();
            (
                open.file.clone(),
                self.inner.written.load(Ordering::Acquire),
                open.first,
            )
        };
        let path = self.file_path(first);
        tokio::task::spawn_blocking(move || file.sync_data())
            .await
            .map_err(|e| StoreError::Io(format!("inbox: sync task failed: {e}")))?
            .map_err(|e| io_error("cannot sync", &path, e))?;
        self.inner.synced.fetch_max(upto, Ordering::AcqRel);
        Ok(())
    }

    /// Marks entry `seq` processed (in memory); returns the highest entry such that it and
    /// every one before it are processed, to pass to `checkpoint` once the processing's
    /// own writes are durable.
    pub fn finished(&self, seq: u64) -> u64 {
        let mut p = self
            .inner
            .progress
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if seq > p.done {
            p.finished.insert(seq);
        }
        let mut upto = p.done;
        while p.finished.remove(&(upto + 1)) {
            upto += 1;
        }
        p.done = upto;
        upto
    }

    /// The highest entry such that it and every one before it are processed.
    pub fn done(&self) -> u64 {
        self.inner
            .progress
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .done
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
        {
            let mut open = self.lock_open();
            if open.bytes >= COVERED_BYTES && open.next_seq <= done + 1 {
                let first = open.next_seq;
                let next = self.file_path(first);
                open.file = Arc::new(create(&self.inner.dir, &next)?);
                let closed = std::mem::replace(&mut open.first, first);
                let path = self.file_path(closed);
                open.closed.push((closed, path));
                open.bytes = 0;
            }
        }
        self.remove_done(done)
    }

    /// Entries written and not yet processed (the processing backlog).
    pub fn backlog(&self) -> u64 {
        let done = self.done();
        self.inner
            .written
            .load(Ordering::Acquire)
            .saturating_sub(done)
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

    fn lock_open(&self) -> std::sync::MutexGuard<'_, Open> {
        self.inner.open.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn file_path(&self, first: u64) -> PathBuf {
        self.inner.dir.join(format!("{first:020}.log"))
    }
}

fn frame(seq: u64, at: DateTime<Utc>, kind: u8, body: &[u8]) -> Vec<u8> {
    let len = HEAD + body.len();
    let mut out = Vec::with_capacity(8 + len);
    out.extend_from_slice(&(len as u32).to_le_bytes());
    out.extend_from_slice(&[0; 4]);
    out.extend_from_slice(&seq.to_le_bytes());
    out.extend_from_slice(&at.timestamp_millis().to_le_bytes());
    out.push(kind);
    out.extend_from_slice(body);
    let crc = crc32fast::hash(&out[8..]);
    out[4..8].copy_from_slice(&crc.to_le_bytes());
    out
}

/// The entries of one file, up to its first torn or corrupt frame.
fn read_file(path: &Path) -> Result<Vec<Entry>, StoreError> {
    let mut bytes = Vec::new();
    File::open(path)
        .and_then(|mut f| f.read_to_end(&mut bytes))
        .map_err(|e| io_error("cannot read", path, e))?;
    let mut out = Vec::new();
    let mut rest = bytes.as_slice();
    while rest.len() >= 8 {
        let len = u32::from_le_bytes(rest[..4].try_into().expect("4 bytes")) as usize;
        let crc = u32::from_le_bytes(rest[4..8].try_into().expect("4 bytes"));
        let Some(data) = rest.get(8..8 + len).filter(|d| d.len() >= HEAD) else {
            break;
        };
        if crc32fast::hash(data) != crc {
            break;
        }
        let seq = u64::from_le_bytes(data[..8].try_into().expect("8 bytes"));
        let ms = i64::from_le_bytes(data[8..16].try_into().expect("8 bytes"));
        out.push(Entry {
            seq,
            at: DateTime::from_timestamp_millis(ms).unwrap_or_default(),
            kind: data[16],
            body: data[HEAD..].to_vec(),
        });
        rest = &rest[8 + len..];
    }
    if !rest.is_empty() {
        tracing::warn!(
            file = %path.display(),
            bytes = rest.len(),
            "inbox: a torn or corrupt frame ends the file (written during a crash); skipped"
        );
    }
    Ok(out)
}

fn read_done(dir: &Path) -> Result<u64, StoreError> {
    let path = dir.join("done");
    match std::fs::read_to_string(&path) {
        Ok(s) => s.trim().parse().map_err(|e| {
            StoreError::Io(format!(
                "inbox: {} does not hold a number: {e}",
                path.display()
            ))
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(0),
        Err(e) => Err(io_error("cannot read", &path, e)),
    }
}

/// The inbox's files with the first sequence number each holds, oldest first.
fn list(dir: &Path) -> Result<Vec<(u64, PathBuf)>, StoreError> {
    let mut files = Vec::new();
    for e in std::fs::read_dir(dir).map_err(|e| io_error("cannot list", dir, e))? {
        let path = e.map_err(|e| io_error("cannot list", dir, e))?.path();
        let first = path
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_suffix(".log"))
            .and_then(|n| n.parse::<u64>().ok());
        if let Some(first) = first {
            files.push((first, path));
        }
    }
    files.sort();
    Ok(files)
}

fn create(dir: &Path, path: &Path) -> Result<File, StoreError> {
    let file = OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|e| io_error("cannot create", path, e))?;
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| io_error("cannot sync", dir, e))?;
    Ok(file)
}

#[cfg(test)]
mod tests;
