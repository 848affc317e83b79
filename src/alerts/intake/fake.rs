//! Test fakes for the intake: an in-memory `Investigator` (investigations are kept as
//! tuples) and builders for alerts, batches and an intake on a temporary store.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::Mutex as StdMutex;

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use super::{Intake, IntakeSummary, Investigator, NewInvestigation};
use crate::alerts::grouping::{Budget, InvState};
use crate::alerts::store::AlertStore;
use crate::alerts::storm::StormStore;
use crate::alerts::{Alert, AlertSource, AlertStatus, WebhookBatch};
use crate::config::AlertsConfig;
use crate::store::inbox::{Backlog, Inbox};
use crate::store::{Store, StoreError};
use crate::telemetry::Metrics;

/// (id, group key, created, state)
type FakeInv = (String, String, DateTime<Utc>, InvState);

/// An in-memory dispatcher: investigations are (id, group, created, state).
#[derive(Default)]
pub(super) struct FakeInvestigator {
    invs: StdMutex<Vec<FakeInv>>,
    pub(super) notes: StdMutex<Vec<(String, String)>>,
    /// Decisions holding a place in the budget.
    pub(super) held: StdMutex<u32>,
    /// `alerts.max_investigations_per_day` of the fake budget.
    pub(super) max_per_day: StdMutex<Option<u32>>,
}

impl FakeInvestigator {
    pub(super) fn submitted(&self) -> Vec<String> {
        self.invs
            .lock()
            .unwrap()
            .iter()
            .map(|i| i.1.clone())
            .collect()
    }

    /// (id, group key, state) of every investigation, in submission order.
    pub(super) fn all(&self) -> Vec<(String, String, InvState)> {
        let invs = self.invs.lock().unwrap();
        invs.iter()
            .map(|i| (i.0.clone(), i.1.clone(), i.3.clone()))
            .collect()
    }

    pub(super) fn set_state_of(&self, id: &str, state: InvState) {
        for i in self.invs.lock().unwrap().iter_mut().filter(|i| i.0 == id) {
            i.3 = state.clone();
        }
    }

    pub(super) fn set_state(&self, state: InvState) {
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
        let mut held = self.held.lock().unwrap();
        *held = held.saturating_sub(1);
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

    fn budget(&self) -> Budget {
        let invs = self.invs.lock().unwrap();
        let n = invs.iter().filter(|i| i.3 != InvState::Cancelled).count() as u32;
        Budget {
            investigations: n + *self.held.lock().unwrap(),
            spent_usd: 0.0,
            reserved_usd: 0.0,
            max_per_day: self.max_per_day.lock().unwrap().unwrap_or(u32::MAX),
            cost_limit_usd: 0.0,
            reserve_usd: 0.0,
        }
    }

    fn hold(&self) {
        *self.held.lock().unwrap() += 1;
    }

    fn release_hold(&self) {
        let mut held = self.held.lock().unwrap();
        *held = held.checked_sub(1).expect("a release for every hold");
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

pub(super) fn config(max_per_day: u32) -> AlertsConfig {
    AlertsConfig {
        max_investigations_per_day: max_per_day,
        ignore: vec![r#"severity="info""#.into()],
        storm_hold: crate::config::HumanDuration::secs(0),
        ..AlertsConfig::default()
    }
}

pub(super) fn intake(store: &Store, fake: &Arc<FakeInvestigator>, max: u32) -> Intake {
    *fake.max_per_day.lock().unwrap() = Some(max);
    intake_with(store, fake, config(max))
}

pub(super) fn intake_with(
    store: &Store,
    fake: &Arc<FakeInvestigator>,
    cfg: AlertsConfig,
) -> Intake {
    intake_inbox(store, fake, cfg, None)
}

/// An intake taking webhooks through `inbox` (with the entries left in it).
pub(super) fn intake_inbox(
    store: &Store,
    fake: &Arc<FakeInvestigator>,
    cfg: AlertsConfig,
    inbox: Option<(Inbox, Backlog)>,
) -> Intake {
    *fake.max_per_day.lock().unwrap() = Some(cfg.max_investigations_per_day);
    let alerts = AlertStore::open(store).unwrap();
    Intake::new(
        &cfg,
        alerts,
        StormStore::open(store).unwrap(),
        fake.clone(),
        Arc::new(Metrics::new("m")),
        inbox,
    )
    .unwrap()
}

pub(super) fn alert(name: &str, instance: &str, status: AlertStatus) -> Alert {
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

pub(super) fn batch(alerts: Vec<Alert>) -> WebhookBatch {
    WebhookBatch {
        alerts,
        group_key: None,
        truncated_alerts: 0,
        capped: 0,
    }
}

pub(super) async fn ingest_and_run_effects(intake: &Intake, alerts: Vec<Alert>) -> IntakeSummary {
    let (summary, effects) = intake.ingest(batch(alerts)).await.unwrap();
    for f in effects {
        f.run(intake).await;
    }
    summary
}
