//! The store's schema version, kept in sled's `meta` tree: a new store is stamped with
//! `SCHEMA_VERSION`, a store of that schema opens as it is, and a store of any other
//! schema is refused with an error naming the data directory and both versions, before
//! anything reads or writes it.

use std::path::Path;

use super::StoreError;

/// The on-disk schema this build reads and writes. A change to a stored type that older
/// records cannot be read as bumps it; the build that bumps it adds the migration from the
/// versions it still reads to `check`.
pub const SCHEMA_VERSION: u32 = 1;

/// The tree and key of the schema stamp.
const META: &str = "meta";
const KEY: &str = "schema_version";

/// Stamps a new store with `SCHEMA_VERSION`; refuses a store of another schema.
pub(super) fn check(db: &sled::Db, dir: &Path) -> Result<(), StoreError> {
    let meta = db.open_tree(META)?;
    match meta.get(KEY)? {
        None => {
            meta.insert(KEY, SCHEMA_VERSION.to_string().as_bytes())?;
            meta.flush()?;
            Ok(())
        }
        Some(v) if *v == *SCHEMA_VERSION.to_string().as_bytes() => Ok(()),
        Some(v) => Err(StoreError::OtherSchema {
            path: dir.to_path_buf(),
            found: String::from_utf8_lossy(&v).into_owned(),
        }),
    }
}

/// What to do about a store of the schema `found` (the end of `OtherSchema`'s message).
pub(super) fn advice(found: &str) -> &'static str {
    match found.parse::<u32>() {
        Ok(n) if n > SCHEMA_VERSION => {
            "; a newer sre-agent wrote it: upgrade sre-agent or use another server.data_dir"
        }
        _ => {
            "; there is no migration from it: move the directory aside (or use another \
             server.data_dir) to start with an empty store"
        }
    }
}

/// Writes a store in `dir` stamped with the schema `version`, for tests of the refusal.
#[cfg(test)]
pub(crate) fn write_schema(dir: &Path, version: &str) {
    let store = super::Store::open(dir).unwrap();
    store
        .db
        .open_tree(META)
        .unwrap()
        .insert(KEY, version.as_bytes())
        .unwrap();
    store.db.flush().unwrap();
}
