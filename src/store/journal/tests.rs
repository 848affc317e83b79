use chrono::{DateTime, Duration, Utc};

use crate::store::Store;

fn at(s: &str) -> DateTime<Utc> {
    s.parse().unwrap()
}

fn scan(j: &crate::store::Journal<String>, from: &str, to: &str) -> Vec<String> {
    let mut out = Vec::new();
    j.scan(at(from), at(to), |_, v| out.push(v)).unwrap();
    out
}

#[tokio::test]
async fn records_are_read_back_by_time_across_hours_and_compression() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let j = store.journal::<String>("test").unwrap();
    j.append(
        at("2026-11-24T05:59:00Z"),
        &["a".to_string(), "b".to_string()],
    )
    .unwrap();
    j.append(at("2026-11-24T06:00:00Z"), &["c".to_string()])
        .unwrap();
    j.append(at("2026-11-24T07:30:00Z"), &["d".to_string()])
        .unwrap();
    store.flush().await.unwrap();
    assert_eq!(
        scan(&j, "2026-11-24T05:59:00Z", "2026-11-24T07:30:00Z"),
        ["a", "b", "c"]
    );
    j.compress_closed().unwrap();
    let files: Vec<String> = std::fs::read_dir(j.dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(
        files.iter().filter(|f| f.ends_with(".zst")).count(),
        2,
        "{files:?}"
    );
    assert!(
        files
            .iter()
            .any(|f| f.starts_with("20261124T05-") && f.ends_with("-c2.jsonl.zst"))
    );
    assert_eq!(
        scan(&j, "2026-11-24T00:00:00Z", "2026-11-25T00:00:00Z"),
        ["a", "b", "c", "d"]
    );
    assert_eq!(j.count().unwrap(), 4);
    // The segment of 05:00 ended at 06:00: a cutoff of 06:30 removes it, not 06:00's.
    assert_eq!(j.sweep(at("2026-11-24T06:30:00Z")).unwrap(), 2);
    assert_eq!(
        scan(&j, "2026-11-24T00:00:00Z", "2026-11-25T00:00:00Z"),
        ["c", "d"]
    );
    // The segment being written is never swept.
    assert_eq!(j.sweep(at("2026-11-25T00:00:00Z")).unwrap(), 1);
    assert_eq!(
        scan(&j, "2026-11-24T00:00:00Z", "2026-11-25T00:00:00Z"),
        ["d"]
    );
}

#[tokio::test]
async fn a_restart_keeps_every_record_and_skips_a_torn_line() {
    let dir = tempfile::tempdir().unwrap();
    let now = Utc::now();
    let path = {
        let store = Store::open(dir.path()).unwrap();
        let j = store.journal::<String>("test").unwrap();
        j.append(now, &["one".to_string()]).unwrap();
        store.flush().await.unwrap();
        let file = std::fs::read_dir(j.dir())
            .unwrap()
            .next()
            .unwrap()
            .unwrap()
            .path();
        // A crash in the middle of the next write.
        use std::io::Write;
        std::fs::OpenOptions::new()
            .append(true)
            .open(&file)
            .unwrap()
            .write_all(b"123\t\"tw")
            .unwrap();
        j.dir().to_path_buf()
    };
    std::thread::sleep(std::time::Duration::from_millis(5));
    let store = Store::open(dir.path()).unwrap();
    let j = store.journal::<String>("test").unwrap();
    j.append(now, &["two".to_string()]).unwrap();
    store.flush().await.unwrap();
    let hour = Duration::hours(1);
    let mut got = Vec::new();
    j.scan(now - hour, now + hour, |_, v| got.push(v)).unwrap();
    assert_eq!(got, ["one", "two"]);
    // The earlier process' segment is compressed in the background, without its torn line.
    for _ in 0..200 {
        let zst = std::fs::read_dir(&path)
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .file_name()
                    .to_string_lossy()
                    .ends_with("-c1.jsonl.zst")
            })
            .count();
        if zst == 1 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert_eq!(j.count().unwrap(), 2);
    let mut got = Vec::new();
    j.scan(now - hour, now + hour, |_, v| got.push(v)).unwrap();
    assert_eq!(got, ["one", "two"]);
}

#[tokio::test]
async fn one_store_hands_out_one_journal_per_name() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let a = store.journal::<String>("test").unwrap();
    let b = store.journal::<String>("test").unwrap();
    let now = Utc::now();
    a.append(now, &["x".to_string()]).unwrap();
    b.append(now, &["y".to_string()]).unwrap();
    store.flush().await.unwrap();
    assert_eq!(std::fs::read_dir(a.dir()).unwrap().count(), 1);
    assert_eq!(b.count().unwrap(), 2);
}
