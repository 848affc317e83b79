//! People's verdicts on findings: stored on the investigation and in incident memory.

use super::Dispatcher;
use crate::agent::memory::{Feedback, IncidentMemory};
use crate::agent::{Investigation, InvestigationStatus};
use crate::store::StoreError;

impl Dispatcher {
    /// Stores a person's verdict on the finding of `id` (replacing an earlier one) in the
    /// investigation and in incident memory, durably, and counts it.
    pub async fn feedback(
        &self,
        id: &str,
        feedback: Feedback,
    ) -> Result<FeedbackOutcome, StoreError> {
        let mut status = None;
        let inv = self.inner.store.update(id, |inv| {
            status = Some(inv.status);
            if inv.status.is_final() {
                inv.feedback = Some(feedback.clone());
            }
        })?;
        let Some(inv) = inv else {
            return Ok(FeedbackOutcome::NotFound);
        };
        if let Some(s) = status.filter(|s| !s.is_final()) {
            return Ok(FeedbackOutcome::NotFinal(s));
        }
        self.inner.memory.set_feedback(id, &feedback)?;
        self.inner.store.flush().await?;
        self.inner
            .metrics
            .feedback
            .with_label_values(&[feedback.verdict.label()])
            .inc();
        Ok(FeedbackOutcome::Stored(Box::new(inv)))
    }

    /// The incident memory.
    pub fn memory(&self) -> &IncidentMemory {
        &self.inner.memory
    }
}

/// What became of a person's feedback.
#[derive(Debug)]
pub enum FeedbackOutcome {
    Stored(Box<Investigation>),
    NotFound,
    /// The investigation has not ended yet (its status).
    NotFinal(InvestigationStatus),
}
