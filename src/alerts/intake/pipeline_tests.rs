//! The webhook path through the inbox (`pipeline.rs`): answers, order, and batches a
//! crash left undecided.

use std::sync::Arc;

use chrono::{Duration, Utc};
use serde_json::json;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::Accepted;
use super::fake::{FakeInvestigator, config, intake_inbox};
use crate::alerts::store::Outcome;
use crate::alerts::storm::StormStatus;
use crate::alerts::{AlertSource, parse_webhook};
use crate::store::Store;
use crate::store::inbox::Inbox;

fn body(instances: std::ops::Range<usize>) -> Vec<u8> {
    let alerts: Vec<_> = instances
        .map(|i| {
            json!({"status": "firing",
                "labels": {"alertname": "NodeDown", "instance": format!("host{i}")},
                "fingerprint": format!("{i:016x}")})
        })
        .collect();
    serde_json::to_vec(&json!({"version": "4", "status": "firing", "alerts": alerts})).unwrap()
}

#[tokio::test]
async fn a_batch_a_crash_left_undecided_is_decided_at_start_with_its_arrival_time() {
    let dir = tempfile::tempdir().unwrap();
    let arrived = Utc::now() - Duration::minutes(3);
    {
        // Answered 2xx, then the process died before deciding it.
        let (inbox, _) = Inbox::open(dir.path(), "alerts").unwrap();
        let seq = inbox.append(arrived, 2, &body(0..3)).unwrap();
        inbox.sync(seq).await.unwrap();
    }
    let store = Store::open(dir.path()).unwrap();
    let fake = Arc::new(FakeInvestigator::default());
    let inbox = Inbox::open(dir.path(), "alerts").unwrap();
    assert_eq!(inbox.1.len(), 1);
    let intake = intake_inbox(&store, &fake, config(50), Some(inbox));
    let (tasks, token) = (TaskTracker::new(), CancellationToken::new());
    assert_eq!(intake.start(&tasks, token.clone()).await.unwrap(), 1);
    assert_eq!(intake.store().alert_count(), 3);
    let groups = intake
        .store()
        .recent_groups(10, None, crate::alerts::store::Samples::Last)
        .unwrap()
        .groups;
    assert_eq!(groups.len(), 3);
    for g in &groups {
        let off = (g.last_seen - arrived).num_milliseconds().abs();
        assert!(
            off <= 1,
            "decided as of its arrival: {} vs {arrived}",
            g.last_seen
        );
    }
    assert_eq!(intake.backlog(), 0);
    token.cancel();
    tasks.close();
    tasks.wait().await;
    drop(intake);
    // Checkpointed: nothing is left for the next start.
    let (_, left) = Inbox::open(dir.path(), "alerts").unwrap();
    assert!(left.is_empty(), "{} left", left.len());
}

#[tokio::test]
async fn a_batch_alone_is_answered_with_its_decisions_and_one_behind_others_is_deferred() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let fake = Arc::new(FakeInvestigator::default());
    let inbox = Inbox::open(dir.path(), "alerts").unwrap();
    let intake = intake_inbox(&store, &fake, config(50), Some(inbox));
    let (tasks, token) = (TaskTracker::new(), CancellationToken::new());
    intake.start(&tasks, token.clone()).await.unwrap();

    let b = body(0..1);
    let parsed = parse_webhook(AlertSource::Alertmanager, &b).unwrap();
    let Accepted::Decided(summary) = intake
        .accept(AlertSource::Alertmanager, &b, parsed, Default::default())
        .await
        .unwrap()
    else {
        panic!("a batch with none ahead of it is decided before the answer");
    };
    assert_eq!(
        (summary.received, summary.queued, summary.deferred),
        (1, 1, false)
    );

    // Many at once: every one answered, some deferred; all decided in the end, none lost.
    let answers = futures::future::join_all((1..41).map(|i| {
        let intake = intake.clone();
        async move {
            let b = body(i * 10..i * 10 + 10);
            let parsed = parse_webhook(AlertSource::Alertmanager, &b).unwrap();
            intake
                .accept(AlertSource::Alertmanager, &b, parsed, Default::default())
                .await
                .unwrap()
        }
    }))
    .await;
    let deferred = answers
        .iter()
        .filter(|a| matches!(a, Accepted::Deferred(s) if s.deferred && s.received == 10))
        .count();
    assert!(
        deferred > 0,
        "40 concurrent batches: some answered before being decided"
    );
    token.cancel();
    tasks.close();
    tasks.wait().await;
    assert_eq!(intake.backlog(), 0);
    assert_eq!(intake.store().alert_count(), 401);
    let (_, left) = Inbox::open(dir.path(), "alerts").unwrap();
    assert!(
        left.is_empty(),
        "the processor decided its queue before stopping"
    );
}

