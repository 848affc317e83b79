//! The webhook path when a request ends early or the disk fails: a batch written is
//! decided whatever happens to its request, and one not stored is given up and said so.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::json;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::fake::{FakeInvestigator, config, intake_inbox};
use super::{Intake, Settle};
use crate::alerts::{AlertSource, parse_webhook};
use crate::store::inbox::Inbox;
use crate::store::{Store, StoreError};

fn body(tag: &str) -> Vec<u8> {
    let alerts: Vec<_> = (0..3)
        .map(|i| {
            json!({"status": "firing",
                "labels": {"alertname": "DiskFull", "instance": format!("{tag}{i}")}})
        })
        .collect();
    serde_json::to_vec(&json!({"version": "4", "status": "firing", "alerts": alerts})).unwrap()
}

struct Running {
    dir: tempfile::TempDir,
    inbox: Inbox,
    intake: Intake,
    _store: Store,
    tasks: TaskTracker,
    token: CancellationToken,
}

async fn running() -> Running {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let fake = Arc::new(FakeInvestigator::default());
    let (inbox, backlog) = Inbox::open(dir.path(), "alerts").unwrap();
    let intake = intake_inbox(&store, &fake, config(50), Some((inbox.clone(), backlog)));
    let (tasks, token) = (TaskTracker::new(), CancellationToken::new());
    intake.start(&tasks, token.clone()).await.unwrap();
    Running {
        dir,
        inbox,
        intake,
        _store: store,
        tasks,
        token,
    }
}

/// A settle that records what it was told.
fn recorder() -> (Settle, Arc<Mutex<Option<bool>>>) {
    let told = Arc::new(Mutex::new(None));
    let t = told.clone();
    (
        Settle::new(move |stored| *t.lock().unwrap() = Some(stored)),
        told,
    )
}

async fn until(what: &str, mut ok: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !ok() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

fn checkpoint(dir: &std::path::Path) -> u64 {
    std::fs::read_to_string(dir.join("inbox/alerts/done"))
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(0)
}

impl Running {
    async fn accept(&self, tag: &str, settle: Settle) -> Result<super::Accepted, StoreError> {
        let b = body(tag);
        let parsed = parse_webhook(AlertSource::Alertmanager, &b).unwrap();
        self.intake
            .accept(AlertSource::Alertmanager, &b, parsed, settle)
            .await
    }

    async fn stop(self) {
        self.token.cancel();
        self.tasks.close();
        self.tasks.wait().await;
    }
}

#[tokio::test]
async fn a_request_timed_out_during_its_sync_still_has_its_batch_decided_and_checkpointed() {
    let r = running().await;
    r.inbox
        .arm(|f| f.sync_stalls = Some(Duration::from_millis(300)));
    let (settle, told) = recorder();
    // What `server.request_timeout` does to a handler: drops it mid-await.
    let answer = tokio::time::timeout(Duration::from_millis(30), r.accept("a", settle)).await;
    assert!(answer.is_err(), "the request ended during the sync");
    until("the batch is decided", || {
        r.intake.store().alert_count() == 3 && r.intake.backlog() == 0
    })
    .await;
    assert_eq!(*told.lock().unwrap(), Some(true), "its claim is kept");
    until("the checkpoint covers it", || checkpoint(r.dir.path()) == 1).await;
    r.stop().await;
}

#[tokio::test]
async fn a_batch_whose_sync_fails_is_not_stored_is_given_up_and_the_checkpoint_moves_on() {
    let r = running().await;
    r.inbox.arm(|f| f.sync_fails = true);
    let (settle, told) = recorder();
    let err = r.accept("lost", settle).await.unwrap_err();
    assert!(matches!(err, StoreError::NotStored(_)), "{err}");
    assert_eq!(*told.lock().unwrap(), Some(false), "its claim is released");
    until("the batch is given up", || r.intake.backlog() == 0).await;
    assert_eq!(r.intake.store().alert_count(), 0, "never decided");

    // The sender's retry after the disk recovered.
    let (settle, told) = recorder();
    r.accept("lost", settle).await.unwrap();
    assert_eq!(*told.lock().unwrap(), Some(true));
    until("the retry is decided", || {
        r.intake.store().alert_count() == 3 && r.intake.backlog() == 0
    })
    .await;
    until("the checkpoint passes both", || {
        checkpoint(r.dir.path()) == 2
    })
    .await;
    r.stop().await;
}

#[tokio::test]
async fn a_request_dropped_before_its_write_leaves_nothing_and_releases_its_claim() {
    let r = running().await;
    let (settle, told) = recorder();
    drop(r.accept("never", settle));
    assert_eq!(*told.lock().unwrap(), Some(false));
    assert_eq!(r.inbox.done(), 0);
    r.stop().await;
}
