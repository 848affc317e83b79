//! The inbox's directory: its files by first number, the `done` checkpoint, new files.

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};

use super::io_error;
use crate::store::StoreError;

pub(super) fn read_done(dir: &Path) -> Result<u64, StoreError> {
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
pub(super) fn list(dir: &Path) -> Result<Vec<(u64, PathBuf)>, StoreError> {
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

pub(super) fn create(dir: &Path, path: &Path) -> Result<File, StoreError> {
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
