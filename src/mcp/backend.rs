//! Where the MCP server's investigation tools and resources get their answers: the
//! daemon's own components (`/mcp`, [`Local`]), or a running daemon's HTTP API (`sre-agent
//! mcp` over stdio, in `cli/mcp.rs`, so one process owns the store). Both admit an `ask`
//! through the same daily budgets as `POST /api/v1/ask`.

use async_trait::async_trait;

use crate::agent::{Dispatcher, InvestigationRequest, InvestigationStatus, SubmitError};
use crate::api::{InvestigationDetail, InvestigationPage, MAX_QUESTION_CHARS, Queued};
use crate::report::Reporter;

/// Why an investigation request could not be served; the text is for the MCP client.
#[derive(Debug, thiserror::Error)]
pub enum BackendError {
    /// The request is wrong (empty question, unknown id, still running…).
    #[error("{0}")]
    Refused(String),
    /// A daily budget is used up: the text names it, as `POST /api/v1/ask`'s 429 does.
    #[error("not investigated: {0}")]
    OverBudget(String),
    /// The daemon could not answer (its log has the details).
    #[error("{0}")]
    Unavailable(String),
}

/// The investigations the MCP server offers.
#[async_trait]
pub trait Investigations: Send + Sync {
    /// Queues an investigation of `question`.
    async fn ask(&self, question: &str) -> Result<Queued, BackendError>;
    /// Queues a follow-up question of the ended investigation `parent`.
    async fn follow_up(&self, parent: &str, question: &str) -> Result<Queued, BackendError>;
    /// One investigation with its timeline.
    async fn detail(&self, id: &str) -> Result<Option<InvestigationDetail>, BackendError>;
    /// The newest investigations, optionally in one status.
    async fn list(
        &self,
        status: Option<InvestigationStatus>,
        limit: usize,
    ) -> Result<InvestigationPage, BackendError>;
    /// The newest weekly report as markdown, when there is one.
    async fn latest_report(&self) -> Result<Option<String>, BackendError>;
}

/// The trimmed question, or why it cannot be asked (the API's rules).
pub fn check_question(question: &str) -> Result<&str, BackendError> {
    let q = question.trim();
    if q.is_empty() {
        return Err(BackendError::Refused(
            "\"question\" is required and must not be empty".into(),
        ));
    }
    if q.chars().count() > MAX_QUESTION_CHARS {
        return Err(BackendError::Refused(format!(
            "\"question\" is longer than {MAX_QUESTION_CHARS} characters"
        )));
    }
    Ok(q)
}

/// The daemon's own components.
pub struct Local {
    pub dispatcher: Dispatcher,
    pub reports: Reporter,
}

fn unavailable(e: impl std::fmt::Display) -> BackendError {
    tracing::error!(error = %e, "MCP request failed");
    BackendError::Unavailable("the daemon could not read or write its store".into())
}

fn submitted(r: Result<crate::agent::Investigation, SubmitError>) -> Result<Queued, BackendError> {
    match r {
        Ok(inv) => Ok(Queued {
            id: inv.id,
            status: inv.status,
        }),
        Err(SubmitError::OverBudget(e)) => Err(BackendError::OverBudget(e.to_string())),
        Err(SubmitError::Store(e)) => Err(unavailable(e)),
    }
}

#[async_trait]
impl Investigations for Local {
    async fn ask(&self, question: &str) -> Result<Queued, BackendError> {
        let question = check_question(question)?;
        submitted(
            self.dispatcher
                .submit(InvestigationRequest::ask(question))
                .await,
        )
    }

    async fn follow_up(&self, parent_id: &str, question: &str) -> Result<Queued, BackendError> {
        let question = check_question(question)?;
        let parent = self
            .dispatcher
            .get(parent_id)
            .map_err(unavailable)?
            .ok_or_else(|| BackendError::Refused(format!("no investigation {parent_id}")))?;
        if !parent.status.is_final() {
            return Err(BackendError::Refused(format!(
                "investigation {parent_id} is still {}; ask a follow-up once it has ended",
                parent.status.as_str()
            )));
        }
        let events = self.dispatcher.events(parent_id).map_err(unavailable)?;
        let req = crate::agent::follow_up_request(&parent, &events, question);
        submitted(self.dispatcher.submit_follow_up(parent_id, req).await)
    }

    async fn detail(&self, id: &str) -> Result<Option<InvestigationDetail>, BackendError> {
        let Some(investigation) = self.dispatcher.get(id).map_err(unavailable)? else {
            return Ok(None);
        };
        let events = self.dispatcher.events(id).map_err(unavailable)?;
        Ok(Some(InvestigationDetail {
            investigation,
            events,
        }))
    }

    async fn list(
        &self,
        status: Option<InvestigationStatus>,
        limit: usize,
    ) -> Result<InvestigationPage, BackendError> {
        self.dispatcher
            .list(status, limit, None)
            .map_err(unavailable)
    }

    async fn latest_report(&self) -> Result<Option<String>, BackendError> {
        let newest = self.reports.store().list(1).map_err(unavailable)?;
        Ok(newest.first().map(crate::report::render::to_markdown))
    }
}
