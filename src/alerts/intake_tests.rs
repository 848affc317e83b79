use std::collections::BTreeMap;
use std::sync::Mutex as StdMutex;

use super::*;
use crate::alerts::{AlertSource, WebhookBatch};
use crate::store::Store;

/// (id, group key, created, state)
type FakeInv = (String, String, DateTime<Utc>, InvState);

/// An in-memory dispatcher: investigations are (id, group, created, state).
#[derive(Default)]
struct FakeInvestigator {
    invs: StdMutex<Vec<FakeInv>>,
    notes: StdMutex<Vec<(String, String)>>,
}

impl FakeInvestigator {
    fn submitted(&self) -> Vec<String> {
        self.invs
            .lock()
            .unwrap()
            .iter()
            .map(|i| i.1.clone())
            .collect()
    }

    fn set_state(&self, state: InvState) {
        for i in self.invs.lock().unwrap().iter_mut() {
            i.3 = state.clone();
        }
    }
}

#[async_trait]
impl Investigator for FakeInvestigator {
    async fn submit(&self, req: NewInvestigation) -> Result<String, StoreError> {
        let mut invs = self.invs.lock().unwrap();
        let id = format!("inv-{}", invs.len());
        invs.push((id.clone(), req.group_key, Utc::now(), InvState::Queued));
        Ok(id)
    }

    async fn cancel_queued(&self, id: &str, note: &str) -> Result<bool, StoreError> {
        let mut invs = self.invs.lock().unwrap();
        let inv = invs.iter_mut().find(|i| i.0 == id).unwrap();
        let was_queued = inv.3 == InvState::Queued;
        if was_queued {
            inv.3 = InvState::Cancelled;
            self.notes.lock().unwrap().push((id.into(), note.into()));
        }
        Ok(was_queued)
    }

    fn add_note(&self, id: &str, note: &str) -> Result<(), StoreError> {
        self.notes.lock().unwrap().push((id.into(), note.into()));
        Ok(())
    }

    fn state(&self, id: &str) -> Result<InvState, StoreError> {
        let invs = self.invs.lock().unwrap();
        Ok(invs
            .iter()
            .find(|i| i.0 == id)
            .map(|i| i.3.clone())
            .unwrap_or(InvState::Missing))
    }

    fn usage_since(&self, since: DateTime<Utc>) -> Result<(u32, f64), StoreError> {
        let invs = self.invs.lock().unwrap();
        let n = invs
            .iter()
            .filter(|i| i.2 >= since && i.3 != InvState::Cancelled)
            .count();
        Ok((n as u32, 0.0))
    }

    fn find_for_group(
        &self,
        key: &str,
        since: DateTime<Utc>,
    ) -> Result<Option<String>, StoreError> {
        let invs = self.invs.lock().unwrap();
        Ok(invs
            .iter()
            .find(|i| i.1 == key && i.2 >= since)
            .map(|i| i.0.clone()))
    }
}

fn config(max_per_day: u32) -> AlertsConfig {
    AlertsConfig {
        max_investigations_per_day: max_per_day,
        ignore: vec![r#"severity="info""#.into()],
        ..AlertsConfig::default()
    }
}

fn intake(store: &Store, fake: &Arc<FakeInvestigator>, max: u32) -> Intake {
    let alerts = AlertStore::open(store).unwrap();
    Intake::new(
        &config(max),
        alerts,
        fake.clone(),
        Arc::new(Metrics::new("m")),
    )
    .unwrap()
}

fn alert(name: &str, instance: &str, status: AlertStatus) -> Alert {
    let labels: BTreeMap<String, String> = [("alertname", name), ("instance", instance)]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    Alert {
        source: AlertSource::Alertmanager,
        fingerprint: crate::alerts::label_fingerprint(&labels),
        status,
        name: name.into(),
        labels,
        annotations: BTreeMap::new(),
        starts_at: None,
        ends_at: None,
        generator_url: Some("http://prom/graph".into()),
        dashboard_url: None,
        panel_url: None,
        silence_url: None,
        value: None,
    }
}

fn batch(alerts: Vec<Alert>) -> WebhookBatch {
    WebhookBatch {
        alerts,
        group_key: None,
        truncated_alerts: 0,
    }
}

async fn ingest_and_follow(intake: &Intake, alerts: Vec<Alert>) -> IntakeSummary {
    let (summary, follow) = intake.ingest(batch(alerts)).await.unwrap();
    for f in follow {
        f.run(intake).await;
    }
    summary
}

#[tokio::test]
async fn a_storm_of_500_alerts_becomes_one_investigation_per_group() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let fake = Arc::new(FakeInvestigator::default());
    let intake = intake(&store, &fake, 50);
    let alerts = (0..500)
        .map(|i| alert("HighLoad", &format!("host{}", i % 5), AlertStatus::Firing))
        .collect();
    let summary = ingest_and_follow(&intake, alerts).await;
    assert_eq!(summary.received, 500);
    assert_eq!(summary.queued, 5);
    assert_eq!(fake.submitted().len(), 5);
    assert_eq!(intake.store().alert_count(), 500);
    let g = intake.store().group(&summary.groups[0]).unwrap().unwrap();
    assert_eq!(g.received, 100);
    assert!(g.investigation_id.is_some() && g.pending_since.is_none());
}