#[tokio::test]
async fn deciding_a_batch_again_after_a_crash_counts_nothing_twice_and_mends_a_lost_storm_write() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let fake = Arc::new(FakeInvestigator::default());
    let intake = intake_inbox(&store, &fake, config(50), None);
    let now = Utc::now();
    let b = body(0..30);
    let parse = || parse_webhook(AlertSource::Alertmanager, &b).unwrap();
    let storm_key = r#"{alertname="NodeDown"}"#;

    // Entry 7 decided: 30 groups, one storm with 30 - 4 alerts attached.
    let (first, _, log) = intake
        .decisions()
        .decide_batch(parse(), now, Some(7))
        .await
        .unwrap();
    assert_eq!((first.groups.len(), log.len()), (30, 30));
    let storm = intake.storms().get(storm_key).unwrap().unwrap();
    assert_eq!((storm.members, storm.alerts, storm.batch), (30, 26, 7));

    // Decided again (the crash came before the checkpoint, after every write).
    let (again, effects, log) = intake
        .decisions()
        .decide_batch(parse(), now, Some(7))
        .await
        .unwrap();
    assert!(again.groups.is_empty() && effects.is_empty() && again.queued == 0);
    assert!(
        log.iter()
            .all(|r| r.outcome == Outcome::Deduped && r.batch == Some(7))
    );
    let g = intake.store().group(&first.groups[0]).unwrap().unwrap();
    assert_eq!(g.received, 1);
    assert_eq!(intake.storms().get(storm_key).unwrap().unwrap().alerts, 26);

    // A torn write: the groups reached the disk, the storm did not. Deciding again
    // attaches the alerts to the storm once, and still counts none twice in its group.
    let mut lost = storm.clone();
    lost.status = StormStatus::Resolved;
    lost.batch = 6;
    intake.storms().put(&lost).unwrap();
    intake
        .decisions()
        .decide_batch(parse(), now, Some(7))
        .await
        .unwrap();
    let mended = intake.storms().get(storm_key).unwrap().unwrap();
    assert_eq!((mended.status, mended.batch), (StormStatus::Firing, 7));
    let g = intake.store().group(&first.groups[0]).unwrap().unwrap();
    assert_eq!(g.received, 1);

    // The next entry is decided as usual.
    let (next, ..) = intake
        .decisions()
        .decide_batch(parse(), now, Some(8))
        .await
        .unwrap();
    assert_eq!(next.groups.len(), 30);
    let g = intake.store().group(&first.groups[0]).unwrap().unwrap();
    assert_eq!(g.received, 2);
}

#[test]
fn a_queued_batch_takes_room_for_its_parsed_alerts_not_its_body_bytes() {
    let body = body(0..100);
    let batch = parse_webhook(AlertSource::Alertmanager, &body).unwrap();
    let room = super::pipeline::queue_room(&batch) as usize;
    // Parsed, an alert's two maps and strings take well over its JSON.
    assert!(
        room > 2 * body.len(),
        "{room} for a {}-byte body",
        body.len()
    );
    assert!(room >= 100 * 1_000, "{room}");
}
