//! Builds a journal from records stored elsewhere (a sled tree of an earlier schema), all at
//! once: the segments are written into `{name}.migrating` beside the journal's directory,
//! synced, and the directory is renamed into place, so a stop midway leaves either nothing
//! or the whole journal.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use super::segment::Name;

/// Writes `records` (`(ms, encoded value)`, in any order) as the journal in `dir`, which
/// must not exist yet. Returns how many were written.
pub fn import(
    dir: &Path,
    records: impl Iterator<Item = std::io::Result<(i64, Vec<u8>)>>,
) -> std::io::Result<usize> {
    let file_name = dir
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("journal");
    let tmp = dir.with_file_name(format!("{file_name}.migrating"));
    if tmp.exists() {
        std::fs::remove_dir_all(&tmp)?;
    }
    std::fs::create_dir_all(&tmp)?;
    let mut files: BTreeMap<i64, BufWriter<File>> = BTreeMap::new();
    let mut n = 0;
    for r in records {
        let (ms, bytes) = r?;
        let hour = ms.div_euclid(3_600_000);
        let out = match files.get_mut(&hour) {
            Some(f) => f,
            None => {
                let name = Name {
                    hour,
                    session: "import".into(),
                    n: 0,
                    count: None,
                    compressed: false,
                };
                let f = BufWriter::new(File::create(tmp.join(name.file_name()))?);
                files.entry(hour).or_insert(f)
            }
        };
        write!(out, "{ms}\t")?;
        out.write_all(&bytes)?;
        out.write_all(b"\n")?;
        n += 1;
    }
    for (_, f) in files {
        f.into_inner().map_err(|e| e.into_error())?.sync_all()?;
    }
    File::open(&tmp)?.sync_all()?;
    std::fs::rename(&tmp, dir)?;
    if let Some(parent) = dir.parent() {
        File::open(parent)?.sync_all()?;
    }
    Ok(n)
}
