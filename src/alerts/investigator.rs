//! `Investigator` for the real `agent::Dispatcher`.

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use super::grouping::{Budget, InvState};
use super::intake::{Investigator, NewInvestigation};
use crate::agent::{Context, Dispatcher, InvestigationRequest, InvestigationStatus, Trigger};
use crate::store::StoreError;

#[async_trait]
impl Investigator for Dispatcher {
    async fn submit(&self, req: NewInvestigation) -> Result<String, StoreError> {
        let inv = Dispatcher::submit_decided(
            self,
            InvestigationRequest {
                trigger: Trigger::Alert,
                title: req.title,
                prompt: req.prompt,
                context: Some(Context::Alert(req.context)),
                group_key: Some(req.group_key),
            },
        )
        .await?;
        Ok(inv.id)
    }

    async fn cancel_queued(&self, id: &str, note: &str) -> Result<bool, StoreError> {
        Dispatcher::cancel_queued(self, id, note).await
    }

    fn add_note(&self, id: &str, note: &str) -> Result<(), StoreError> {
        Dispatcher::add_note(self, id, note)
    }

    fn state(&self, id: &str) -> Result<InvState, StoreError> {
        Ok(match self.get(id)? {
            None => InvState::Missing,
            Some(inv) => match inv.status {
                InvestigationStatus::Queued => InvState::Queued,
                InvestigationStatus::Running => InvState::Running,
                InvestigationStatus::Cancelled => InvState::Cancelled,
                done => InvState::Done {
                    status: done.as_str().to_string(),
                    finished_at: inv.finished_at.unwrap_or(inv.created_at),
                },
            },
        })
    }

    fn budget(&self) -> Budget {
        self.spend().budget()
    }

    fn hold(&self) {
        self.spend().hold();
    }

    fn release_hold(&self) {
        self.spend().release_hold();
    }

    fn find_for_group(
        &self,
        group_key: &str,
        since: DateTime<Utc>,
    ) -> Result<Option<String>, StoreError> {
        Ok(self
            .between(since, DateTime::<Utc>::MAX_UTC)?
            .into_iter()
            .find(|i| i.group_key.as_deref() == Some(group_key) && i.trigger == Trigger::Alert)
            .map(|i| i.id))
    }
}
