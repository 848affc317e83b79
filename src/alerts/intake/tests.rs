use std::sync::Arc;

use super::fake::{FakeInvestigator, alert, ingest_and_run_effects, intake};
use crate::alerts::AlertStatus;
use crate::alerts::grouping::InvState;
use crate::alerts::store::Outcome;
use crate::store::Store;
use chrono::Utc;

#[tokio::test]
async fn a_burst_of_500_alerts_becomes_one_investigation_per_group_below_a_storm() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let fake = Arc::new(FakeInvestigator::default());
    let intake = intake(&store, &fake, 50);
    let alerts = (0..500)
        .map(|i| alert("HighLoad", &format!("host{}", i % 4), AlertStatus::Firing))
        .collect();
    let summary = ingest_and_run_effects(&intake, alerts).await;
    assert_eq!(summary.received, 500);
    assert_eq!(summary.queued, 4);
    assert_eq!(fake.submitted().len(), 4);
    assert_eq!(intake.store().alert_count(), 500);
    let g = intake.store().group(&summary.groups[0]).unwrap().unwrap();
    assert_eq!(g.received, 125);
    assert!(g.investigation_id.is_some() && g.pending_since.is_none());
}

#[tokio::test]
async fn a_finished_investigation_puts_the_group_in_cooldown() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let fake = Arc::new(FakeInvestigator::default());
    let intake = intake(&store, &fake, 50);
    ingest_and_run_effects(&intake, vec![alert("A", "h", AlertStatus::Firing)]).await;
    fake.set_state(InvState::Done {
        status: "finished".into(),
        finished_at: Utc::now(),
    });
    let again = ingest_and_run_effects(&intake, vec![alert("A", "h", AlertStatus::Firing)]).await;
    assert_eq!(again.queued, 0);
    let g = intake.store().group(&again.groups[0]).unwrap().unwrap();
    assert_eq!(g.last_outcome, Outcome::Cooldown);
    assert_eq!(fake.submitted().len(), 1);
}

#[tokio::test]
async fn the_daily_budget_stops_new_investigations_but_alerts_are_stored() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let fake = Arc::new(FakeInvestigator::default());
    let intake = intake(&store, &fake, 2);
    let alerts = (0..4)
        .map(|i| alert("A", &format!("h{i}"), AlertStatus::Firing))
        .collect();
    let summary = ingest_and_run_effects(&intake, alerts).await;
    assert_eq!(summary.queued, 2);
    assert_eq!(fake.submitted().len(), 2);
    assert_eq!(intake.store().alert_count(), 4);
    let g = intake.store().group(&summary.groups[3]).unwrap().unwrap();
    assert_eq!(g.last_outcome, Outcome::Budget);
}

#[tokio::test]
async fn ignored_alerts_are_stored_without_an_investigation() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let fake = Arc::new(FakeInvestigator::default());
    let intake = intake(&store, &fake, 50);
    let mut a = alert("A", "h", AlertStatus::Firing);
    a.labels.insert("severity".into(), "info".into());
    let summary = ingest_and_run_effects(&intake, vec![a]).await;
    assert_eq!(summary.queued, 0);
    assert!(fake.submitted().is_empty());
    assert_eq!(intake.store().alert_count(), 1);
}
