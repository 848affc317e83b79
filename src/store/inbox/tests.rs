use std::io::Write;

use chrono::{TimeZone, Utc};

use super::{Entry, Inbox};

/// Opens the inbox and reads its whole backlog.
fn reopen(dir: &std::path::Path) -> (Inbox, Vec<Entry>) {
    let (inbox, backlog) = Inbox::open(dir, "alerts").unwrap();
    let count = backlog.len();
    let pending: Vec<Entry> = backlog.collect::<Result<_, _>>().unwrap();
    assert_eq!(
        pending.len(),
        count,
        "the count at open matches what is read"
    );
    (inbox, pending)
}

fn at(s: i64) -> chrono::DateTime<Utc> {
    Utc.timestamp_opt(1_700_000_000 + s, 0).unwrap()
}

fn files(dir: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir.join("inbox/alerts"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".log"))
        .collect();
    names.sort();
    names
}

#[tokio::test]
async fn entries_not_checkpointed_come_back_in_order_after_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let (inbox, pending) = reopen(dir.path());
    assert!(pending.is_empty());
    let a = inbox.append(at(1), 1, b"first").unwrap();
    let b = inbox.append(at(2), 2, b"second\nwith a newline").unwrap();
    let c = inbox.append(at(3), 1, b"").unwrap();
    assert_eq!((a, b, c), (1, 2, 3));
    inbox.sync(c).await.unwrap();
    assert_eq!(inbox.backlog(), 3);
    // 2 finishes before 1: the watermark waits for 1.
    assert_eq!(inbox.finished(b), 0);
    assert_eq!(inbox.finished(a), 2);
    inbox.checkpoint(2).unwrap();
    assert_eq!(inbox.backlog(), 1);
    drop(inbox);

    let (inbox, pending) = reopen(dir.path());
    assert_eq!(
        pending,
        vec![Entry {
            seq: 3,
            at: at(3),
            kind: 1,
            body: Vec::new()
        }]
    );
    // Numbering goes on after the highest entry seen.
    assert_eq!(inbox.append(at(4), 1, b"x").unwrap(), 4);
}

#[tokio::test]
async fn a_torn_last_frame_is_skipped_and_the_entries_before_it_are_kept() {
    let dir = tempfile::tempdir().unwrap();
    let (inbox, _) = Inbox::open(dir.path(), "alerts").unwrap();
    inbox.append(at(1), 1, b"kept").unwrap();
    inbox.append(at(2), 1, b"torn by a crash").unwrap();
    inbox.sync(2).await.unwrap();
    drop(inbox);
    let name = files(dir.path()).pop().unwrap();
    let path = dir.path().join("inbox/alerts").join(name);
    let bytes = std::fs::read(&path).unwrap();
    std::fs::write(&path, &bytes[..bytes.len() - 3]).unwrap();

    let (_, pending) = reopen(dir.path());
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].body, b"kept");
}

#[tokio::test]
async fn a_corrupt_frame_ends_its_file() {
    let dir = tempfile::tempdir().unwrap();
    let (inbox, _) = Inbox::open(dir.path(), "alerts").unwrap();
    inbox.append(at(1), 1, b"good").unwrap();
    inbox.append(at(2), 1, b"flipped").unwrap();
    inbox.sync(2).await.unwrap();
    drop(inbox);
    let name = files(dir.path()).pop().unwrap();
    let path = dir.path().join("inbox/alerts").join(name);
    let mut bytes = std::fs::read(&path).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0xff;
    std::fs::File::create(&path)
        .unwrap()
        .write_all(&bytes)
        .unwrap();

    let (_, pending) = reopen(dir.path());
    let bodies: Vec<&[u8]> = pending.iter().map(|e| e.body.as_slice()).collect();
    assert_eq!(bodies, vec![b"good".as_slice()]);
}

#[tokio::test]
async fn checkpoints_remove_the_files_they_cover_and_keep_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let (inbox, _) = Inbox::open(dir.path(), "alerts").unwrap();
    // Three files: 1 MiB bodies, a new file past 8 MiB.
    let body = vec![b'x'; 1 << 20];
    let mut last = 0;
    for i in 0..20 {
        last = inbox.append(at(i), 1, &body).unwrap();
    }
    inbox.sync(last).await.unwrap();
    assert_eq!(files(dir.path()).len(), 3);
    for seq in 1..=10 {
        inbox.finished(seq);
    }
    inbox.checkpoint(10).unwrap();
    // The first file held 1..=8; the second 9..=16 still has 11..=16 to process.
    assert_eq!(files(dir.path()).len(), 2);
    drop(inbox);
    let (inbox, pending) = reopen(dir.path());
    assert_eq!(pending.first().map(|e| e.seq), Some(11));
    assert_eq!(pending.len(), 10);
    for e in &pending {
        inbox.finished(e.seq);
    }
    inbox.checkpoint(20).unwrap();
    assert_eq!(files(dir.path()).len(), 1, "only the open file is left");
    drop(inbox);
    let (_, pending) = reopen(dir.path());
    assert!(pending.is_empty());
}

#[tokio::test]
async fn concurrent_writers_share_syncs_and_lose_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (inbox, _) = Inbox::open(dir.path(), "alerts").unwrap();
    let tasks: Vec<_> = (0..16)
        .map(|i| {
            let inbox = inbox.clone();
            tokio::spawn(async move {
                for j in 0..20 {
                    let seq = inbox
                        .append(at(j), 1, format!("{i}-{j}").as_bytes())
                        .unwrap();
                    inbox.sync(seq).await.unwrap();
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    drop(inbox);
    let (_, pending) = reopen(dir.path());
    let seqs: Vec<u64> = pending.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, (1..=320).collect::<Vec<_>>());
}

#[tokio::test]
async fn a_checkpoint_covering_a_large_open_file_closes_and_removes_it() {
    let dir = tempfile::tempdir().unwrap();
    let (inbox, _) = Inbox::open(dir.path(), "alerts").unwrap();
    let body = vec![b'x'; 40 << 10];
    let a = inbox.append(at(1), 1, &body).unwrap();
    let b = inbox.append(at(2), 1, &body).unwrap();
    inbox.sync(b).await.unwrap();
    inbox.finished(a);
    inbox.checkpoint(a).unwrap();
    assert_eq!(
        files(dir.path()).len(),
        1,
        "entry 2 is not processed: the file stays"
    );
    inbox.finished(b);
    inbox.checkpoint(b).unwrap();
    let left = files(dir.path());
    assert_eq!(left.len(), 1);
    let size = std::fs::metadata(dir.path().join("inbox/alerts").join(&left[0]))
        .unwrap()
        .len();
    assert_eq!(size, 0, "a new, empty file replaced it");
    drop(inbox);
    let (inbox, pending) = reopen(dir.path());
    assert!(pending.is_empty());
    assert_eq!(inbox.append(at(3), 1, b"x").unwrap(), 3);
}

mod faults;
