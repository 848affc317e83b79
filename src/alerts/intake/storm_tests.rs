//! Storm coalescing through the intake, with the in-memory dispatcher of `fake.rs` on a
//! real sled store.

use std::sync::Arc;

use chrono::Utc;

use super::fake::{
    FakeInvestigator, alert, batch, config, ingest_and_run_effects, intake, intake_with,
};
use crate::alerts::AlertStatus;
use crate::alerts::grouping::InvState;
use crate::alerts::store::Outcome;
use crate::alerts::storm::StormStatus;
use crate::alerts::{Alert, Intake};
use crate::store::Store;

const KEY: &str = "{alertname=\"DiskFull\"}";

fn hosts(range: std::ops::Range<usize>, status: AlertStatus) -> Vec<Alert> {
    range
        .map(|i| alert("DiskFull", &format!("host{i}:9100"), status))
        .collect()
}

fn live(fake: &FakeInvestigator) -> Vec<(String, String, InvState)> {
    fake.all()
        .into_iter()
        .filter(|i| i.2 != InvState::Cancelled)
        .collect()
}

fn storm_of(intake: &Intake) -> crate::alerts::storm::Storm {
    intake.storms().get(KEY).unwrap().unwrap()
}

#[tokio::test]
async fn two_hundred_groups_in_one_payload_become_one_storm_investigation() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let fake = Arc::new(FakeInvestigator::default());
    let intake = intake(&store, &fake, 50);
    let summary = ingest_and_run_effects(&intake, hosts(0..200, AlertStatus::Firing)).await;
    assert_eq!(summary.storms, vec![KEY.to_string()]);
    assert_eq!(fake.submitted(), vec![format!("storm:{KEY}")]);
    let s = storm_of(&intake);
    assert_eq!(
        (s.status, s.members, s.firing_members),
        (StormStatus::Firing, 200, 200)
    );
    assert_eq!(s.named, 200);
    assert_eq!(s.investigation_id.as_deref(), Some("inv-0"));
    // The groups before the threshold were decided queued, then coalesced at submission.
    let early = intake.store().group(&summary.groups[0]).unwrap().unwrap();
    assert!(early.investigation_id.is_none() && early.pending_since.is_none());
    let late = intake.store().group(&summary.groups[199]).unwrap().unwrap();
    assert_eq!(late.last_outcome, Outcome::Storm);
    // Later groups attach; a repeat of the whole payload starts nothing.
    let again = ingest_and_run_effects(&intake, hosts(0..260, AlertStatus::Firing)).await;
    assert_eq!(again.queued, 0);
    assert_eq!(fake.submitted().len(), 1);
    assert_eq!(storm_of(&intake).members, 260);
}

#[tokio::test]
async fn groups_arriving_one_by_one_coalesce_and_early_queued_ones_are_cancelled() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let fake = Arc::new(FakeInvestigator::default());
    let intake = intake(&store, &fake, 50);
    for i in 0..4 {
        let s = ingest_and_run_effects(&intake, hosts(i..i + 1, AlertStatus::Firing)).await;
        assert_eq!(s.queued, 1);
    }
    // Four groups, below the threshold: each has its own (queued) investigation.
    assert_eq!(fake.submitted().len(), 4);
    fake.set_state_of("inv-0", InvState::Running);
    let fifth = ingest_and_run_effects(&intake, hosts(4..5, AlertStatus::Firing)).await;
    assert_eq!((fifth.queued, fifth.storms.len()), (0, 1));
    let live = live(&fake);
    assert_eq!(
        live.iter().map(|i| i.1.as_str()).collect::<Vec<_>>(),
        vec![
            r#"{alertname="DiskFull", instance="host0:9100"}"#,
            &format!("storm:{KEY}")
        ],
        "the running one stays, the queued ones are cancelled: {live:?}"
    );
    assert!(fake.notes.lock().unwrap()[0].1.contains("coalesced"));
}

#[tokio::test]
async fn a_storm_resolves_with_its_groups_and_its_cooldown_holds_when_it_fires_again() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let fake = Arc::new(FakeInvestigator::default());
    let intake = intake(&store, &fake, 50);
    ingest_and_run_effects(&intake, hosts(0..20, AlertStatus::Firing)).await;
    fake.set_state(InvState::Done {
        status: "finished".into(),
        finished_at: Utc::now(),
    });
    ingest_and_run_effects(&intake, hosts(0..19, AlertStatus::Resolved)).await;
    assert_eq!(storm_of(&intake).status, StormStatus::Firing);
    ingest_and_run_effects(&intake, hosts(19..20, AlertStatus::Resolved)).await;
    let s = storm_of(&intake);
    assert_eq!((s.status, s.firing_members), (StormStatus::Resolved, 0));
    assert!(fake.notes.lock().unwrap()[0].1.contains("alert storm"));
    // Firing again within the cooldown: the storm reopens, nothing new is investigated.
    let again = ingest_and_run_effects(&intake, hosts(0..20, AlertStatus::Firing)).await;
    assert_eq!((again.queued, again.storms.len()), (0, 1));
    assert_eq!(storm_of(&intake).status, StormStatus::Firing);
    assert_eq!(fake.submitted().len(), 1);
}

