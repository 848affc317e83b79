//! The entries an earlier process left unprocessed: counted at open (with the highest
//! number on disk), then streamed one at a time, so a large backlog costs the memory of
//! one entry, not of the whole inbox.

use std::path::PathBuf;

use chrono::{DateTime, Utc};

use super::frame::FileFrames;
use super::{Entry, Inbox};
use crate::store::StoreError;

/// What the files hold, read at open.
pub(super) struct Scan {
    /// The highest number handed out before: of `done`, every intact frame and every
    /// file's name (a file named `n` means numbers before `n` were handed out).
    pub last: u64,
    /// Entries after `done`.
    pub count: usize,
    /// When the first and the last of them arrived.
    pub span: Option<(DateTime<Utc>, DateTime<Utc>)>,
}

/// Reads every file once (one entry in memory at a time).
pub(super) fn scan(files: &[(u64, PathBuf)], done: u64) -> Result<Scan, StoreError> {
    let mut scan = Scan {
        last: done,
        count: 0,
        span: None,
    };
    for (first, path) in files {
        scan.last = scan.last.max(first.saturating_sub(1));
        let Some(mut frames) = FileFrames::open(path)? else {
            continue;
        };
        while let Some(e) = frames.next_entry()? {
            scan.last = scan.last.max(e.seq);
            if e.seq > done {
                scan.count += 1;
                scan.span = Some(match scan.span {
                    Some((a, b)) => (a.min(e.at), b.max(e.at)),
                    None => (e.at, e.at),
                });
            }
        }
    }
    Ok(scan)
}

/// The entries left unprocessed by an earlier process, oldest first. Each entry read is
/// handed out: pass its number to `Inbox::finished` once processed. No checkpoint covers
/// an entry not read yet, so a backlog dropped before its end is read again at the next
/// start.
pub struct Backlog {
    inbox: Inbox,
    files: std::vec::IntoIter<PathBuf>,
    current: Option<FileFrames>,
    after: u64,
    count: usize,
    span: Option<(DateTime<Utc>, DateTime<Utc>)>,
    ended: bool,
}

impl Backlog {
    pub(super) fn new(inbox: Inbox, files: Vec<PathBuf>, after: u64, scan: Scan) -> Self {
        Self {
            inbox,
            files: files.into_iter(),
            current: None,
            after,
            count: scan.count,
            span: scan.span,
            ended: scan.count == 0,
        }
    }

    /// How many entries it holds.
    pub fn len(&self) -> usize {
        self.count
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// When its first and its last entry arrived.
    pub fn span(&self) -> Option<(DateTime<Utc>, DateTime<Utc>)> {
        self.span
    }

    fn read_next(&mut self) -> Result<Option<Entry>, StoreError> {
        loop {
            if let Some(frames) = &mut self.current {
                while let Some(e) = frames.next_entry()? {
                    if e.seq > self.after {
                        return Ok(Some(e));
                    }
                }
                self.current = None;
            }
            let Some(path) = self.files.next() else {
                return Ok(None);
            };
            self.current = FileFrames::open(&path)?;
        }
    }
}

impl Iterator for Backlog {
    type Item = Result<Entry, StoreError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.ended {
            return None;
        }
        let next = self.read_next();
        let mut p = self.inbox.lock_progress();
        match &next {
            Ok(Some(e)) => {
                p.outstanding.insert(e.seq);
                p.replay_next = Some(e.seq + 1);
            }
            Ok(None) => {
                self.ended = true;
                p.replay_next = None;
            }
            // Not read: the checkpoint stays below it for the rest of this process.
            Err(_) => self.ended = true,
        }
        next.transpose()
    }
}
