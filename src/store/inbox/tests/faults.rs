//! The inbox when writes and syncs fail (a full disk): what fails is reported, nothing
//! follows a torn frame, and numbers are never handed out twice.

use super::{at, files, reopen};
use crate::store::StoreError;
use crate::store::inbox::Inbox;

fn bodies(pending: &[super::Entry]) -> Vec<(u64, &[u8])> {
    pending.iter().map(|e| (e.seq, e.body.as_slice())).collect()
}

#[tokio::test]
async fn a_write_that_fails_part_way_is_cut_off_and_the_next_entries_follow_it() {
    let dir = tempfile::tempdir().unwrap();
    let (inbox, _) = reopen(dir.path());
    let a = inbox.append(at(1), 1, b"kept").unwrap();
    inbox.sync(a).await.unwrap();
    inbox.arm(|f| f.write_stops_after = Some(11));
    let err = inbox.append(at(2), 1, b"the disk filled up").unwrap_err();
    assert!(matches!(err, StoreError::NotStored(_)), "{err}");
    let c = inbox.append(at(3), 1, b"after the disk was freed").unwrap();
    inbox.sync(c).await.unwrap();
    assert_eq!(files(dir.path()).len(), 1, "the same file goes on");
    drop(inbox);

    let (inbox, pending) = reopen(dir.path());
    assert_eq!(
        bodies(&pending),
        vec![
            (1, b"kept".as_slice()),
            (2, b"after the disk was freed".as_slice())
        ]
    );
    assert_eq!(inbox.append(at(4), 1, b"x").unwrap(), 3);
}

#[tokio::test]
async fn a_failed_write_that_cannot_be_cut_off_is_left_behind_for_a_new_file() {
    let dir = tempfile::tempdir().unwrap();
    let (inbox, _) = reopen(dir.path());
    let a = inbox.append(at(1), 1, b"synced").unwrap();
    inbox.sync(a).await.unwrap();
    let b = inbox.append(at(2), 1, b"written, not synced").unwrap();
    inbox.arm(|f| {
        f.write_stops_after = Some(5);
        f.truncate_fails = true;
    });
    assert!(inbox.append(at(3), 1, b"torn").is_err());
    // The entry written since the last sync shared the file's fate: its writer hears so.
    let err = inbox.sync(b).await.unwrap_err();
    assert!(matches!(err, StoreError::NotStored(_)), "{err}");
    let d = inbox.append(at(4), 1, b"in the new file").unwrap();
    inbox.sync(d).await.unwrap();
    assert_eq!(files(dir.path()).len(), 2);
    drop(inbox);

    let (inbox, pending) = reopen(dir.path());
    let seqs: Vec<u64> = pending.iter().map(|e| e.seq).collect();
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "{seqs:?}");
    let got = bodies(&pending);
    assert!(got.contains(&(a, b"synced".as_slice())), "{got:?}");
    assert!(got.contains(&(d, b"in the new file".as_slice())), "{got:?}");
    assert!(inbox.append(at(5), 1, b"x").unwrap() > d);
}

#[tokio::test]
async fn a_failed_sync_loses_the_entries_it_covered_and_a_new_file_takes_the_next() {
    let dir = tempfile::tempdir().unwrap();
    let (inbox, _) = reopen(dir.path());
    let a = inbox.append(at(1), 1, b"a").unwrap();
    inbox.sync(a).await.unwrap();
    let b = inbox.append(at(2), 1, b"b").unwrap();
    let c = inbox.append(at(3), 1, b"c").unwrap();
    inbox.arm(|f| f.sync_fails = true);
    assert!(inbox.sync(c).await.is_err());
    assert!(inbox.sync(b).await.is_err(), "b shared the failed sync");
    inbox.sync(a).await.unwrap();
    let d = inbox.append(at(4), 1, b"d").unwrap();
    assert_eq!(d, 4, "lost numbers are not handed out again");
    inbox.sync(d).await.unwrap();
    assert_eq!(
        files(dir.path()).len(),
        2,
        "a new file follows a failed sync"
    );
    // Given up like processed ones: the checkpoint moves past them.
    for seq in [a, b, c, d] {
        inbox.finished(seq);
    }
    assert_eq!(inbox.done(), d);
    drop(inbox);

    let (inbox, pending) = reopen(dir.path());
    assert_eq!(
        bodies(&pending),
        vec![(1, b"a".as_slice()), (4, b"d".as_slice())],
        "what the failed sync covered is cut off"
    );
    assert_eq!(inbox.append(at(5), 1, b"x").unwrap(), 5);
}

#[tokio::test]
async fn a_new_file_that_cannot_be_created_is_tried_again_before_the_next_write() {
    let dir = tempfile::tempdir().unwrap();
    let (inbox, _) = reopen(dir.path());
    let a = inbox.append(at(1), 1, b"a").unwrap();
    inbox.arm(|f| {
        f.sync_fails = true;
        f.create_fails = true;
    });
    assert!(inbox.sync(a).await.is_err());
    let b = inbox.append(at(2), 1, b"b").unwrap();
    inbox.sync(b).await.unwrap();
    drop(inbox);
    let (_, pending) = reopen(dir.path());
    assert_eq!(bodies(&pending), vec![(2, b"b".as_slice())]);
}

/// Frames 1 to 4 with frame 2 torn (as an older build left a file after a full disk).
fn file_with_a_torn_frame_inside(dir: &std::path::Path) {
    let inbox_dir = dir.join("inbox/alerts");
    std::fs::create_dir_all(&inbox_dir).unwrap();
    let mut bytes = Vec::new();
    for seq in 1..=4u64 {
        let frame =
            super::super::frame::encode(seq, at(seq as i64), 1, format!("body {seq}").as_bytes());
        let keep = if seq == 2 {
            frame.len() - 4
        } else {
            frame.len()
        };
        bytes.extend_from_slice(&frame[..keep]);
    }
    std::fs::write(inbox_dir.join(format!("{:020}.log", 1)), bytes).unwrap();
}

#[tokio::test]
async fn entries_after_a_torn_frame_are_read_and_their_numbers_are_not_handed_out_again() {
    let dir = tempfile::tempdir().unwrap();
    file_with_a_torn_frame_inside(dir.path());
    let (inbox, pending) = reopen(dir.path());
    let seqs: Vec<u64> = pending.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, vec![1, 3, 4]);
    assert_eq!(pending[2].body, b"body 4");
    assert_eq!(inbox.append(at(5), 1, b"x").unwrap(), 5);
}

#[tokio::test]
async fn the_checkpoint_never_passes_a_backlog_entry_not_read_yet() {
    let dir = tempfile::tempdir().unwrap();
    {
        let (inbox, _) = reopen(dir.path());
        let mut last = 0;
        for i in 0..3 {
            last = inbox.append(at(i), 1, b"left").unwrap();
        }
        inbox.sync(last).await.unwrap();
    }
    let (inbox, mut backlog) = Inbox::open(dir.path(), "alerts").unwrap();
    assert_eq!(backlog.len(), 3);
    // Written while the backlog is read: numbered after it.
    let new = inbox.append(at(9), 1, b"new").unwrap();
    assert_eq!(new, 4);
    inbox.finished(new);
    let first = backlog.next().unwrap().unwrap();
    assert_eq!(inbox.finished(first.seq), 1);
    for e in backlog.by_ref() {
        inbox.finished(e.unwrap().seq);
    }
    assert_eq!(inbox.done(), 4);
}
