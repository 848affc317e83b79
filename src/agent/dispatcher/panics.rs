//! Investigations whose work panicked: made final (`failed`, "panicked: …") with what was
//! recorded so far, so the same input does not run again at every start.

use chrono::Utc;

use super::Dispatcher;
use crate::agent::{Investigation, InvestigationStatus};
use crate::store::StoreError;
use crate::telemetry::Task;
use crate::telemetry::supervise::record_panic;

impl Dispatcher {
    /// A run that panicked ends `failed` with the reason, with the cost recorded so far.
    pub(super) fn panicked(
        &self,
        mut inv: Investigation,
        panic: &(dyn std::any::Any + Send),
    ) -> Investigation {
        let what = record_panic(&self.inner.metrics, Task::Investigation, panic);
        tracing::error!(id = %inv.id, panic = %what, "investigation panicked");
        if let Ok(Some(stored)) = self.inner.store.get(&inv.id) {
            inv.cost_usd = stored.cost_usd;
            inv.tokens = stored.tokens;
            inv.steps = stored.steps;
        }
        inv.status = InvestigationStatus::Failed;
        inv.error = Some(format!("panicked: {what}"));
        inv
    }

    /// Stores `id` `failed` after a panic outside its run (its budget claim was released
    /// when the panic dropped it), so it is not resumed at the next start.
    pub(super) async fn fail_panicked(&self, id: &str, what: &str) -> Result<(), StoreError> {
        let store = &self.inner.store;
        let mut failed = None;
        store.update(id, |inv| {
            if !inv.status.is_final() {
                inv.status = InvestigationStatus::Failed;
                inv.finished_at = Some(Utc::now());
                inv.error = Some(format!("panicked: {what}"));
                failed = Some(inv.clone());
            }
        })?;
        store.dequeue(id)?;
        store.flush().await?;
        self.update_queue_depth();
        if let Some(inv) = failed {
            self.count_final(&inv);
            self.inner.finished.send_replace(());
        }
        Ok(())
    }
}
