//! The inbox's frames on disk: `[len u32][crc32 u32][seq u64][ms i64][kind u8][body]`
//! (little-endian; `len` counts from `seq`, the CRC covers the same bytes), and a reader
//! that streams one file's frames one at a time.
//!
//! A frame that is short or fails its CRC was torn (by a crash, or by a write that failed
//! in a process that did not clean up after it). The reader then looks past it for the next
//! intact frame numbered after the last good one, so entries written after a torn frame
//! are not lost and their numbers count towards the high-water mark.

use std::fs::File;
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};

use super::{Entry, io_error};
use crate::store::StoreError;

/// `seq`, `ms` and `kind`: the frame bytes before the body.
pub(super) const HEAD: usize = 17;
/// Frames numbered this far past the last good one are taken for noise while looking past
/// a torn frame (a process hands out far fewer numbers between two syncs).
const RESYNC_SPAN: u64 = 1 << 32;

/// The bytes of one frame before its body (the body is written after them as it is, not
/// copied into one buffer: a webhook body can be megabytes).
pub(super) fn head(seq: u64, at: DateTime<Utc>, kind: u8, body: &[u8]) -> [u8; 8 + HEAD] {
    let len = HEAD + body.len();
    let mut out = [0u8; 8 + HEAD];
    out[..4].copy_from_slice(&(len as u32).to_le_bytes());
    out[8..16].copy_from_slice(&seq.to_le_bytes());
    out[16..24].copy_from_slice(&at.timestamp_millis().to_le_bytes());
    out[24] = kind;
    let mut crc = crc32fast::Hasher::new();
    crc.update(&out[8..]);
    crc.update(body);
    out[4..8].copy_from_slice(&crc.finalize().to_le_bytes());
    out
}

/// The bytes of one frame.
#[cfg(test)]
pub(super) fn encode(seq: u64, at: DateTime<Utc>, kind: u8, body: &[u8]) -> Vec<u8> {
    let mut out = head(seq, at, kind, body).to_vec();
    out.extend_from_slice(body);
    out
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

/// The entry of a frame's `data` (the bytes after its length and CRC), if the CRC holds.
fn entry_of(crc: u32, data: &[u8]) -> Option<Entry> {
    if data.len() < HEAD || crc32fast::hash(data) != crc {
        return None;
    }
    let seq = u64_at(data, 0)?;
    let ms = u64_at(data, 8)? as i64;
    Some(Entry {
        seq,
        at: DateTime::from_timestamp_millis(ms).unwrap_or_default(),
        kind: data[16],
        body: data[HEAD..].to_vec(),
    })
}

/// The frame starting at `buf[0]` and its length in bytes, if it is whole and intact.
fn frame_at(buf: &[u8]) -> Option<(Entry, usize)> {
    let len = u32_at(buf, 0)? as usize;
    let crc = u32_at(buf, 4)?;
    let data = buf.get(8..8usize.checked_add(len)?)?;
    entry_of(crc, data).map(|e| (e, 8 + len))
}

/// Where the next intact frame numbered in `(after, after + RESYNC_SPAN]` starts in `buf`.
fn next_intact(buf: &[u8], after: u64) -> Option<usize> {
    (1..buf.len()).find(|&at| {
        let rest = &buf[at..];
        let plausible = u32_at(rest, 0).is_some_and(|len| {
            (len as usize) >= HEAD && (len as usize).saturating_add(8) <= rest.len()
        }) && u64_at(rest, 8)
            .is_some_and(|seq| seq > after && seq - after <= RESYNC_SPAN);
        plausible && frame_at(rest).is_some()
    })
}

/// The frames of one file, read in order, one at a time (a file past a torn frame is read
/// whole from there: at most one file's size).
pub(super) struct FileFrames {
    path: PathBuf,
    reader: BufReader<File>,
    /// Bytes of the file not read yet.
    left: u64,
    /// After a torn frame: the rest of the file, and where reading goes on in it.
    rest: Option<(Vec<u8>, usize)>,
    /// The number of the last intact frame read.
    last: u64,
}

impl FileFrames {
    /// The frames of `path`; `None` when the file is gone.
    pub(super) fn open(path: &Path) -> Result<Option<Self>, StoreError> {
        let file = match File::open(path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(io_error("cannot read", path, e)),
        };
        let left = file
            .metadata()
            .map_err(|e| io_error("cannot read", path, e))?
            .len();
        Ok(Some(Self {
            path: path.to_path_buf(),
            reader: BufReader::with_capacity(64 << 10, file),
            left,
            rest: None,
            last: 0,
        }))
    }

    /// The next intact frame's entry; `None` at the end of the file.
    pub(super) fn next_entry(&mut self) -> Result<Option<Entry>, StoreError> {
        if self.rest.is_none() {
            if self.left == 0 {
                return Ok(None);
            }
            let mut head = [0u8; 8];
            if self.left < 8 {
                return self.torn(head[..0].to_vec());
            }
            self.read_exact(&mut head)?;
            let len = u32::from_le_bytes(head[..4].try_into().expect("4 bytes")) as u64;
            if len < HEAD as u64 || len > self.left {
                return self.torn(head.to_vec());
            }
            let mut frame = head.to_vec();
            frame.resize(8 + len as usize, 0);
            self.read_exact(&mut frame[8..])?;
            let crc = u32::from_le_bytes(head[4..].try_into().expect("4 bytes"));
            let Some(entry) = entry_of(crc, &frame[8..]) else {
                return self.torn(frame);
            };
            self.last = entry.seq;
            return Ok(Some(entry));
        }
        let (buf, at) = self.rest.as_mut().expect("checked above");
        if *at >= buf.len() {
            return Ok(None);
        }
        let from = &buf[*at..];
        let (entry, used) = match frame_at(from) {
            Some(found) => found,
            None => {
                let Some(skip) = next_intact(from, self.last) else {
                    tracing::warn!(
                        file = %self.path.display(),
                        bytes = from.len(),
                        "inbox: a torn or corrupt frame ends the file (written during a crash); skipped"
                    );
                    *at = buf.len();
                    return Ok(None);
                };
                tracing::warn!(
                    file = %self.path.display(),
                    bytes = skip,
                    "inbox: a torn or corrupt frame was skipped; the frames after it are read"
                );
                frame_at(&from[skip..])
                    .map(|(e, used)| (e, skip + used))
                    .expect("next_intact found an intact frame")
            }
        };
        *at += used;
        self.last = entry.seq;
        Ok(Some(entry))
    }

    /// Switches to reading the rest of the file (after `read`, the bytes of the bad frame
    /// read so far) in memory, looking past the bad frame.
    fn torn(&mut self, mut read: Vec<u8>) -> Result<Option<Entry>, StoreError> {
        let start = read.len();
        read.resize(start + self.left as usize, 0);
        self.read_exact(&mut read[start..])?;
        // The bad frame is at 0: reading goes on at the next intact frame after it.
        self.rest = Some((read, 0));
        self.next_entry()
    }

    fn read_exact(&mut self, buf: &mut [u8]) -> Result<(), StoreError> {
        self.reader
            .read_exact(buf)
            .map_err(|e| io_error("cannot read", &self.path, e))?;
        self.left -= buf.len() as u64;
        Ok(())
    }
}
