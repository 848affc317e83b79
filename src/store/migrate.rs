//! Between sled formats (compressed or not, segment size; see `Format`): sled cannot
//! change either in place, so every tree is copied into a new database beside it
//! (`sled.migrating`), which then replaces the old one:
//!
//! 1. copy `sled` into `sled.migrating` and flush it;
//! 2. rename `sled` to `sled.v1`, then `sled.migrating` to `sled`;
//! 3. remove `sled.v1`.
//!
//! Schema 1 was uncompressed, schemas 2 and 3 compressed, schema 4 uncompressed again
//! (see `SLED_COMPRESSION` in `mod.rs`), all in 512 KiB segments; schema 5 writes 64 KiB
//! segments (`SEGMENT_SIZE`), so an older store is copied once.
//! A start interrupted anywhere finishes or restarts the step it was in
//! (`finish_interrupted`), so nothing is lost and nothing is copied twice. Records keep
//! their bytes; a part whose record layout changed migrates its own trees when it opens
//! (see `Store::marker`).

use std::path::Path;

#[cfg(test)]
use super::sled_config;
use super::{Format, StoreError, open_sled};

const MIGRATING: &str = "sled.migrating";
const OLD: &str = "sled.v1";
/// Records copied per batch.
const BATCH: usize = 1_000;

/// sled's segment size before schema 5 (its default).
const OLD_SEGMENT_SIZE: usize = 512 * 1024;

/// The format of the database in `sled_dir`; `None` when there is none yet.
pub(super) fn format_of(sled_dir: &Path) -> Option<Format> {
    // sled's `conf`: `key: value` lines, then a 4-byte checksum.
    let conf = std::fs::read(sled_dir.join("conf")).ok()?;
    let conf = String::from_utf8_lossy(&conf);
    let value = |key: &str| {
        conf.lines()
            .find_map(|l| l.trim().strip_prefix(key)?.strip_prefix(':'))
            .map(str::trim)
    };
    Some(Format {
        compressed: value("use_compression") == Some("true"),
        // A conf that does not say (or says something unreadable) gets sled's default
        // back, which sled then checks against its own reading.
        segment_size: value("segment_size")
            .and_then(|v| v.parse().ok())
            .unwrap_or(OLD_SEGMENT_SIZE),
    })
}

/// Completes or undoes a migration that a stop interrupted.
pub(super) fn finish_interrupted(dir: &Path) -> std::io::Result<()> {
    let (current, migrating, old) = (dir.join("sled"), dir.join(MIGRATING), dir.join(OLD));
    if old.exists() {
        if !current.exists() {
            // Stopped between the two renames: the copy was complete.
            std::fs::rename(&migrating, &current)?;
        }
        std::fs::remove_dir_all(&old)?;
    } else if migrating.exists() {
        // Stopped while copying: start the copy again.
        std::fs::remove_dir_all(&migrating)?;
    }
    Ok(())
}

/// Copies the database in `dir/sled`, written in the format `from`, into one written in
/// `to` that replaces it.
pub(super) fn reformat(dir: &Path, from: Format, to: Format) -> Result<(), StoreError> {
    let (current, migrating, old) = (dir.join("sled"), dir.join(MIGRATING), dir.join(OLD));
    let io = |what: &str, e: std::io::Error| StoreError::Open {
        path: dir.to_path_buf(),
        reason: format!("migrating to schema {}: {what}: {e}", super::SCHEMA_VERSION),
    };
    {
        // Waits out a lock still held by a database just closed (an earlier step of a
        // start, or the store's last user) as every open does.
        let from = open_sled(dir, &current, from)?;
        let to = open_sled(dir, &migrating, to)?;
        let mut copied = 0usize;
        for name in from.tree_names() {
            let (src, dst) = (from.open_tree(&name)?, to.open_tree(&name)?);
            let mut batch = sled::Batch::default();
            let mut n = 0;
            for entry in src.iter() {
                let (k, v) = entry?;
                batch.insert(k, v);
                n += 1;
                if n == BATCH {
                    dst.apply_batch(std::mem::take(&mut batch))?;
                    copied += n;
                    n = 0;
                }
            }
            dst.apply_batch(batch)?;
            copied += n;
        }
        to.flush()?;
        tracing::info!(
            records = copied,
            path = %dir.display(),
            "copied the store into the format of schema {}",
            super::SCHEMA_VERSION
        );
    }
    std::fs::rename(&current, &old).map_err(|e| io("renaming the old store", e))?;
    std::fs::rename(&migrating, &current).map_err(|e| io("renaming the new store", e))?;
    std::fs::remove_dir_all(&old).map_err(|e| io("removing the old store", e))?;
    Ok(())
}

/// Writes a store the way schemas 2 and 3 did (compressed sled, `schema_version` 3)
/// holding `records` (tree, key, JSON value), for migration tests.
#[cfg(test)]
pub(crate) fn write_schema_3(dir: &Path, records: &[(&str, String, serde_json::Value)]) {
    write_old(dir, 3, true, records);
}