#[tokio::test]
async fn groups_joining_after_the_investigation_started_get_one_reinvestigation() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let fake = Arc::new(FakeInvestigator::default());
    let intake = intake(&store, &fake, 50);
    ingest_and_run_effects(&intake, hosts(0..5, AlertStatus::Firing)).await;
    fake.set_state(InvState::Running);
    ingest_and_run_effects(&intake, hosts(5..8, AlertStatus::Firing)).await;
    assert_eq!(fake.submitted().len(), 1, "3 more are below the threshold");
    ingest_and_run_effects(&intake, hosts(8..40, AlertStatus::Firing)).await;
    assert_eq!(fake.submitted().len(), 2);
    let s = storm_of(&intake);
    assert_eq!((s.named, s.reinvestigations), (40, 1));
    fake.set_state(InvState::Running);
    ingest_and_run_effects(&intake, hosts(40..400, AlertStatus::Firing)).await;
    assert_eq!(fake.submitted().len(), 2, "re-investigations are bounded");
}

#[tokio::test]
async fn a_storm_survives_a_restart_and_a_pending_one_is_submitted_once() {
    let dir = tempfile::tempdir().unwrap();
    let fake = Arc::new(FakeInvestigator::default());
    {
        let store = Store::open(dir.path()).unwrap();
        let first = intake(&store, &fake, 50);
        let (summary, _dropped) = first
            .ingest(batch(hosts(0..50, AlertStatus::Firing)))
            .await
            .unwrap();
        assert_eq!(summary.storms.len(), 1);
    }
    let store = Store::open(dir.path()).unwrap();
    let restarted = intake(&store, &fake, 50);
    restarted.recover().await.unwrap();
    assert_eq!(fake.submitted(), vec![format!("storm:{KEY}")]);
    assert_eq!(storm_of(&restarted).members, 50);
    let later = ingest_and_run_effects(&restarted, hosts(50..60, AlertStatus::Firing)).await;
    assert_eq!((later.queued, later.storms.len()), (0, 1));
    assert_eq!(fake.submitted().len(), 1);
}

#[tokio::test]
async fn a_held_submission_stops_waiting_at_shutdown_and_stays_pending() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let fake = Arc::new(FakeInvestigator::default());
    let cfg = crate::config::AlertsConfig {
        storm_hold: crate::config::HumanDuration::secs(3600),
        ..config(50)
    };
    let intake = intake_with(&store, &fake, cfg);
    let (summary, effects) = intake
        .ingest(batch(hosts(0..2, AlertStatus::Firing)))
        .await
        .unwrap();
    let run = {
        let intake = intake.clone();
        tokio::spawn(async move {
            for f in effects {
                f.run(&intake).await;
            }
        })
    };
    intake.stop_holding();
    run.await.unwrap();
    assert!(fake.submitted().is_empty());
    let g = intake.store().group(&summary.groups[0]).unwrap().unwrap();
    assert!(g.pending_since.is_some(), "the next start submits it");
}

#[tokio::test]
async fn other_alerts_and_coalescing_turned_off_keep_one_investigation_per_group() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let fake = Arc::new(FakeInvestigator::default());
    let cfg = crate::config::AlertsConfig {
        storm_threshold: 0,
        ..config(50)
    };
    let off = intake_with(&store, &fake, cfg);
    let summary = ingest_and_run_effects(&off, hosts(0..6, AlertStatus::Firing)).await;
    assert_eq!((summary.queued, fake.submitted().len()), (6, 6));
    assert!(summary.storms.is_empty());
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let fake = Arc::new(FakeInvestigator::default());
    let intake = intake(&store, &fake, 50);
    let mixed: Vec<Alert> = (0..8)
        .map(|i| alert(&format!("Alert{i}"), "h", AlertStatus::Firing))
        .collect();
    ingest_and_run_effects(&intake, mixed).await;
    assert_eq!(fake.submitted().len(), 8);
}

#[tokio::test]
async fn a_storm_takes_over_the_budget_claims_of_the_groups_it_coalesces() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let fake = Arc::new(FakeInvestigator::default());
    let intake = intake(&store, &fake, 2);
    let summary = ingest_and_run_effects(&intake, hosts(0..30, AlertStatus::Firing)).await;
    assert_eq!(
        summary.queued, 2,
        "the budget allowed two before the storm formed"
    );
    assert_eq!(fake.submitted(), vec![format!("storm:{KEY}")]);
    assert_eq!(storm_of(&intake).members, 30);
}
