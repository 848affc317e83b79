//! Segment file names and compression (layout in `journal.rs`).

use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::sync::RwLock;

use chrono::{DateTime, NaiveDateTime};

/// zstd level of closed segments: they are written once, in the background, and alert
/// records repeat their label names and annotations, so a higher level pays.
const LEVEL: i32 = 9;
/// zstd window of closed segments (2^17 = 128 KiB): records repeat what is near them, and
/// level 9's default 4 MiB window made each compression hold an 18 MB workspace.
const WINDOW_LOG: u32 = 17;

/// A segment's file name, parsed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Name {
    /// Hours since the Unix epoch (UTC) of its records.
    pub hour: i64,
    /// The process that wrote it.
    pub session: String,
    /// Its number among the session's segments.
    pub n: u32,
    /// Records in it, once compressed.
    pub count: Option<usize>,
    pub compressed: bool,
}

impl Name {
    fn stem(&self) -> String {
        let at = DateTime::from_timestamp(self.hour * 3600, 0).unwrap_or_default();
        format!("{}-{}-{}", at.format("%Y%m%dT%H"), self.session, self.n)
    }

    pub fn file_name(&self) -> String {
        match self.count {
            Some(c) if self.compressed => format!("{}-c{c}.jsonl.zst", self.stem()),
            _ => format!("{}.jsonl", self.stem()),
        }
    }

    fn parse(file: &str) -> Option<Self> {
        let (stem, compressed) = match file.strip_suffix(".jsonl.zst") {
            Some(s) => (s, true),
            None => (file.strip_suffix(".jsonl")?, false),
        };
        let mut parts = stem.split('-');
        let hour = NaiveDateTime::parse_from_str(&format!("{}00", parts.next()?), "%Y%m%dT%H%M")
            .ok()?
            .and_utc()
            .timestamp()
            / 3600;
        let session = parts.next()?.to_string();
        let n = parts.next()?.parse().ok()?;
        let count = match (compressed, parts.next()) {
            (true, Some(c)) => Some(c.strip_prefix('c')?.parse().ok()?),
            (false, None) => None,
            _ => return None,
        };
        if parts.next().is_some() || session.is_empty() {
            return None;
        }
        Some(Self {
            hour,
            session,
            n,
            count,
            compressed,
        })
    }

    fn same_segment(&self, other: &Self) -> bool {
        (self.hour, &self.session, self.n) == (other.hour, &other.session, other.n)
    }
}

/// The segments in `dir`, oldest first; a segment both compressed and not (a stop between
/// the two steps of `compress`) is listed once, compressed.
pub fn list(dir: &Path) -> std::io::Result<Vec<Name>> {
    let mut names = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        if let Some(name) = entry?.file_name().to_str().and_then(Name::parse) {
            names.push(name);
        }
    }
    names.sort_by(|a, b| {
        (a.hour, &a.session, a.n, !a.compressed).cmp(&(b.hour, &b.session, b.n, !b.compressed))
    });
    names.dedup_by(|later, first| later.same_segment(first));
    Ok(names)
}

/// Removes what a stop during compression left: `.tmp` files, and plain segments whose
/// compressed form is complete. A file already gone is fine: a journal of the same store
/// closed a moment ago may still be finishing a compression (renaming its `.tmp`,
/// removing the plain segment) in the background.
pub fn remove_leftovers(dir: &Path) -> std::io::Result<()> {
    let remove = |path: &Path| match std::fs::remove_file(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        other => other,
    };
    let mut names = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let file = entry.file_name();
        let Some(file) = file.to_str() else { continue };
        if file.ends_with(".tmp") {
            remove(&entry.path())?;
        } else if let Some(name) = Name::parse(file) {
            names.push(name);
        }
    }
    for plain in names.iter().filter(|n| !n.compressed) {
        if names.iter().any(|n| n.compressed && n.same_segment(plain)) {
            remove(&dir.join(plain.file_name()))?;
        }
    }
    Ok(())
}

/// Replaces the plain segment `seg` by its compressed form: writes `{stem}.{session}.tmp`
/// with the complete lines (a line torn by a crash is dropped), syncs it, then, holding
/// `segments` exclusively, renames it into place and removes the plain file (unless the
/// sweep removed that meanwhile). `session` is the compressing journal's: a store opened
/// again in the same process may compress the same leftover segment at the same time, and
/// each then writes a file of its own (the later rename puts an identical file in place).
pub fn compress(
    dir: &Path,
    seg: &Name,
    session: &str,
    segments: &RwLock<()>,
) -> std::io::Result<()> {
    let plain = dir.join(seg.file_name());
    let tmp = dir.join(format!("{}.{session}.tmp", seg.stem()));
    let mut count = 0;
    {
        let mut out = zstd::stream::Encoder::new(File::create(&tmp)?, LEVEL)?;
        out.window_log(WINDOW_LOG)?;
        let mut reader = BufReader::new(File::open(&plain)?);
        let mut line = Vec::new();
        while reader.read_until(b'\n', &mut line)? > 0 {
            if line.last() == Some(&b'\n') {
                out.write_all(&line)?;
                count += 1;
            }
            line.clear();
        }
        out.finish()?.sync_all()?;
    }
    let done = Name {
        count: Some(count),
        compressed: true,
        ..seg.clone()
    };
    let _exclusive = segments.write().unwrap_or_else(|p| p.into_inner());
    if !plain.exists() {
        // Removed by the retention sweep meanwhile.
        return std::fs::remove_file(&tmp);
    }
    std::fs::rename(&tmp, dir.join(done.file_name()))?;
    File::open(dir)?.sync_all()?;
    match std::fs::remove_file(&plain) {
        // The other compressor of the same segment removed it first.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        other => other,
    }
}