/// Writes a store the way schema 1 did (uncompressed sled, `schema_version` 1) holding
/// `records` (tree, key, JSON value), for migration tests.
#[cfg(test)]
pub(crate) fn write_schema_1(dir: &Path, records: &[(&str, String, serde_json::Value)]) {
    write_old(dir, 1, false, records);
}

#[cfg(test)]
fn write_old(
    dir: &Path,
    schema: u32,
    compressed: bool,
    records: &[(&str, String, serde_json::Value)],
) {
    let format = Format {
        compressed,
        segment_size: OLD_SEGMENT_SIZE,
    };
    let db = sled_config(&dir.join("sled"), format).open().unwrap();
    db.open_tree("meta")
        .unwrap()
        .insert("schema_version", schema.to_string().as_bytes())
        .unwrap();
    for (tree, key, value) in records {
        db.open_tree(tree)
            .unwrap()
            .insert(key.as_bytes(), serde_json::to_vec(value).unwrap())
            .unwrap();
    }
    db.flush().unwrap();
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{SCHEMA_VERSION, Store};

    fn things(records: usize) -> Vec<(&'static str, String, serde_json::Value)> {
        (0..records)
            .map(|i| {
                let value = serde_json::json!({"n": i, "text": "some words ".repeat(10)});
                ("things", format!("{i:06}"), value)
            })
            .collect()
    }

    fn write_v3(dir: &Path, records: usize) {
        write_schema_3(dir, &things(records));
    }

    #[test]
    fn a_schema_1_store_is_copied_into_the_current_format() {
        let dir = tempfile::tempdir().unwrap();
        write_schema_1(dir.path(), &things(10));
        let store = Store::open(dir.path()).unwrap();
        assert_eq!(
            format_of(&dir.path().join("sled")),
            Some(super::super::FORMAT)
        );
        assert!(!dir.path().join(MIGRATING).exists() && !dir.path().join(OLD).exists());
        assert_eq!(store.tree::<serde_json::Value>("things").unwrap().len(), 10);
    }

    #[test]
    fn a_compressed_store_is_copied_into_the_uncompressed_format_and_keeps_every_record() {
        let dir = tempfile::tempdir().unwrap();
        write_v3(dir.path(), 2_500);
        let old = format_of(&dir.path().join("sled")).unwrap();
        assert!(old.compressed && old.segment_size == OLD_SEGMENT_SIZE);

        let store = Store::open(dir.path()).unwrap();
        assert_eq!(
            format_of(&dir.path().join("sled")),
            Some(super::super::FORMAT)
        );
        assert!(!dir.path().join(MIGRATING).exists() && !dir.path().join(OLD).exists());
        assert_eq!(
            store.marker("schema_version").unwrap(),
            Some(SCHEMA_VERSION.to_string())
        );
        let things = store.tree::<serde_json::Value>("things").unwrap();
        assert_eq!(things.len(), 2_500);
        assert_eq!(things.get("001234").unwrap().unwrap()["n"], 1234);
        drop((things, store));

        // A second start opens it as it is.
        let store = Store::open(dir.path()).unwrap();
        let things = store.tree::<serde_json::Value>("things").unwrap();
        assert_eq!(things.get("002499").unwrap().unwrap()["n"], 2499);
    }

    #[test]
    fn a_migration_stopped_midway_finishes_on_the_next_start() {
        // Stopped while copying: the partial copy is thrown away and the copy redone.
        let dir = tempfile::tempdir().unwrap();
        write_v3(dir.path(), 10);
        std::fs::create_dir_all(dir.path().join(MIGRATING)).unwrap();
        std::fs::write(dir.path().join(MIGRATING).join("junk"), b"partial").unwrap();
        let store = Store::open(dir.path()).unwrap();
        assert_eq!(store.tree::<serde_json::Value>("things").unwrap().len(), 10);
        drop(store);

        // Stopped between the renames: the finished copy is put in place.
        let dir = tempfile::tempdir().unwrap();
        write_v3(dir.path(), 10);
        let v3 = dir.path().join("sled");
        std::fs::rename(&v3, dir.path().join("copy-of-v3")).unwrap();
        let scratch = tempfile::tempdir().unwrap();
        std::fs::rename(dir.path().join("copy-of-v3"), scratch.path().join("sled")).unwrap();
        let from = format_of(&scratch.path().join("sled")).unwrap();
        reformat(scratch.path(), from, super::super::FORMAT).unwrap();
        std::fs::rename(scratch.path().join("sled"), dir.path().join(MIGRATING)).unwrap();
        std::fs::create_dir_all(dir.path().join(OLD)).unwrap();
        let store = Store::open(dir.path()).unwrap();
        assert_eq!(store.tree::<serde_json::Value>("things").unwrap().len(), 10);
        assert!(!dir.path().join(OLD).exists());
    }
}
