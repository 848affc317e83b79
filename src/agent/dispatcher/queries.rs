//! Reading through the dispatcher: an investigation, its timeline, its follow-ups, a page;
//! the LLM client it was built with, which the weekly report shares.

use super::Dispatcher;
use crate::agent::store::Page;
use crate::agent::{Event, Investigation, InvestigationStatus};
use crate::llm::LlmClient;
use crate::store::StoreError;

impl Dispatcher {
    /// The LLM client investigations use, when one is configured.
    pub fn llm(&self) -> Option<&LlmClient> {
        self.inner.runner.llm()
    }

    /// One investigation.
    pub fn get(&self, id: &str) -> Result<Option<Investigation>, StoreError> {
        self.inner.store.get(id)
    }

    /// The timeline of `id`.
    pub fn events(&self, id: &str) -> Result<Vec<Event>, StoreError> {
        self.inner.store.events(id)
    }

    /// Newest first, paginated by id cursor.
    pub fn list(
        &self,
        status: Option<InvestigationStatus>,
        limit: usize,
        cursor: Option<&str>,
    ) -> Result<Page, StoreError> {
        self.inner.store.list(status, limit, cursor)
    }

    /// The follow-ups of `parent_id`, oldest first.
    pub fn follow_ups(&self, parent_id: &str) -> Result<Vec<Investigation>, StoreError> {
        self.inner.store.follow_ups(parent_id)
    }
}