#[tokio::test]
async fn a_finished_investigation_puts_the_group_in_cooldown() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let fake = Arc::new(FakeInvestigator::default());
    let intake = intake(&store, &fake, 50);
    ingest_and_follow(&intake, vec![alert("A", "h", AlertStatus::Firing)]).await;
    fake.set_state(InvState::Done {
        status: "finished".into(),
        finished_at: Utc::now(),
    });
    let again = ingest_and_follow(&intake, vec![alert("A", "h", AlertStatus::Firing)]).await;
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
    let summary = ingest_and_follow(&intake, alerts).await;
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
    let summary = ingest_and_follow(&intake, vec![a]).await;
    assert_eq!(summary.queued, 0);
    assert!(fake.submitted().is_empty());
    assert_eq!(intake.store().alert_count(), 1);
}

#[tokio::test]
async fn a_resolved_group_cancels_its_queued_investigation_and_notes_it() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let fake = Arc::new(FakeInvestigator::default());
    let intake = intake(&store, &fake, 50);
    ingest_and_follow(&intake, vec![alert("A", "h", AlertStatus::Firing)]).await;
    let summary = ingest_and_follow(&intake, vec![alert("A", "h", AlertStatus::Resolved)]).await;
    let g = intake.store().group(&summary.groups[0]).unwrap().unwrap();
    assert_eq!(g.status, AlertStatus::Resolved);
    assert_eq!(g.last_outcome, Outcome::Resolved);
    assert_eq!(fake.state("inv-0").unwrap(), InvState::Cancelled);
    assert!(fake.notes.lock().unwrap()[0].1.contains("resolved"));
    // Firing again after a cancelled one starts a new episode.
    let again = ingest_and_follow(&intake, vec![alert("A", "h", AlertStatus::Firing)]).await;
    assert_eq!(again.queued, 1);
}

#[tokio::test]
async fn a_crash_after_the_durable_write_submits_exactly_once_at_restart() {
    let dir = tempfile::tempdir().unwrap();
    let fake = Arc::new(FakeInvestigator::default());
    {
        let store = Store::open(dir.path()).unwrap();
        let intake = intake(&store, &fake, 50);
        let (summary, _dropped_follow_ups) = intake
            .ingest(batch(vec![alert("A", "h", AlertStatus::Firing)]))
            .await
            .unwrap();
        assert_eq!(summary.queued, 1);
    }
    let store = Store::open(dir.path()).unwrap();
    let restarted = intake(&store, &fake, 50);
    assert_eq!(restarted.recover().await.unwrap(), 1);
    assert_eq!(restarted.recover().await.unwrap(), 0);
    assert_eq!(fake.submitted().len(), 1);
}

#[tokio::test]
async fn a_crash_after_submit_but_before_recording_the_id_does_not_double_it() {
    let dir = tempfile::tempdir().unwrap();
    let fake = Arc::new(FakeInvestigator::default());
    let store = Store::open(dir.path()).unwrap();
    let first = intake(&store, &fake, 50);
    let (summary, _) = first
        .ingest(batch(vec![alert("A", "h", AlertStatus::Firing)]))
        .await
        .unwrap();
    // The dispatcher got it, but the group never learned the id.
    let g = first.store().group(&summary.groups[0]).unwrap().unwrap();
    fake.submit(request_for(&g)).await.unwrap();
    let restarted = intake(&store, &fake, 50);
    restarted.recover().await.unwrap();
    assert_eq!(fake.submitted().len(), 1);
    let g = restarted
        .store()
        .group(&summary.groups[0])
        .unwrap()
        .unwrap();
    assert_eq!(g.investigation_id.as_deref(), Some("inv-0"));
}

#[test]
fn the_request_keeps_alert_data_in_context_and_the_instruction_trusted() {
    let now = Utc::now();
    let a = alert("DiskFull", "nas", AlertStatus::Firing);
    let mut firing = std::collections::BTreeSet::<String>::new();
    let mut g = AlertGroup::new(
        "{alertname=\"DiskFull\"}".into(),
        "DiskFull (instance=nas)".into(),
        &a,
        now,
    );
    g.absorb(&a, now, &mut firing);
    let req = request_for(&g);
    assert_eq!(req.title, "DiskFull (instance=nas)");
    assert!(
        req.prompt
            .starts_with("Investigate the firing alert group {alertname=\"DiskFull\"}")
    );
    let ctx: serde_json::Value = serde_json::from_str(&req.context).unwrap();
    assert_eq!(ctx["alerts"][0]["labels"]["instance"], "nas");
    assert_eq!(ctx["alerts"][0]["generator_url"], "http://prom/graph");
}
